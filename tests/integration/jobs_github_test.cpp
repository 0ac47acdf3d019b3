// The jit-github plugin's job source ("nodeplane.jobs" 1), loaded through
// the host's loader and adapter as nodeplaned loads it, against the
// stateful fake of GitHub's Actions service (tests/github/fake_actions.mjs):
// the bootstrap (registration token, runner registration, admin token),
// scale sets, sessions and their conflict, the message queue with
// redelivery, acquisition, scale-set JIT configs taken by the fake runner,
// token refresh, cancellation, undecodable messages and outages.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <algorithm>
#include <thread>

#include "config/config_loader.h"
#include "free_port.h"
#include "loader/plugin_set.h"
#include "jobs_github_fixture.h"

namespace nodeplane {
namespace {

namespace json = boost::json;
using testing::ReadAll;
using std::chrono::seconds;

const std::string kDoubles = GITHUB_DOUBLES_DIR;
using testing::kPollBound;
using testing::TempDir;
using JobsGithubTest = testing::JobsGithubFixture;

TEST_F(JobsGithubTest, AScaleSetIsCreatedOnceWithTheTiersLabelsThenFound) {
  StartFake();
  auto& src = Source();
  const ports::ScaleSet made = Ensure(src);
  EXPECT_GT(made.id, 0);
  EXPECT_EQ(made.runner_group_id, 98);  // "builders"
  EXPECT_EQ(made.labels, (std::vector<std::string>{"np-large", "self-hosted", "linux", "large"}));
  const ports::ScaleSet again = Ensure(src);
  EXPECT_EQ(again.id, made.id);
  EXPECT_EQ(Requests("POST /actions-service/_apis/runtime/runnerscalesets\\?"), 1);
  // One bootstrap serves every call: the admin token is reused.
  EXPECT_EQ(Requests("POST .*/actions/runners/registration-token"), 1);
  EXPECT_EQ(Requests("POST /api/v3/actions/runner-registration"), 1);
  // Labels changed in config are written to the scale set.
  auto relabelled = src.EnsureScaleSet("np-large", "builders", {"np-large", "self-hosted", "xl"});
  ASSERT_TRUE(relabelled.ok());
  EXPECT_EQ(relabelled->id, made.id);
  EXPECT_EQ(Requests("PATCH /actions-service/_apis/runtime/runnerscalesets/"), 1);
}

TEST_F(JobsGithubTest, AScaleSetInAGroupThatDoesNotExistNamesTheGroupAndTheTarget) {
  StartFake();
  auto set = Source().EnsureScaleSet("np-large", "no-such-group", {"x"});
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), Code::kNotFound);
  EXPECT_NE(set.status().message().find("no-such-group"), std::string::npos) << set.status().ToString();
  EXPECT_NE(set.status().message().find("organization acme"), std::string::npos) << set.status().ToString();
}

TEST_F(JobsGithubTest, ASecondHolderIsRefusedWithAConflictUntilTheFirstClosesItsSession) {
  StartFake();
  auto& first = Source();
  auto& second = Source();
  const int64_t id = Ensure(first).id;
  auto a = first.OpenSession(id, "host-a", nullptr);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = second.OpenSession(id, "host-b", nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), Code::kConflict);
  EXPECT_NE(b.status().message().find("already has an active session"), std::string::npos) << b.status().ToString();
  ASSERT_TRUE(first.CloseSession(*a).ok());
  auto c = second.OpenSession(id, "host-b", nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Requests("DELETE /actions-service/_apis/runtime/runnerscalesets/\\d+/sessions/"), 1);
}

