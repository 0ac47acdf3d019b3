// Admission, the compute barrier, the dispatch fence and quiescence (C70–C77).
#include "ledger_fixture.h"

namespace nodeplane::conformance {
namespace {

constexpr int64_t kGrace = 5 * kMinute;

class BarrierTest : public LedgerTest {
 protected:
  // Seals admission and asks for a barrier; returns its id.
  std::string SealAndAsk() {
    EXPECT_TRUE(ledger_->SetAdmission(true, -1, "drain", "test").ok());
    auto b = ledger_->RequestComputeBarrier("test");
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? b->id : "";
  }
  // Captures the node's fence, then records an answer against it.
  void Observe(const std::string& barrier, const std::string& node, bool empty) {
    auto fence = ledger_->NodeFenceOf(node);
    ASSERT_TRUE(fence.ok() && fence->has_value());
    ASSERT_OK(ledger_->RecordBarrierObservation({node, barrier, (*fence)->epoch, (*fence)->dispatch, empty}));
  }
  bool Clear() {
    auto c = ledger_->ComputeClear();
    EXPECT_TRUE(c.ok());
    return c.ok() && *c;
  }
};

// C70
TEST_F(BarrierTest, C70_OneEmptyAnswerIsNeverClearance) {
  Register("n1");
  std::string b = SealAndAsk();
  Observe(b, "n1", true);
  Advance(24 * 60 * kMinute);
  EXPECT_FALSE(Clear());
}

// C71
TEST_F(BarrierTest, C71_ARunSampledAtTheEndOfTheGraceIsProved) {
  Register("n1");
  std::string b = SealAndAsk();
  Observe(b, "n1", true);
  Advance(kGrace - 1);
  Observe(b, "n1", true);
  EXPECT_FALSE(Clear());  // 1 ns short
  Advance(1);
  Observe(b, "n1", true);
  EXPECT_TRUE(Clear());
}

// C72
TEST_F(BarrierTest, C72_EmptyAnswersKeepTheRunAndAnyOtherEndsIt) {
  Register("n1");
  std::string b = SealAndAsk();
  Observe(b, "n1", true);
  Advance(kGrace / 2);
  Observe(b, "n1", true);
  Advance(kGrace / 2);
  Observe(b, "n1", false);  // something runs: the run is over
  Observe(b, "n1", true);   // a new run starts now
  Advance(kGrace - 1);
  Observe(b, "n1", true);
  EXPECT_FALSE(Clear());
}

// C73
TEST_F(BarrierTest, C73_ALaunchAfterTheFenceVoidsTheAnswerAndAnEstablishedProof) {
  Register("n1");
  std::string b = SealAndAsk();
  Observe(b, "n1", true);
  Advance(kGrace);
  Observe(b, "n1", true);
  ASSERT_TRUE(Clear());
  auto fence = ledger_->NodeFenceOf("n1");
  ASSERT_TRUE(ledger_->BumpDispatch("n1").ok());  // a launch is handed to n1 after the fence was taken
  ASSERT_OK(ledger_->RecordBarrierObservation({"n1", b, (*fence)->epoch, (*fence)->dispatch, true}));
  EXPECT_FALSE(Clear());
}

// C74
TEST_F(BarrierTest, C74_AReRegistrationVoidsAProofAndALateAnswerStartsNoRun) {
  Register("n1");
  std::string b = SealAndAsk();
  auto old_fence = ledger_->NodeFenceOf("n1");
  Observe(b, "n1", true);
  Advance(kGrace);
  Observe(b, "n1", true);
  ASSERT_TRUE(Clear());
  Register("n1");  // a new incarnation
  EXPECT_FALSE(Clear());
  ASSERT_OK(ledger_->RecordBarrierObservation({"n1", b, (*old_fence)->epoch, (*old_fence)->dispatch, true}));
  Advance(kGrace);
  ASSERT_OK(ledger_->RecordBarrierObservation({"n1", b, (*old_fence)->epoch, (*old_fence)->dispatch, true}));
  EXPECT_FALSE(Clear());
}

// C75
TEST_F(BarrierTest, C75_AProvedHostThatGoesSilentStaysProved) {
  int64_t e = Register("n1");
  std::string b = SealAndAsk();
  Observe(b, "n1", true);
  Advance(kGrace);
  Observe(b, "n1", true);
  ASSERT_OK(ledger_->NodeGone("n1", e));
  EXPECT_TRUE(Clear());
}

// C76
TEST_F(BarrierTest, C76_DropIsFencedOnTheBarrierId) {
  Register("n1");
  std::string b = SealAndAsk();
  Observe(b, "n1", true);
  ASSERT_OK(ledger_->DropComputeBarrier("not-" + b));
  auto in_force = ledger_->ComputeBarrierInForce();
  ASSERT_TRUE(in_force.ok() && in_force->has_value());
  EXPECT_EQ((*in_force)->id, b);
  ASSERT_OK(ledger_->DropComputeBarrier(b));
  EXPECT_FALSE(ledger_->ComputeBarrierInForce()->has_value());
  EXPECT_FALSE(Clear());
}

TEST_F(BarrierTest, C76_TheSameGenerationJoinsAndANewOneStartsOver) {
  Register("n1");
  std::string b = SealAndAsk();
  EXPECT_EQ(ledger_->RequestComputeBarrier("other")->id, b);
  Observe(b, "n1", true);
  Advance(kGrace);
  Observe(b, "n1", true);
  ASSERT_TRUE(Clear());
  ASSERT_TRUE(ledger_->SetAdmission(false, -1, "resume", "t").ok());
  std::string b2 = SealAndAsk();
  EXPECT_NE(b2, b);
  EXPECT_FALSE(Clear());  // the old runs were cleared
}

TEST_F(BarrierTest, AnAnswerForAnotherBarrierOrAnUnknownNodeChangesNothing) {
  Register("n1");
  std::string b = SealAndAsk();
  ASSERT_OK(ledger_->RecordBarrierObservation({"n1", "stale", 1, 0, true}));
  ASSERT_OK(ledger_->RecordBarrierObservation({"ghost", b, 1, 0, true}));
  Advance(kGrace);
  Observe(b, "n1", true);
  EXPECT_FALSE(Clear());
}

TEST_F(BarrierTest, InvalidatingARunDiscardsWhatTheHostProved) {
  Register("n1");
  Register("n2");
  std::string b = SealAndAsk();
  for (const char* n : {"n1", "n2"}) Observe(b, n, true);
  Advance(kGrace);
  for (const char* n : {"n1", "n2"}) Observe(b, n, true);
  ASSERT_TRUE(Clear());
  ASSERT_OK(ledger_->InvalidateBarrierRun("n1"));
  EXPECT_FALSE(Clear());
  Observe(b, "n1", true);
  Advance(kGrace);
  Observe(b, "n1", true);
  ASSERT_TRUE(Clear());
  ASSERT_OK(ledger_->InvalidateEveryBarrierRun());
  EXPECT_FALSE(Clear());
}

TEST_F(BarrierTest, AdmissionGenerationsMoveOnEffectiveChangesOnly) {
  auto [g0, sealed0] = *ledger_->AdmissionGeneration();
  EXPECT_FALSE(sealed0);
  EXPECT_EQ(*ledger_->SetAdmission(false, -1, "", ""), g0);  // opening an open deployment: no-op
  int64_t g1 = *ledger_->SetAdmission(true, g0, "drain", "op");
  EXPECT_EQ(g1, g0 + 1);
  EXPECT_NP(ledger_->SetAdmission(false, g0, "", "").status(), NP_CONFLICT);
  auto [g, sealed] = *ledger_->AdmissionGeneration();
  EXPECT_EQ(g, g1);
  EXPECT_TRUE(sealed);
}

// C77
TEST_F(BarrierTest, C77_QuiescenceIsQuietOnlyWhenSealedAndNothingIsOpen) {
  Register("n1");
  ports::Lease escrow = EscrowOne();
  auto q = ledger_->GetQuiescence();
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->Quiet());
  ASSERT_TRUE(ledger_->SetAdmission(true, -1, "drain", "t").ok());
  q = ledger_->GetQuiescence();
  EXPECT_TRUE(q->sealed);
  ASSERT_EQ(q->outstanding.size(), 1u);  // escrow counts
  EXPECT_FALSE(q->Quiet());
  ASSERT_OK(ledger_->Release(escrow.id, 0, Phase::kDone));
  EXPECT_TRUE(ledger_->GetQuiescence()->Quiet());
}

// C86 (nodeplane's own, issue 17 #2; R36): withdrawal changes placement,
// not what runs. A withdrawn host that still holds a lease keeps the compute
// barrier unproven however well the rest of the fleet answers; once nothing
// is open it is not waited for, since it will never be asked again.
TEST_F(BarrierTest, C86_AWithdrawnHostWithAnOpenLeaseIsUnproved) {
  int64_t e1 = Register("n1", "docker", 8, 32 * kGiB, "", "i1");
  ports::Lease running = Running();
  ASSERT_EQ(running.node, "n1");
  Register("n2");
  ASSERT_OK(ledger_->NodeWithdrawn("n1", e1, "i1"));
  std::string b = SealAndAsk();
  Observe(b, "n2", true);
  Advance(kGrace);
  Observe(b, "n2", true);
  EXPECT_FALSE(Clear()) << "a withdrawn host still running a lease counted as proved";
  ASSERT_OK(ledger_->Release(running.id, running.epoch, Phase::kDone));
  EXPECT_TRUE(Clear());
}

// C87 (nodeplane's own, issue 17 #2): the compute barrier means nothing
// before the ledger barrier holds: an open lease anywhere, escrow included,
// keeps it unproven.
TEST_F(BarrierTest, C87_AnOpenLeaseKeepsTheComputeBarrierUnproved) {
  Register("n1");
  ports::Lease escrow = EscrowOne();
  std::string b = SealAndAsk();
  Observe(b, "n1", true);
  Advance(kGrace);
  Observe(b, "n1", true);
  EXPECT_FALSE(Clear());
  ASSERT_OK(ledger_->Release(escrow.id, escrow.epoch, Phase::kDone));
  EXPECT_TRUE(Clear());
}

}  // namespace
}  // namespace nodeplane::conformance
