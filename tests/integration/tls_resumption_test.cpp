// Session tickets on the listener and nodeplane-node's client
// (http_server.h, "Session resumption"): the rules that keep a resumed
// session to what a full handshake would have allowed, and the client's
// ticket following its certificate. The whole control plane's side (a
// restart, revocation, a CA retired) is in wire_resumption_test.cpp.
#include <gtest/gtest.h>
#include <openssl/rand.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "pki/authority.h"
#include "tls_test_peer.h"
#include "wire/http_client.h"
#include "wire/http_server.h"

namespace nodeplane::wire {
namespace {

// Answers with the serial of the certificate the connection proved.
class SerialEcho : public HttpHandler {
 public:
  void Handle(HttpRequest req, Responder respond) override {
    respond(HttpResponse{200, "text/plain", req.peer ? req.peer->serial : "none"});
  }
};

struct Node {
  std::string cert, key, serial;
  int64_t not_after_ns = 0;
};

class TlsResumptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = pki::Authority::Create("acme", Now());
    ASSERT_TRUE(ca.ok());
    ca_ = std::make_unique<pki::Authority>(*ca);
    auto server = ca_->IssueServer({"127.0.0.1"}, Now());
    ASSERT_TRUE(server.ok());
    server_cert_ = server->first;
    server_key_ = server->second.private_pem;
    keys_.assign(80, '\0');
    ASSERT_EQ(RAND_bytes(reinterpret_cast<unsigned char*>(keys_.data()), 80), 1);
  }

  Node IssueNode(const std::string& name) {
    auto issued = ca_->IssueNode(name, Now());
    EXPECT_TRUE(issued.ok());
    auto info = pki::InspectCert(issued->first);
    EXPECT_TRUE(info.ok());
    return Node{issued->first, issued->second.private_pem, info->serial, info->not_after_ns};
  }

  // The wire's listener, with tickets when `keys` is not empty, its wall
  // clock the test's. Two I/O threads, each with its own OpenSSL context
  // (http_server.cpp, note 8), deal connections in turn: a ticket one
  // sealed is opened by the other.
  std::unique_ptr<HttpServer> Listen(const std::string& keys) {
    ListenerOptions o;
    o.name = "wire";
    o.host = "127.0.0.1";
    o.threads = 2;
    o.tls = TlsOptions{server_cert_, server_key_, ca_->cert_pem(), true, keys, [this] { return clock_.load(); }};
    auto server = std::make_unique<HttpServer>(o, handler_, log_);
    EXPECT_TRUE(server->Start().ok());
    return server;
  }

  std::unique_ptr<HttpClient> Client(const HttpServer& server, const Node& n) {
    ClientOptions o;
    o.host = "127.0.0.1";
    o.port = server.port();
    o.tls = ClientTls{ca_->cert_pem(), "127.0.0.1", n.cert, n.key};
    return std::make_unique<HttpClient>(o);
  }

  static std::string Get(HttpClient& c) {
    auto r = c.Do("GET", "/");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->body : "";
  }

  std::unique_ptr<pki::Authority> ca_;
  std::string server_cert_, server_key_, keys_;
  std::atomic<int64_t> clock_{Now()};
  SerialEcho handler_;
  Logger log_{LogLevel::kError};
};

TEST_F(TlsResumptionTest, ATicketWhoseCertificateHasSinceExpiredMakesAFullHandshake) {
  auto server = Listen(keys_);
  Node n1 = IssueNode("n1");
  auto c = Client(*server, n1);
  EXPECT_EQ(Get(*c), n1.serial);
  c->Close();
  EXPECT_EQ(Get(*c), n1.serial);
  ASSERT_EQ(server->handshakes(true), 1u);  // resumed while the certificate is good
  clock_ = n1.not_after_ns + kSecondNs;
  c->Close();
  Get(*c);  // a full handshake: OpenSSL's own clock still finds the certificate good
  EXPECT_EQ(server->handshakes(true), 1u);
  EXPECT_EQ(server->handshakes(false), 2u);
}

