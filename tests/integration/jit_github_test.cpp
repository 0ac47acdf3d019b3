// The jit-github plugin, loaded through the host's loader as nodeplaned
// loads it, against two test doubles of GitHub's REST API:
//   - the stateful fake (tests/github/fake_github.mjs) for the flows that
//     need state: token expiry and revocation, create → list → delete,
//     a lost answer's 409, rate limits, 5xx and timeouts; it verifies every
//     App JWT with jose, an implementation independent of ours;
//   - Prism serving GitHub's own OpenAPI description of GHES 3.19 with
//     request validation, so every request the plugin sends is checked
//     against GitHub's schema.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "free_port.h"
#include "github_doubles.h"
#include "loader/host_services.h"
#include "loader/jit_adapter.h"
#include "loader/plugin_library.h"
#include "wire/http_client.h"

namespace nodeplane {
namespace {

namespace json = boost::json;
using testing::Child;
using testing::ReadAll;
using testing::WriteText;

constexpr int64_t kSecond = 1'000'000'000;
const std::string kDoubles = GITHUB_DOUBLES_DIR;

std::string TempDir(const char* name) {
  std::string tmpl = ::testing::TempDir() + "/" + name + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp");
  return tmpl;
}

// One plugin instance with a log of its own, read back by the secrecy checks.
class PluginUnderTest {
 public:
  explicit PluginUnderTest(const std::string& dir)
      : log_path_(dir + "/host.log"),
        log_file_(std::fopen(log_path_.c_str(), "w")),
        log_(LogLevel::kDebug, LogFormat::kLogfmt, log_file_),
        host_(log_, dir) {}
  ~PluginUnderTest() {
    source_.reset();
    std::fclose(log_file_);
  }
  // Creates the instance; an error comes back as the status.
  Status Create(const std::string& config_json, bool validate_only = false) {
    auto lib = loader::PluginLibrary::Open(std::string(PLUGIN_DIR) + "/jit-github.so", "", host_.c());
    if (!lib.ok()) return lib.status();
    auto made = loader::JitAdapter::Create(*lib, "github-test", config_json, host_.c(), validate_only);
    if (!made.ok()) return made.status();
    source_ = std::move(*made);
    return Status::Ok();
  }
  ports::JitSource& source() { return *source_; }
  std::string LogText() {
    std::fflush(log_file_);
    return ReadAll(log_path_);
  }

 private:
  std::string log_path_;
  std::FILE* log_file_;
  Logger log_;
  loader::HostServices host_;
  std::unique_ptr<loader::JitAdapter> source_;
};

// ---- the stateful fake -------------------------------------------------

class GithubFakeTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TempDir("np-github"); }
  void TearDown() override {
    plugin_.reset();
    fake_.reset();
    std::filesystem::remove_all(dir_);
  }

  void StartFake(int runner_groups = 3) {
    fake_ = std::make_unique<testing::GithubFake>(kDoubles, dir_);
    const std::string failed = fake_->Start(runner_groups);
    ASSERT_EQ(failed, "");
    port_ = fake_->port();
  }

  // Config for App A on acme (or `target`), against the fake.
  std::string AppA(const std::string& extra = "", const std::string& target = R"("organization":"acme")") {
    return "{\"api_url\":\"http://127.0.0.1:" + std::to_string(port_) + "/api/v3\"," + target +
           R"(,"app_id":11,"private_key_file":"app-a.pem","timeout_seconds":2)" + extra + "}";
  }

  PluginUnderTest& Plugin(const std::string& config) {
    plugin_ = std::make_unique<PluginUnderTest>(dir_);
    Status s = plugin_->Create(config);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return *plugin_;
  }

  json::value Control(const std::string& method, const std::string& path, const std::string& body = "") {
    return fake_->Control(method, path, body);
  }
  int Requests(const std::string& pattern) { return static_cast<int>(fake_->Requests(pattern).size()); }
  void Fault(const std::string& match, int status, int times, const std::string& headers = "{}", int delay_ms = 0) {
    fake_->Fault(match, status, times, headers, delay_ms);
  }
  ports::JitRequest Request(const std::string& name, int64_t group = 99) {
    return ports::JitRequest{group, name, {"self-hosted", "linux"}, "_work"};
  }
  // The JSON inside a minted encoded config (the fake's own format).
  static json::object Decoded(const std::string& encoded) { return json::parse(testing::Base64Decode(encoded)).as_object(); }

