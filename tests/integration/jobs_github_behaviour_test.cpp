// The jit-github job source against GitHub's behaviours as the fake now
// plays them (tests/github/fake_actions.mjs, each switchable), one test per
// disagreement with GitHub's own clients that the wire comparison found
// (shared/docs/reference/scale-set-vs-github-clients.md, D1-D14; §5 lists
// where the old fake agreed with the plugin and both were wrong).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <thread>

#include "common/units.h"
#include "jobs_github_fixture.h"

namespace nodeplane {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using JobsGithubBehaviourTest = testing::JobsGithubFixture;

std::string QueryOf(const json::object& request) {
  const std::string path(request.at("path").as_string());
  const size_t q = path.find('?');
  return q == std::string::npos ? "" : path.substr(q + 1);
}

// D1: GitHub holds an idle poll longer than the client's old 50 s deadline
// (github.com ~88 s): a poll the client gives up on is "no message", never
// an outage. Here the hold is 88/50 of the bound.
TEST_F(JobsGithubBehaviourTest, D1_APollHeldPastTheClientsBoundIsNoMessageNotAnOutage) {
  StartFake(",\"poll_hold_ms\":" + std::to_string(testing::kPollBound.count() * 88 / 50));
  auto& src = Source();
  const auto [id, session] = Opened(src);
  ASSERT_NE(session, 0u);
  const auto asked = Clock::now();
  auto idle = src.NextMessage(session, 0, 10, testing::kPollBound);
  ASSERT_TRUE(idle.ok()) << idle.status().ToString();
  EXPECT_FALSE(idle->has_value());
  EXPECT_GE(Clock::now() - asked, testing::kPollBound - milliseconds(100));
  // The session still works: a message queued now arrives.
  Control("POST", "/_fake/actions/queue", R"({"scale_set":"np-large","count":1})");
  auto m = Next(src, session);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->jobs.size(), 1u);
}

// D1: a hold within the bound is GitHub's 202, also "no message".
TEST_F(JobsGithubBehaviourTest, D1_AnIdlePollAnsweredWithinTheBoundIsNoMessage) {
  StartFake();
  auto& src = Source();
  const auto [id, session] = Opened(src);
  const auto asked = Clock::now();
  EXPECT_FALSE(Next(src, session).has_value());
  EXPECT_GE(Clock::now() - asked, testing::kHeld - milliseconds(100));  // held, then 202
}

// D4: GHES's queue URL carries ?sessionId=; polls and acknowledgements keep
// it (and the queue refuses a call without it).
TEST_F(JobsGithubBehaviourTest, D4_TheQueueUrlKeepsItsQueryOnPollAndAcknowledge) {
  StartFake();
  auto& src = Source();
  const auto [id, session] = Opened(src);
  Control("POST", "/_fake/actions/queue", R"({"scale_set":"np-large","count":1})");
  auto m = Next(src, session);
  ASSERT_TRUE(m.has_value());
  ASSERT_TRUE(src.Acknowledge(session, m->id).ok());
  EXPECT_FALSE(Next(src, session, m->id).has_value());
  auto polls = fake_->Requests("^GET /actions-queue/");
  ASSERT_GE(polls.size(), 2u);
  EXPECT_NE(QueryOf(polls[0]).find("sessionId="), std::string::npos) << QueryOf(polls[0]);
  EXPECT_NE(QueryOf(polls[1]).find("sessionId="), std::string::npos) << QueryOf(polls[1]);
  EXPECT_NE(QueryOf(polls[1]).find("lastMessageId=" + std::to_string(m->id)), std::string::npos);
  auto acks = fake_->Requests("^DELETE /actions-queue/");
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_NE(QueryOf(acks[0]).find("sessionId="), std::string::npos) << QueryOf(acks[0]);
}

// D4: github.com's broker URL has no query; the token names the session.
TEST_F(JobsGithubBehaviourTest, D4_TheBrokersQueueUrlWorksWithoutAQuery) {
  StartFake(R"(,"queue_url":"broker")");
  auto& src = Source();
  const auto [id, session] = Opened(src);
  Control("POST", "/_fake/actions/queue", R"({"scale_set":"np-large","count":2})");
  auto m = Next(src, session);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->jobs.size(), 2u);
  EXPECT_TRUE(src.Acknowledge(session, m->id).ok());
}

// D2: a session GitHub dropped answers 400 RunnerScaleSetSessionExpired
// (or, switched, 404 RunnerAdminException): every route reports it gone,
// so the host opens a new one; closing it is not an error.
TEST_F(JobsGithubBehaviourTest, D2_ASessionGithubDroppedIsGoneOnEveryRouteWhicheverWayItAnswers) {
  for (const int gone : {400, 404}) {
    SCOPED_TRACE(gone);
    StartFake(",\"session_gone\":" + std::to_string(gone));
    auto& src = Source();
    const auto [id, session] = Opened(src);
    ExpectSessionsDropped(src, session);
    if (HasFatalFailure()) return;
    Status acked = src.Acknowledge(session, 1);
    EXPECT_EQ(acked.code(), Code::kNotFound) << acked.ToString();
    EXPECT_TRUE(src.CloseSession(session).ok());
    auto again = src.OpenSession(id, "host-a", nullptr);
    EXPECT_TRUE(again.ok()) << again.status().ToString();
    TearDown();
    SetUp();
  }
}

