// Reaping, quarantine, force release and completion correction (C54–C61).
#include "ledger_fixture.h"

namespace nodeplane::conformance {
namespace {

using QuarantineTest = LedgerTest;
constexpr int64_t kGrace = 5 * kMinute;

// C54
TEST_F(QuarantineTest, C54_AnExpiredRunningLeaseKeepsItsCapacityCharged) {
  Register("n1", "docker", 2, 32 * kGiB);  // room for one small lease
  ports::Lease l = Running();
  Advance(kTTL);
  EXPECT_EQ(*ledger_->Reap(), 1);
  EXPECT_EQ(Get(l.id).phase, Phase::kQuarantine);
  EXPECT_EQ(Get(l.id).held_at_ns, Now());
  EXPECT_EQ(Escrow("small", 1).size(), 0u);  // still charged
}

TEST_F(QuarantineTest, C54_ExpiredEscrowFails) {
  Register("n1", "docker", 2, 32 * kGiB);
  ports::Lease l = EscrowOne();
  Advance(kTTL);
  EXPECT_EQ(*ledger_->Reap(), 1);
  EXPECT_NP(ledger_->GetLease(l.id).status(), NP_NOT_FOUND);
  EXPECT_EQ(Escrow("small", 1).size(), 1u);
}

// C55
TEST_F(QuarantineTest, C55_ExpiredHeldPhasesBecomeQuarantineAndAreNeverReapedAgain) {
  Register("n1");
  ports::Lease custody = Running("small", Phase::kCustody);
  ports::Lease teardown = Running("small", Phase::kTeardown);
  Advance(kTTL);
  EXPECT_EQ(*ledger_->Reap(), 2);
  EXPECT_EQ(Get(custody.id).phase, Phase::kQuarantine);
  EXPECT_EQ(Get(teardown.id).phase, Phase::kQuarantine);
  const int64_t epoch = Get(custody.id).epoch;
  Advance(100 * kTTL);
  EXPECT_EQ(*ledger_->Reap(), 0);
  EXPECT_EQ(Get(custody.id).epoch, epoch);
  auto ids = ledger_->QuarantinedLeaseIds("n1");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->size(), 2u);
}

// C56: a holder that read the current epoch may end a quarantine.
TEST_F(QuarantineTest, C56_ReleasingAQuarantineAtItsCurrentEpochReturnsCapacity) {
  Register("n1", "docker", 2, 32 * kGiB);
  ports::Lease l = Running();
  Advance(kTTL);
  ASSERT_TRUE(ledger_->Reap().ok());
  ports::Lease q = Get(l.id);
  ASSERT_OK(ledger_->Release(l.id, q.epoch, Phase::kDone));
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->conclusion, Phase::kDone);  // the caller's outcome
  EXPECT_EQ(Escrow("small", 1).size(), 1u);
}

// C57
TEST_F(QuarantineTest, C57_AnInventoryWithoutTheLeaseFreesItAfterTheGrace) {
  int64_t e = Register("n1", "docker", 2, 32 * kGiB);
  ports::Lease l = Running();
  Advance(kTTL);
  ASSERT_TRUE(ledger_->Reap().ok());
  EXPECT_EQ(*ledger_->ResolveQuarantineFor("n1", {}, e), 0);  // a fresh quarantine is kept
  Advance(kGrace + 1);
  EXPECT_EQ(*ledger_->ResolveQuarantineFor("n1", {l.id}, e), 0);  // still running there
  EXPECT_EQ(*ledger_->ResolveQuarantineFor("n1", {}, e), 1);
  EXPECT_NP(ledger_->GetLease(l.id).status(), NP_NOT_FOUND);
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->failure_reason, "nodeplane:provisional:inventory-absence");
  EXPECT_EQ(Escrow("small", 1).size(), 1u);
}

// C58
TEST_F(QuarantineTest, C58_AnOvertakenRegistrationFreesNothing) {
  int64_t e = Register("n1");
  Running();
  Advance(kTTL);
  ASSERT_TRUE(ledger_->Reap().ok());
  Advance(kGrace + 1);
  Register("n1");  // a newer incarnation registered meanwhile
  EXPECT_EQ(*ledger_->ResolveQuarantineFor("n1", {}, e), 0);
  EXPECT_EQ(*ledger_->ResolveQuarantineFor("ghost", {}, 1), 0);
}

