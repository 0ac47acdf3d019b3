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

// C94: a completion with a lease is owed to the fleet until it is recorded
// settled, oldest completion first; one without a lease is owed nothing.
TEST_F(JournalTest, C94_CompletionsAreOwedUntilSettled) {
  const int64_t t = Now();
  auto complete = [&](const std::string& job, const std::string& lease, int64_t at) {
    ports::ForgeJob c;
    c.tier = "large";
    c.job_id = job;
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

}  // namespace
}  // namespace nodeplane::conformance
