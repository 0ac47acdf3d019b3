// A launch's writes in one transaction (C99–C102, nodeplane's own, issue 21):
// np_ledger_v1.h escrow_for_launch, what escrow, assign and bump_dispatch do
// one after another, kept whole or not at all. The slot is optional: a
// plugin without it skips these cases (the host then makes the three calls).
#include "ledger_fixture.h"

namespace nodeplane::conformance {
namespace {

class LaunchEscrowTest : public LedgerTest {
 protected:
  // The node's dispatch fence as the store has it now.
  int64_t Fence(const std::string& node) {
    auto fence = ledger_->NodeFenceOf(node);
    EXPECT_TRUE(fence.ok() && fence->has_value()) << fence.status().ToString();
    return fence.ok() && fence->has_value() ? (*fence)->dispatch : -1;
  }
  size_t OpenLeases() {
    auto open = ledger_->ListLeases("");
    EXPECT_TRUE(open.ok()) << open.status().ToString();
    return open.ok() ? open->size() : 0;
  }
};

#define SKIP_WITHOUT_THE_SLOT(result)                                                           \
  if (!(result).ok() && ports::Is((result).status(), ports::Verdict::kUnsupported)) {           \
    GTEST_SKIP() << "the plugin offers no escrow_for_launch; the host makes the three writes";  \
  }

// C99: one lease, escrowed and placed as escrow places it, assigned to the
// run and request, and its node's fence advanced by one, all visible at once.
TEST_F(LaunchEscrowTest, C99_OneWriteEscrowsAssignsAndAdvancesTheNodesFence) {
  Register("n1");
  const int64_t before = Fence("n1");
  auto got = ledger_->EscrowForLaunch("small", 7, 77);
  SKIP_WITHOUT_THE_SLOT(got);
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().ToString();
  const ports::Lease& l = (*got)->lease;
  EXPECT_EQ(l.id.size(), 32u);
  EXPECT_EQ(l.phase, Phase::kAssigned);
  EXPECT_EQ(l.target_node, "n1");
  EXPECT_EQ(l.node, "");
  EXPECT_EQ(l.run_id, 7);
  EXPECT_EQ(l.request_id, 77);
  EXPECT_EQ(l.expires_at_ns, Now() + kTTL);
  EXPECT_EQ((*got)->dispatch_generation, before + 1);
  EXPECT_EQ(Fence("n1"), before + 1);
  EXPECT_EQ(Get(l.id).phase, Phase::kAssigned);
  auto job = ledger_->JobForRequest(77);
  ASSERT_TRUE(job.ok() && job->has_value()) << job.status().ToString();
  EXPECT_EQ((*job)->lease_id, l.id);
  EXPECT_EQ((*job)->node, "n1");
  // It is an ordinary assigned lease from here on.
  ASSERT_OK(ledger_->Bind(l.id, l.epoch, "n1", ""));
}

// C100: a request another open lease serves is a conflict, and nothing of
// the launch is kept: no lease, no job record, no fence moved.
TEST_F(LaunchEscrowTest, C100_AConflictKeepsNothing) {
  Register("n1");
  auto first = ledger_->EscrowForLaunch("small", 7, 77);
  SKIP_WITHOUT_THE_SLOT(first);
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status().ToString();
  const int64_t fence = Fence("n1");
  EXPECT_NP(ledger_->EscrowForLaunch("small", 7, 77).status(), NP_CONFLICT);
  EXPECT_EQ(OpenLeases(), 1u);
  EXPECT_EQ(Fence("n1"), fence);
  EXPECT_EQ(ledger_->JobForRequest(77).value()->lease_id, (*first)->lease.id);
  EXPECT_EQ(Escrow("small", 10).size(), 3u);  // the capacity it would have taken is free
}

// C101: no headroom is no lease and no error, and no fence moved.
TEST_F(LaunchEscrowTest, C101_NoHeadroomIsNothingAndNoError) {
  Register("n1", "docker", 2, 4 * kGiB);
  ASSERT_EQ(Escrow("small", 1).size(), 1u);
  const int64_t fence = Fence("n1");
  auto got = ledger_->EscrowForLaunch("small", 8, 88);
  SKIP_WITHOUT_THE_SLOT(got);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(Fence("n1"), fence);
  EXPECT_FALSE(ledger_->JobForRequest(88).value().has_value());
}

// C102: escrow's refusals are its refusals.
TEST_F(LaunchEscrowTest, C102_EscrowsRefusalsStand) {
  Register("n1");
  auto unknown = ledger_->EscrowForLaunch("no-such-tier", 1, 1);
  SKIP_WITHOUT_THE_SLOT(unknown);
  EXPECT_NP(unknown.status(), NP_UNKNOWN_TIER);
  ASSERT_OK(ledger_->SetAdmission(true, -1, "drain", "test").status());
  const int64_t fence = Fence("n1");
  EXPECT_NP(ledger_->EscrowForLaunch("small", 1, 1).status(), NP_ADMISSION_SEALED);
  EXPECT_EQ(OpenLeases(), 0u);
  EXPECT_EQ(Fence("n1"), fence);
}

}  // namespace
}  // namespace nodeplane::conformance
