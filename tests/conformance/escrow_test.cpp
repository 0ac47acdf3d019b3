// Escrow, capacity and placement (billet-ledger.md §4, cases C01–C22).
#include <set>

#include "ledger_fixture.h"

namespace nodeplane::conformance {
namespace {

using EscrowTest = LedgerTest;

// C01
TEST_F(EscrowTest, C01_ReservingHoldsCapacity) {
  Register("n1", "docker", 8, 32 * kGiB);
  EXPECT_EQ(Escrow("small", 1).size(), 1u);
  EXPECT_EQ(Escrow("small", 10).size(), 3u);  // 8 vCPU / 2 = 4 in all
  EXPECT_EQ(Escrow("small", 1).size(), 0u);
}

// C04
TEST_F(EscrowTest, C04_EscrowReturnsExactlyWhatItReserved) {
  Register("n1", "docker", 6, 32 * kGiB);
  std::vector<ports::Lease> got = Escrow("small", 5);
  ASSERT_EQ(got.size(), 3u);
  std::set<std::string> ids;
  for (const auto& l : got) {
    ids.insert(l.id);
    EXPECT_EQ(l.id.size(), 32u);
    EXPECT_EQ(l.phase, Phase::kCapacity);
    EXPECT_EQ(l.epoch, 0);
    EXPECT_EQ(l.target_node, "n1");
    EXPECT_EQ(l.node, "");
    EXPECT_EQ(l.expires_at_ns, Now() + kTTL);
  }
  EXPECT_EQ(ids.size(), 3u);
  auto listed = ledger_->ListLeases("");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 3u);
}

TEST_F(EscrowTest, ZeroCreatesNothingAndANegativeCountIsInvalid) {
  Register("n1");
  EXPECT_TRUE(Escrow("small", 0).empty());
  EXPECT_NP(ledger_->Escrow("small", -1).status(), NP_INVALID);
}

// C05
TEST_F(EscrowTest, C05_TiersShareOneGlobalCeiling) {
  ports::Catalog c = DefaultCatalog();
  c.max_vcpu = 6;
  UseCatalog(c);
  Register("a", "docker", 16, 64 * kGiB);
  Register("b", "firecracker", 16, 64 * kGiB);
  EXPECT_EQ(Escrow("small", 2).size(), 2u);   // 4 of 6 vCPU
  EXPECT_EQ(Escrow("multi", 5).size(), 1u);   // the last 2
  EXPECT_EQ(Escrow("small", 1).size(), 0u);
}

// C06
TEST_F(EscrowTest, C06_MemoryCanBindBeforeVCPU) {
  Register("n1", "docker", 16, 9 * kGiB);
  EXPECT_EQ(Escrow("small", 8).size(), 2u);  // 9 GiB / 4 GiB
}

// C07
TEST_F(EscrowTest, C07_MaxConcurrentCapsOpenLeasesPerTier) {
  ports::Catalog c = DefaultCatalog();
  c.tiers[0].max_concurrent = 2;
  UseCatalog(c);
  Register("n1", "docker", 32, 128 * kGiB);
  std::vector<ports::Lease> got = Escrow("small", 5);
  ASSERT_EQ(got.size(), 2u);
  ASSERT_OK(ledger_->Release(got[0].id, got[0].epoch, Phase::kDone));
  EXPECT_EQ(Escrow("small", 5).size(), 1u);
}

// C08
TEST_F(EscrowTest, C08_TheMacOSLicenceLimitIsPerHostAcrossTiers) {
  ports::Catalog c = DefaultCatalog();
  c.tiers.push_back({"mac2", 2, 4 * kGiB, {"tart"}, "macos", "", "", 0, 0});
  c.tiers.push_back({"tart-linux", 1, 1 * kGiB, {"tart"}, "linux", "", "", 0, 0});
  UseCatalog(c);
  Register("mini", "tart", 64, 256 * kGiB);
  EXPECT_EQ(Escrow("mac", 1).size(), 1u);
  EXPECT_EQ(Escrow("mac2", 5).size(), 1u);  // the host's second and last macOS slot
  EXPECT_EQ(Escrow("mac", 1).size(), 0u);
  EXPECT_EQ(Escrow("tart-linux", 4).size(), 4u);  // Linux guests are not limited by it
}

// C42: slots are charged from what each lease recorded at escrow.
TEST_F(EscrowTest, C42_MacOSAccountingSurvivesACatalogueChange) {
  Register("mini", "tart", 64, 256 * kGiB);
  EXPECT_EQ(Escrow("mac", 2).size(), 2u);
  ports::Catalog c = DefaultCatalog();
  c.tiers[2].vcpu = 1;  // the tier changes; the leases keep their slots
  UseCatalog(c);
  EXPECT_EQ(Escrow("mac", 1).size(), 0u);
}

// C09
TEST_F(EscrowTest, C09_AnUnknownTierIsRefused) {
  Register("n1");
  EXPECT_NP(ledger_->Escrow("nope", 1).status(), NP_UNKNOWN_TIER);
}

// C10, C11
TEST_F(EscrowTest, C10_AReservationAimedAtAHostSpendsItBeforeItRuns) {
  Register("a", "docker", 4, 64 * kGiB);
  std::vector<ports::Lease> got = Escrow("small", 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].target_node, "a");
  EXPECT_EQ(got[1].target_node, "a");
  EXPECT_EQ(Escrow("small", 1).size(), 0u);
}

