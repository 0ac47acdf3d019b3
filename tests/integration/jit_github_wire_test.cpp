// WithTargetJIT (R10) end to end through the wire: the daemon holds two
// jit-github instances, each with its own GitHub App, against the GitHub
// fake. A node entitled to a launch mints its registration through the
// wire's JIT route, and the fake, which knows which App's installation token
// authorised each request, shows that a tier of target A was only ever
// minted with App A's credentials and B's with B's. A tier without a target
// is refused, and so is a tier whose target has no source (node_wire_test).
#include "github_doubles.h"
#include "wire_tls_fixture.h"

namespace nodeplane {
namespace {

class JitGithubWireTest : public WireTlsTest {
 protected:
  void StartWithTwoApps() {
    fake_ = std::make_unique<testing::GithubFake>(GITHUB_DOUBLES_DIR, dir_ + "/state");
    ASSERT_EQ(fake_->Start(), "");
    const std::string api = "http://127.0.0.1:" + std::to_string(fake_->port()) + "/api/v3";
    Start(true, R"([plugins.app-a]
library = "jit-github"
provides = ["jit"]
[plugins.app-a.config]
api_url = ")" + api + R"("
organization = "acme"
app_id = 11
private_key_file = "app-a.pem"
[plugins.app-b]
library = "jit-github"
provides = ["jit"]
[plugins.app-b.config]
api_url = ")" + api + R"("
organization = "globex"
client_id = "Iv1.bbb"
private_key_file = "app-b.pem"
)");
  }
  std::unique_ptr<testing::GithubFake> fake_;
};

TEST_F(JitGithubWireTest, R10_EachTiersRegistrationIsMintedWithItsOwnTargetsApp) {
  StartWithTwoApps();
  if (HasFatalFailure()) return;
  auto n1 = Client(Issue("n1")), n2 = Client(Issue("n2"));
  ASSERT_EQ(Register(*n1, "n1").status, 200);
  ASSERT_EQ(Register(*n2, "n2").status, 200);

  std::string config;
  LaunchAndMint("a", *n1, *n2, &config);
  ASSERT_EQ(config.rfind("status", 0), std::string::npos) << config;
  boost::json::object a = boost::json::parse(testing::Base64Decode(config)).as_object();
  EXPECT_EQ(a.at("app_id").as_int64(), 11);
  EXPECT_EQ(a.at("target").as_string(), "acme");
  EXPECT_EQ(boost::json::serialize(a.at("labels")), R"(["self-hosted","a"])");  // the tier's labels

  LaunchAndMint("b", *n1, *n2, &config);
  ASSERT_EQ(config.rfind("status", 0), std::string::npos) << config;
  boost::json::object b = boost::json::parse(testing::Base64Decode(config)).as_object();
  EXPECT_EQ(b.at("app_id").as_int64(), 22);
  EXPECT_EQ(b.at("target").as_string(), "globex");

  LaunchAndMint("plain", *n1, *n2, &config);
  EXPECT_EQ(config.rfind("status 403", 0), 0u) << config;

  // Every request to a target was authorised by that target's App.
  auto minted = fake_->Requests("POST .*/generate-jitconfig");
  ASSERT_EQ(minted.size(), 2u);
  for (const auto& r : fake_->Requests("/orgs/acme/")) EXPECT_EQ(r.at("app_id").as_int64(), 11) << r;
  for (const auto& r : fake_->Requests("/orgs/globex/")) EXPECT_EQ(r.at("app_id").as_int64(), 22) << r;
  // The tier's runner group, resolved through its target: "builders" (98).
  auto groups = fake_->Requests("GET /api/v3/orgs/acme/actions/runner-groups");
  EXPECT_EQ(groups.size(), 1u);
}

}  // namespace
}  // namespace nodeplane
