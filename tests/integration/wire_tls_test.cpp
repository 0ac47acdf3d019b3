// The whole control plane in process (nodeplane_daemon's Daemon, from a TOML
// config) over real TLS on loopback, driven by the project's own client:
// revocation on every request (S11), renewal (R09), the trust bundle during
// a rotation (S12), the cache-policy route (S13) and the JIT routes with one
// source per target (WithTargetJIT). The revocation list, the JIT sources and
// the cache policy are C test plugins loaded through the ABI.
#include "wire_tls_fixture.h"

namespace nodeplane {
namespace {


// Issue 17 #5 (R15, R16): over TLS the certificate names who is arriving.
// A registration whose body names another node, or cannot be decoded,
// discards only the certificate's own host's proof, never another's.
TEST_F(WireTlsTest, R15_R16_ARegistrationOverTLSDiscardsOnlyItsOwnHostsProof) {
  ledger_config_ = "barrier_grace_seconds = 0\n";  // one observation proves a host
  Start();
  NodeCert n2 = Issue("n2"), stranger = Issue("n1");
  auto c2 = Client(n2), attacker = Client(stranger);
  ASSERT_EQ(Register(*c2, "n2").status, 200);
  ports::Ledger& ledger = daemon_->ledger();
  auto admission = ledger.AdmissionGeneration();
  ASSERT_TRUE(admission.ok());
  ASSERT_TRUE(ledger.SetAdmission(true, admission->first, "test", "test").ok());
  auto barrier = ledger.RequestComputeBarrier("test");
  ASSERT_TRUE(barrier.ok());
  auto clear = [&] {
    auto c = ledger.ComputeClear();
    return c.ok() && *c;
  };
  auto prove = [&] {
    auto fence = ledger.NodeFenceOf("n2");
    ASSERT_TRUE(fence.ok() && fence->has_value());
    ASSERT_TRUE(ledger.RecordBarrierObservation({"n2", barrier->id, (*fence)->epoch, (*fence)->dispatch, true}).ok());
    ASSERT_TRUE(clear());
  };
  prove();
  // n1's certificate registering as n2: refused, and n2's proof stands.
  EXPECT_EQ(Register(*attacker, "n2", "x1").status, 403);
  EXPECT_TRUE(clear()) << "another host's registration erased n2's proof";
  // n1's certificate sending a body that does not decode: refused, and
  // still only n1 (which proved nothing) is discarded.
  EXPECT_EQ(Call(*attacker, "POST", "/v1/register", R"({"version":1,"node":"n2","from_the_future":true})", "x1").status,
            400);
  EXPECT_TRUE(clear()) << "an undecodable body over TLS erased every proof";
  // n2's own arrival discards its own proof, even when refused.
  EXPECT_EQ(Call(*c2, "POST", "/v1/register", R"({"version":1,"node":"n2","shiny":1})").status, 400);
  EXPECT_FALSE(clear());
}

// Issue 22 #3 (S11): a poll parked before its certificate was revoked is
// handed nothing. The revocation is checked again when a command is handed
// over (here the ledger alone knows, as when a revocation list changes), and
// the command goes back to the queue, untaken.
TEST_F(WireTlsTest, S11_APollParkedBeforeARevocationIsHandedNothing) {
  Start(/*with_plugins=*/false);
  NodeCert n1 = Issue("n1");
  auto c = Client(n1);
  ASSERT_EQ(Register(*c, "n1").status, 200);
  plane::Plane& plane = daemon_->plane();
  auto parked = std::async(std::launch::async, [&] { return Call(*c, "POST", "/v1/nodes/n1/poll"); });
  while (plane::PlaneTestPeer(plane).Waiters("n1") != 1) std::this_thread::yield();
  ports::Ledger& ledger = daemon_->ledger();
  ASSERT_TRUE(ledger.RevokeCert(n1.serial, "n1", "leaked").ok());
  auto leases = ledger.Escrow("plain", 1);
  ASSERT_TRUE(leases.ok() && leases->size() == 1);
  ports::Lease lease = leases->front();
  std::stop_source stop;
  auto launch = std::async(std::launch::async, [&] {
    return plane.runner().Launch(lease, protocol::Job{1, 1, "", "", "", ""}, stop.get_token());
  });
  wire::ClientResponse answer = parked.get();
  EXPECT_EQ(answer.status, 403) << answer.body;
  EXPECT_NE(answer.body.find("has been revoked"), std::string::npos) << answer.body;
  while (plane::PlaneTestPeer(plane).Queued("n1") != 1) std::this_thread::yield();  // given back, untaken
  EXPECT_EQ(plane::PlaneTestPeer(plane).InFlight("n1"), 0u);
  stop.request_stop();
  EXPECT_TRUE(plane::Is(launch.get(), plane::kNoNode));
}

// S11: a serial revoked in the ledger is refused on the very next request.
TEST_F(WireTlsTest, S11_ARevokedSerialIsRefusedOnTheNextRequest) {
  Start();
  NodeCert n1 = Issue("n1");
  auto c = Client(n1);
  ASSERT_EQ(Register(*c, "n1").status, 200);
  ASSERT_TRUE(daemon_->ledger().RevokeCert(n1.serial, "n1", "key lost").ok());
  auto r = Call(*c, "GET", "/v1/nodes/n1/launched");
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("has been revoked"), std::string::npos) << r.body;
  EXPECT_EQ(Register(*c, "n1").status, 403);  // registration too
}

// S11: the per-node cut-off reaches certificates whose serials were never recorded.
TEST_F(WireTlsTest, S11_ANodeCutOffRefusesEvenAnUnrecordedCertificate) {
  Start();
  NodeCert n1 = Issue("n1", /*record=*/false);
  auto c = Client(n1);
  ASSERT_EQ(Register(*c, "n1").status, 200);
  ASSERT_TRUE(daemon_->ledger().RevokeNode("n1", "decommissioned").ok());
  EXPECT_EQ(Call(*c, "GET", "/v1/nodes/n1/launched").status, 403);
}

// S11: a revocation-list plugin revokes beside the ledger, and a list that
// cannot answer refuses every request (fails closed) until it can again.
TEST_F(WireTlsTest, S11_ARevocationListPluginIsConsultedOnEveryRequestAndFailsClosed) {
  Start();
  NodeCert n1 = Issue("n1"), n2 = Issue("n2");
  auto c1 = Client(n1), c2 = Client(n2);
  ASSERT_EQ(Register(*c1, "n1").status, 200);
  ASSERT_EQ(Register(*c2, "n2").status, 200);
  WriteFile(dir_ + "/revoked.txt", n1.serial + "\n");
  EXPECT_EQ(Call(*c1, "GET", "/v1/nodes/n1/launched").status, 403);
  EXPECT_EQ(Call(*c2, "GET", "/v1/nodes/n2/launched").status, 200);
  WriteFile(dir_ + "/revoked.txt", "unreadable\n");
  auto r = Call(*c2, "GET", "/v1/nodes/n2/launched");
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("\"unavailable\""), std::string::npos) << r.body;
  WriteFile(dir_ + "/revoked.txt", "");
  EXPECT_EQ(Call(*c2, "GET", "/v1/nodes/n2/launched").status, 200);
}

