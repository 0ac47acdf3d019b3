// The whole control plane in process (nodeplane_daemon's Daemon, from a TOML
// config) over real TLS on loopback, driven by the project's own client:
// revocation on every request (S11), renewal (R09), the trust bundle during
// a rotation (S12), the cache-policy route (S13) and the JIT routes with one
// source per target (WithTargetJIT). The revocation list, the JIT sources and
// the cache policy are C test plugins loaded through the ABI.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <thread>

#include "config/config_loader.h"
#include "nodeplaned/daemon.h"
#include "pki/authority.h"
#include "plane/protocol.h"
#include "wire/http_client.h"

namespace nodeplane {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

struct NodeCert {
  std::string cert_pem, key_pem, serial;
};

class WireTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-tls-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/state");
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Start(bool with_plugins = true) {
    const std::string tp = TEST_PLUGIN_DIR;
    std::string toml = R"(deployment = "acme"
state_dir = ")" + dir_ + R"(/state"
plugin_dir = ")" + PLUGIN_DIR + R"("
[log]
level = "error"
[wire]
listen = "127.0.0.1:0"
[wire.tls]
server_names = ["127.0.0.1"]
[tiers.a]
vcpu = 1
memory = "1GiB"
providers = ["process"]
command = ["/bin/true"]
target = "org-a"
runner_group = "builders"
labels = ["self-hosted", "a"]
[tiers.b]
vcpu = 1
memory = "1GiB"
providers = ["process"]
command = ["/bin/true"]
target = "org-b"
labels = ["b"]
[tiers.plain]
vcpu = 1
memory = "1GiB"
providers = ["process"]
command = ["/bin/true"]
[plugins.ledger]
library = "ledger-sqlite"
provides = ["ledger"]
[plugins.ledger.config]
path = "ledger.db"
)";
    if (with_plugins) {
      toml += R"([targets.org-a]
jit = "app-a"
[targets.org-b]
jit = "app-b"
[plugins.app-a]
library = ")" + tp + R"(/test-jit.so"
provides = ["jit"]
[plugins.app-a.config]
app = "A"
[plugins.app-b]
library = ")" + tp + R"(/test-jit.so"
provides = ["jit"]
[plugins.app-b.config]
app = "B"
[plugins.crl]
library = ")" + tp + R"(/test-revocation.so"
provides = ["revocation"]
[plugins.crl.config]
serials_file = ")" + dir_ + R"(/revoked.txt"
[plugins.cache]
library = ")" + tp + R"(/test-cache-policy.so"
provides = ["cache_policy"]
[plugins.cache.config]
deny_owner = "evil"
)";
    } else {
      // The catalogue still names targets; their sources are simply absent.
      std::string::size_type at;
      for (const char* key : {"target = \"org-", "runner_group = "}) {
        while ((at = toml.find(key)) != std::string::npos) toml.erase(at, toml.find('\n', at) - at + 1);
      }
    }
    auto loaded = config::LoadConfigText(toml, dir_ + "/nodeplane.toml");
    ASSERT_TRUE(loaded.ok()) << (loaded.errors.empty() ? "" : loaded.errors.front().ToString());
    auto d = Daemon::Start(*loaded.config, log_);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    daemon_ = std::move(*d);
  }

  // A certificate for `node` from the daemon's authority, recorded as issued.
  NodeCert Issue(const std::string& node, bool record = true) {
    auto issued = daemon_->authority()->IssueNode(node, NowNs());
    EXPECT_TRUE(issued.ok());
    auto info = pki::InspectCert(issued->first);
    EXPECT_TRUE(info.ok());
    if (record) {
      EXPECT_TRUE(daemon_->ledger().RecordIssuedCert({info->serial, node, "issued", info->not_after_ns, NowNs(), false})
                      .ok());
    }
    return NodeCert{issued->first, issued->second.private_pem, info->serial};
  }

  std::unique_ptr<wire::HttpClient> Client(const NodeCert& c, const std::string& ca_pem = "") {
    wire::ClientOptions o;
    o.host = "127.0.0.1";
    o.port = daemon_->wire_port();
    o.tls = wire::ClientTls{ca_pem.empty() ? daemon_->authority()->trust_bundle_pem() : ca_pem, "127.0.0.1",
                            c.cert_pem, c.key_pem, true};
    o.timeout = std::chrono::seconds(20);
    return std::make_unique<wire::HttpClient>(o);
  }

  wire::ClientResponse Call(wire::HttpClient& c, const std::string& method, const std::string& target,
                            const std::string& body = "", const std::string& incarnation = "i1") {
    auto r = c.Do(method, target, body, {{"Nodeplane-Incarnation", incarnation}});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : wire::ClientResponse{};
  }

  wire::ClientResponse Register(wire::HttpClient& c, const std::string& node, const std::string& inc = "i1") {
    return Call(c, "POST", "/v1/register",
                R"({"version":1,"node":")" + node + R"(","provider":"process","deployment":"acme","incarnation":")" +
                    inc + R"(","vcpu":4,"memory":8589934592})",
                inc);
  }

  std::string dir_;
  Logger log_{LogLevel::kError};
  std::unique_ptr<Daemon> daemon_;
};

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
  auto previous = pki::Authority::Create("acme", NowNs());
  auto current = pki::Authority::Create("acme", NowNs());
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

  auto from_old = previous->IssueNode("old", NowNs());
  auto from_new = current->IssueNode("new", NowNs());
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
  ports::Ledger& ledger = daemon_->ledger();

  auto launch_and_mint = [&](const std::string& tier, std::string* config) {
    auto leases = ledger.Escrow(tier, 1);
    ASSERT_TRUE(leases.ok() && leases->size() == 1) << leases.status().ToString();
    ports::Lease lease = leases->front();
    ASSERT_TRUE(ledger.Assign(lease.id, lease.epoch, 7, 42).ok());
    lease.phase = ports::Phase::kAssigned;
    plane::Job job{42, 7, "workflow_job", "acme", "repo", "ref"};
    auto launched = std::async(std::launch::async, [&] { return daemon_->plane().runner().Launch(lease, job); });
    // Wait on the plane's state: the launch is queued for one of the nodes.
    while (daemon_->plane().QueuedForTest("n1") + daemon_->plane().QueuedForTest("n2") == 0) {
      ASSERT_NE(launched.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "the launch found no node";
      std::this_thread::yield();
    }
    wire::ClientResponse cmd;
    for (auto* c : {n1.get(), n2.get()}) {
      const std::string node = c == n1.get() ? "n1" : "n2";
      if (daemon_->plane().QueuedForTest(node) == 0) continue;
      cmd = Call(*c, "POST", "/v1/nodes/" + node + "/poll");
      const std::string other = node == "n1" ? "n2" : "n1";
      wire::HttpClient& holder = *c;
      wire::HttpClient& stranger = node == "n1" ? *n2 : *n1;
      const std::string runner = plane::RunnerNameFor(lease.id);
      // Another node is not entitled; neither is a name nodeplane did not give.
      EXPECT_EQ(Call(stranger, "POST", "/v1/nodes/" + other + "/jit", R"({"runner_name":")" + runner + R"("})").status,
                403);
      EXPECT_EQ(Call(holder, "POST", "/v1/nodes/" + node + "/jit", R"({"runner_name":"my-runner"})").status, 403);
      auto minted = Call(holder, "POST", "/v1/nodes/" + node + "/jit",
                         R"({"runner_name":")" + runner + R"(","work_folder":"_work"})");
      if (minted.status == 200) {
        std::smatch m;
        ASSERT_TRUE(std::regex_search(minted.body, m, std::regex(R"re("config":"([^"]*)")re")));
        *config = m[1].str();
      } else {
        *config = "status " + std::to_string(minted.status) + " " + minted.body;
      }
      std::smatch id;
      ASSERT_TRUE(std::regex_search(cmd.body, id, std::regex(R"re("id":"([0-9a-f]{32})")re")));
      EXPECT_EQ(Call(holder, "POST", "/v1/nodes/" + node + "/result", R"({"id":")" + id[1].str() + R"(","ok":true})")
                    .status,
                204);
      break;
    }
    ASSERT_EQ(cmd.status, 200) << "no node was given the launch";
    EXPECT_TRUE(launched.get().ok());
  };
  std::string config;
  launch_and_mint("a", &config);
  EXPECT_EQ(config.rfind("jit:A:np-", 0), 0u) << config;
  EXPECT_NE(config.find(":set7:"), std::string::npos) << config;
  EXPECT_NE(config.find("self-hosted,a"), std::string::npos) << config;  // labels from the tier
  launch_and_mint("b", &config);
  EXPECT_EQ(config.rfind("jit:B:np-", 0), 0u) << config;
  launch_and_mint("plain", &config);
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
