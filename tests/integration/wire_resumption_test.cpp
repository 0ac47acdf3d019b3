// TLS session resumption on the node wire, through the whole control plane
// (wire_tls_fixture.h): a node that connects again offers the ticket it was
// given and resumes without proving its key, after a restart too; what its
// certificate proved still governs every request, and a change of the
// deployment's trust ends every ticket (http_server.h, pki::Authority::
// SessionTicketKeys).
#include "nodeplaned/tls_setup.h"
#include "wire_tls_fixture.h"

namespace nodeplane {
namespace {

class WireResumptionTest : public WireTlsTest {
 protected:
  // The wire's completed handshakes of `kind` ("full", "resumed"), as the
  // metrics page counts them; -1 when the page has no such line.
  int64_t Handshakes(const std::string& kind) {
    const std::string text = daemon_->Metrics();
    const std::string key = "nodeplane_wire_tls_handshakes_total{kind=\"" + kind + "\"} ";
    const size_t at = text.find(key);
    return at == std::string::npos ? -1 : std::stoll(text.substr(at + key.size()));
  }

  // Stops the control plane and starts it again on the same port, as an
  // operator's restart does; the client's kept connection is dead after it.
  void Restart() {
    wire_port_ = daemon_->wire_port();
    daemon_.reset();
    Start();
    ASSERT_EQ(daemon_->wire_port(), wire_port_);
  }
};

TEST_F(WireResumptionTest, ANodeResumesItsSessionAfterThePlaneRestarts) {
  Start();
  NodeCert n1 = Issue("n1");
  auto c = Client(n1);
  ASSERT_EQ(Register(*c, "n1").status, 200);
  EXPECT_EQ(Handshakes("full"), 1);
  EXPECT_EQ(Handshakes("resumed"), 0);
  Restart();
  // The node saw its connection drop (its parked poll failed) and connects
  // again, with the ticket the plane's previous run sealed.
  c->Close();
  EXPECT_EQ(Register(*c, "n1").status, 200);
  EXPECT_EQ(Call(*c, "GET", "/v1/nodes/n1/launched").status, 200);
  EXPECT_EQ(Handshakes("resumed"), 1);
  EXPECT_EQ(Handshakes("full"), 0);
}

// S11: a resumed session proves nothing the revocation checks do not see.
TEST_F(WireResumptionTest, S11_ARevokedCertificateIsRefusedOverAResumedSession) {
  Start();
  NodeCert n1 = Issue("n1");
  auto c = Client(n1);
  ASSERT_EQ(Register(*c, "n1").status, 200);
  ASSERT_TRUE(daemon_->ledger().RevokeCert(n1.serial, "n1", "key lost").ok());
  c->Close();
  auto r = Call(*c, "GET", "/v1/nodes/n1/launched");
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("has been revoked"), std::string::npos) << r.body;
  EXPECT_EQ(Handshakes("resumed"), 1);
}

// A retired CA's certificates are refused from the next start (S12): a
// ticket sealed while that CA was trusted must not carry one past it.
TEST_F(WireResumptionTest, S12_ARetiredAuthoritysCertificateCannotResume) {
  Start();
  NodeCert n1 = Issue("n1");  // from the CA about to be rotated out
  const std::string old_ca = daemon_->authority()->cert_pem();
  ASSERT_TRUE(RotateAuthority(*config_, NowNs()).ok());
  Restart();
  ASSERT_TRUE(daemon_->authority()->rotating());
  auto c = Client(n1, daemon_->authority()->trust_bundle_pem());  // the node trusts both, as after renewing
  ASSERT_EQ(Register(*c, "n1").status, 200);                         // during the rotation: accepted, and ticketed
  ASSERT_TRUE(RetirePreviousAuthority(*config_).ok());
  Restart();
  c->Close();
  auto r = c->Do("GET", "/v1/nodes/n1/launched", "", {{"Nodeplane-Incarnation", "i1"}});
  EXPECT_FALSE(r.ok()) << "a certificate of the retired CA was served: " << r->status;
  EXPECT_EQ(Handshakes("resumed"), 0);
}

TEST_F(WireResumptionTest, WithSessionResumptionOffEveryHandshakeIsFull) {
  wire_tls_config_ = "session_resumption = false";
  Start();
  NodeCert n1 = Issue("n1");
  auto c = Client(n1);
  ASSERT_EQ(Register(*c, "n1").status, 200);
  c->Close();
  EXPECT_EQ(Call(*c, "GET", "/v1/nodes/n1/launched").status, 200);
  EXPECT_EQ(Handshakes("full"), 2);
  EXPECT_EQ(Handshakes("resumed"), 0);
}

}  // namespace
}  // namespace nodeplane
