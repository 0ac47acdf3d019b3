// The deployment CA: issue, sign, inspect, verify, and private files.
#include "common/units.h"
#include "pki/authority.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

namespace nodeplane::pki {
namespace {

TEST(Authority, CreatesACAForTheDeployment) {
  auto ca = Authority::Create("acme", WallNowNs());
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  auto info = InspectCert(ca->cert_pem());
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->is_ca);
  EXPECT_EQ(info->organization, "acme");
  EXPECT_EQ(info->common_name, "nodeplane acme CA");
  EXPECT_EQ(info->fingerprint.rfind("sha256:", 0), 0u);
  EXPECT_EQ(info->fingerprint.size(), 7u + 64u);
  EXPECT_NEAR(static_cast<double>(info->not_after_ns - info->not_before_ns),
              static_cast<double>(kCALifetimeNs + kSkewNs), 2e9);
  auto reloaded = Authority::Load(ca->cert_pem(), ca->key_pem());
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().ToString();
  EXPECT_EQ(reloaded->deployment(), "acme");
}

TEST(Authority, SignsANodeCSRWithTheApprovedNameNotTheRequestedOne) {
  auto ca = Authority::Create("acme", WallNowNs());
  auto keys = GenerateKey();
  ASSERT_TRUE(keys.ok());
  auto csr = MakeCSR(keys->private_pem, "i-wish-i-were-root");
  ASSERT_TRUE(csr.ok());
  auto cert = ca->SignNodeCSR(*csr, "node-7", WallNowNs());
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  auto info = InspectCert(*cert);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->common_name, "node-7");
  EXPECT_EQ(info->organization, "acme");
  EXPECT_FALSE(info->is_ca);
  EXPECT_NE(info->serial.front(), '0');
  EXPECT_TRUE(ca->Verify(*cert).ok());
  EXPECT_EQ(cert->find("PRIVATE"), std::string::npos);  // the key never crossed
}

// An independent check: the openssl command accepts the chain for client use.
TEST(Authority, TheOpensslCommandVerifiesANodeCertificate) {
  auto ca = Authority::Create("acme", WallNowNs());
  auto node = ca->IssueNode("node-3", WallNowNs());
  ASSERT_TRUE(node.ok());
  std::string dir = ::testing::TempDir() + "/np-pki-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::ofstream(dir + "/np-ca.pem") << ca->cert_pem();
  std::ofstream(dir + "/np-node.pem") << node->first;
  std::string cmd = "openssl verify -purpose sslclient -CAfile " + dir + "/np-ca.pem " + dir + "/np-node.pem >/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(Authority, ACertificateFromAnotherCAIsRefused) {
  auto ours = Authority::Create("acme", WallNowNs());
  auto theirs = Authority::Create("acme", WallNowNs());
  auto foreign = theirs->IssueNode("node-1", WallNowNs());
  ASSERT_TRUE(foreign.ok());
  EXPECT_EQ(ours->Verify(foreign->first).code(), Code::kRefused);
}

TEST(Authority, ALeafNeverOutlivesItsCA) {
  const int64_t now = WallNowNs();
  auto ca = Authority::Create("acme", now - kCALifetimeNs + 10LL * 86400 * 1'000'000'000);  // 10 days left
  auto node = ca->IssueNode("n1", now);
  ASSERT_TRUE(node.ok());
  auto leaf = InspectCert(node->first);
  auto root = InspectCert(ca->cert_pem());
  EXPECT_LE(leaf->not_after_ns, root->not_after_ns);
}

TEST(Authority, IssuesAServerCertificateForItsNames) {
  auto ca = Authority::Create("acme", WallNowNs());
  auto server = ca->IssueServer({"cp.example.com", "127.0.0.1"}, WallNowNs());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_TRUE(ca->Verify(server->first).ok());
  EXPECT_EQ(InspectCert(server->first)->common_name, "cp.example.com");
  EXPECT_FALSE(ca->IssueServer({}, WallNowNs()).ok());
}

TEST(Authority, RefusesACSRNotSignedByItsKey) {
  auto ca = Authority::Create("acme", WallNowNs());
  EXPECT_EQ(ca->SignNodeCSR("not a csr", "n1", WallNowNs()).status().code(), Code::kInvalid);
}

TEST(Authority, RenewalIsDueInTheLastThirdOfALifetime) {
  CertInfo c;
  c.not_before_ns = 0;
  c.not_after_ns = 300;
  EXPECT_FALSE(RenewalDue(c, 199));
  EXPECT_TRUE(RenewalDue(c, 201));
}

TEST(PrivateFiles, AreWritten0600EvenOverALooserFile) {
  std::string path = ::testing::TempDir() + "/np-key-" + std::to_string(::getpid()) + ".pem";
  std::ofstream(path) << "old";
  ::chmod(path.c_str(), 0644);
  ASSERT_TRUE(WritePrivateFile(path, "SECRET").ok());
  struct stat st{};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(path);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "SECRET");
}

}  // namespace
}  // namespace nodeplane::pki
