// The job journal (C92–C94, nodeplane's own, issue 18): what the job intake
// writes before it acknowledges a forge's message.
#include "ledger_fixture.h"

namespace nodeplane::conformance {
namespace {

using JournalTest = LedgerTest;

ports::ForgeJob Assigned(const std::string& tier, const std::string& job, int64_t received_at) {
  ports::ForgeJob j;
  j.tier = tier;
  j.job_id = job;
  j.repository = "acme/app";
  j.workflow_ref = "acme/app/.github/workflows/ci.yml@refs/heads/main";
  j.display_name = "build";
  j.workflow_run_id = 42;
  j.queued_at_ns = received_at - kSecond;
  j.received_at_ns = received_at;
  return j;
}

// C92: an entry only gains fields; recording the same message again, or a
// later one that says something else of a field already set, changes nothing.
TEST_F(JournalTest, C92_AnEntryOnlyGainsFields) {
  const int64_t t = Now();
  ASSERT_OK(ledger_->RecordForgeJob(Assigned("large", "job-1", t)));
  ASSERT_OK(ledger_->RecordForgeJob(Assigned("large", "job-1", t + kMinute)));  // redelivered
  ports::ForgeJob started;
  started.tier = "large";
  started.job_id = "job-1";
  started.repository = "someone/else";
  started.runner_name = "np-abc";
  started.lease_id = "abc";
  started.started_at_ns = t + 2 * kSecond;
  ASSERT_OK(ledger_->RecordForgeJob(started));
  auto listed = ledger_->ListForgeJobs("", 0, 10);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  const ports::ForgeJob& j = listed->front();
  EXPECT_EQ(j.received_at_ns, t);
  EXPECT_EQ(j.queued_at_ns, t - kSecond);
  EXPECT_EQ(j.repository, "acme/app");
  EXPECT_EQ(j.workflow_run_id, 42);
  EXPECT_EQ(j.display_name, "build");
  EXPECT_EQ(j.runner_name, "np-abc");
  EXPECT_EQ(j.lease_id, "abc");
  EXPECT_EQ(j.started_at_ns, t + 2 * kSecond);
  EXPECT_EQ(j.completed_at_ns, 0);
  EXPECT_TRUE(j.result.empty());
  ports::ForgeJob nameless;
  nameless.tier = "large";
  EXPECT_NP(ledger_->RecordForgeJob(nameless), NP_INVALID);
  nameless.tier.clear();
  nameless.job_id = "job-2";
  EXPECT_NP(ledger_->RecordForgeJob(nameless), NP_INVALID);
}

// C93: the list is newest first, by tier, bounded by time and by count; the
// same job id in two tiers is two entries.
TEST_F(JournalTest, C93_EntriesListNewestFirstByTier) {
  const int64_t t = Now();
  ASSERT_OK(ledger_->RecordForgeJob(Assigned("large", "a", t)));
  ASSERT_OK(ledger_->RecordForgeJob(Assigned("small", "a", t + kSecond)));
  ASSERT_OK(ledger_->RecordForgeJob(Assigned("large", "b", t + 2 * kSecond)));
  auto all = ledger_->ListForgeJobs("", 0, 10);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].job_id, "b");
  EXPECT_EQ((*all)[1].tier, "small");
  EXPECT_EQ((*all)[2].tier, "large");
  EXPECT_EQ(ledger_->ListForgeJobs("large", 0, 10)->size(), 2u);
  EXPECT_EQ(ledger_->ListForgeJobs("", t + kSecond, 10)->size(), 2u);
  EXPECT_EQ(ledger_->ListForgeJobs("", 0, 1)->size(), 1u);
  EXPECT_EQ(ledger_->ListForgeJobs("medium", 0, 10)->size(), 0u);
}