// D2: on the broker, a dropped session's token is refused (401); the
// refresh then finds the session gone, which is reported as gone.
TEST_F(JobsGithubBehaviourTest, D2_ARefreshThatFindsTheSessionGoneReportsItGone) {
  StartFake(R"(,"queue_url":"broker")");
  auto& src = Source();
  const auto [id, session] = Opened(src);
  ExpectSessionsDropped(src, session);
  if (HasFatalFailure()) return;
  EXPECT_EQ(Requests("PATCH /actions-service/_apis/runtime/runnerscalesets/\\d+/sessions/"), 1);
}

// D2/D10 of the review: a scale set GitHub deleted (offline for a day, or by
// an admin) answers 404 RunnerScaleSetNotFoundException at session open, and
// ensuring it again creates a new one.
TEST_F(JobsGithubBehaviourTest, D2_AScaleSetGithubDeletedIsNotFoundAtOpenAndIsCreatedAgain) {
  StartFake();
  auto& src = Source();
  const auto [id, session] = Opened(src);
  ASSERT_TRUE(src.CloseSession(session).ok());
  // Offline for longer than GitHub keeps it: with the retention scaled to
  // zero once no session holds the scale set, the fake's next request finds
  // it gone.
  Behave(R"({"offline_delete_seconds":0})");
  ASSERT_TRUE(Control("GET", "/_fake/actions/state").at("scale_sets").as_array().empty());
  Behave(R"({"offline_delete_seconds":86400})");  // GitHub's day again
  auto opened = src.OpenSession(id, "host-a", nullptr);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), Code::kNotFound) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find("RunnerScaleSetNotFoundException"), std::string::npos)
      << opened.status().ToString();
  const ports::ScaleSet again = Ensure(src);
  EXPECT_NE(again.id, id);
  EXPECT_TRUE(src.OpenSession(again.id, "host-a", nullptr).ok());
}

// D3: labels compare as a set (no PATCH when only the order differs), and
// what GitHub kept is reported: GHES without custom labels keeps the name.
TEST_F(JobsGithubBehaviourTest, D3_LabelsCompareAsASetAndTheLabelsGithubKeptAreReported) {
  StartFake();
  auto& src = Source();
  const ports::ScaleSet made = Ensure(src);
  auto reordered = src.EnsureScaleSet("np-large", "builders", {"large", "LINUX", "self-hosted", "np-large"});
  ASSERT_TRUE(reordered.ok()) << reordered.status().ToString();
  EXPECT_EQ(reordered->id, made.id);
  EXPECT_EQ(Requests("PATCH /actions-service/_apis/runtime/runnerscalesets/"), 0);
  Behave(R"({"custom_labels":false})");
  auto ghes = src.EnsureScaleSet("np-small", "builders", {"np-small", "self-hosted", "small"});
  ASSERT_TRUE(ghes.ok()) << ghes.status().ToString();
  EXPECT_EQ(ghes->labels, std::vector<std::string>{"np-small"});  // what GitHub kept, not what was asked
  auto patched = src.EnsureScaleSet("np-large", "builders", {"np-large", "xl"});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ(patched->labels, std::vector<std::string>{"np-large"});
}

// D5: the RemoteAuth exchange retries 401 and 403, as S and ARC do.
TEST_F(JobsGithubBehaviourTest, D5_RemoteAuthRetriesATransient401And403) {
  StartFake();
  auto& src = Source();
  Control("POST", "/_fake/actions/remote_auth_faults", R"({"status":401,"count":1})");
  EXPECT_GT(Ensure(src).id, 0);
  Control("POST", "/_fake/actions/expire_admin_tokens");
  Control("POST", "/_fake/actions/remote_auth_faults", R"({"status":403,"count":1})");
  EXPECT_GT(Ensure(src, "np-small").id, 0);
  EXPECT_EQ(Requests("POST /api/v3/actions/runner-registration"), 4);
}

// D6: the default runner group is id 1, with no lookup (S's example, ARC).
TEST_F(JobsGithubBehaviourTest, D6_TheDefaultRunnerGroupIsIdOneWithoutALookup) {
  StartFake();
  auto set = Source().EnsureScaleSet("np-default", "", {"np-default"});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->runner_group_id, 1);
  EXPECT_EQ(Requests("GET /actions-service/_apis/runtime/runnergroups/"), 0);
}

// D7: a message whose body is empty is a message with no jobs (S reads
// len(body) == 0 so); its statistics still count.
TEST_F(JobsGithubBehaviourTest, D7_AnEmptyBodyIsAMessageWithNoJobs) {
  StartFake(R"(,"empty_body_messages":true)");
  auto& src = Source();
  const auto [id, session] = Opened(src);
  auto minted = src.ScaleSetJit(id, "np-lease-1", "");  // a runner registered: the statistics change
  ASSERT_TRUE(minted.ok()) << minted.status().ToString();
  auto m = Next(src, session);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->decode_error, "");
  EXPECT_TRUE(m->jobs.empty());
  EXPECT_EQ(m->statistics.registered_runners, 1);
}