  std::string dir_;
  uint16_t port_ = 0;
  std::unique_ptr<testing::GithubFake> fake_;
  std::unique_ptr<PluginUnderTest> plugin_;
};

TEST_F(GithubFakeTest, TheAppJwtIsRs256WithIssIatAndExpAsGithubAsksAndJoseVerifiesIt) {
  StartFake();
  auto& p = Plugin(AppA());
  auto set = p.source().Describe("builders-acme");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->id, 99);
  json::array checks = Control("GET", "/_fake/jwt_checks").as_array();
  ASSERT_EQ(checks.size(), 2u);  // the installation lookup and the token
  const int64_t now = std::time(nullptr);
  for (const json::value& c : checks) {
    EXPECT_TRUE(c.at("ok").as_bool()) << json::serialize(c);
    EXPECT_EQ(c.at("alg").as_string(), "RS256");
    EXPECT_EQ(c.at("iss").as_string(), "11");
    const int64_t iat = c.at("iat").as_int64(), exp = c.at("exp").as_int64();
    EXPECT_NEAR(static_cast<double>(now - iat), 60.0, 5.0);  // 60 s in the past, for drift
    EXPECT_LT(exp - now, 600);                             // under 10 minutes ahead
    EXPECT_GT(exp, now);
  }
}

TEST_F(GithubFakeTest, AClientIdIsTheIssuerWhenConfigured) {
  StartFake();
  auto& p = Plugin("{\"api_url\":\"http://127.0.0.1:" + std::to_string(port_) +
                   R"(","organization":"globex","client_id":"Iv1.bbb","private_key_file":"app-b.pem"})");
  ASSERT_TRUE(p.source().Describe("").ok());
  json::array checks = Control("GET", "/_fake/jwt_checks").as_array();
  ASSERT_FALSE(checks.empty());
  EXPECT_EQ(checks.back().at("iss").as_string(), "Iv1.bbb");
  EXPECT_TRUE(checks.back().at("ok").as_bool()) << json::serialize(checks.back());
}

TEST_F(GithubFakeTest, TheInstallationTokenIsReusedAndRefreshedBeforeItExpires) {
  StartFake();
  auto& p = Plugin(AppA(R"(,"describe_ttl_seconds":0)"));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(p.source().Describe("").ok());
  EXPECT_EQ(Requests("POST .*/access_tokens"), 1);  // one token for three calls
  EXPECT_EQ(Requests("GET .*/installation$"), 1);   // looked up once
  // A token with less than the 5-minute margin left serves its own request
  // and is replaced for the next.
  Control("POST", "/_fake/revoke_tokens");
  Control("POST", "/_fake/token_ttl", R"({"seconds":240})");
  ASSERT_TRUE(p.source().Describe("").ok());  // 401, then a fresh (short) token
  ASSERT_TRUE(p.source().Describe("").ok());  // refreshed before it is used
  EXPECT_EQ(Requests("POST .*/access_tokens"), 3);
}

TEST_F(GithubFakeTest, ARevokedTokenIsReplacedOnceOnA401) {
  StartFake();
  auto& p = Plugin(AppA(R"(,"describe_ttl_seconds":0)"));
  ASSERT_TRUE(p.source().Describe("").ok());
  Control("POST", "/_fake/revoke_tokens");
  auto again = p.source().Describe("");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(Requests("POST .*/access_tokens"), 2);
  EXPECT_NE(p.LogText().find("github.token_refused"), std::string::npos);
}