// C94: a completion by a runner with a lease is owed to the fleet until it
// is recorded settled, oldest completion first; one naming no runner is
// owed nothing.
TEST_F(JournalTest, C94_CompletionsAreOwedUntilSettled) {
  const int64_t t = Now();
  auto complete = [&](const std::string& job, const std::string& lease, int64_t at) {
    ports::ForgeJob c;
    c.tier = "large";
    c.job_id = job;
    c.runner_name = lease.empty() ? "" : "np-" + lease;
    c.lease_id = lease;
    c.result = "succeeded";
    c.completed_at_ns = at;
    return ledger_->RecordForgeJob(c);
  };
  ASSERT_OK(ledger_->RecordForgeJob(Assigned("large", "running", t)));
  ASSERT_OK(complete("late", "l2", t + 2 * kSecond));
  ASSERT_OK(complete("early", "l1", t + kSecond));
  ASSERT_OK(complete("cancelled", "", t + kSecond));  // no runner of ours took it
  auto owed = ledger_->UnsettledForgeJobs("", 10);
  ASSERT_TRUE(owed.ok()) << owed.status().ToString();
  ASSERT_EQ(owed->size(), 2u);
  EXPECT_EQ((*owed)[0].job_id, "early");
  EXPECT_EQ((*owed)[1].job_id, "late");
  EXPECT_EQ(ledger_->UnsettledForgeJobs("small", 10)->size(), 0u);
  ports::ForgeJob settled;
  settled.tier = "large";
  settled.job_id = "early";
  settled.settled_at_ns = t + 3 * kSecond;
  ASSERT_OK(ledger_->RecordForgeJob(settled));
  owed = ledger_->UnsettledForgeJobs("large", 10);
  ASSERT_EQ(owed->size(), 1u);
  EXPECT_EQ(owed->front().job_id, "late");
  EXPECT_EQ(ledger_->ListForgeJobs("", 0, 10)->size(), 4u);
}

ports::ForgeJob Record(const std::string& job) {
  ports::ForgeJob j;
  j.tier = "large";
  j.job_id = job;
  return j;
}

// C103 (record_forge_job J3, J4; review D1): GitHub re-queues a job no runner
// took: a completion naming no runner, then the same job assigned again.
// The re-assignment undoes the cancellation, so the runner that then starts
// the job is owed only its own completion; a redelivered cancellation
// changes nothing, and a final one stands.
TEST_F(JournalTest, C103_ARequeuedJobIsReopenedAndOnlyItsRunnersCompletionIsOwed) {
  const int64_t t = Now();
  ports::ForgeJob assigned = Assigned("large", "job-r", t);
  assigned.assigned_at_ns = t;
  ASSERT_OK(ledger_->RecordForgeJob(assigned));
  ports::ForgeJob cancelled = Record("job-r");
  cancelled.completed_at_ns = t + kSecond;
  cancelled.result = "canceled";
  ASSERT_OK(ledger_->RecordForgeJob(cancelled));
  auto entry = [&] { return ledger_->ListForgeJobs("large", 0, 10)->front(); };
  EXPECT_EQ(entry().result, "canceled");
  EXPECT_EQ(entry().requeues, 1);
  ports::ForgeJob again = Record("job-r");
  again.assigned_at_ns = t + 2 * kSecond;
  ASSERT_OK(ledger_->RecordForgeJob(again));
  EXPECT_EQ(entry().completed_at_ns, 0);
  EXPECT_EQ(entry().result, "");
  EXPECT_EQ(entry().assigned_at_ns, t + 2 * kSecond);  // J2: the latest assignment
  ASSERT_OK(ledger_->RecordForgeJob(cancelled));      // redelivered: older than the assignment
  EXPECT_EQ(entry().completed_at_ns, 0);
  EXPECT_EQ(entry().requeues, 1);
  ports::ForgeJob started = Record("job-r");
  started.runner_name = "np-l9";
  started.lease_id = "l9";
  started.started_at_ns = t + 3 * kSecond;
  ASSERT_OK(ledger_->RecordForgeJob(started));
  EXPECT_TRUE(ledger_->UnsettledForgeJobs("large", 10)->empty());
  ports::ForgeJob late_cancel = cancelled;  // a runnerless completion never lands on a started job
  late_cancel.completed_at_ns = t + 4 * kSecond;
  ASSERT_OK(ledger_->RecordForgeJob(late_cancel));
  EXPECT_TRUE(ledger_->UnsettledForgeJobs("large", 10)->empty());
  ports::ForgeJob done = started;
  done.completed_at_ns = t + 5 * kSecond;
  done.result = "succeeded";
  ASSERT_OK(ledger_->RecordForgeJob(done));
  auto owed = ledger_->UnsettledForgeJobs("large", 10);
  ASSERT_EQ(owed->size(), 1u);
  EXPECT_EQ(owed->front().result, "succeeded");
  EXPECT_EQ(owed->front().completed_at_ns, t + 5 * kSecond);
}