// D8: a JIT 409 removes only this scale set's runner of that name; another
// scale set's runner, or a 409 that is not AgentExists, is a conflict.
TEST_F(JobsGithubBehaviourTest, D8_AJitConflictRemovesOnlyThisScaleSetsRunnerOfThatName) {
  StartFake();
  auto& src = Source();
  const int64_t large = Ensure(src).id;
  const int64_t small = Ensure(src, "np-small").id;
  ASSERT_TRUE(src.ScaleSetJit(large, "np-shared", "").ok());
  auto other = src.ScaleSetJit(small, "np-shared", "");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), Code::kConflict) << other.status().ToString();
  EXPECT_EQ(Requests("DELETE /actions-service/_apis/distributedtask/pools/0/agents/"), 0);
  fake_->Fault("POST /actions-service/.*/generatejitconfig", 409, 1);  // a 409 with no typeName
  auto odd = src.ScaleSetJit(large, "np-other", "");
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().code(), Code::kConflict) << odd.status().ToString();
  EXPECT_EQ(Requests("DELETE /actions-service/_apis/distributedtask/pools/0/agents/"), 0);
}

// D9: a 503 with Retry-After is retried after the wait GitHub asked for; a
// poll's 503 reports it to the host.
TEST_F(JobsGithubBehaviourTest, D9_Retry503HonoursRetryAfter) {
  StartFake();
  auto& src = Source();
  const auto [id, session] = Opened(src);
  fake_->Fault("POST /actions-service/.*/generatejitconfig", 503, 1, R"({"Retry-After":"2"})");
  const auto asked = Clock::now();
  auto reg = src.ScaleSetJit(id, "np-lease-7", "");
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  EXPECT_GE(Clock::now() - asked, milliseconds(1900));
  fake_->Fault("GET /actions-queue/", 503, 1, R"({"Retry-After":"4"})");
  auto polled = src.NextMessage(session, 0, 10, testing::kPollBound);
  ASSERT_FALSE(polled.ok());
  EXPECT_EQ(polled.status().code(), Code::kUnavailable);
  EXPECT_EQ(polled.status().retry_after_ns(), 4'000'000'000);
}

// D10: times with an offset are read as the instant they name.
TEST_F(JobsGithubBehaviourTest, D10_TimesWithAnOffsetAreReadAsTheirInstant) {
  StartFake(R"(,"time_offsets":true)");
  auto& src = Source();
  const auto [id, session] = Opened(src);
  const int64_t before = WallNowNs();
  Control("POST", "/_fake/actions/queue", R"({"scale_set":"np-large","count":1})");
  auto m = Next(src, session);
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->jobs.size(), 1u);
  EXPECT_NEAR(static_cast<double>(m->jobs[0].queued_at_ns), static_cast<double>(before), 5e9);
  EXPECT_NEAR(static_cast<double>(m->jobs[0].assigned_at_ns), static_cast<double>(before), 5e9);
}

// D11: GitHub's typeName, ActivityId and X-GitHub-Request-Id reach the error.
TEST_F(JobsGithubBehaviourTest, D11_ErrorsNameGithubsExceptionAndRequestIds) {
  StartFake();
  auto& first = Source();
  auto& second = Source();
  const int64_t id = Ensure(first).id;
  ASSERT_TRUE(first.OpenSession(id, "host-a", nullptr).ok());
  auto held = second.OpenSession(id, "host-b", nullptr);
  ASSERT_FALSE(held.ok());
  EXPECT_NE(held.status().message().find("RunnerScaleSetSessionConflictException"), std::string::npos)
      << held.status().ToString();
  EXPECT_NE(held.status().message().find("activity_id="), std::string::npos) << held.status().ToString();
  EXPECT_NE(held.status().message().find("github_request_id="), std::string::npos) << held.status().ToString();
}

// D12: an acknowledgement before any poll, and a queue that moves to
// another origin on a refresh, are both served.
TEST_F(JobsGithubBehaviourTest, D12_TheQueueFollowsTheSessionAndAcknowledgeNeedsNoPollFirst) {
  StartFake();
  auto& src = Source();
  const auto [id, session] = Opened(src);
  Control("POST", "/_fake/actions/queue", R"({"scale_set":"np-large","count":1})");
  EXPECT_TRUE(src.Acknowledge(session, 1).ok());  // before any Next
  Control("POST", "/_fake/actions/queue", R"({"scale_set":"np-large","count":1})");
  Behave(R"({"queue_url":"broker"})");              // the refresh answers another URL
  Control("POST", "/_fake/actions/expire_queue_tokens");
  auto m = Next(src, session, 1);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->id, 2);
  EXPECT_GE(Requests("GET /actions-queue/scalesets/message"), 1);
}

}  // namespace
}  // namespace nodeplane
