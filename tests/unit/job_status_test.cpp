// Why a job waits (host/jobs/job_status.h): each reason from the facts that
// make it, and the order they are tried in. The same reasons are shown on
// the production path by e2e job-reasons.
#include <gtest/gtest.h>

#include "common/units.h"
#include "jobs/job_status.h"
#include "protocol/codec.h"

namespace nodeplane::jobs {
namespace {

constexpr int64_t kNow = 1'000'000 * kSecondNs;

ports::ForgeJob Waiting(const std::string& id, int64_t queued_s_ago) {
  ports::ForgeJob j;
  j.tier = "large";
  j.job_id = id;
  j.repository = "acme/app";
  j.workflow_run_id = 77;
  j.queued_at_ns = kNow - queued_s_ago * kSecondNs;
  j.received_at_ns = j.queued_at_ns;
  return j;
}

ports::Lease Runner(const std::string& id, ports::Phase phase, const std::string& node, int64_t created_s_ago) {
  ports::Lease l;
  l.id = id;
  l.tier = "large";
  l.phase = phase;
  l.node = node;
  l.created_at_ns = kNow - created_s_ago * kSecondNs;
  return l;
}

Fleet OpenSession(int64_t runners, int64_t ceiling) {
  Fleet f;
  f.now_ns = kNow;
  TierStatus& t = f.tiers["large"];
  t.tier = "large";
  t.scale_set = "np-large";
  t.session_open = true;
  t.runners = runners;
  t.ceiling = ceiling;
  return f;
}

TEST(ExplainJobs, AJobPastTheCeilingWaitsForCapacityAndNamesTheTierAndTheCeiling) {
  Fleet f = OpenSession(2, 2);
  f.leases = {Runner("a1", ports::Phase::kBusy, "n1", 60), Runner("a2", ports::Phase::kBusy, "n2", 60)};
  ports::ForgeJob on_a1 = Waiting("r1", 90), on_a2 = Waiting("r2", 80);
  on_a1.lease_id = "a1";
  on_a1.runner_name = protocol::RunnerNameFor("a1");
  on_a2.lease_id = "a2";
  on_a2.runner_name = protocol::RunnerNameFor("a2");
  const auto s = ExplainJobs({Waiting("j1", 30), on_a1, on_a2}, f);
  EXPECT_EQ(s[0].state, "waiting");
  EXPECT_EQ(s[0].reason, kReasonCeiling);
  EXPECT_NE(s[0].text.find("tier large"), std::string::npos) << s[0].text;
  EXPECT_NE(s[0].text.find("2 of 2 runners busy, ceiling reached"), std::string::npos) << s[0].text;
  EXPECT_EQ(s[0].since_ns, kNow - 30 * kSecondNs);
}

TEST(ExplainJobs, TheOldestWaitingJobIsMatchedWithIdleThenBootingRunnersFirst) {
  Fleet f = OpenSession(2, 3);
  f.leases = {Runner("b1", ports::Phase::kLaunching, "n2", 5), Runner("i1", ports::Phase::kOnline, "n1", 50)};
  f.tiers["large"].short_since_ns = kNow - 10 * kSecondNs;
  f.tiers["large"].short_why = "no live node has room";
  const auto s = ExplainJobs({Waiting("new", 1), Waiting("old", 40), Waiting("mid", 20)}, f);
  EXPECT_EQ(s[1].reason, kReasonRunnerIdle);     // old
  EXPECT_EQ(s[1].node, "n1");
  EXPECT_EQ(s[2].reason, kReasonRunnerBooting);  // mid
  EXPECT_NE(s[2].text.find("runner booting on node n2 for 5 s"), std::string::npos) << s[2].text;
  EXPECT_EQ(s[0].reason, kReasonNoNode);         // new: nothing left for it
  EXPECT_NE(s[0].text.find("no live node has room"), std::string::npos) << s[0].text;
}

TEST(ExplainJobs, ARunnerWhoseProcessRunsWithNoJobIsIdle) {
  Fleet f = OpenSession(1, 1);
  f.leases = {Runner("u1", ports::Phase::kBusy, "n1", 10)};  // the node says busy as soon as the process runs
  const auto s = ExplainJobs({Waiting("j1", 5)}, f);
  EXPECT_EQ(s[0].reason, kReasonRunnerIdle);
  EXPECT_NE(s[0].text.find("waits on node n1"), std::string::npos) << s[0].text;
}

TEST(ExplainJobs, ASessionDownOutranksEveryRunner) {
  Fleet f = OpenSession(1, 4);
  f.leases = {Runner("i1", ports::Phase::kOnline, "n1", 50)};
  f.tiers["large"].session_open = false;
  f.tiers["large"].session_down_since_ns = kNow - 90 * kSecondNs;
  f.tiers["large"].session_error = "GitHub answered 503";
  const auto s = ExplainJobs({Waiting("j1", 100)}, f);
  EXPECT_EQ(s[0].reason, kReasonSessionDown);
  EXPECT_NE(s[0].text.find("down for 90 s: GitHub answered 503"), std::string::npos) << s[0].text;
}

TEST(ExplainJobs, APausedTierSaysWhyAndHowToResume) {
  Fleet f = OpenSession(0, 4);
  f.paused["large"] = "GitHub refused runner np-x as outdated";
  const auto s = ExplainJobs({Waiting("j1", 10)}, f);
  EXPECT_EQ(s[0].reason, kReasonPaused);
  EXPECT_NE(s[0].text.find("nodeplanectl tiers resume large"), std::string::npos) << s[0].text;
}

TEST(ExplainJobs, ARateLimitSaysUntilWhen) {
  Fleet f = OpenSession(0, 4);
  f.tiers["large"].rate_limited_until_ns = kNow + 300 * kSecondNs;
  f.tiers["large"].rate_limit_why = "secondary rate limit";
  const auto s = ExplainJobs({Waiting("j1", 10)}, f);
  EXPECT_EQ(s[0].reason, kReasonRateLimited);
  EXPECT_NE(s[0].text.find("another 5 min"), std::string::npos) << s[0].text;
}

TEST(ExplainJobs, RunningAndFinishedJobsNameTheirNode) {
  Fleet f = OpenSession(1, 4);
  f.leases = {Runner("r1", ports::Phase::kBusy, "n1", 60)};
  f.ended_lease_node["r0"] = "n2";
  ports::ForgeJob running = Waiting("j1", 60);
  running.runner_name = protocol::RunnerNameFor("r1");
  running.lease_id = "r1";
  running.started_at_ns = kNow - 20 * kSecondNs;
  ports::ForgeJob done = Waiting("j0", 600);
  done.runner_name = protocol::RunnerNameFor("r0");
  done.lease_id = "r0";
  done.completed_at_ns = kNow - 5 * kSecondNs;
  done.result = "failed";
  ports::ForgeJob cancelled = Waiting("j2", 30);
  cancelled.completed_at_ns = kNow;
  cancelled.result = "canceled";
  const auto s = ExplainJobs({running, done, cancelled}, f);
  EXPECT_EQ(s[0].state, "running");
  EXPECT_EQ(s[0].node, "n1");
  EXPECT_EQ(s[1].state, "finished");
  EXPECT_EQ(s[1].text, "finished: failed on node n2");
  EXPECT_EQ(s[2].text, "ended by GitHub (canceled) before any runner took it");
}

TEST(ExplainJobs, AJobOfATierWithNoListenerSaysSo) {
  Fleet f;
  f.now_ns = kNow;
  const auto s = ExplainJobs({Waiting("j1", 10)}, f);
  EXPECT_EQ(s[0].reason, kReasonUnknownTier);
}

TEST(ParseWorkflowRef, GivesTheWorkflowFileAndTheRefItRanFor) {
  const WorkflowRef w = ParseWorkflowRef("acme/app/.github/workflows/ci.yml@refs/pull/12/merge");
  EXPECT_EQ(w.file, "ci.yml");
  EXPECT_EQ(w.ref, "refs/pull/12/merge");
  const WorkflowRef odd = ParseWorkflowRef("not a ref");
  EXPECT_EQ(odd.file, "");
  EXPECT_EQ(odd.ref, "");
}

TEST(RunLink, IsTheRunsPageUnderTheForgesRoot) {
  ports::ForgeJob j = Waiting("j1", 1);
  EXPECT_EQ(RunLink("https://github.com", j), "https://github.com/acme/app/actions/runs/77");
  EXPECT_EQ(RunLink("https://ghe.example", j), "https://ghe.example/acme/app/actions/runs/77");
  j.workflow_run_id = 0;
  EXPECT_EQ(RunLink("https://github.com", j), "");
}

TEST(RunLink, EncodesWhatGitHubNamesNeverHoldAndRefusesDotSegments) {
  ports::ForgeJob j = Waiting("j1", 1);
  j.repository = "acme/a\"pp<x>";
  EXPECT_EQ(RunLink("https://github.com", j), "https://github.com/acme/a%22pp%3Cx%3E/actions/runs/77");
  j.repository = "acme/..";
  EXPECT_EQ(RunLink("https://github.com", j), "");
  j.repository = "acme/x/../../evil";
  EXPECT_EQ(RunLink("https://github.com", j), "https://github.com/acme/x%2F..%2F..%2Fevil/actions/runs/77");
}

}  // namespace
}  // namespace nodeplane::jobs