TEST_F(JobsGithubTest, AssignedJobsArriveAndAMessageComesBackUntilAcknowledged) {
  StartFake();
  auto& src = Source();
  const int64_t id = Ensure(src).id;
  ports::QueueStatistics opened;
  auto session = src.OpenSession(id, "host-a", &opened);
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(opened.assigned, 0);
  Control("POST", "/_fake/actions/queue", R"({"scale_set":"np-large","count":3})");
  auto m = Next(src, *session);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->decode_error, "");
  ASSERT_EQ(m->jobs.size(), 3u);
  EXPECT_EQ(m->statistics.assigned, 3);
  for (const ports::QueuedJob& j : m->jobs) {
    EXPECT_EQ(j.kind, ports::JobEvent::kAssigned);
    EXPECT_EQ(j.runner_request_id, 0);  // as GitHub.com sends them
    EXPECT_EQ(j.job_id.rfind("job-", 0), 0u);
    EXPECT_EQ(j.repository, "widgets");
    EXPECT_GT(j.queued_at_ns, 0);
  }
  // Not acknowledged: the same message again, and to a new session too.
  auto again = Next(src, *session);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->id, m->id);
  ASSERT_TRUE(src.CloseSession(*session).ok());
  auto reopened = src.OpenSession(id, "host-a", nullptr);
  ASSERT_TRUE(reopened.ok());
  auto redelivered = Next(src, *reopened);
  ASSERT_TRUE(redelivered.has_value());
  EXPECT_EQ(redelivered->id, m->id);
  ASSERT_TRUE(src.Acknowledge(*reopened, m->id).ok());
  EXPECT_FALSE(Next(src, *reopened, m->id).has_value());  // 202: nothing left
  // The advertised capacity reached the service.
  EXPECT_EQ(Control("GET", "/_fake/actions/state").at("scale_sets").as_array()[0].at("max_capacity").as_int64(), 10);
}

TEST_F(JobsGithubTest, AnOfferedJobIsAcquiredThenAssigned) {
  StartFake();
  auto& src = Source();
  const auto [id, session] = Opened(src);
  ASSERT_NE(session, 0u);
  Control("POST", "/_fake/actions/queue", R"({"scale_set":"np-large","count":2,"available":true})");
  auto offer = Next(src, session);
  ASSERT_TRUE(offer.has_value());
  ASSERT_EQ(offer->jobs.size(), 2u);
  std::vector<int64_t> ids;
  for (const auto& j : offer->jobs) {
    EXPECT_EQ(j.kind, ports::JobEvent::kAvailable);
    ids.push_back(j.runner_request_id);
  }
  ASSERT_TRUE(src.Acknowledge(session, offer->id).ok());
  std::vector<int64_t> asked = ids;
  asked.push_back(999999);  // never offered: not granted
  auto granted = src.Acquire(session, asked);
  ASSERT_TRUE(granted.ok()) << granted.status().ToString();
  EXPECT_EQ(*granted, ids);
  auto assigned = Next(src, session, offer->id);
  ASSERT_TRUE(assigned.has_value());
  ASSERT_EQ(assigned->jobs.size(), 1u);
  EXPECT_EQ(assigned->jobs[0].kind, ports::JobEvent::kAssigned);
  EXPECT_EQ(assigned->jobs[0].runner_request_id, ids[0]);
}

TEST_F(JobsGithubTest, AScaleSetRunnerTakesAJobAndItsStartAndCompletionArrive) {
  StartFake();
  auto& src = Source();
  const auto [id, session] = Opened(src);
  ASSERT_NE(session, 0u);
  Control("POST", "/_fake/actions/queue", R"({"scale_set":"np-large","count":1})");
  auto assigned = Next(src, session);
  ASSERT_TRUE(assigned.has_value());
  ASSERT_TRUE(src.Acknowledge(session, assigned->id).ok());
  auto reg = src.ScaleSetJit(id, "np-lease-1", "_work");
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  EXPECT_EQ(reg->runner_name, "np-lease-1");
  EXPECT_GT(reg->runner_id, 0);
  ASSERT_EQ(Runner("take", reg->encoded_config), 200);
  auto started = Next(src, session, assigned->id);
  ASSERT_TRUE(started.has_value());
  ASSERT_EQ(started->jobs.size(), 1u);
  EXPECT_EQ(started->jobs[0].kind, ports::JobEvent::kStarted);
  EXPECT_EQ(started->jobs[0].runner_name, "np-lease-1");
  EXPECT_EQ(started->jobs[0].job_id, assigned->jobs[0].job_id);
  ASSERT_TRUE(src.Acknowledge(session, started->id).ok());
  ASSERT_EQ(Runner("finish", reg->encoded_config, R"(,"result":"succeeded")"), 204);
  auto completed = Next(src, session, started->id);
  ASSERT_TRUE(completed.has_value());
  ASSERT_EQ(completed->jobs.size(), 1u);
  EXPECT_EQ(completed->jobs[0].kind, ports::JobEvent::kCompleted);
  EXPECT_EQ(completed->jobs[0].result, "succeeded");
  EXPECT_EQ(completed->jobs[0].runner_name, "np-lease-1");
  EXPECT_GT(completed->jobs[0].finished_at_ns, 0);
  // A name already registered by a lost answer is freed and minted again.
  auto twice = src.ScaleSetJit(id, "np-lease-2", "");
  ASSERT_TRUE(twice.ok());
  auto retry = src.ScaleSetJit(id, "np-lease-2", "");
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_NE(retry->runner_id, twice->runner_id);
  // No secret reached the log.
  const std::string log = LogText();
  EXPECT_EQ(log.find(reg->encoded_config), std::string::npos);
  EXPECT_EQ(log.find("RemoteAuth"), std::string::npos);
}