TEST_F(GithubFakeTest, ARunnerIsCreatedFoundByNameRemovedAndThenGone) {
  StartFake();
  auto& p = Plugin(AppA());
  auto group = p.source().Describe("builders-acme");
  ASSERT_TRUE(group.ok());
  auto minted = p.source().MintJitConfig(Request("np-lease-1", group->id));
  ASSERT_TRUE(minted.ok()) << minted.status().ToString();
  EXPECT_EQ(minted->runner_name, "np-lease-1");
  json::object config = Decoded(minted->encoded_config);
  EXPECT_EQ(config.at("app_id").as_int64(), 11);
  EXPECT_EQ(config.at("work_folder").as_string(), "_work");
  EXPECT_EQ(json::serialize(config.at("labels")), R"(["self-hosted","linux"])");

  auto state = p.source().RecoverRunner("np-lease-1");
  ASSERT_TRUE(state.ok());
  EXPECT_TRUE(state->present);
  EXPECT_FALSE(state->busy);
  EXPECT_EQ(state->runner_id, minted->runner_id);
  EXPECT_FALSE(p.source().RecoverRunner("np-lease-").value().present);  // names match exactly

  Control("POST", "/_fake/busy", R"({"name":"np-lease-1","busy":true})");
  EXPECT_TRUE(p.source().RecoverRunner("np-lease-1").value().busy);
  Status busy = p.source().RemoveRunner(0, "np-lease-1");
  EXPECT_EQ(busy.code(), Code::kConflict) << busy.ToString();
  Control("POST", "/_fake/busy", R"({"name":"np-lease-1","busy":false})");

  // Issue 17 #6 (R24): an id names a runner only with its name: another
  // lease's runner is never removed by id.
  auto other = p.source().MintJitConfig(Request("np-lease-2", group->id));
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  Status wrong = p.source().RemoveRunner(other->runner_id, "np-lease-1");
  EXPECT_EQ(wrong.code(), Code::kConflict) << wrong.ToString();
  EXPECT_TRUE(p.source().RecoverRunner("np-lease-2").value().present);
  EXPECT_TRUE(p.source().RemoveRunner(0, "np-lease-1").ok());  // found by name
  EXPECT_FALSE(p.source().RecoverRunner("np-lease-1").value().present);
  EXPECT_TRUE(p.source().RemoveRunner(0, "np-lease-1").ok());                // already gone
  EXPECT_TRUE(p.source().RemoveRunner(minted->runner_id, "np-lease-1").ok());  // by id, gone: 404 is success
  EXPECT_EQ(Requests("DELETE .*/actions/runners/[0-9]+$"), 2);  // busy (422), removed; the gone one is read, not deleted
}

TEST_F(GithubFakeTest, ANameTakenByALostAnswerIsRemovedAndMintedAgain) {
  StartFake();
  auto& p = Plugin(AppA());
  auto first = p.source().MintJitConfig(Request("np-lease-2"));
  ASSERT_TRUE(first.ok());
  // The node asks again (its first answer was lost): 409 → remove → mint.
  auto second = p.source().MintJitConfig(Request("np-lease-2"));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_NE(second->runner_id, first->runner_id);
  auto runners = Control("GET", "/_fake/runners").as_object().at("acme").as_array();
  ASSERT_EQ(runners.size(), 1u);
  EXPECT_EQ(runners[0].at("id").as_int64(), second->runner_id);
  // A runner of that name that is running a job is left alone.
  Control("POST", "/_fake/busy", R"({"name":"np-lease-2","busy":true})");
  EXPECT_EQ(p.source().MintJitConfig(Request("np-lease-2")).status().code(), Code::kConflict);
}

