// Ownership, destroy and the other Runner commands (R14, R19, R25–R27, R29,
// R39, R41, R42, R44–R47, S18, S20).
#include "plane_fixture.h"

namespace nodeplane::plane {
namespace {

class OwnershipTest : public PlaneTest {
 protected:
  // n1 (incarnation i1) launches request 77, then a destroy of it is asked
  // and n1 takes the command: the destroy's outcome to come, and the command.
  std::pair<std::future<Status>, Command> DestroyTakenByTheOwner() {
    Reg("n1", "i1");
    auto launch = LaunchAsync(Lease("l1"), 77);
    WaitQueued("n1", 1);
    EXPECT_TRUE(Answer("n1", Take("n1"), true).ok());
    EXPECT_TRUE(launch.get().ok());
    auto destroy = std::async(std::launch::async, [&] { return plane_->runner().DestroyCompleted(77, "succeeded"); });
    WaitQueued("n1", 1);
    return {std::move(destroy), Take("n1")};
  }
};

// R14: after a restart, what the ledger places on a node and may have compute
// belongs to the process the ledger recorded as its holder, else to the
// process registering now; its request id comes back with it (R27).
TEST_F(OwnershipTest, R14_ARegistrationAdoptsWhatTheLedgerPlacesOnTheNode) {
  ledger_.Place("n1", "a", 5);
  ledger_.Place("n1", "b", 6, ports::Phase::kBusy, "i0");  // bound by an earlier process
  ledger_.Place("n1", "c", 7, ports::Phase::kAssigned);    // no compute was started
  ledger_.Place("n2", "d", 8);                             // another node's
  Reg("n1", "i1");
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("a", "n1", "i1"));
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("b", "n1", "i0"));
  EXPECT_FALSE(plane_->OwnerOfLease("c").has_value());
  EXPECT_FALSE(plane_->OwnerOfLease("d").has_value());
  auto owner = plane_->OwnerOfRequest(5);
  ASSERT_TRUE(owner.has_value());
  EXPECT_EQ(owner->incarnation, "i1");
}

// R14, R26: a replacement never takes another process's records, whatever
// its inventory says and however often it reconciles.
TEST_F(OwnershipTest, R14_R26_AReplacementNeverTakesTheSupersededProcessesLeases) {
  ledger_.Place("n1", "a", 5);
  RegisterRequest first = Req("n1", "i1");
  first.inventory_known = true;
  first.instances = {"a"};
  ASSERT_TRUE(PlaneTestPeer(*plane_).Register(first).ok());
  RegisterRequest second = Req("n1", "i2");
  second.inventory_known = true;  // truthfully runs nothing
  ASSERT_TRUE(PlaneTestPeer(*plane_).Register(second).ok());
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("a", "n1", "i1"));
  ASSERT_TRUE(plane_->ReconcileInventory("n1", "i2", {}).ok());
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("a", "n1", "i1"));
  auto by_owner = plane_->AuthorizeLease("n1", "i1", "a");
  ASSERT_TRUE(by_owner.ok()) << by_owner.status().ToString();
  EXPECT_TRUE(*by_owner);  // the draining process may still heartbeat and release it
}

// R26, R19: the current process, or the one that was given the launch.
TEST_F(OwnershipTest, R26_R19_ASupersededProcessMayFinishOnlyItsOwnLeases) {
  ledger_.Place("n1", "mine", 5, ports::Phase::kAssigned);
  Reg("n1", "i1");
  auto launch = LaunchAsync(Lease("mine"), 5);
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1", "i1"), true).ok());
  ASSERT_TRUE(launch.get().ok());
  Reg("n1", "i2");
  auto by_owner = plane_->AuthorizeLease("n1", "i1", "mine");
  ASSERT_TRUE(by_owner.ok());
  EXPECT_TRUE(*by_owner);  // admitted by ownership
  EXPECT_TRUE(Is(plane_->MayMutateLease("n1", "i1", "other"), kSuperseded));
  auto by_membership = plane_->AuthorizeLease("n1", "i2", "other");
  ASSERT_TRUE(by_membership.ok());
  EXPECT_FALSE(*by_membership);  // current, but the ledger must confirm placement
  EXPECT_TRUE(Is(plane_->MayMutateLease("ghost", "i1", "unowned"), kUnregistered));
  Reg("n2", "j1");
  EXPECT_TRUE(Is(plane_->MayMutateLease("n2", "j1", "mine"), kSuperseded));  // given to another node
  // The owner may finish even after the node record is gone.
  PlaneTestPeer(*plane_).Forget("n1");
  EXPECT_TRUE(plane_->MayMutateLease("n1", "i1", "mine").ok());
}

