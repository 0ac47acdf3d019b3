// The HTTP listener's limits, over real loopback sockets. Tests wait on
// observable state (a parked request, a count of open connections, a closed
// socket), never on a sleep.
#include "wire/http_server.h"

#include <gtest/gtest.h>


#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "descriptor_limit.h"
#include "raw_http.h"
#include "wire/node_wire.h"

namespace nodeplane::wire {
namespace {

using nodeplane::testing::RawConnection;

// Parks every request until the test answers it.
class ParkingHandler : public HttpHandler {
 public:
  void Handle(HttpRequest request, Responder respond) override {
    std::lock_guard lock(mu_);
    parked_.push_back({std::move(request), std::move(respond)});
    cv_.notify_all();
  }
  std::pair<HttpRequest, Responder> WaitForParked() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !parked_.empty(); });
    auto p = std::move(parked_.front());
    parked_.erase(parked_.begin());
    return p;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<HttpRequest, Responder>> parked_;
};

ListenerOptions Loopback() {
  ListenerOptions o;
  o.name = "test";
  o.host = "127.0.0.1";
  o.port = 0;
  return o;
}

void WaitForOpenConnections(const HttpServer& s, uint32_t n) {
  while (s.open_connections() != n) std::this_thread::yield();
}

// Returns once the header timeout of the listener on `port` has passed since
// the call: a connection opened now that never finishes its head is closed.
void AwaitHeaderTimeout(uint16_t port) {
  RawConnection slow(port);
  ASSERT_TRUE(slow.Send("GET / HTTP/1.1\r\n"));
  bool closed = false;
  slow.ReadUntilClose(&closed);
  ASSERT_TRUE(closed);
}

TEST(HttpServer, ServesHealth) {
  Logger log(LogLevel::kError);
  NodeWireOptions w;
  w.deployment = "demo";
  w.log = &log;
  NodeWire routes(std::move(w));
  HttpServer server(Loopback(), routes, log);
  ASSERT_TRUE(server.Start().ok());
  RawConnection c(server.port());
  ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string r = c.ReadResponse();
  EXPECT_NE(r.find("HTTP/1.1 200"), std::string::npos) << r;
  EXPECT_NE(r.find(R"({"status":"ok","deployment":"demo"})"), std::string::npos) << r;
  // Keep-alive: a second request on the same connection.
  ASSERT_TRUE(c.Send("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"));
  r = c.ReadResponse();
  EXPECT_NE(r.find("HTTP/1.1 404"), std::string::npos) << r;
  EXPECT_NE(r.find(R"("code":"not_found")"), std::string::npos) << r;
}

TEST(HttpServer, RefusesAnOversizedBodyBeforeReadingIt) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  ListenerOptions o = Loopback();
  o.body_limit = 1 << 20;
  HttpServer server(o, handler, log);
  ASSERT_TRUE(server.Start().ok());
  RawConnection c(server.port());
  // 1 MiB + 1 announced, not one byte of it sent.
  ASSERT_TRUE(c.Send("POST /v1/register HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n"));
  bool closed = false;
  std::string r = c.ReadUntilClose(&closed);
  EXPECT_NE(r.find("HTTP/1.1 413"), std::string::npos) << r;
  EXPECT_NE(r.find("exceeds the limit of 1048576 bytes"), std::string::npos) << r;
  EXPECT_TRUE(closed);
}

TEST(HttpServer, RefusesAnOversizedChunkedBody) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  ListenerOptions o = Loopback();
  o.body_limit = 16;
  HttpServer server(o, handler, log);
  ASSERT_TRUE(server.Start().ok());
  RawConnection c(server.port());
  ASSERT_TRUE(c.Send("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n" +
                     std::string(32, 'a') + "\r\n0\r\n\r\n"));
  std::string r = c.ReadUntilClose();
  EXPECT_NE(r.find("HTTP/1.1 413"), std::string::npos) << r;
}