TEST_F(GithubFakeTest, RateLimitsAreUnavailableWithGithubsRetryAfterAndAreNotRetried) {
  StartFake();
  auto& p = Plugin(AppA());
  ASSERT_TRUE(p.source().Describe("builders-acme").ok());
  // A secondary limit: 429 with Retry-After.
  Fault("POST .*/generate-jitconfig", 429, 1, R"({"retry-after":"42"})");
  auto limited = p.source().MintJitConfig(Request("np-lease-3"));
  ASSERT_EQ(limited.status().code(), Code::kUnavailable) << limited.status().ToString();
  EXPECT_TRUE(limited.status().retryable());
  EXPECT_EQ(limited.status().retry_after_ns(), 42 * kSecond);
  EXPECT_NE(limited.status().message().find("rate limit"), std::string::npos);
  EXPECT_EQ(Requests("POST .*/generate-jitconfig"), 1);  // GitHub bans clients that keep calling
  // A primary limit: 403 with x-ratelimit-remaining 0 until x-ratelimit-reset.
  const int64_t reset = std::time(nullptr) + 120;
  Fault("POST .*/generate-jitconfig", 403, 1,
        R"({"x-ratelimit-remaining":"0","x-ratelimit-reset":")" + std::to_string(reset) + R"("})");
  auto primary = p.source().MintJitConfig(Request("np-lease-3"));
  ASSERT_EQ(primary.status().code(), Code::kUnavailable) << primary.status().ToString();
  EXPECT_NEAR(static_cast<double>(primary.status().retry_after_ns()) / kSecond, 120.0, 5.0);
  EXPECT_TRUE(p.source().MintJitConfig(Request("np-lease-3")).ok());  // and it heals
}

TEST_F(GithubFakeTest, ServerErrorsAndTimeoutsAreRetriedWithBackoffThenUnavailable) {
  StartFake();
  auto& p = Plugin(AppA());
  ASSERT_TRUE(p.source().Describe("builders-acme").ok());
  Fault("POST .*/generate-jitconfig", 502, 2);
  auto healed = p.source().MintJitConfig(Request("np-lease-4"));
  ASSERT_TRUE(healed.ok()) << healed.status().ToString();
  EXPECT_EQ(Requests("POST .*/generate-jitconfig"), 3);
  // A request that gets no answer within timeout_seconds is an outage too.
  Fault("GET .*/actions/runners\\?name=np-lease-4", 200, 1, "{}", 4000);
  auto slow = p.source().RecoverRunner("np-lease-4");
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_TRUE(slow->present);
  // An outage that outlasts max_attempts (3) is unavailable, never a verdict.
  Fault("DELETE .*", 503, 5);
  Status down = p.source().RemoveRunner(healed->runner_id, "np-lease-4");
  EXPECT_EQ(down.code(), Code::kUnavailable) << down.ToString();
  EXPECT_NE(down.message().find("failed 3 times"), std::string::npos) << down.message();
  EXPECT_GT(down.retry_after_ns(), 0);
  EXPECT_NE(p.LogText().find("github.retry"), std::string::npos);
}

TEST_F(GithubFakeTest, RunnerGroupsArePagedThroughAndAMissingOneIsNotFound) {
  StartFake(/*runner_groups=*/250);
  auto& p = Plugin(AppA());
  auto found = p.source().Describe("builders-acme");  // on page 3
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->id, 99);
  EXPECT_EQ(Requests("GET .*/runner-groups\\?per_page=100&page=3"), 1);
  auto dflt = p.source().Describe("");
  ASSERT_TRUE(dflt.ok());
  EXPECT_EQ(dflt->name, "Default");
  auto missing = p.source().Describe("no-such-group");
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find("organization acme"), std::string::npos);
  // Page 3 was read for builders-acme and for the missing group; the
  // cached builders-acme asks nothing more.
  ASSERT_TRUE(p.source().Describe("builders-acme").ok());
  EXPECT_EQ(Requests("GET .*/runner-groups\\?per_page=100&page=3"), 2);
}

TEST_F(GithubFakeTest, AMisconfiguredTargetIsAClearErrorThatNamesIt) {
  StartFake();
  // App A is not installed on globex.
  auto& p = Plugin(AppA("", R"("organization":"globex")"));
  auto r = p.source().Describe("");
  EXPECT_EQ(r.status().code(), Code::kInvalid) << r.status().ToString();
  EXPECT_NE(r.status().message().find("organization globex"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("not installed"), std::string::npos) << r.status().message();
  // A wrong key: GitHub (jose) refuses the JWT.
  auto& q = Plugin("{\"api_url\":\"http://127.0.0.1:" + std::to_string(port_) +
                   R"(","organization":"acme","app_id":11,"private_key_file":"app-b.pem"})");
  auto bad = q.source().Describe("");
  EXPECT_EQ(bad.status().code(), Code::kInvalid) << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("refused the App's JWT"), std::string::npos) << bad.status().message();
}