// R09, R40: renewal is authenticated by the certificate being replaced,
// names the authenticated node whatever the CSR asks for, is recorded, and
// the old certificate can then be revoked while the new one serves.
TEST_F(WireTlsTest, R09_RenewalReplacesTheCertificateAndTheOldOneCanThenBeRevoked) {
  Start();
  NodeCert old = Issue("n1");
  auto c = Client(old);
  ASSERT_EQ(Register(*c, "n1").status, 200);
  auto key = pki::GenerateKey();
  ASSERT_TRUE(key.ok());
  auto csr = pki::MakeCSR(key->private_pem, "n2");  // asks for another name: ignored
  ASSERT_TRUE(csr.ok());
  std::string body = R"({"csr_pem":")" + std::regex_replace(*csr, std::regex("\n"), "\\n") + R"("})";
  auto r = Call(*c, "POST", "/v1/nodes/n1/renew", body);
  ASSERT_EQ(r.status, 200) << r.body;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.body, m, std::regex(R"re("cert_pem":"([^"]+)")re")));
  std::string cert = std::regex_replace(m[1].str(), std::regex(R"(\\n)"), "\n");
  auto info = pki::InspectCert(cert);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->common_name, "n1");
  EXPECT_NE(r.body.find("\"ca_pem\""), std::string::npos);
  auto certs = daemon_->ledger().ListCerts("n1");
  ASSERT_TRUE(certs.ok());
  ASSERT_EQ(certs->size(), 2u);
  EXPECT_EQ((*certs)[1].serial, info->serial);
  EXPECT_EQ((*certs)[1].source, "renewed");

  NodeCert renewed{cert, key->private_pem, info->serial};
  auto c2 = Client(renewed);
  ASSERT_EQ(Call(*c2, "GET", "/v1/nodes/n1/launched").status, 200);
  ASSERT_TRUE(daemon_->ledger().RevokeCert(old.serial, "n1", "replaced").ok());
  EXPECT_EQ(Call(*c, "GET", "/v1/nodes/n1/launched").status, 403);
  EXPECT_EQ(Call(*c2, "GET", "/v1/nodes/n1/launched").status, 200);
  // A revoked certificate cannot renew itself back to life.
  EXPECT_EQ(Call(*c, "POST", "/v1/nodes/n1/renew", body).status, 403);
}

// S12: during a rotation the trust bundle holds both CAs, current first;
// certificates of either are accepted, and the server's certificate still
// verifies for a node that knows only the previous CA.
TEST_F(WireTlsTest, S12_DuringARotationBothAuthoritiesAreTrusted) {
  auto previous = pki::Authority::Create("acme", WallNowNs());
  auto current = pki::Authority::Create("acme", WallNowNs());
  ASSERT_TRUE(previous.ok() && current.ok());
  const std::string s = dir_ + "/state";
  WriteFile(s + "/ca.pem", current->cert_pem());
  ASSERT_TRUE(pki::WritePrivateFile(s + "/ca.key", current->key_pem()).ok());
  WriteFile(s + "/ca-previous.pem", previous->cert_pem());
  ASSERT_TRUE(pki::WritePrivateFile(s + "/ca-previous.key", previous->key_pem()).ok());
  Start();
  const pki::Authority& a = *daemon_->authority();
  ASSERT_TRUE(a.rotating());
  EXPECT_EQ(a.trust_bundle_pem(), current->cert_pem() + previous->cert_pem());

  auto from_old = previous->IssueNode("old", WallNowNs());
  auto from_new = current->IssueNode("new", WallNowNs());
  ASSERT_TRUE(from_old.ok() && from_new.ok());
  auto c_old = Client({from_old->first, from_old->second.private_pem, ""}, previous->cert_pem());
  EXPECT_EQ(Register(*c_old, "old").status, 200);  // verified the server with the previous CA alone
  auto c_new = Client({from_new->first, from_new->second.private_pem, ""});
  EXPECT_EQ(Register(*c_new, "new").status, 200);
  // New certificates come from the current CA.
  NodeCert issued = Issue("n3");
  EXPECT_TRUE(pki::Authority::Load(current->cert_pem(), current->key_pem())->Verify(issued.cert_pem).ok());
}

// S13: the cache kill switch is answered by the cache-policy plugin.
TEST_F(WireTlsTest, S13_TheCachePolicyRouteAnswersFromThePlugin) {
  Start();
  auto c = Client(Issue("n1"));
  EXPECT_EQ(Call(*c, "GET", "/v1/nodes/n1/cache-policy?owner=good%20corp&repository=x").status, 401);  // S03 first
  ASSERT_EQ(Register(*c, "n1").status, 200);
  auto denied = Call(*c, "GET", "/v1/nodes/n1/cache-policy?owner=evil&repository=x");
  EXPECT_EQ(denied.status, 200);
  EXPECT_EQ(denied.body, "{\"allowed\":false}\n");
  auto allowed = Call(*c, "GET", "/v1/nodes/n1/cache-policy?owner=good%20corp&repository=x");
  EXPECT_EQ(allowed.body, "{\"allowed\":true}\n");
}

TEST_F(WireTlsTest, WithoutPluginsTheCachePolicyAndJitRoutesAnswer503) {
  Start(/*with_plugins=*/false);
  auto c = Client(Issue("n1"));
  ASSERT_EQ(Register(*c, "n1").status, 200);
  EXPECT_EQ(Call(*c, "GET", "/v1/nodes/n1/cache-policy?owner=o&repository=r").status, 503);
}

// WithTargetJIT: only the process executing a launch may mint for its lease,
// with the source of the lease's tier's target, never another's.
TEST_F(WireTlsTest, JitIsMintedOnlyForAnEntitledLaunchWithTheTiersOwnTarget) {
  Start();
  auto n1 = Client(Issue("n1")), n2 = Client(Issue("n2"));
  ASSERT_EQ(Register(*n1, "n1").status, 200);
  ASSERT_EQ(Register(*n2, "n2").status, 200);
  std::string config;
  LaunchAndMint("a", *n1, *n2, &config);
  EXPECT_EQ(config.rfind("jit:A:np-", 0), 0u) << config;
  EXPECT_NE(config.find(":set7:"), std::string::npos) << config;
  EXPECT_NE(config.find("self-hosted,a"), std::string::npos) << config;  // labels from the tier
  LaunchAndMint("b", *n1, *n2, &config);
  EXPECT_EQ(config.rfind("jit:B:np-", 0), 0u) << config;
  LaunchAndMint("plain", *n1, *n2, &config);
  EXPECT_EQ(config.rfind("status 403", 0), 0u) << config;
  EXPECT_NE(config.find("has no target"), std::string::npos) << config;
}

TEST_F(WireTlsTest, DescribeResolvesTheTiersRunnerGroupThroughItsTarget) {
  Start();
  auto c = Client(Issue("n1"));
  ASSERT_EQ(Register(*c, "n1").status, 200);
  auto r = Call(*c, "POST", "/v1/nodes/n1/describe", R"({"tier":"a"})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"found\":true,\"id\":7,\"name\":\"builders\",\"labels\":[\"self-hosted\"]}\n");
  EXPECT_EQ(Call(*c, "POST", "/v1/nodes/n1/describe", R"({"tier":"nope"})").status, 403);
}

}  // namespace
}  // namespace nodeplane
