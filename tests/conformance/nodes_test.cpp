// Node registration, liveness and withdrawal (C43–C53, C85).
#include "ledger_fixture.h"

namespace nodeplane::conformance {
namespace {

using NodesTest = LedgerTest;
const std::string kInc1(32, '1'), kInc2(32, '2');

bool Live(loader::LedgerAdapter& l, const std::string& name) {
  auto nodes = l.ListNodes();
  if (!nodes.ok()) return false;
  for (const auto& n : *nodes) {
    if (n.name == name) return n.live;
  }
  return false;
}

// C43
TEST_F(NodesTest, C43_RegistrationMarksANodeLiveAndRecordsItsContribution) {
  Register("n1", "docker", 8, 16 * kGiB, "fra");
  auto nodes = ledger_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_TRUE((*nodes)[0].live);
  EXPECT_EQ((*nodes)[0].total_vcpu, 8);
  EXPECT_EQ((*nodes)[0].total_memory, 16 * kGiB);
  EXPECT_EQ((*nodes)[0].site, "fra");
  EXPECT_EQ((*nodes)[0].last_seen_at_ns, Now());
  Register("n1", "docker", 4, 8 * kGiB, "fra");  // a lower contribution is accepted
  EXPECT_EQ((*ledger_->ListNodes())[0].total_vcpu, 4);
}

TEST_F(NodesTest, C43_ANodeThatContributesNothingIsRefused) {
  ports::NodeRegistration r{"n1", "docker", "", kInc1, "", 0, 8 * kGiB, 1};
  EXPECT_NP(ledger_->RegisterNode(r).status(), NP_INVALID);
  r.total_vcpu = 2;
  r.total_memory = 0;
  EXPECT_NP(ledger_->RegisterNode(r).status(), NP_INVALID);
  r.total_memory = kGiB;
  r.provider = "";
  EXPECT_NP(ledger_->RegisterNode(r).status(), NP_INVALID);
}

// R30: a node's claims never widen what the deployment's config allows it.
TEST_F(NodesTest, ANodePolicyRefusesAnotherProviderClaim) {
  ports::Catalog c = DefaultCatalog();
  c.nodes.push_back({"mini", "tart", {}, 2, 0, 0});
  UseCatalog(c);
  ports::NodeRegistration r{"mini", "docker", "", kInc1, "", 8, 8 * kGiB, 1};
  EXPECT_NP(ledger_->RegisterNode(r).status(), NP_WRONG_PROVIDER);
}

// C44
TEST_F(NodesTest, C44_AnExpiringOldIncarnationCannotKillTheNewOne) {
  int64_t e1 = Register("n1");
  int64_t e2 = Register("n1");
  EXPECT_GT(e2, e1);
  EXPECT_GT(Register("n1"), e2);
  ASSERT_OK(ledger_->NodeGone("n1", e1));
  EXPECT_TRUE(Live(*ledger_, "n1"));
}

// C45
TEST_F(NodesTest, C45_ANodeThatIsGoneStopsBeingLiveAndComesBack) {
  int64_t e = Register("n1");
  ASSERT_OK(ledger_->NodeGone("n1", e));
  EXPECT_FALSE(Live(*ledger_, "n1"));
  ASSERT_OK(ledger_->NodeGone("ghost", 1));  // unknown: a silent no-op
  Register("n1");
  EXPECT_TRUE(Live(*ledger_, "n1"));
}

// C46
TEST_F(NodesTest, C46_ARestartedControlPlaneTrustsNoNode) {
  Register("a");
  Register("b");
  ASSERT_OK(ledger_->ForgetEveryNode());
  auto nodes = ledger_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 2u);  // rows are kept
  EXPECT_FALSE((*nodes)[0].live);
  EXPECT_FALSE((*nodes)[1].live);
}

// C47
TEST_F(NodesTest, C47_AHostMayNotMoveSiteWhileWorkIsAimedAtIt) {
  Register("n1", "docker", 8, 32 * kGiB, "fra");
  ports::Lease l = EscrowOne();
  ports::NodeRegistration r{"n1", "docker", "iad", kInc1, "", 8, 32 * kGiB, 1};
  EXPECT_NP(ledger_->RegisterNode(r).status(), NP_WRONG_SITE);
  Advance(kTTL);  // the escrow expires: a crashed host's expired escrow does not lock it
  EXPECT_TRUE(ledger_->RegisterNode(r).ok());
  (void)l;
}

// C48
TEST_F(NodesTest, C48_AnExpiredRunningLeaseStillPinsTheBackend) {
  Register("n1", "docker");
  Running();
  Advance(10 * kTTL);
  ports::NodeRegistration r{"n1", "firecracker", "", kInc1, "", 8, 32 * kGiB, 1};
  EXPECT_NP(ledger_->RegisterNode(r).status(), NP_WRONG_PROVIDER);
  ASSERT_TRUE(ledger_->Reap().ok());  // now quarantined: still pinned
  EXPECT_NP(ledger_->RegisterNode(r).status(), NP_WRONG_PROVIDER);
}

TEST_F(NodesTest, C48_OnlyFinishedWorkLetsANodeChangeBackend) {
  Register("n1", "docker");
  ports::Lease l = Running();
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kDone));
  ports::NodeRegistration r{"n1", "firecracker", "", kInc1, "", 8, 32 * kGiB, 1};
  EXPECT_TRUE(ledger_->RegisterNode(r).ok());
}