TEST_F(EscrowTest, C11_WorkIsChargedToTheHostHoldingIt) {
  Register("a", "docker", 2, 64 * kGiB);
  Register("b", "docker", 2, 64 * kGiB);
  ports::Lease l = EscrowOne();
  ASSERT_OK(ledger_->Assign(l.id, 0, 1, 1));
  ASSERT_OK(ledger_->Bind(l.id, 0, l.target_node, ""));
  std::vector<ports::Lease> next = Escrow("small", 5);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_NE(next[0].target_node, l.target_node);
}

// C12
TEST_F(EscrowTest, C12_HeadroomNeverExceedsWhatEligibleHostsHold) {
  ports::Catalog c = DefaultCatalog();
  c.max_vcpu = 1000;
  UseCatalog(c);
  Register("a", "docker", 4, 64 * kGiB);
  Register("fc", "firecracker", 64, 256 * kGiB);  // not eligible for small
  EXPECT_EQ(Escrow("small", 100).size(), 2u);
}

// C13
TEST_F(EscrowTest, C13_AHostThatIsGoneStopsCounting) {
  int64_t e = Register("a", "docker", 8, 64 * kGiB);
  ASSERT_OK(ledger_->NodeGone("a", e));
  EXPECT_EQ(Escrow("small", 1).size(), 0u);
  Register("a", "docker", 8, 64 * kGiB);
  EXPECT_EQ(Escrow("small", 1).size(), 1u);
}

// A store may keep what it read of the fleet between escrows (the SQL
// stores do, sql_ledger.h L6); a node that another control plane on the same
// ledger saw go, come back or arrive must still count at the next escrow.
TEST_F(EscrowTest, AFleetChangedByAnotherProcessReachesTheNextEscrow) {
  int64_t e = Register("a", "docker", 2, 4 * kGiB);  // room for one small
  auto other = OpenAnother();
  ASSERT_NE(other, nullptr);
  auto registration = [](const std::string& name, int64_t vcpu, int64_t memory) {
    ports::NodeRegistration r;
    r.name = name;
    r.provider = "docker";
    r.incarnation = std::string(32, 'b');
    r.total_vcpu = vcpu;
    r.total_memory = memory;
    r.wire_version = 1;
    return r;
  };
  EXPECT_EQ(EscrowOne("small").target_node, "a");
  ASSERT_OK(other->NodeGone("a", e));
  ASSERT_TRUE(other->RegisterNode(registration("b", 4, 8 * kGiB)).ok());  // room for two
  EXPECT_EQ(EscrowOne("small").target_node, "b");
  ASSERT_OK(other->ForgetEveryNode());
  EXPECT_EQ(Escrow("small", 5).size(), 0u);
  ASSERT_TRUE(other->RegisterNode(registration("a", 8, 32 * kGiB)).ok());
  EXPECT_EQ(Escrow("small", 5).size(), 3u);  // a's 8 vCPU less the 2 it holds (C13: a lease stays charged)
}