// The ticket belongs to the certificate it was issued for: a node that
// renewed proves its new certificate in a full handshake, and is known by it.
TEST_F(TlsResumptionTest, TheClientOffersNoTicketOfItsPreviousCertificate) {
  auto server = Listen(keys_);
  Node before = IssueNode("n1"), after = IssueNode("n1");
  auto c = Client(*server, before);
  EXPECT_EQ(Get(*c), before.serial);
  c->SetTls(ClientTls{ca_->cert_pem(), "127.0.0.1", after.cert, after.key});
  EXPECT_EQ(Get(*c), after.serial);
  EXPECT_EQ(server->handshakes(true), 0u);
  c->Close();
  EXPECT_EQ(Get(*c), after.serial);  // the new certificate's own ticket resumes
  EXPECT_EQ(server->handshakes(true), 1u);
}

// Tickets a raw OpenSSL client was handed, by connection.
int tickets_received = 0;

int CountTicket(SSL*, SSL_SESSION*) {
  ++tickets_received;
  return 0;
}

class RawClient {
 public:
  RawClient(SSL_CTX* ctx, uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const sockaddr_in addr = Loopback(port);
    connected_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    ssl_ = SSL_new(ctx);
    SSL_set_fd(ssl_, fd_);
    connected_ = connected_ && SSL_connect(ssl_) == 1;
  }
  ~RawClient() {
    SSL_free(ssl_);
    ::close(fd_);
  }
  bool connected() const { return connected_; }
  // One request on the kept connection; the answer's body (a serial).
  std::string Get() {
    const std::string req = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (SSL_write(ssl_, req.data(), static_cast<int>(req.size())) <= 0) return "";
    std::string got;
    char buf[4096];
    size_t head = std::string::npos;
    size_t length = 0;
    while (head == std::string::npos || got.size() < head + 4 + length) {
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n <= 0) return "";
      got.append(buf, static_cast<size_t>(n));
      if (head == std::string::npos && (head = got.find("\r\n\r\n")) != std::string::npos) {
        const size_t at = got.find("Content-Length: ");
        length = at < head ? std::stoul(got.substr(at + 16)) : 0;
      }
    }
    return got.substr(head + 4);
  }

 private:
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  bool connected_ = false;
};

// A node stays connected for weeks and TLS 1.3 caps a ticket at seven days:
// a connection whose ticket is a day old is sent a fresh one with its next
// answer, so a restart finds every node holding one.
TEST_F(TlsResumptionTest, AConnectionOpenForADayIsSentAFreshTicket) {
  auto server = Listen(keys_);
  Node n1 = IssueNode("n1");
  SslCtx ctx = Context(TLS_client_method(), ca_->cert_pem(), n1.cert, n1.key);
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx.get(), CountTicket);
  tickets_received = 0;
  RawClient c(ctx.get(), server->port());
  ASSERT_TRUE(c.connected());
  EXPECT_EQ(c.Get(), n1.serial);
  EXPECT_EQ(tickets_received, 1);  // the handshake's
  clock_ += kDayNs - kSecondNs;
  EXPECT_EQ(c.Get(), n1.serial);
  EXPECT_EQ(tickets_received, 1);
  clock_ += kSecondNs;
  EXPECT_EQ(c.Get(), n1.serial);
  EXPECT_EQ(tickets_received, 2);
}

TEST_F(TlsResumptionTest, WithoutKeysNoTicketIsIssued) {
  auto server = Listen("");
  Node n1 = IssueNode("n1");
  SslCtx ctx = Context(TLS_client_method(), ca_->cert_pem(), n1.cert, n1.key);
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx.get(), CountTicket);
  tickets_received = 0;
  RawClient c(ctx.get(), server->port());
  ASSERT_TRUE(c.connected());
  EXPECT_EQ(c.Get(), n1.serial);
  clock_ += 2 * kDayNs;
  EXPECT_EQ(c.Get(), n1.serial);
  EXPECT_EQ(tickets_received, 0);
}

}  // namespace
}  // namespace nodeplane::wire