TEST(HttpServer, DisconnectsAClientThatSendsHeadersSlowly) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  ListenerOptions o = Loopback();
  o.header_timeout = std::chrono::milliseconds(200);
  HttpServer server(o, handler, log);
  ASSERT_TRUE(server.Start().ok());
  RawConnection c(server.port());
  ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));  // never finishes the head
  bool closed = false;
  std::string r = c.ReadUntilClose(&closed);
  EXPECT_TRUE(closed) << "the server kept a half-sent request open";
  EXPECT_EQ(r, "");
  WaitForOpenConnections(server, 0);
}

TEST(HttpServer, NoTimeoutCutsAParkedRequest) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  ListenerOptions o = Loopback();
  o.header_timeout = std::chrono::milliseconds(50);
  HttpServer server(o, handler, log);
  ASSERT_TRUE(server.Start().ok());
  RawConnection c(server.port());
  ASSERT_TRUE(c.Send("POST /v1/nodes/n1/poll HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"));
  auto [req, respond] = handler.WaitForParked();
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, "/v1/nodes/n1/poll");
  EXPECT_EQ(req.body, "{}");
  // The header timeout has had time to fire; the parked poll must survive.
  AwaitHeaderTimeout(server.port());
  std::thread answer([respond = respond] { respond(HttpResponse{204, "", ""}); });
  std::string r = c.ReadResponse();
  answer.join();
  EXPECT_NE(r.find("HTTP/1.1 204"), std::string::npos) << r;
}

// After an answer (written under the 60 s write deadline) a kept-alive
// connection waits for its next request under the idle timeout: the
// shorter deadline replaces the longer one, and an idle client is closed at
// it, not at the write's.
TEST(HttpServer, AnAnsweredConnectionIdlesOnlyForTheIdleTimeout) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  ListenerOptions o = Loopback();
  o.header_timeout = std::chrono::milliseconds(50);
  o.idle_timeout = std::chrono::milliseconds(50);
  HttpServer server(o, handler, log);
  ASSERT_TRUE(server.Start().ok());
  RawConnection c(server.port());
  ASSERT_TRUE(c.Send("POST /v1/nodes/n1/poll HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"));
  auto [req, respond] = handler.WaitForParked();
  // The parked request's header deadline has passed: only the answer's
  // write deadline will be pending when the answer goes out.
  AwaitHeaderTimeout(server.port());
  respond(HttpResponse{204, "", ""});
  const auto answered = std::chrono::steady_clock::now();
  bool closed = false;
  const std::string r = c.ReadUntilClose(&closed);
  EXPECT_NE(r.find("HTTP/1.1 204"), std::string::npos) << r;
  EXPECT_TRUE(closed);
  // Half the write deadline: far above the 50 ms timeout, far below 60 s.
  EXPECT_LT(std::chrono::steady_clock::now() - answered, std::chrono::seconds(30));
  WaitForOpenConnections(server, 0);
}

// Answers every request at once.
class AnsweringHandler : public HttpHandler {
 public:
  void Handle(HttpRequest, Responder respond) override { respond(HttpResponse{204, "", ""}); }
};

constexpr std::string_view kKeptAliveRequest = "GET /x HTTP/1.1\r\nHost: x\r\n\r\n";

// A listener whose connections may idle far longer than a head may take
// (10), and a connection to it whose first request was answered.
class IdleConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ListenerOptions o = Loopback();
    o.header_timeout = std::chrono::milliseconds(100);
    o.idle_timeout = std::chrono::seconds(30);
    server_.emplace(o, handler_, log_);
    ASSERT_TRUE(server_->Start().ok());
    c_.emplace(server_->port());
    ASSERT_TRUE(c_->Send(kKeptAliveRequest));
    ASSERT_NE(c_->ReadResponse().find("HTTP/1.1 204"), std::string::npos);
  }

  Logger log_{LogLevel::kError};
  AnsweringHandler handler_;
  std::optional<HttpServer> server_;
  std::optional<RawConnection> c_;
};

