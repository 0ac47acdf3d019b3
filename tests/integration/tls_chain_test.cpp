// What each side of the node wire puts in its Certificate message: its own
// certificate and the chain its PEM names, never the deployment CA, which the
// other side holds as its trust anchor. Left to itself OpenSSL builds that
// chain from the trust store on every handshake (verifying its own
// certificate to do so) and sends the CA along, for the peer to parse and
// throw away: a third of a restart storm's certificate work on both sides
// (docs/performance.md, "sixth pass"). Each test plays the other side with
// plain OpenSSL, which can see what arrived.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "common/units.h"
#include "pki/authority.h"
#include "wire/http_client.h"
#include "wire/http_server.h"

namespace nodeplane::wire {
namespace {

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using SslCtx = std::unique_ptr<SSL_CTX, SslCtxFree>;

// A context holding `cert_pem` and `key_pem` and trusting `ca_pem`, as both
// sides of the wire are set up.
SslCtx Context(const SSL_METHOD* method, const std::string& ca_pem, const std::string& cert_pem,
               const std::string& key_pem) {
  SslCtx ctx(SSL_CTX_new(method));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_3_VERSION);
  BIO* b = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), ca);
  X509_free(ca);
  b = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  b = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  SSL_CTX_use_certificate(ctx.get(), cert);
  SSL_CTX_use_PrivateKey(ctx.get(), key);
  X509_free(cert);
  EVP_PKEY_free(key);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return ctx;
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

class TlsChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = pki::Authority::Create("acme", WallNowNs());
    ASSERT_TRUE(ca.ok());
    ca_ = std::make_unique<pki::Authority>(*ca);
    auto server = ca_->IssueServer({"127.0.0.1"}, WallNowNs());
    auto node = ca_->IssueNode("n1", WallNowNs());
    ASSERT_TRUE(server.ok() && node.ok());
    server_cert_ = server->first;
    server_key_ = server->second.private_pem;
    node_cert_ = node->first;
    node_key_ = node->second.private_pem;
  }

  std::unique_ptr<pki::Authority> ca_;
  std::string server_cert_, server_key_, node_cert_, node_key_;
};

class Ok : public HttpHandler {
 public:
  void Handle(HttpRequest, Responder respond) override { respond(HttpResponse{200, "text/plain", "ok"}); }
};

// The listener as nodeplaned runs it: its certificate issued by the
// deployment CA, which is also in its store as the client authority.
TEST_F(TlsChainTest, TheListenerSendsItsCertificateWithoutTheAuthority) {
  Ok handler;
  Logger log{LogLevel::kError};
  ListenerOptions o;
  o.name = "wire";
  o.host = "127.0.0.1";
  o.tls = TlsOptions{server_cert_, server_key_, ca_->cert_pem(), true};
  HttpServer server(o, handler, log);
  ASSERT_TRUE(server.Start().ok());

  SslCtx ctx = Context(TLS_client_method(), ca_->cert_pem(), node_cert_, node_key_);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in addr = Loopback(server.port());
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  SSL* ssl = SSL_new(ctx.get());
  SSL_set_fd(ssl, fd);
  ASSERT_EQ(SSL_connect(ssl), 1);
  EXPECT_EQ(SSL_get_verify_result(ssl), X509_V_OK);  // the node still proves the server from its own CA
  // On a client the peer's chain starts with the peer's own certificate.
  EXPECT_EQ(sk_X509_num(SSL_get_peer_cert_chain(ssl)), 1);
  SSL_free(ssl);
  ::close(fd);
}

// nodeplane-node's client (HttpClient) with its node certificate, against a
// server that records what the node sent.
TEST_F(TlsChainTest, TheNodesClientSendsItsCertificateWithoutTheAuthority) {
  SslCtx ctx = Context(TLS_server_method(), ca_->cert_pem(), server_cert_, server_key_);
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = Loopback(0);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);

  int sent_beyond_its_own = -1;  // certificates the node sent besides its own
  long verified = -1;
  std::thread serve([&] {
    const int fd = ::accept(listener, nullptr, nullptr);
    SSL* ssl = SSL_new(ctx.get());
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      verified = SSL_get_verify_result(ssl);
      // On a server the peer's chain leaves the peer's own certificate out.
      sent_beyond_its_own = sk_X509_num(SSL_get_peer_cert_chain(ssl));
      char buf[4096];
      (void)SSL_read(ssl, buf, sizeof buf);
      const std::string reply = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
      SSL_write(ssl, reply.data(), static_cast<int>(reply.size()));
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    ::close(fd);
  });

  ClientOptions o;
  o.host = "127.0.0.1";
  o.port = ntohs(addr.sin_port);
  o.tls = ClientTls{ca_->cert_pem(), "127.0.0.1", node_cert_, node_key_};
  HttpClient client(o);
  auto r = client.Do("GET", "/");
  serve.join();
  ::close(listener);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(verified, X509_V_OK);
  EXPECT_EQ(sent_beyond_its_own, 0);
}

}  // namespace
}  // namespace nodeplane::wire