// The ghost check's list (np_jobs_v1 list_runners): every runner of the
// scale set's runner group from GitHub's REST list, page after page, with
// its id, whether it is online and busy; removal then goes by exact id.
TEST_F(JobsGithubTest, TheRunnersOfTheScaleSetsGroupAreListedWithTheirIdsAndStates) {
  StartFake();
  auto& src = Source();
  const ports::ScaleSet set = Ensure(src);
  std::map<std::string, int64_t> minted;
  for (int i = 0; i < 120; ++i) {  // more than one page of 100
    const std::string name = "np-runner-" + std::to_string(i);
    auto jit = src.ScaleSetJit(set.id, name, "");
    ASSERT_TRUE(jit.ok()) << jit.status().ToString();
    minted[name] = jit->runner_id;
  }
  Control("POST", "/_fake/actions/ghost", R"({"scale_set":"np-large","name":"np-left-behind"})");
  auto listed = src.ListRunners(set.id, set.runner_group_id);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 121u);
  for (const ports::ForgeRunner& r : *listed) {
    EXPECT_FALSE(r.online) << r.name;  // no runner process ever connected
    EXPECT_FALSE(r.busy) << r.name;
    if (r.name != "np-left-behind") {
      EXPECT_EQ(r.id, minted.at(r.name)) << r.name;
    }
  }
  EXPECT_EQ(Requests("GET /api/v3/orgs/acme/actions/runner-groups/98/runners\\?per_page=100&page="), 2);
  const auto ghost = std::find_if(listed->begin(), listed->end(), [](const auto& r) { return r.name == "np-left-behind"; });
  ASSERT_TRUE(src.RemoveRunner(set.id, ghost->name, ghost->id).ok());
  auto after = src.ListRunners(set.id, set.runner_group_id);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->size(), 120u);
}

TEST_F(JobsGithubTest, ExpiredTokensAreRefreshedOnceOnA401) {
  StartFake();
  auto& src = Source();
  const auto [id, session] = Opened(src);
  ASSERT_NE(session, 0u);
  Control("POST", "/_fake/actions/queue", R"({"scale_set":"np-large","count":1})");
  Control("POST", "/_fake/actions/expire_queue_tokens");
  auto m = Next(src, session);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(Requests("PATCH /actions-service/_apis/runtime/runnerscalesets/\\d+/sessions/"), 1);
  ASSERT_TRUE(src.Acknowledge(session, m->id).ok());
  Control("POST", "/_fake/actions/expire_admin_tokens");
  ASSERT_TRUE(src.ScaleSetJit(id, "np-lease-9", "").ok());
  EXPECT_EQ(Requests("POST /api/v3/actions/runner-registration"), 2);
}