// (10) Idle is not slow: an answered connection outlives the header timeout
// while it waits for its next request, up to the idle timeout.
TEST_F(IdleConnectionTest, AnAnsweredConnectionWaitsForItsNextRequestPastTheHeaderTimeout) {
  AwaitHeaderTimeout(server_->port());  // began after the answer, so ended after its header timeout
  ASSERT_TRUE(c_->Send(kKeptAliveRequest));
  EXPECT_NE(c_->ReadResponse().find("HTTP/1.1 204"), std::string::npos) << "the idle connection was closed";
}

// (10) Once the next request has begun, its head has the header timeout, not
// what is left of the idle timeout.
TEST_F(IdleConnectionTest, ANextRequestBegunOnAnIdleConnectionHasTheHeaderTimeout) {
  ASSERT_TRUE(c_->Send("GET /x HTTP/1.1\r\n"));  // never finishes the head
  bool closed = false;
  c_->ReadUntilClose(&closed);  // gives up after 10 s, well before the idle timeout
  EXPECT_TRUE(closed) << "a half-sent head held an idle connection";
}

// A head completed halfway to its deadline gives the body a deadline of its
// own, later than the head's: the connection must outlive the head's (no
// timer fires early) and still be cut at the body's (9: the wait armed for
// the head, firing first, waits again for the rest).
TEST(HttpServer, ABodyThatNeverComesIsCutAtItsOwnDeadline) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  ListenerOptions o = Loopback();
  o.header_timeout = std::chrono::milliseconds(200);
  HttpServer server(o, handler, log);
  ASSERT_TRUE(server.Start().ok());
  // A second listener whose header timeout is half as long serves as the
  // clock.
  ListenerOptions half = Loopback();
  half.header_timeout = std::chrono::milliseconds(100);
  HttpServer clock(half, handler, log);
  ASSERT_TRUE(clock.Start().ok());
  RawConnection c(server.port());
  ASSERT_TRUE(c.Send("POST /v1/nodes/n1/poll HTTP/1.1\r\nHost: x\r\n"));
  AwaitHeaderTimeout(clock.port());
  ASSERT_TRUE(c.Send("Content-Length: 5\r\n\r\n"));  // the head, whole; no body follows
  const auto head_done = std::chrono::steady_clock::now();
  bool closed = false;
  c.ReadUntilClose(&closed);  // gives up after 10 s
  EXPECT_TRUE(closed) << "a body that never came held the connection";
  EXPECT_GE(std::chrono::steady_clock::now() - head_done, std::chrono::milliseconds(200))
      << "the connection was cut at the head's deadline, not the body's";
}

TEST(HttpServer, ClosesConnectionsPastTheBudget) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  ListenerOptions o = Loopback();
  o.max_connections = 2;
  HttpServer server(o, handler, log);
  ASSERT_TRUE(server.Start().ok());
  RawConnection a(server.port()), b(server.port());
  WaitForOpenConnections(server, 2);
  RawConnection over(server.port());
  bool closed = false;
  over.ReadUntilClose(&closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(server.open_connections(), 2u);
}

TEST(HttpServer, StopsWithARequestParkedAndIgnoresALateAnswer) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  auto server = std::make_unique<HttpServer>(Loopback(), handler, log);
  ASSERT_TRUE(server->Start().ok());
  RawConnection c(server->port());
  ASSERT_TRUE(c.Send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto parked = handler.WaitForParked();
  server->Stop();
  server.reset();
  parked.second(HttpResponse{200, "text/plain", "late"});  // must be a harmless no-op
  bool closed = false;
  EXPECT_EQ(c.ReadUntilClose(&closed), "");
  EXPECT_TRUE(closed);
}

