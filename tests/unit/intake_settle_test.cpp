// J3 of the job intake (host/jobs/scale_set_listener.h): a completion is
// marked settled only once its lease has ended with GitHub's result. Found
// by e2e ha-failover: a lease quarantined while its job ran was ended failed
// by its node's inventory between the settler's read of the lease and its
// destroy, and the entry was marked settled over the failed verdict.
//
// The intake's fixture (intake_fixture.h): the unit tests' plane, this test
// playing node n1, the real SQLite ledger; the scripted job source delivers
// no message, so only the settler works.
#include <gtest/gtest.h>

#include "intake_fixture.h"

namespace nodeplane::jobs {
namespace {

constexpr int64_t kMinute = 60 * kS;

using IntakeSettleTest = IntakeFixture;

// J3: the node's inventory ends the quarantined lease failed while the
// settler destroys its runner; the settled lease carries GitHub's result.
TEST_F(IntakeSettleTest, J3_ACompletionIsSettledOnlyOnceItsLeaseEndsWithGithubsResult) {
  constexpr int64_t kRequest = 4242;
  // n1 runs the job: in the ledger, and in the plane, which took its launch.
  const int64_t epoch = Node("n1");
  auto escrowed = ledger_sql_->EscrowForLaunch("small", 0, kRequest);
  ASSERT_TRUE(escrowed.ok() && escrowed->has_value()) << escrowed.status().ToString();
  const ports::Lease lease = (*escrowed)->lease;
  ASSERT_TRUE(ledger_sql_->Bind(lease.id, lease.epoch, "n1", "i1").ok());
  for (ports::Phase p : {ports::Phase::kLaunching, ports::Phase::kOnline, ports::Phase::kBusy}) {
    ASSERT_TRUE(ledger_sql_->Advance(lease.id, lease.epoch, p, "i1").ok());
  }
  auto launch = LaunchAsync(Lease(lease.id, "n1"), kRequest);
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());
  ASSERT_TRUE(launch.get().ok());
  // It expired while n1 could not heartbeat it (a takeover): quarantined.
  now_ += 10 * kS;
  ASSERT_TRUE(ledger_sql_->Reap().ok());
  ASSERT_EQ(ledger_sql_->GetLease(lease.id)->phase, ports::Phase::kQuarantine);
  // GitHub says its job succeeded; the journal owes the completion.
  ports::ForgeJob job;
  job.tier = "small";
  job.job_id = "job-1";
  job.runner_name = "np-" + lease.id;
  job.lease_id = lease.id;
  job.started_at_ns = now_ - 5 * kS;
  job.completed_at_ns = now_;
  job.result = "succeeded";
  ASSERT_TRUE(ledger_sql_->RecordForgeJob(job).ok());

  Listen(Tier(), source_);
  // The settler destroys through n1; n1's inventory, which no longer lists
  // the runner, ends the quarantined lease first.
  WaitQueued("n1", 1);
  plane::Command destroy = Take("n1");
  ASSERT_EQ(destroy.kind, plane::CommandKind::kDestroy);
  now_ += 10 * kMinute;  // past the quarantine's grace
  auto freed = ledger_sql_->ResolveQuarantineFor("n1", {}, epoch);
  ASSERT_TRUE(freed.ok() && *freed == 1) << freed.status().ToString();
  ASSERT_TRUE(Answer("n1", destroy, true).ok());

  ASSERT_TRUE(Eventually([&] {
    auto owed = ledger_sql_->UnsettledForgeJobs("small", 10);
    return owed.ok() && owed->empty();
  }));
  auto ended = ledger_sql_->JobForLease(lease.id);
  ASSERT_TRUE(ended.ok() && ended->has_value()) << ended.status().ToString();
  EXPECT_EQ((*ended)->conclusion, ports::Phase::kDone) << "settled over the inventory's verdict";
}

}  // namespace
}  // namespace nodeplane::jobs
