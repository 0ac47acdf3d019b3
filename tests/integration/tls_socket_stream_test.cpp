// The listener's own TLS stream (wire/tls_socket_stream.h), through the
// HttpServer as a node reaches it: a blocking OpenSSL client in this process
// with a certificate from the deployment's authority. Each test pins one way
// the stream can go wrong that a well-behaved curl request would not show:
// writes that the socket takes in pieces, bytes OpenSSL has already read
// ahead, a client that leaves while its request is held, and a client that
// never says a word.
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/units.h"
#include "pki/authority.h"
#include "raw_http.h"
#include "wire/http_server.h"

namespace nodeplane::wire {
namespace {

using namespace std::chrono_literals;

// A blocking TLS 1.3 client on one loopback connection.
class TlsClient {
 public:
  // `receive_buffer` > 0 shrinks the socket's receive buffer before the
  // connection is made, so the server's writes meet a full socket.
  TlsClient(uint16_t port, const std::string& ca_pem, const std::string& cert_pem, const std::string& key_pem,
            int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};  // bounds a failing test
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return;
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_3_VERSION);
    BIO* ca = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
    X509* ca_cert = PEM_read_bio_X509(ca, nullptr, nullptr, nullptr);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), ca_cert);
    X509_free(ca_cert);
    BIO_free(ca);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    BIO* cb = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
    X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    BIO_free(cb);
    BIO* kb = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    BIO_free(kb);
    SSL_CTX_use_certificate(ctx_, cert);
    SSL_CTX_use_PrivateKey(ctx_, key);
    X509_free(cert);
    EVP_PKEY_free(key);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    connected_ = SSL_connect(ssl_) == 1;
  }
  ~TlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }

  bool connected() const { return connected_; }

  bool Send(const std::string& data) {
    size_t n = 0;
    return SSL_write_ex(ssl_, data.data(), data.size(), &n) == 1 && n == data.size();
  }

  // One response with a Content-Length body: its status line and its body.
  // "" when the connection ended first.
  std::pair<std::string, std::string> ReadResponse() {
    for (;;) {
      const size_t end = pending_.find("\r\n\r\n");
      if (end != std::string::npos) {
        const std::string head = pending_.substr(0, end);
        const size_t cl = head.find("Content-Length: ");
        const size_t length = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
        if (pending_.size() >= end + 4 + length) {
          std::string body = pending_.substr(end + 4, length);
          pending_.erase(0, end + 4 + length);
          return {head.substr(0, head.find("\r\n")), body};
        }
      }
      char buf[16384];
      size_t n = 0;
      if (SSL_read_ex(ssl_, buf, sizeof buf, &n) != 1) return {};
      pending_.append(buf, n);
    }
  }

  // Closes the socket without a close_notify, as a node that dies does.
  void Drop() {
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  bool connected_ = false;
  std::string pending_;
};

// Answers "/big" with `big` and every other path with the path; "/hold" is
// held until its client is gone.
class TestHandler : public HttpHandler {
 public:
  void Handle(HttpRequest r, Responder respond) override {
    if (r.target == "/big") return respond(HttpResponse{200, "application/octet-stream", big});
    if (r.target != "/hold") return respond(HttpResponse{200, "text/plain", r.target});
    std::shared_ptr<ClientWatch> client = r.client;
    {
      std::lock_guard lock(mu);
      held = std::move(respond);
    }
    cv.notify_all();
    client->OnGone([this] {
      {
        std::lock_guard lock(mu);
        gone = true;
      }
      cv.notify_all();
    });
  }

  std::string big;
  std::mutex mu;
  std::condition_variable cv;
  Responder held;  // with mu
  bool gone = false;
};

class TlsSocketStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = pki::Authority::Create("acme", WallNowNs());
    ASSERT_TRUE(ca.ok());
    ca_ = std::make_unique<pki::Authority>(*ca);
    auto server = ca_->IssueServer({"127.0.0.1"}, WallNowNs());
    ASSERT_TRUE(server.ok());
    auto node = ca_->IssueNode("n1", WallNowNs());
    ASSERT_TRUE(node.ok());
    node_cert_ = node->first;
    node_key_ = node->second.private_pem;
    options_.name = "wire";
    options_.host = "127.0.0.1";
    options_.header_timeout = 300ms;
    options_.threads = 2;  // as nodeplaned runs it on two cores: connections on both threads at once
    options_.tls = TlsOptions{server->first, server->second.private_pem, ca_->cert_pem(), true};
    Serve();
  }

  void Serve() {
    if (server_) server_->Stop();
    server_ = std::make_unique<HttpServer>(options_, handler_, log_);
    ASSERT_TRUE(server_->Start().ok());
  }

  std::unique_ptr<TlsClient> Connect(int receive_buffer = 0) {
    auto c = std::make_unique<TlsClient>(server_->port(), ca_->cert_pem(), node_cert_, node_key_, receive_buffer);
    EXPECT_TRUE(c->connected());
    return c;
  }

  std::unique_ptr<pki::Authority> ca_;
  std::string node_cert_, node_key_;
  ListenerOptions options_;
  TestHandler handler_;
  Logger log_{LogLevel::kError};
  std::unique_ptr<HttpServer> server_;
};