// Design note (4): with no descriptor to accept into, the listener counts
// the failure and tries again after a pause; it takes the connection once a
// descriptor is free, and Stop() returns even while it is failing (a close
// landing between two accepts once left the loop spinning on a closed
// acceptor, and Stop() waiting for it forever).
TEST(HttpServer, OutOfDescriptorsItPausesResumesAndStillStops) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  HttpServer server(Loopback(), handler, log);
  ASSERT_TRUE(server.Start().ok());
  testing::DescriptorLimit limit;
  // A socket takes the lowest free descriptor, so with the limit just above
  // it the process has none left for the server's accept.
  auto connect_with_no_descriptor_left = [&]() -> int {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_TRUE(limit.ExhaustAbove(fd));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);  // the kernel's backlog takes it
    return fd;
  };
  auto wait_for_failures = [&](uint64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (server.accept_failures() < n && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    return server.accept_failures() >= n;
  };

  int first = connect_with_no_descriptor_left();
  ASSERT_TRUE(wait_for_failures(2));  // failed, paused, failed again
  EXPECT_EQ(server.open_connections(), 0u);
  ASSERT_TRUE(limit.Restore());
  WaitForOpenConnections(server, 1);  // the next try takes it

  int second = connect_with_no_descriptor_left();
  ASSERT_TRUE(wait_for_failures(server.accept_failures() + 1));
  auto stopped = std::async(std::launch::async, [&] { server.Stop(); });
  if (stopped.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ADD_FAILURE() << "Stop() did not return while accepts were failing";
    std::abort();  // the stuck thread cannot be joined
  }
  ::close(first);
  ::close(second);
}

TEST(HttpServer, ReportsAnAddressItCannotBind) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  HttpServer first(Loopback(), handler, log);
  ASSERT_TRUE(first.Start().ok());
  ListenerOptions o = Loopback();
  o.port = first.port();
  HttpServer second(o, handler, log);
  Status s = second.Start();
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_NE(s.message().find("cannot listen on 127.0.0.1:" + std::to_string(first.port())), std::string::npos);
}

// Issue 22 #2 (RFC 9112 §6.3): a request whose body length is not certain is
// answered 400 and its connection closed, so the bytes after its head never
// run as a second request.
TEST(HttpServer, AnAmbiguouslyFramedRequestIsRefusedAndTheConnectionClosed) {
  Logger log(LogLevel::kError);
  ParkingHandler handler;
  HttpServer server(Loopback(), handler, log);
  ASSERT_TRUE(server.Start().ok());
  const std::string smuggled = "POST /v1/nodes/n1/withdraw HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  for (const std::string framing :
       {"Transfer-Encoding: xchunked", "Transfer-Encoding: chunked, identity", "Transfer-Encoding: identity",
        "Transfer-Encoding: gzip", "Transfer-Encoding: gzip, chunked", "Transfer-Encoding: chunked\r\nContent-Length: 5",
        "Content-Length: +0", "Content-Length: -1", "Content-Length: 0x10", "Content-Length: 1\r\nContent-Length: 2"}) {
    SCOPED_TRACE(framing);
    RawConnection c(server.port());
    ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n" + framing + "\r\n\r\n" + smuggled));
    bool closed = false;
    std::string answer = c.ReadUntilClose(&closed);
    EXPECT_TRUE(closed);
    EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
    EXPECT_NE(answer.find(R"("code":"refused")"), std::string::npos) << answer;
    EXPECT_EQ(answer.find("HTTP/1.1", 1), std::string::npos) << "a second request was answered: " << answer;
  }
  // Exactly "chunked" (any case) is a body, framed.
  RawConnection c(server.port());
  ASSERT_TRUE(c.Send("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"));
  auto [request, respond] = handler.WaitForParked();
  EXPECT_EQ(request.body, "{}");
  respond(HttpResponse{204});
  EXPECT_NE(c.ReadResponse().find("HTTP/1.1 204"), std::string::npos);
}

}  // namespace
}  // namespace nodeplane::wire
