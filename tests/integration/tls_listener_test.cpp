// The listener over TLS, driven by curl as an independent client: TLS 1.3
// only, a client certificate demanded in the handshake and taken as the
// node's identity, certificates from another authority refused, and a
// listener that demands none serving strangers.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/units.h"
#include "pki/authority.h"
#include "plane/plane.h"
#include "wire/http_server.h"
#include "wire/node_wire.h"

namespace nodeplane::wire {
namespace {

// Answers with the identity the handshake established.
class WhoAmI : public HttpHandler {
 public:
  void Handle(HttpRequest r, Responder respond) override {
    respond(HttpResponse{200, "text/plain", "cn=" + (r.peer ? r.peer->common_name : std::string()) + " tls=" + (r.tls ? "1" : "0")});
  }
};

class TlsListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-tls-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto ca = pki::Authority::Create("acme", WallNowNs());
    ASSERT_TRUE(ca.ok());
    ca_ = std::make_unique<pki::Authority>(*ca);
    auto server = ca_->IssueServer({"127.0.0.1"}, WallNowNs());
    ASSERT_TRUE(server.ok());
    server_cert_ = server->first;
    server_key_ = server->second.private_pem;
    Write("ca.pem", ca_->cert_pem());
    auto node = ca_->IssueNode("n1", WallNowNs());
    Write("n1.pem", node->first);
    Write("n1.key", node->second.private_pem);
    auto other = pki::Authority::Create("acme", WallNowNs());
    auto stranger = other->IssueNode("n1", WallNowNs());
    Write("stranger.pem", stranger->first);
    Write("stranger.key", stranger->second.private_pem);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& content) { std::ofstream(dir_ + "/" + name) << content; }

  std::unique_ptr<HttpServer> Serve(bool require_client_cert) {
    ListenerOptions o;
    o.name = "tls";
    o.host = "127.0.0.1";
    o.tls = TlsOptions{server_cert_, server_key_, ca_->cert_pem(), require_client_cert};
    auto s = std::make_unique<HttpServer>(o, handler_, log_);
    Status st = s->Start();
    EXPECT_TRUE(st.ok()) << st.ToString();
    return s;
  }
  // curl's exit code; its output in *out.
  int Curl(uint16_t port, const std::string& args, std::string* out) {
    std::string file = dir_ + "/curl.out";
    std::string cmd = "curl -sS --max-time 10 --cacert " + dir_ + "/ca.pem " + args + " https://127.0.0.1:" +
                      std::to_string(port) + "/ >" + file + " 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream in(file);
    std::stringstream ss;
    ss << in.rdbuf();
    *out = ss.str();
    return WEXITSTATUS(rc);
  }
  std::string Cert(const std::string& who) {
    return "--cert " + dir_ + "/" + who + ".pem --key " + dir_ + "/" + who + ".key";
  }

  std::string dir_, server_cert_, server_key_;
  std::unique_ptr<pki::Authority> ca_;
  WhoAmI handler_;
  Logger log_{LogLevel::kError};
};

TEST_F(TlsListenerTest, TheCertificateDecidesWhoIsAsking) {
  auto s = Serve(true);
  std::string out;
  ASSERT_EQ(Curl(s->port(), Cert("n1"), &out), 0) << out;
  EXPECT_EQ(out, "cn=n1 tls=1");
}

TEST_F(TlsListenerTest, AnAnonymousConnectionIsRefusedInTheHandshake) {
  auto s = Serve(true);
  std::string out;
  EXPECT_NE(Curl(s->port(), "", &out), 0);
  EXPECT_EQ(out.find("cn="), std::string::npos) << out;
}

TEST_F(TlsListenerTest, ACertificateFromAnotherAuthorityIsRefused) {
  auto s = Serve(true);
  std::string out;
  EXPECT_NE(Curl(s->port(), Cert("stranger"), &out), 0);
  EXPECT_EQ(out.find("cn="), std::string::npos) << out;
}

TEST_F(TlsListenerTest, OnlyTLS13IsSpoken) {
  auto s = Serve(true);
  std::string out;
  EXPECT_NE(Curl(s->port(), Cert("n1") + " --tls-max 1.2", &out), 0);
  EXPECT_EQ(out.find("cn="), std::string::npos) << out;
}

TEST_F(TlsListenerTest, AListenerThatDemandsNoCertificateServesStrangers) {
  auto s = Serve(false);
  std::string out;
  ASSERT_EQ(Curl(s->port(), "", &out), 0) << out;
  EXPECT_EQ(out, "cn= tls=1");
}

// R08: with client certificates required, the certificate decides the node's
// name; a request whose path disagrees is rejected, not reconciled.
TEST_F(TlsListenerTest, R08_APathThatDisagreesWithTheCertificateIsRefused) {
  plane::PlaneOptions po;
  po.deployment = "acme";
  plane::Plane plane(po);
  NodeWireOptions w;
  w.deployment = "acme";
  w.log = &log_;
  w.plane = &plane;
  NodeWire routes(std::move(w));
  ListenerOptions o;
  o.name = "wire";
  o.host = "127.0.0.1";
  o.tls = TlsOptions{server_cert_, server_key_, ca_->cert_pem(), true};
  HttpServer s(o, routes, log_);
  ASSERT_TRUE(s.Start().ok());
  std::string out;
  ASSERT_EQ(Curl(s.port(), Cert("n1") + " -X POST -w ' %{http_code}'", &out), 0) << out;  // GET / on the wire: 404
  EXPECT_NE(out.find(" 404"), std::string::npos) << out;
  std::string other = "-X POST -w ' %{http_code}' -H 'Nodeplane-Incarnation: i1'";
  int rc = std::system(("curl -sS --max-time 10 --cacert " + dir_ + "/ca.pem " + Cert("n1") + " " + other +
                        " https://127.0.0.1:" + std::to_string(s.port()) + "/v1/nodes/n2/poll >" + dir_ +
                        "/wire.out 2>&1")
                           .c_str());
  ASSERT_EQ(WEXITSTATUS(rc), 0);
  std::ifstream in(dir_ + "/wire.out");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find(R"(authenticated as node \"n1\" and cannot act for \"n2\")"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find(" 403"), std::string::npos) << ss.str();
}

TEST_F(TlsListenerTest, AnUnusableServerKeyIsReportedAtStart) {
  ListenerOptions o;
  o.name = "tls";
  o.host = "127.0.0.1";
  o.tls = TlsOptions{server_cert_, "not a key", ca_->cert_pem(), true};
  HttpServer s(o, handler_, log_);
  Status st = s.Start();
  EXPECT_EQ(st.code(), Code::kInvalid);
  EXPECT_NE(st.message().find("server certificate or key is unusable"), std::string::npos);
  EXPECT_EQ(st.message().find("BEGIN"), std::string::npos);  // no key material in the message
}

}  // namespace
}  // namespace nodeplane::wire