// A store may keep what open leases hold between escrows too (the SQL
// stores do, sql_ledger.h L10); leases another control plane on the same
// ledger opened, released or reaped must still count at the next escrow.
TEST_F(EscrowTest, LeasesChangedByAnotherProcessReachTheNextEscrow) {
  Register("a", "docker", 8, 32 * kGiB);  // room for four small
  auto other = OpenAnother();
  ASSERT_NE(other, nullptr);
  const ports::Lease mine = EscrowOne("small");
  // One lease, as many as ours opened: a store that miscounted its own
  // writes would take the two for one.
  auto theirs = other->Escrow("small", 1);
  ASSERT_TRUE(theirs.ok() && theirs->size() == 1u) << theirs.status().ToString();
  ASSERT_OK(ledger_->Release(mine.id, mine.epoch, Phase::kDone));  // ours, after theirs
  EXPECT_EQ(Escrow("small", 5).size(), 3u);  // four, less theirs
  ASSERT_OK(other->Release(theirs->front().id, theirs->front().epoch, Phase::kDone));
  EXPECT_EQ(Escrow("small", 5).size(), 1u);  // the one they gave back
  Advance(kTTL + kSecond);
  auto reaped = other->Reap();
  ASSERT_TRUE(reaped.ok() && *reaped == 4) << reaped.status().ToString();
  EXPECT_EQ(Escrow("small", 5).size(), 4u);  // everything expired, reaped by them
}

// A launch that conflicted kept nothing (C100), in what a store remembers
// of open leases as well: not even once another process's write has moved
// the store on by as much as the launch had.
TEST_F(EscrowTest, ALaunchThatConflictedHoldsNothingAfterAnotherProcessWrites) {
  Register("a", "docker", 8, 32 * kGiB);  // room for four small
  auto first = ledger_->EscrowForLaunch("small", 7, 77);
  if (!first.ok() && ports::Is(first.status(), ports::Verdict::kUnsupported)) {
    GTEST_SKIP() << "the plugin offers no escrow_for_launch";
  }
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status().ToString();
  EXPECT_NP(ledger_->EscrowForLaunch("small", 7, 77).status(), NP_CONFLICT);
  auto other = OpenAnother();
  ASSERT_NE(other, nullptr);
  const ports::Lease& l = (*first)->lease;
  ASSERT_OK(other->Release(l.id, l.epoch, Phase::kDone));
  EXPECT_EQ(Escrow("small", 5).size(), 4u);
}

// The catalogue's node policies bind the next escrow, however recently the
// store read the fleet.
TEST_F(EscrowTest, ANodePolicyChangeBindsTheNextEscrow) {
  Register("a", "docker", 8, 64 * kGiB);
  EXPECT_EQ(EscrowOne("small").target_node, "a");
  ports::Catalog c = DefaultCatalog();
  ports::NodePolicy a;
  a.name = "a";
  a.max_vcpu = 4;
  c.nodes.push_back(a);
  UseCatalog(c);
  EXPECT_EQ(Escrow("small", 5).size(), 1u);  // 4 vCPU, 2 already held
}