// R19, R14, R25: the forOwnLease guard, decided by the Plane from its owner
// records and the ledger read in the same request. Membership alone admits
// only a lease the ledger places on this node; the ledger's recorded holder
// is admitted without a record; an ended lease answers to the node its job
// was attributed to.
TEST_F(OwnershipTest, R19_R14_R25_ALeaseRequestIsAdmittedByOwnerHolderOrPlacement) {
  ledger_.Place("n2", "theirs", 3, ports::Phase::kOnline);
  ledger_.Place("n1", "ours", 4, ports::Phase::kAssigned);
  ledger_.Place("n1", "held", 5, ports::Phase::kBusy, "i0");
  ledger_.ended["gone"] = "n1";
  Reg("n1", "i1");
  EXPECT_TRUE(Is(plane_->AdmitLeaseRequest("n1", "i1", "theirs"), kSuperseded));  // R19
  EXPECT_TRUE(plane_->AdmitLeaseRequest("n1", "i1", "ours").ok());
  // i0 is not the registered process, but the ledger names it the holder.
  EXPECT_TRUE(plane_->AdmitLeaseRequest("n1", "i0", "held").ok());
  EXPECT_TRUE(Is(plane_->AdmitLeaseRequest("n1", "i9", "ours"), kSuperseded));
  EXPECT_TRUE(plane_->AdmitLeaseRequest("n1", "i1", "gone").ok());  // R25
  Reg("n2", "j1");
  EXPECT_FALSE(plane_->AdmitLeaseRequest("n2", "j1", "gone").ok());
}

// R25: the record of a lease that ended is forgotten, by the release the
// plane sees or, for an end it never hears of (the reaper, a freed
// quarantine, an operator), when the node next reconciles.
TEST_F(OwnershipTest, R25_EndedLeasesAreForgotten) {
  ledger_.Place("n1", "a", 1);
  ledger_.Place("n1", "b", 2);
  Reg("n1", "i1");
  EXPECT_EQ(PlaneTestPeer(*plane_).Owners(), 2u);
  ledger_.End("a");  // released: the wire forgets its record
  plane_->ForgetLease("n1", "a");
  EXPECT_FALSE(plane_->OwnerOfLease("a").has_value());
  plane_->ForgetLease("other-node", "b");  // only the node's own record
  EXPECT_TRUE(plane_->OwnerOfLease("b").has_value());
  ledger_.End("b");
  ASSERT_TRUE(plane_->ReconcileInventory("n1", "i1", {}).ok());
  EXPECT_FALSE(plane_->OwnerOfLease("b").has_value());
  EXPECT_EQ(PlaneTestPeer(*plane_).Owners(), 0u);
}

// R25: a record made while the ledger was being read is for a lease the
// read may have missed, and is kept.
TEST_F(OwnershipTest, R25_ARecordNewerThanTheReadIsKept) {
  Reg("n1", "i1");
  ports::Lease fresh = Lease("fresh", "n1");
  fresh.node = "n1";
  fresh.phase = ports::Phase::kLaunching;
  ledger_.on_list = [&] { plane_->AdoptOwnership("n1", "i1", {fresh}); };
  ASSERT_TRUE(plane_->ReconcileInventory("n1", "i1", {}).ok());
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("fresh", "n1", "i1"));
}

// R25: the backstop bound keeps the newest records.
TEST_F(OwnershipTest, R25_OwnershipRecordsAreBounded) {
  PlaneOptions o = Options();
  o.max_owners = 3;
  plane_ = std::make_unique<Plane>(o);
  Reg("n1", "i1");
  for (int i = 0; i < 10; ++i) {
    auto launch = LaunchAsync(Lease("x" + std::to_string(i)), 100 + i);
    WaitQueued("n1", 1);
    ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());
    ASSERT_TRUE(launch.get().ok());
  }
  EXPECT_LE(PlaneTestPeer(*plane_).Owners(), 3u);
  EXPECT_TRUE(plane_->OwnerOfLease("x9").has_value());
}