TEST_F(GithubFakeTest, ARepositoryTargetMintsInItsDefaultGroup) {
  StartFake();
  auto& p = Plugin(AppA("", R"("repository":"acme/widgets")"));
  auto group = p.source().Describe("");
  ASSERT_TRUE(group.ok());
  EXPECT_EQ(group->id, 1);
  EXPECT_EQ(p.source().Describe("builders").status().code(), Code::kInvalid);
  auto minted = p.source().MintJitConfig(Request("np-lease-5", 1));
  ASSERT_TRUE(minted.ok()) << minted.status().ToString();
  EXPECT_EQ(Requests("POST /api/v3/repos/acme/widgets/actions/runners/generate-jitconfig"), 1);
}

TEST_F(GithubFakeTest, AnEnterpriseTargetUsesItsTokenFile) {
  StartFake();
  auto& p = Plugin("{\"api_url\":\"http://127.0.0.1:" + std::to_string(port_) +
                   R"(/api/v3","enterprise":"big-co","token_file":"enterprise-token"})");
  auto group = p.source().Describe("builders-big-co");
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  auto minted = p.source().MintJitConfig(Request("np-lease-6", group->id));
  ASSERT_TRUE(minted.ok()) << minted.status().ToString();
  EXPECT_EQ(Decoded(minted->encoded_config).at("enterprise").as_string(), "big-co");
  EXPECT_EQ(Requests("POST .*/access_tokens"), 0);
}

TEST_F(GithubFakeTest, NoTokenKeyJwtOrJitConfigReachesALogLineOrAMessage) {
  StartFake();
  auto& p = Plugin(AppA());
  auto minted = p.source().MintJitConfig(Request("np-lease-7"));
  ASSERT_TRUE(minted.ok());
  Control("POST", "/_fake/revoke_tokens");
  Fault("POST .*/generate-jitconfig", 429, 1, R"({"retry-after":"5"})");
  std::vector<std::string> messages{p.source().MintJitConfig(Request("np-lease-8")).status().message()};
  Fault("GET .*", 500, 10);
  messages.push_back(p.source().RecoverRunner("np-lease-7").status().message());
  const std::string log = p.LogText();
  ASSERT_NE(log.find("github.token_minted"), std::string::npos) << log;  // the log is being written
  const std::string key = ReadAll(dir_ + "/app-a.pem");
  for (const std::string& text : std::vector<std::string>{log, messages[0], messages[1]}) {
    EXPECT_EQ(text.find("ghs_"), std::string::npos) << text;         // installation tokens
    EXPECT_EQ(text.find("eyJ"), std::string::npos) << text;          // JWTs (base64url of {")
    EXPECT_EQ(text.find("PRIVATE KEY"), std::string::npos) << text;  // the key
    EXPECT_EQ(text.find(key.substr(40, 40)), std::string::npos) << text;
    EXPECT_EQ(text.find(minted->encoded_config.substr(0, 24)), std::string::npos) << text;
  }
}

// ---- config, without any server ------------------------------------------

class GithubConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TempDir("np-github-config"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // The message of creating an instance from `config`, "" when it succeeds.
  std::string Refusal(const std::string& config, bool validate_only = true) {
    PluginUnderTest p(dir_);
    Status s = p.Create(config, validate_only);
    return s.ok() ? "" : s.message();
  }
  std::string dir_;
};