// C14
TEST_F(EscrowTest, C14_ThePreferredBackendIsChosenAndPolicyNeverOverrulesIt) {
  for (bool spread : {false, true}) {
    ports::Catalog c = DefaultCatalog();
    c.spread = spread;
    UseCatalog(c);
    Register("dk", "docker", 64, 256 * kGiB);
    Register("fc", "firecracker", 4, 16 * kGiB);
    ports::Lease l = EscrowOne("multi");
    EXPECT_EQ(l.target_node, "fc") << "spread=" << spread;
    ASSERT_OK(ledger_->Release(l.id, 0, Phase::kDone));
  }
}

TEST_F(EscrowTest, C14_TheNextBackendTakesOverWhenThePreferredIsFull) {
  Register("dk", "docker", 64, 256 * kGiB);
  Register("fc", "firecracker", 2, 16 * kGiB);
  std::vector<ports::Lease> got = Escrow("multi", 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].target_node, "fc");
  EXPECT_EQ(got[1].target_node, "dk");
}

// C15
TEST_F(EscrowTest, C15_PackFillsAMachineBeforeStartingTheNext) {
  Register("a", "docker", 8, 64 * kGiB);
  Register("b", "docker", 8, 64 * kGiB);
  std::vector<ports::Lease> got = Escrow("small", 3);
  ASSERT_EQ(got.size(), 3u);
  for (const auto& l : got) EXPECT_EQ(l.target_node, "a");
}

TEST_F(EscrowTest, C15_SpreadPrefersTheEmptiestMachine) {
  ports::Catalog c = DefaultCatalog();
  c.spread = true;
  UseCatalog(c);
  Register("a", "docker", 8, 64 * kGiB);
  Register("b", "docker", 8, 64 * kGiB);
  std::vector<ports::Lease> got = Escrow("small", 4);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].target_node, "a");
  EXPECT_EQ(got[1].target_node, "b");
  EXPECT_EQ(got[2].target_node, "a");
  EXPECT_EQ(got[3].target_node, "b");
}

// C16
TEST_F(EscrowTest, C16_PlacementIsDeterministicOnIdenticalFleets) {
  Register("zeta", "docker", 8, 64 * kGiB);
  Register("alpha", "docker", 8, 64 * kGiB);
  Register("mid", "docker", 8, 64 * kGiB);
  EXPECT_EQ(EscrowOne().target_node, "alpha");
}

// Tier pins and sites confine placement.
TEST_F(EscrowTest, PinsAndSitesConfinePlacement) {
  ports::Catalog c = DefaultCatalog();
  c.tiers.push_back({"pinned", 2, 4 * kGiB, {"docker"}, "linux", "b", "", 0, 0});
  c.tiers.push_back({"sited", 2, 4 * kGiB, {"docker"}, "linux", "", "fra", 0, 0});
  UseCatalog(c);
  Register("a", "docker", 8, 64 * kGiB, "iad");
  Register("b", "docker", 8, 64 * kGiB, "iad");
  Register("c", "docker", 8, 64 * kGiB, "fra");
  EXPECT_EQ(EscrowOne("pinned").target_node, "b");
  ports::Lease s = EscrowOne("sited");
  EXPECT_EQ(s.target_node, "c");
  EXPECT_EQ(s.site, "fra");
}

// Per-node policy caps what a node's claim contributes.
TEST_F(EscrowTest, ANodePolicyCapsTheClaimedCapacity) {
  ports::Catalog c = DefaultCatalog();
  c.nodes.push_back({"a", "", {}, 2, 4, 0});
  UseCatalog(c);
  Register("a", "docker", 64, 256 * kGiB);  // claims far more than it is allowed
  EXPECT_EQ(Escrow("small", 10).size(), 2u);
}

// C17
TEST_F(EscrowTest, C17_AFloorIsHeldBackFromAGreedyTier) {
  ports::Catalog c = DefaultCatalog();
  c.tiers.push_back({"floor", 2, 4 * kGiB, {"docker"}, "linux", "", "", 0, 2});
  UseCatalog(c);
  Register("a", "docker", 8, 64 * kGiB);
  EXPECT_EQ(Escrow("small", 10).size(), 2u);  // 4 slots, 2 held for the floor
  EXPECT_EQ(Escrow("floor", 10).size(), 2u);  // a tier's own floor is not held from itself
}