// R29: inventory reconciliation on its own cadence, fenced to the current process.
TEST_F(OwnershipTest, R29_ReconcileInventoryFreesAndAdopts) {
  ledger_.Place("n1", "l0", 2);  // running; quarantined below, and not named: the ledger is asked to free it
  ledger_.Place("n1", "l1", 3, ports::Phase::kQuarantine);  // adopted because it names it
  ledger_.Place("n2", "l2", 4);                              // another node's: a claim cannot reach it
  ledger_.Place("n1", "l3", 5, ports::Phase::kAssigned);     // escrowed for n1, never bound: nor this
  {
    std::lock_guard l(ledger_.mu);
    ledger_.leases.back().node.clear();
  }
  Reg("n1", "i1");
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("l0", "n1", "i1"));  // launched: adopted at registration
  {
    std::lock_guard l(ledger_.mu);
    ledger_.leases.front().phase = ports::Phase::kQuarantine;  // its lease expired meanwhile
  }
  ledger_.on_resolve = [&] {
    ledger_.End("l0");
    return int64_t{1};
  };
  auto freed = plane_->ReconcileInventory("n1", "i1", {"l1", "l2", "l3"});
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, 1);
  EXPECT_FALSE(plane_->OwnerOfLease("l0").has_value());  // freed, so forgotten
  EXPECT_TRUE(PlaneTestPeer(*plane_).Reconciled("n1"));
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("l1", "n1", "i1"));
  EXPECT_FALSE(plane_->OwnerOfLease("l2").has_value());
  EXPECT_FALSE(plane_->OwnerOfLease("l3").has_value());
  Reg("n1", "i2");
  EXPECT_TRUE(Is(plane_->ReconcileInventory("n1", "i1", {}).status(), kSuperseded));
  std::lock_guard l(ledger_.mu);
  ASSERT_EQ(ledger_.resolved.size(), 1u);
  EXPECT_EQ(ledger_.resolved[0].first, "n1");
}

// R29 at its cadence: every node reconciles about once a lease TTL, and a
// node with no quarantined lease missing from its inventory has nothing the
// ledger could free, so the ledger is not asked (the write it would be, or a
// read more, for each of a large fleet's reconciles).
TEST_F(OwnershipTest, R29_AReconcileWithNothingQuarantinedAbsentAsksTheLedgerToFreeNothing) {
  ledger_.Place("n1", "busy", 3);
  ledger_.Place("n1", "named", 4, ports::Phase::kQuarantine);
  Reg("n1", "i1");
  ASSERT_TRUE(plane_->ReconcileInventory("n1", "i1", {"named"}).ok());
  ASSERT_TRUE(plane_->ReconcileInventory("n1", "i1", {"busy", "named"}).ok());
  EXPECT_TRUE(PlaneTestPeer(*plane_).Reconciled("n1"));
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("named", "n1", "i1"));
  std::lock_guard l(ledger_.mu);
  EXPECT_TRUE(ledger_.resolved.empty());
}

// R27, R41: after a restart the plane has no record of a request, but the
// ledger does: a destroy its holder cannot confirm is not a success.
TEST_F(OwnershipTest, R27_R41_ADestroyTheLedgerPlacesIsNotConfirmedByNobody) {
  ledger_.Place("n1", "l9", 9, ports::Phase::kBusy, "i1");
  EXPECT_TRUE(Is(plane_->runner().Destroy(9), kCustody));  // n1 has not come back
  Reg("n2", "j1");
  // The ledger knows the holder: only it could confirm, so no other node is
  // asked (R41 broadcasts for an unknown owner only; review D8).
  EXPECT_TRUE(Is(plane_->runner().Destroy(9), kCustody));
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n2"), 0u);
  {
    std::lock_guard l(ledger_.mu);
    ledger_.fail_list = true;
  }
  EXPECT_EQ(plane_->runner().Destroy(9).code(), Code::kUnavailable);
}

// R41: without a known owner, destroy is broadcast, and idempotent.
TEST_F(OwnershipTest, R41_ADestroyWithoutAnOwnerIsBroadcast) {
  EXPECT_TRUE(plane_->runner().Destroy(9).ok());  // the ledger places nothing: nowhere for compute to be
  Reg("a");
  Reg("b");
  auto destroy = std::async(std::launch::async, [&] { return plane_->runner().Destroy(9); });
  WaitQueued("a", 1);
  WaitQueued("b", 1);
  Command ca = Take("a"), cb = Take("b");
  EXPECT_EQ(ca.kind, CommandKind::kDestroy);
  EXPECT_EQ(ca.request_id, 9);
  ASSERT_TRUE(Answer("a", ca, true).ok());
  ASSERT_TRUE(Answer("b", cb, true).ok());
  EXPECT_TRUE(destroy.get().ok());
}