// C59
TEST_F(QuarantineTest, C59_ForceReleaseEndsAQuarantineAtOnce) {
  Register("n1");
  ports::Lease l = Running();
  Advance(kTTL);
  ASSERT_TRUE(ledger_->Reap().ok());
  const int64_t epoch = Get(l.id).epoch;
  ASSERT_OK(ledger_->ForceRelease(l.id));
  EXPECT_NP(ledger_->GetLease(l.id).status(), NP_NOT_FOUND);
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->conclusion, Phase::kFailed);
  EXPECT_EQ((*job)->failure_reason, "nodeplane:force-released");
  EXPECT_NP(ledger_->Release(l.id, epoch, Phase::kFailed), NP_FENCED);  // the epoch moved
}

TEST_F(QuarantineTest, C59_ForceReleaseAsksTheHolderOfCustody) {
  Register("n1");
  ports::Lease l = Running("small", Phase::kCustody);
  ASSERT_OK(ledger_->ForceRelease(l.id));
  EXPECT_TRUE(Get(l.id).force_release);
  const int64_t expires = Get(l.id).expires_at_ns;
  Advance(kSecond);
  EXPECT_NP(ledger_->Heartbeat(l.id, l.epoch), NP_FORCE_RELEASE);
  EXPECT_EQ(Get(l.id).expires_at_ns, expires);  // not extended
  ASSERT_OK(ledger_->Release(l.id, l.epoch, Phase::kFailed));
}

TEST_F(QuarantineTest, C59_ForceReleaseRefusesOtherPhasesAndUnknownLeases) {
  Register("n1");
  ports::Lease l = Running();
  EXPECT_NP(ledger_->ForceRelease(l.id), NP_BAD_TRANSITION);
  EXPECT_NP(ledger_->ForceRelease(std::string(32, 'e')), NP_NOT_FOUND);
}

// C60
TEST_F(QuarantineTest, C60_ACompletionCorrectsAProvisionalVerdict) {
  int64_t e = Register("n1");
  ports::Lease l = Running();
  Advance(kTTL);
  ASSERT_TRUE(ledger_->Reap().ok());
  Advance(kGrace + 1);
  ASSERT_EQ(*ledger_->ResolveQuarantineFor("n1", {}, e), 1);
  auto settled = ledger_->SettleCompletionOnTerminalLease(l.id, l.epoch, Phase::kDone);
  ASSERT_TRUE(settled.ok());
  EXPECT_TRUE(*settled);
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->conclusion, Phase::kDone);
  EXPECT_EQ((*job)->failure_reason, "");
}

// C61
TEST_F(QuarantineTest, C61_ACompletionNeverRewritesAnIndependentVerdictNorEndsAnOpenLease) {
  Register("n1");
  ports::Lease open = Running();
  auto settled = ledger_->SettleCompletionOnTerminalLease(open.id, open.epoch, Phase::kDone);
  ASSERT_TRUE(settled.ok());
  EXPECT_FALSE(*settled);
  EXPECT_EQ(Get(open.id).phase, Phase::kBusy);

  ports::Lease ended = Running();
  ASSERT_OK(ledger_->Release(ended.id, ended.epoch, Phase::kFailed));
  EXPECT_TRUE(*ledger_->SettleCompletionOnTerminalLease(ended.id, ended.epoch, Phase::kDone));
  EXPECT_EQ((*ledger_->JobForLease(ended.id))->conclusion, Phase::kFailed);  // an operator's or node's word stands

  EXPECT_TRUE(*ledger_->SettleCompletionOnTerminalLease(std::string(32, 'd'), 0, Phase::kDone));
  EXPECT_NP(ledger_->SettleCompletionOnTerminalLease(ended.id, 0, Phase::kBusy).status(), NP_BAD_TRANSITION);
}

}  // namespace
}  // namespace nodeplane::conformance