TEST_F(GithubConfigTest, BadConfigIsRefusedNamingTheKey) {
  const std::string app = R"("app_id":1,"private_key_file":"k.pem")";
  EXPECT_NE(Refusal(R"({"organization":"acme",)" + app + R"(,"shiny":1})").find("\"shiny\""), std::string::npos);
  EXPECT_NE(Refusal(R"({)" + app + "}").find("exactly one of the config keys \"organization\""), std::string::npos);
  EXPECT_NE(Refusal(R"({"organization":"acme","repository":"a/b",)" + app + "}").find("exactly one"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"repository":"acme",)" + app + "}").find("\"repository\" must be \"owner/name\""),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"organization":"acme","private_key_file":"k.pem"})").find("\"app_id\" and \"client_id\""),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"organization":"acme","app_id":1})").find("\"private_key_file\" is required"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"api_url":"http://github.example.com/api/v3","organization":"acme",)" + app + "}")
                .find("plain http"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"api_url":"ftp://x","organization":"acme",)" + app + "}").find("\"api_url\""),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"organization":"acme",)" + app + R"(,"timeout_seconds":0})").find("\"timeout_seconds\""),
            std::string::npos);
  // An enterprise needs a token: GitHub's enterprise routes refuse App tokens.
  EXPECT_NE(Refusal(R"({"enterprise":"big",)" + app + "}").find("token_file"), std::string::npos);
  EXPECT_NE(Refusal(R"({"enterprise":"big"})").find("\"token_file\" is required"), std::string::npos);
  EXPECT_EQ(Refusal(R"({"enterprise":"big","token_file":"t"})"), "");
  EXPECT_EQ(Refusal(R"({"api_url":"https://ghes.example.com/api/v3","organization":"acme",)" + app + "}"), "");
}

// D13 of the wire comparison: GitHub's own clients (Go) accept TLS 1.2, and
// not every GitHub endpoint is known to offer 1.3, so neither does the
// plugin refuse it by default; tls_min_version = "1.3" insists. The server
// here is OpenSSL's own, offering TLS 1.2 only.
TEST_F(GithubConfigTest, D13_ATls12OnlyServerIsReachedByDefaultAndRefusedWhen13IsAskedFor) {
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext "
                         "subjectAltName=IP:127.0.0.1 -keyout " + dir_ + "/tls.key -out " + dir_ + "/tls.crt 2>/dev/null")
                            .c_str()),
            0);
  const uint16_t port = testing::FreeLoopbackPort();
  testing::Child server({"openssl", "s_server", "-accept", std::to_string(port), "-cert", dir_ + "/tls.crt", "-key",
                         dir_ + "/tls.key", "-tls1_2", "-www"},
                        dir_ + "/s_server.log");
  ASSERT_TRUE(server.AwaitLine("ACCEPT")) << ReadAll(dir_ + "/s_server.log");
  testing::MakeAppKey(dir_ + "/k.pem", dir_ + "/k.pub");
  auto describe = [&](const std::string& extra) {
    PluginUnderTest p(dir_);
    Status created = p.Create("{\"api_url\":\"https://127.0.0.1:" + std::to_string(port) +
                              R"(/api/v3","organization":"acme","app_id":1,"private_key_file":"k.pem","max_attempts":1,"ca_file":")" +
                              dir_ + "/tls.crt\"" + extra + "}");
    EXPECT_TRUE(created.ok()) << created.ToString();
    return created.ok() ? p.source().Describe("").status().message() : std::string();
  };
  // By default the handshake succeeds (the HTML page OpenSSL answers is no installation).
  const std::string plain = describe("");
  EXPECT_EQ(plain.find("TLS to"), std::string::npos) << plain;
  EXPECT_NE(plain.find("installation"), std::string::npos) << plain;
  const std::string strict = describe(R"(,"tls_min_version":"1.3")");
  EXPECT_NE(strict.find("TLS to 127.0.0.1"), std::string::npos) << strict;
}

TEST_F(GithubConfigTest, TheKeyFileMustBeMode0600AndAnRsaKey) {
  testing::MakeAppKey(dir_ + "/k.pem", dir_ + "/k.pub");
  const std::string config = R"({"organization":"acme","app_id":1,"private_key_file":"k.pem"})";
  EXPECT_EQ(Refusal(config, false), "");
  ::chmod((dir_ + "/k.pem").c_str(), 0644);
  std::string open = Refusal(config, false);
  EXPECT_NE(open.find("mode 0644"), std::string::npos) << open;
  EXPECT_NE(open.find("chmod 600"), std::string::npos) << open;
  WriteText(dir_ + "/k.pem", "not a key");
  EXPECT_NE(Refusal(config, false).find("holds no PEM private key"), std::string::npos);
  EXPECT_NE(Refusal(R"({"organization":"acme","app_id":1,"private_key_file":"absent.pem"})", false)
                .find("absent.pem"),
            std::string::npos);
}