TEST_F(EscrowTest, C17_AMetFloorStopsHoldingAndAPartialFloorHoldsOnlyWhatIsMissing) {
  ports::Catalog c = DefaultCatalog();
  c.tiers.push_back({"floor", 2, 4 * kGiB, {"docker"}, "linux", "", "", 0, 2});
  UseCatalog(c);
  Register("a", "docker", 8, 64 * kGiB);
  EXPECT_EQ(Escrow("floor", 1).size(), 1u);  // one of two held by the floor itself
  EXPECT_EQ(Escrow("small", 10).size(), 2u);  // 3 left, 1 still held
}

// C18
TEST_F(EscrowTest, C18_AnImpossibleFloorDoesNotStopEveryoneElse) {
  ports::Catalog c = DefaultCatalog();
  c.tiers.push_back({"nowhere", 2, 4 * kGiB, {"docker"}, "linux", "", "moon", 0, 5});
  UseCatalog(c);
  Register("a", "docker", 8, 64 * kGiB);
  EXPECT_EQ(Escrow("small", 10).size(), 4u);
}

TEST_F(EscrowTest, C18_AFloorIsHeldOnTheMachinesItsOwnTierCouldUse) {
  ports::Catalog c = DefaultCatalog();
  c.tiers.push_back({"fc-floor", 2, 4 * kGiB, {"firecracker"}, "linux", "", "", 0, 2});
  UseCatalog(c);
  Register("dk", "docker", 8, 64 * kGiB);
  Register("fc", "firecracker", 8, 64 * kGiB);
  EXPECT_EQ(Escrow("small", 10).size(), 4u);  // the floor lives on fc, not dk
}

// C19
TEST_F(EscrowTest, C19_EscrowStrandedOnADeadMachineDoesNotSatisfyAFloor) {
  ports::Catalog c = DefaultCatalog();
  c.tiers.push_back({"floor", 2, 4 * kGiB, {"docker"}, "linux", "", "", 0, 1});
  UseCatalog(c);
  int64_t e = Register("a", "docker", 8, 64 * kGiB);
  Register("b", "docker", 8, 64 * kGiB);
  ASSERT_EQ(EscrowOne("floor").target_node, "a");
  ASSERT_OK(ledger_->NodeGone("a", e));
  // The floor's only lease is stranded on a dead host, so one slot on b is
  // still held for it.
  EXPECT_EQ(Escrow("small", 10).size(), 3u);
}

// C22
TEST_F(EscrowTest, C22_ASealedDeploymentRefusesEscrowAsSealed) {
  Register("a");
  ASSERT_TRUE(ledger_->SetAdmission(true, -1, "drain", "test").ok());
  EXPECT_NP(ledger_->Escrow("small", 1).status(), NP_ADMISSION_SEALED);
  ASSERT_TRUE(ledger_->SetAdmission(false, -1, "resume", "test").ok());
  EXPECT_EQ(Escrow("small", 1).size(), 1u);
}

// Withdrawn and drained hosts take no new work (C51 in part).
TEST_F(EscrowTest, C51_AWithdrawnNodeIsNotPlacedOnUntilItRegistersAgain) {
  int64_t e = Register("a", "docker", 8, 64 * kGiB, "", std::string(32, '1'));
  Register("b", "docker", 2, 64 * kGiB);
  ASSERT_OK(ledger_->NodeWithdrawn("a", e, std::string(32, '1')));
  std::vector<ports::Lease> got = Escrow("small", 10);
  ASSERT_EQ(got.size(), 1u);  // only b
  EXPECT_EQ(got[0].target_node, "b");
  Register("a", "docker", 8, 64 * kGiB, "", std::string(32, '2'));
  EXPECT_EQ(Escrow("small", 10).size(), 4u);
}

}  // namespace
}  // namespace nodeplane::conformance