// Eight MiB to a client whose socket takes a few KiB at a time: the stream's
// writes are partial and wait on a full socket (WANT_WRITE) hundreds of
// times, and every byte arrives in order.
TEST_F(TlsSocketStreamTest, AResponseLargerThanTheSocketTakesArrivesWhole) {
  handler_.big.resize(8 << 20);
  for (size_t i = 0; i < handler_.big.size(); ++i) handler_.big[i] = static_cast<char>('a' + (i * 7919 % 26));
  auto c = Connect(4096);
  ASSERT_TRUE(c->Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto [status, body] = c->ReadResponse();
  EXPECT_EQ(status, "HTTP/1.1 200 OK");
  ASSERT_EQ(body.size(), handler_.big.size());
  EXPECT_TRUE(body == handler_.big);
}

// Two requests in one record: after the first, the second's bytes are
// already decrypted inside OpenSSL and the socket has nothing more to say.
// A stream that waited on the socket before asking OpenSSL (T1) would
// never answer the second.
TEST_F(TlsSocketStreamTest, ARequestAlreadyReadAheadIsAnswered) {
  auto c = Connect();
  ASSERT_TRUE(c->Send("GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(c->ReadResponse().second, "/one");
  EXPECT_EQ(c->ReadResponse().second, "/two");
}

// A node that dies while its poll is held: the listener's one-byte watch
// read over TLS sees the connection end and tells the request's holder.
TEST_F(TlsSocketStreamTest, AClientThatLeavesWhileItsRequestIsHeldIsNoticed) {
  auto c = Connect();
  ASSERT_TRUE(c->Send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::unique_lock lock(handler_.mu);
  ASSERT_TRUE(handler_.cv.wait_for(lock, 10s, [&] { return handler_.held != nullptr; }));
  lock.unlock();
  c->Drop();
  lock.lock();
  EXPECT_TRUE(handler_.cv.wait_for(lock, 10s, [&] { return handler_.gone; }));
}

// A held request answered later still reaches a client that stayed, and
// the connection serves the next request (the watch's byte is kept).
TEST_F(TlsSocketStreamTest, AHeldRequestIsAnsweredAndTheConnectionServesTheNext) {
  auto c = Connect();
  ASSERT_TRUE(c->Send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n"));
  Responder respond;
  {
    std::unique_lock lock(handler_.mu);
    ASSERT_TRUE(handler_.cv.wait_for(lock, 10s, [&] { return handler_.held != nullptr; }));
    respond = std::move(handler_.held);
  }
  ASSERT_TRUE(c->Send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n"));  // read by the watch while held
  respond(HttpResponse{200, "text/plain", "answered"});
  EXPECT_EQ(c->ReadResponse().second, "answered");
  EXPECT_EQ(c->ReadResponse().second, "/next");
}

// Connections served on both I/O threads at once, each with requests whose
// responses the threads gather into their own scratch space (T3): every
// client reads exactly its own answers.
TEST_F(TlsSocketStreamTest, ConnectionsOnEveryThreadEachGetTheirOwnAnswers) {
  constexpr int kClients = 8, kRequests = 100;
  std::vector<std::thread> clients;
  std::atomic<int> wrong{0};
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      auto c = Connect();
      for (int r = 0; r < kRequests; ++r) {
        const std::string path = "/c" + std::to_string(i) + "/r" + std::to_string(r);
        if (!c->Send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n") || c->ReadResponse().second != path) ++wrong;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// A stranger who connects and never begins the handshake is dropped at the
// header timeout, like one who never finishes a request head.
TEST_F(TlsSocketStreamTest, AConnectionThatNeverHandshakesIsClosedAtTheHeaderTimeout) {
  testing::RawConnection silent(server_->port());
  ASSERT_TRUE(silent.connected());
  bool closed = false;
  EXPECT_EQ(silent.ReadUntilClose(&closed), "");
  EXPECT_TRUE(closed) << "the listener kept a silent connection open past its header timeout";
}

}  // namespace
}  // namespace nodeplane::wire