// R41: a partial destroy is a failure.
TEST_F(OwnershipTest, R41_APartialDestroyIsAFailure) {
  Reg("a");
  Reg("b");
  auto destroy = std::async(std::launch::async, [&] { return plane_->runner().Destroy(9); });
  WaitQueued("a", 1);
  WaitQueued("b", 1);
  ASSERT_TRUE(Answer("a", Take("a"), true).ok());
  ASSERT_TRUE(Answer("b", Take("b"), false).ok());
  Status s = destroy.get();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node \"b\" could not destroy request 9"), std::string::npos);
}

// R27, R39: only the process that has the compute confirms a destroy.
TEST_F(OwnershipTest, R27_AReplacementWithNothingDoesNotConfirmADestroy) {
  ledger_.Place("n1", "l1", 77, ports::Phase::kAssigned);
  Reg("n1", "i1");
  Reg("n2", "j1");
  auto launch = LaunchAsync(Lease("l1", "n1"), 77);
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1", "i1"), true).ok());
  ASSERT_TRUE(launch.get().ok());
  Reg("n1", "i2");  // a replacement; i1 is draining and no longer polls
  auto destroy = std::async(std::launch::async, [&] { return plane_->runner().Destroy(77); });
  WaitQueued("n1", 1);
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n2"), 0u);  // addressed to the owner's node, not broadcast
  ASSERT_TRUE(Answer("n1", Take("n1", "i2"), true, false, "i2").ok());  // truthfully has nothing
  EXPECT_TRUE(Is(destroy.get(), kCustody));
  EXPECT_TRUE(plane_->OwnerOfRequest(77).has_value());  // not released under a live job
}

TEST_F(OwnershipTest, R27_TheOwnersConfirmationEndsOwnership) {
  auto [destroy, c] = DestroyTakenByTheOwner();
  EXPECT_EQ(c.job_result, "succeeded");
  ASSERT_TRUE(Answer("n1", c, true).ok());
  EXPECT_TRUE(destroy.get().ok());
  EXPECT_FALSE(plane_->OwnerOfRequest(77).has_value());
}

// A destroy the plane stopped waiting for: the owner's late confirmation
// still ends the request's ownership (the tombstone remembers whom it asked).
TEST_F(OwnershipTest, R27_TheOwnersLateConfirmationEndsOwnership) {
  auto [destroy, c] = DestroyTakenByTheOwner();
  clock_.Advance(600 * kS);
  EXPECT_FALSE(destroy.get().ok());
  EXPECT_TRUE(plane_->OwnerOfRequest(77).has_value());
  ASSERT_TRUE(Answer("n1", c, true).ok());
  EXPECT_FALSE(plane_->OwnerOfRequest(77).has_value());
}

TEST_F(OwnershipTest, ADestroyWhoseOwnerIsGoneReportsTheHolderUnavailable) {
  Reg("n1", "i1");
  auto launch = LaunchAsync(Lease("l1"), 77);
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());
  ASSERT_TRUE(launch.get().ok());
  PlaneTestPeer(*plane_).Forget("n1");
  EXPECT_TRUE(Is(plane_->runner().DestroyCompleted(77, "succeeded"), kHolderUnavailable));
  EXPECT_TRUE(Is(plane_->runner().Destroy(77), kCustody));
}

// R41, review D8: the ledger knows the owner, on a node the plane forgot
// (dead). Nothing is sent to the live nodes: none of them could confirm,
// and a broadcast per completion cost a thread per node.
TEST_F(OwnershipTest, D8_ADestroyWhoseKnownOwnerIsOnADeadNodeIsNotBroadcast) {
  Reg("n2", "j2");
  Reg("n3", "j3");
  ports::Lease held = Lease("l1", "n1");
  held.node = "n1";
  held.request_id = 77;
  held.holder_incarnation = "i1";
  held.phase = ports::Phase::kBusy;
  {
    std::lock_guard l(ledger_.mu);
    ledger_.leases.push_back(held);
  }
  EXPECT_TRUE(Is(plane_->runner().DestroyCompleted(77, "succeeded"), kHolderUnavailable));
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n2"), 0u);
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n3"), 0u);
}