// C104 (J4): a start or a completion that names a runner also undoes a
// runnerless completion, even when the re-assignment was never read.
TEST_F(JournalTest, C104_ARunnerAfterARunnerlessCompletionReopensTheJob) {
  const int64_t t = Now();
  ports::ForgeJob cancelled = Record("job-s");
  cancelled.completed_at_ns = t;
  cancelled.result = "canceled";
  ASSERT_OK(ledger_->RecordForgeJob(cancelled));
  ports::ForgeJob done = Record("job-s");
  done.runner_name = "np-l8";
  done.lease_id = "l8";
  done.completed_at_ns = t + kSecond;
  done.result = "failed";
  ASSERT_OK(ledger_->RecordForgeJob(done));
  auto owed = ledger_->UnsettledForgeJobs("large", 10);
  ASSERT_EQ(owed->size(), 1u);
  EXPECT_EQ(owed->front().result, "failed");
}

// C105 (review D22): completions whose settling failed go behind those never
// tried, so a stuck one never hides a newer one.
TEST_F(JournalTest, C105_OwedCompletionsTriedLeastRecentlyComeFirst) {
  const int64_t t = Now();
  for (const char* job : {"stuck", "fresh"}) {
    ports::ForgeJob c = Record(job);
    c.runner_name = std::string("np-") + job;
    c.lease_id = job;
    c.completed_at_ns = t + (std::string(job) == "fresh" ? kSecond : 0);
    c.result = "succeeded";
    ASSERT_OK(ledger_->RecordForgeJob(c));
  }
  EXPECT_EQ(ledger_->UnsettledForgeJobs("large", 1)->front().job_id, "stuck");
  ports::ForgeJob tried = Record("stuck");
  tried.settle_tried_at_ns = t + 2 * kSecond;
  ASSERT_OK(ledger_->RecordForgeJob(tried));
  EXPECT_EQ(ledger_->UnsettledForgeJobs("large", 1)->front().job_id, "fresh");
  tried.settle_tried_at_ns = t + kSecond;  // J2: an older try does not move it back
  ASSERT_OK(ledger_->RecordForgeJob(tried));
  EXPECT_EQ(ledger_->ListForgeJobs("large", 0, 10)->size(), 2u);
  EXPECT_EQ(ledger_->UnsettledForgeJobs("large", 1)->front().job_id, "fresh");
}

// C106: what GitHub said of the job is kept whole: runs-on labels, event,
// runner id and assignment times.
TEST_F(JournalTest, C106_TheForgesWholeJobIsKept) {
  const int64_t t = Now();
  ports::ForgeJob j = Assigned("large", "job-w", t);
  j.event_name = "pull_request";
  j.request_labels = {"np-large", "self-hosted", "gpu"};
  j.assigned_at_ns = t + 1;
  ASSERT_OK(ledger_->RecordForgeJob(j));
  ports::ForgeJob started = Record("job-w");
  started.runner_id = 77;
  started.runner_assigned_at_ns = t + 2;
  started.runner_name = "np-l7";
  started.lease_id = "l7";
  ASSERT_OK(ledger_->RecordForgeJob(started));
  const ports::ForgeJob got = ledger_->ListForgeJobs("large", 0, 10)->front();
  EXPECT_EQ(got.event_name, "pull_request");
  EXPECT_EQ(got.request_labels, (std::vector<std::string>{"np-large", "self-hosted", "gpu"}));
  EXPECT_EQ(got.runner_id, 77);
  EXPECT_EQ(got.assigned_at_ns, t + 1);
  EXPECT_EQ(got.runner_assigned_at_ns, t + 2);
}

}  // namespace
}  // namespace nodeplane::conformance