// C50
TEST_F(NodesTest, C50_NodesAreListedByNameWithSiteAndLiveness) {
  Register("zeta", "docker", 8, 32 * kGiB, "iad");
  int64_t e = Register("alpha", "tart", 8, 32 * kGiB, "fra");
  ASSERT_OK(ledger_->NodeGone("alpha", e));
  auto nodes = ledger_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "alpha");
  EXPECT_EQ((*nodes)[0].site, "fra");
  EXPECT_EQ((*nodes)[0].provider, "tart");
  EXPECT_FALSE((*nodes)[0].live);
  EXPECT_EQ((*nodes)[1].name, "zeta");
  EXPECT_TRUE((*nodes)[1].live);
}

// C52
TEST_F(NodesTest, C52_AWithdrawalFromAnyoneButTheRegisteredProcessIsStale) {
  int64_t e = Register("n1", "docker", 8, 32 * kGiB, "", kInc1);
  EXPECT_NP(ledger_->NodeWithdrawn("n1", e - 1, kInc1), NP_WITHDRAWAL_STALE);
  EXPECT_NP(ledger_->NodeWithdrawn("n1", e + 1, kInc1), NP_WITHDRAWAL_STALE);
  EXPECT_NP(ledger_->NodeWithdrawn("n1", e, kInc2), NP_WITHDRAWAL_STALE);
  EXPECT_NP(ledger_->NodeWithdrawn("n1", e, ""), NP_WITHDRAWAL_STALE);
  EXPECT_NP(ledger_->NodeWithdrawn("ghost", 1, kInc1), NP_WITHDRAWAL_STALE);
  EXPECT_TRUE(Live(*ledger_, "n1"));
  ASSERT_OK(ledger_->NodeWithdrawn("n1", e, kInc1));
  EXPECT_FALSE(Live(*ledger_, "n1"));
  EXPECT_TRUE((*ledger_->ListNodes())[0].withdrawn);
}

// C53
TEST_F(NodesTest, C53_AWithdrawalReleasesNothing) {
  int64_t e = Register("n1", "docker", 8, 32 * kGiB, "", kInc1);
  ports::Lease l = Running();
  ASSERT_OK(ledger_->NodeWithdrawn("n1", e, kInc1));
  ports::Lease after = Get(l.id);
  EXPECT_EQ(after.phase, Phase::kBusy);
  EXPECT_EQ(after.epoch, l.epoch);
  ASSERT_OK(ledger_->Heartbeat(l.id, l.epoch));  // the running job may finish
}

// C85
TEST_F(NodesTest, C85_BumpDispatchCountsLaunchesPerNode) {
  auto g = ledger_->BumpDispatch("ghost");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, 0);
  Register("n1");
  EXPECT_EQ(*ledger_->BumpDispatch("n1"), 1);
  EXPECT_EQ(*ledger_->BumpDispatch("n1"), 2);
  auto fence = ledger_->NodeFenceOf("n1");
  ASSERT_TRUE(fence.ok() && fence->has_value());
  EXPECT_EQ((*fence)->dispatch, 2);
  auto none = ledger_->NodeFenceOf("ghost");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// C88 (nodeplane's own, issue 17 #10; R23): an incarnation, once recorded,
// is never blanked: a registration without one is another process.
TEST_F(NodesTest, C88_ARegistrationWithoutAnIncarnationCannotBlankAClaimedOne) {
  const ports::NodeRegistration unclaimed{"old", "docker", "", "", "", 8, 32 * kGiB, 1};
  ASSERT_TRUE(ledger_->RegisterNode(unclaimed).ok());  // never claimed one: accepted without, again and again
  EXPECT_EQ(ledger_->RegisterNode(unclaimed).value(), 2);
  Register("n1", "docker", 8, 32 * kGiB, "", "i1");
  auto blank = ledger_->RegisterNode({"n1", "docker", "", "", "", 8, 32 * kGiB, 1});
  EXPECT_NP(blank.status(), NP_CONFLICT);
  auto nodes = ledger_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  for (const ports::Node& n : *nodes) {
    if (n.name == "n1") {
      EXPECT_EQ(n.incarnation, "i1");
      EXPECT_EQ(n.epoch, 1);
    }
  }
  EXPECT_EQ(Register("n1", "docker", 8, 32 * kGiB, "", "i2"), 2);  // another claim supersedes, as ever
}

}  // namespace
}  // namespace nodeplane::conformance