// S20, S18: a restored completion is reconciled with its durable host and lease.
TEST_F(OwnershipTest, S18_S20_ABoundCompletionSettlesFromAbsenceOnlyWithAVouchedInventory) {
  Reg("n1", "i1");
  auto bound = [&] {
    return plane_->runner().DestroyCompletedBound(5, "succeeded", "l9", "n1", 3, ports::Phase::kDone);
  };
  {
    std::lock_guard l(ledger_.mu);
    ledger_.settled_leases.insert("l9");  // the ledger would settle it: only the plane's rule stops it
  }
  EXPECT_TRUE(Is(bound(), kHolderUnavailable));  // inventory unknown
  ASSERT_TRUE(plane_->ReconcileInventory("n1", "i1", {"other"}).ok());
  EXPECT_TRUE(bound().ok());
  {
    std::lock_guard l(ledger_.mu);
    ledger_.settled_leases.clear();
  }
  EXPECT_TRUE(Is(bound(), kHolderUnavailable));  // the ledger has not settled it
  // A host that says it runs the lease is no proof of absence, even with no owner recorded.
  Reg("old", "");
  ASSERT_TRUE(plane_->ReconcileInventory("old", "", {"l8"}).ok());
  ASSERT_FALSE(plane_->OwnerOfLease("l8").has_value());
  EXPECT_TRUE(Is(plane_->runner().DestroyCompletedBound(5, "succeeded", "l8", "old", 3, ports::Phase::kDone),
                 kHolderUnavailable));
}

TEST_F(OwnershipTest, ABoundCompletionGoesToTheOwnerProcessOnly) {
  Reg("n1", "i1");
  auto launch = LaunchAsync(Lease("l1"), 5);
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());
  ASSERT_TRUE(launch.get().ok());
  auto bound = std::async(std::launch::async, [&] {
    return plane_->runner().DestroyCompletedBound(5, "failed", "l1", "n1", 0, ports::Phase::kFailed);
  });
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1", "i1"), true).ok());
  EXPECT_TRUE(bound.get().ok());
  EXPECT_FALSE(plane_->OwnerOfLease("l1").has_value());
}

// R44: sweep and tend go to every live node.
TEST_F(OwnershipTest, R44_SweepAndTendAreBroadcast) {
  Reg("a");
  Reg("b");
  for (CommandKind kind : {CommandKind::kSweep, CommandKind::kTend}) {
    auto f = std::async(std::launch::async, [&] {
      return kind == CommandKind::kSweep ? plane_->runner().Sweep() : plane_->runner().Tend();
    });
    WaitQueued("a", 1);
    WaitQueued("b", 1);
    Command ca = Take("a");
    EXPECT_EQ(ca.kind, kind);
    ASSERT_TRUE(Answer("a", ca, true).ok());
    ASSERT_TRUE(Answer("b", Take("b"), false).ok());
    Status s = f.get();
    EXPECT_NE(s.message().find(std::string("node \"b\" could not ") + CommandKindName(kind)), std::string::npos);
  }
}

// R42: KeepAlive is a documented no-op that blocks until its context ends.
TEST_F(OwnershipTest, R42_KeepAliveBlocksUntilStopped) {
  std::stop_source stop;
  std::atomic<bool> returned{false};
  auto alive = std::async(std::launch::async, [&] {
    plane_->runner().KeepAlive(stop.get_token());
    returned = true;
  });
  // A bounded wait for something that must not happen: a KeepAlive that
  // returned at once would be seen here within microseconds.
  EXPECT_EQ(alive.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  EXPECT_FALSE(returned.load());
  stop.request_stop();
  alive.get();
  EXPECT_TRUE(returned.load());
}

// R45, R46: upgrade goes to one node and returns when the updater started.
TEST_F(OwnershipTest, R45_R46_AnUpgradeGoesToOneNode) {
  Reg("a");
  Reg("b");
  auto up = std::async(std::launch::async, [&] {
    return plane_->runner().Upgrade("a", UpgradeSpec{"1.2.3", "abc", "r1", 4});
  });
  WaitQueued("a", 1);
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("b"), 0u);
  Command c = Take("a");
  ASSERT_TRUE(c.upgrade.has_value());
  EXPECT_EQ(c.upgrade->version, "1.2.3");
  ASSERT_TRUE(Answer("a", c, true).ok());
  EXPECT_TRUE(up.get().ok());
  EXPECT_TRUE(Is(plane_->runner().Upgrade("ghost", UpgradeSpec{}), kNoNode));
}

}  // namespace
}  // namespace nodeplane::plane