TEST_F(JobsGithubTest, CancelEndsAParkedPollAtOnce) {
  StartFake(R"(,"poll_hold_ms":66000)");  // 88 s against 120 s, as the bound of 90 s below
  auto& src = Source();
  const auto [id, session] = Opened(src);
  ASSERT_NE(session, 0u);
  auto poll = std::async(std::launch::async, [&, session = session] { return src.NextMessage(session, 0, 1, seconds(90)); });
  // Parked: the fake has the poll.
  while (Requests("GET /actions-queue/") == 0) std::this_thread::yield();
  const auto cancelled = std::chrono::steady_clock::now();
  src.Cancel(session);
  ASSERT_EQ(poll.wait_for(seconds(10)), std::future_status::ready) << "the poll outlived its cancellation";
  auto r = poll.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled, seconds(5));
  EXPECT_TRUE(src.CloseSession(session).ok());  // the session still ends
}

// Review D16: a target serving more tiers than the adapter's default pool
// (8) parks every tier's poll at once, as OpenPlugins sizes it from the
// config: no tier's jobs wait behind another tier's idle poll.
TEST_F(JobsGithubTest, D16_EveryTiersPollIsParkedAtOnceWhateverTheirNumber) {
  StartFake(R"(,"poll_hold_ms":30000)");
  constexpr int kTiers = 9;
  std::string toml = "deployment = \"d16\"\nstate_dir = \"" + dir_ + "\"\nplugin_dir = \"" + PLUGIN_DIR +
                     "\"\n[wire]\nlisten = \"127.0.0.1:0\"\n[plugins.ledger]\nlibrary = \"ledger-sqlite\"\n"
                     "provides = [\"ledger\"]\n[plugins.github]\nlibrary = \"jit-github\"\nprovides = [\"jit\", \"jobs\"]\n"
                     "[plugins.github.config]\napi_url = \"http://127.0.0.1:" + std::to_string(fake_->port()) +
                     "/api/v3\"\norganization = \"acme\"\napp_id = 11\nprivate_key_file = \"app-a.pem\"\n"
                     "[targets.acme]\njit = \"github\"\njobs = \"github\"\n";
  for (int i = 0; i < kTiers; ++i) {
    toml += "[tiers.t" + std::to_string(i) + "]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"process\"]\n"
            "command = [\"/bin/true\"]\ntarget = \"acme\"\nrunner_group = \"builders\"\nscale_set = \"np-t" + std::to_string(i) + "\"\n";
  }
  { std::ofstream(dir_ + "/d16.toml") << toml; }
  auto loaded = config::LoadConfigFile(dir_ + "/d16.toml");
  ASSERT_TRUE(loaded.config.has_value()) << (loaded.errors.empty() ? "" : loaded.errors.front().ToString());
  EXPECT_EQ(loader::ParkedPollsFor(*loaded.config, "github"), 9u);
  auto set = loader::OpenPlugins(*loaded.config, host_->c(), *log_);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ports::JobSource& src = *set->jobs_by_target.at("acme");
  std::vector<uint64_t> sessions;
  for (int i = 0; i < kTiers; ++i) {
    auto made = src.EnsureScaleSet("np-t" + std::to_string(i), "builders", {"np-t" + std::to_string(i)});
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    auto opened = src.OpenSession(made->id, "d16", nullptr);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    sessions.push_back(*opened);
  }
  std::vector<std::future<Result<std::optional<ports::QueueMessage>>>> polls;
  for (uint64_t session : sessions) {
    polls.push_back(std::async(std::launch::async, [&src, session] { return src.NextMessage(session, 0, 1, seconds(60)); }));
  }
  // Every poll reaches GitHub while none has been answered (the fake holds each 30 s).
  const auto limit = std::chrono::steady_clock::now() + seconds(20);
  while (Requests("GET /actions-queue/") < kTiers && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
  EXPECT_EQ(Requests("GET /actions-queue/"), kTiers) << "a tier's poll waited behind the others";
  for (auto& p : polls) EXPECT_EQ(p.wait_for(seconds(0)), std::future_status::timeout);
  for (uint64_t session : sessions) src.Cancel(session);
  for (auto& p : polls) (void)p.get();
  for (uint64_t session : sessions) (void)src.CloseSession(session);
}

TEST_F(JobsGithubTest, AnUndecodableMessageIsReportedWithItsId) {
  StartFake();
  auto& src = Source();
  const auto [id, session] = Opened(src);
  ASSERT_NE(session, 0u);
  Control("POST", "/_fake/actions/message", R"({"scale_set":"np-large","body":"[{not json"})");
  auto m = Next(src, session);
  ASSERT_TRUE(m.has_value());
  EXPECT_GT(m->id, 0);
  EXPECT_TRUE(m->jobs.empty());
  EXPECT_NE(m->decode_error.find("not a JSON array"), std::string::npos) << m->decode_error;
}

TEST_F(JobsGithubTest, OutagesAreRetriedAndRateLimitsAreUnavailableWithTheirWait) {
  StartFake();
  auto& src = Source();
  const int64_t id = Ensure(src).id;
  fake_->Fault("POST /actions-service/.*/generatejitconfig", 503, 1);
  auto reg = src.ScaleSetJit(id, "np-lease-5", "");
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();  // the second attempt
  fake_->Fault("POST /actions-service/.*/sessions", 429, 1, R"({"Retry-After":"7"})");
  auto s = src.OpenSession(id, "host-a", nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kUnavailable);
  EXPECT_EQ(s.status().retry_after_ns(), 7'000'000'000);
  EXPECT_TRUE(src.OpenSession(id, "host-a", nullptr).ok());
}

// The one REST call of the job source that GitHub's OpenAPI description
// covers is the registration token that opens the bootstrap; the rest
// (runner-registration and the Actions service) has no public description,
// so the stateful fake above stands in for it.
TEST(JobsGithubSchemaTest, TheRegistrationTokenRequestPassesGithubsRequestValidation) {
  ASSERT_TRUE(std::filesystem::exists(kDoubles + "/node_modules/.bin/prism"))
      << "run packaging/setup-test-doubles.sh to install the GitHub test doubles";
  const std::string dir = TempDir("np-jobs-prism");
  const uint16_t port = testing::FreeLoopbackPort();
  {
    testing::Child prism({kDoubles + "/node_modules/.bin/prism", "mock", "--errors", "-h", "127.0.0.1", "-p",
                          std::to_string(port), kDoubles + "/node_modules/@octokit/openapi/generated/ghes-3.19.json"},
                         dir + "/prism.log");
    // Prism reads GitHub's whole description before it listens: 20-30 s
    // alone here, past a minute beside the suite's end-to-end cases.
    ASSERT_TRUE(prism.AwaitLine("Prism is listening on", std::chrono::seconds(150))) << ReadAll(dir + "/prism.log");
    testing::MakeAppKey(dir + "/app.pem", dir + "/app.pub");
    std::FILE* log_file = std::fopen((dir + "/host.log").c_str(), "w");
    {
      Logger log(LogLevel::kDebug, LogFormat::kLogfmt, log_file);
      loader::HostServices host(log, dir);
      auto lib = loader::PluginLibrary::Open(std::string(PLUGIN_DIR) + "/jit-github.so", "", host.c());
      ASSERT_TRUE(lib.ok()) << lib.status().ToString();
      // Prism serves paths at "/", ignoring the spec's /api/v3 server prefix.
      auto src = loader::JobsAdapter::Create(*lib, "github-jobs",
                                             "{\"api_url\":\"http://127.0.0.1:" + std::to_string(port) +
                                                 R"(","organization":"octo-org","app_id":1,"private_key_file":"app.pem"})",
                                             host.c(), false);
      ASSERT_TRUE(src.ok()) << src.status().ToString();
      auto set = (*src)->EnsureScaleSet("np-large", "", {"self-hosted", "linux"});
      ASSERT_FALSE(set.ok());  // Prism knows no runner-registration route
      EXPECT_NE(set.status().message().find("Actions service registration was refused"), std::string::npos)
          << set.status().ToString();
    }
    std::fclose(log_file);
  }
  const std::string log = ReadAll(dir + "/prism.log");
  const size_t token = log.find("/orgs/octo-org/actions/runners/registration-token");
  ASSERT_NE(token, std::string::npos) << log;
  EXPECT_NE(log.find("The request passed the validation rules", token), std::string::npos) << log;
  EXPECT_EQ(log.find("[VALIDATOR] \u2716"), std::string::npos) << log;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nodeplane