// ---- Prism: GitHub's own OpenAPI description ----------------------------

class GithubSchemaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(TempDir("np-prism"));
    port_ = testing::FreeLoopbackPort();
    prism_ = new Child({kDoubles + "/node_modules/.bin/prism", "mock", "--errors", "-h", "127.0.0.1", "-p",
                        std::to_string(port_), kDoubles + "/node_modules/@octokit/openapi/generated/ghes-3.19.json"},
                       *dir_ + "/prism.log");
  }
  static void TearDownTestSuite() {
    delete prism_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  // Prism serves paths at "/", ignoring the spec's /api/v3 server prefix.
  std::string Api() const { return "\"api_url\":\"http://127.0.0.1:" + std::to_string(port_) + "\""; }

  static std::string* dir_;
  static uint16_t port_;
  static Child* prism_;
};
std::string* GithubSchemaTest::dir_ = nullptr;
uint16_t GithubSchemaTest::port_ = 0;
Child* GithubSchemaTest::prism_ = nullptr;

TEST_F(GithubSchemaTest, EveryRequestThePluginSendsPassesGithubsRequestValidation) {
  ASSERT_TRUE(std::filesystem::exists(kDoubles + "/node_modules/.bin/prism"))
      << "run packaging/setup-test-doubles.sh to install the GitHub test doubles";
  // Prism reads GitHub's whole description before it listens: 20-30 s
  // alone here, past a minute beside the suite's end-to-end cases.
  ASSERT_TRUE(prism_->AwaitLine("Prism is listening on", std::chrono::seconds(150))) << ReadAll(*dir_ + "/prism.log");
  testing::MakeAppKey(*dir_ + "/app.pem", *dir_ + "/app.pub");
  WriteText(*dir_ + "/token", "ghp_example\n");
  // An organisation and a repository with an App (the installation looked
  // up), and an enterprise with a token.
  for (const std::string& target : {std::string(R"("organization":"octo-org","app_id":1,"private_key_file":"app.pem")"),
                                    std::string(R"("repository":"octo-org/hello","client_id":"Iv1.abc","private_key_file":"app.pem")"),
                                    std::string(R"("enterprise":"big-co","token_file":"token")")}) {
    SCOPED_TRACE(target);
    PluginUnderTest p(*dir_);
    ASSERT_TRUE(p.Create("{" + Api() + "," + target + "}").ok());
    auto group = p.source().Describe("");
    ASSERT_TRUE(group.ok()) << group.status().ToString();
    auto minted = p.source().MintJitConfig(ports::JitRequest{group->id, "np-lease", {"self-hosted", "x64"}, "_work"});
    ASSERT_TRUE(minted.ok()) << minted.status().ToString();
    EXPECT_FALSE(minted->encoded_config.empty());
    EXPECT_GT(minted->runner_id, 0);
    auto state = p.source().RecoverRunner("linux_runner");  // a name in GitHub's example list
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    EXPECT_TRUE(state->present);
    EXPECT_TRUE(p.source().RemoveRunner(0, "linux_runner").ok());
    EXPECT_TRUE(p.source().RemoveRunner(23, "MBP").ok());  // by id: GitHub's example runner 23 is "MBP"
  }
  const std::string log = ReadAll(*dir_ + "/prism.log");
  EXPECT_EQ(log.find("[VALIDATOR] ✖"), std::string::npos) << log;
  size_t passed = 0;
  for (size_t at = 0; (at = log.find("The request passed the validation rules", at)) != std::string::npos; ++at) ++passed;
  EXPECT_GE(passed, 20u) << log;
}

}  // namespace
}  // namespace nodeplane
