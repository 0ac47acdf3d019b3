// Registration, refusals, incarnations (R01, R02, R11, R12, R15–R18, R23,
// R30, R38, S19).
#include "plane_fixture.h"

namespace nodeplane::plane {
namespace {

using RegistrationTest = PlaneTest;

TEST_F(RegistrationTest, ANodeRegistersAndIsToldTheContract) {
  auto r = PlaneTestPeer(*plane_).Register(Req("n1"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 1);
  EXPECT_EQ(r->lease_ttl_seconds, 90);
  EXPECT_EQ(r->poll_seconds, 50);
  EXPECT_EQ(r->deployment, "dep");
  EXPECT_EQ(plane_->Nodes(), std::vector<std::string>{"n1"});
  EXPECT_EQ(PlaneTestPeer(*plane_).CurrentIncarnation("n1"), "i1");
}

// R01: a refusal is permanent and only for what cannot heal.
TEST_F(RegistrationTest, R01_AForeignDeploymentIsRefused) {
  RegisterRequest r = Req("n1");
  r.deployment = "other";
  auto got = PlaneTestPeer(*plane_).Register(r);
  EXPECT_TRUE(Is(got.status(), kRefused)) << got.status().ToString();
  EXPECT_NE(got.status().message().find("belongs to deployment \"other\""), std::string::npos);
}

// R01, R38: a ledger that cannot write is an outage, and the node is not registered.
TEST_F(RegistrationTest, R01_R38_ALedgerOutageIsNotARefusalAndRegistersNothing) {
  ledger_.fail_register = true;
  auto got = PlaneTestPeer(*plane_).Register(Req("n1"));
  ASSERT_FALSE(got.ok());
  EXPECT_FALSE(Is(got.status(), kRefused));
  EXPECT_TRUE(got.status().retryable());
  EXPECT_TRUE(plane_->Nodes().empty());
  EXPECT_TRUE(Is(plane_->CheckIncarnation("n1", "i1"), kUnregistered));
}

TEST_F(RegistrationTest, VersionRangesAreNegotiatedAndTheRefusalSaysWhoToUpgrade) {
  RegisterRequest r = Req("n1");
  r.min_version = 1;
  r.version = 5;
  auto ok = PlaneTestPeer(*plane_).Register(r);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->version, 1);
  r.min_version = 2;
  auto newer = PlaneTestPeer(*plane_).Register(r);
  EXPECT_TRUE(Is(newer.status(), kRefused));
  EXPECT_NE(newer.status().message().find("UPGRADE THIS CONTROL PLANE FIRST"), std::string::npos);
  EXPECT_NE(newer.status().message().find("2-5"), std::string::npos);
  r.min_version = 0;
  r.version = 0;
  EXPECT_NE(PlaneTestPeer(*plane_).Register(r).status().message().find("not a range"), std::string::npos);
  r.min_version = 3;
  r.version = 2;
  EXPECT_NE(PlaneTestPeer(*plane_).Register(r).status().message().find("not a range"), std::string::npos);
}

TEST_F(RegistrationTest, AZeroCapacityNodeIsRefused) {
  RegisterRequest r = Req("n1");
  r.vcpu = 0;
  EXPECT_TRUE(Is(PlaneTestPeer(*plane_).Register(r).status(), kRefused));
  r = Req("");
  EXPECT_TRUE(Is(PlaneTestPeer(*plane_).Register(r).status(), kRefused));
}

// S19: an unusable provider or guest-OS claim is refused; a usable one only decides what is asked.
TEST_F(RegistrationTest, S19_AnUnusableProviderOrGuestOSClaimIsRefused) {
  EXPECT_TRUE(Is(PlaneTestPeer(*plane_).Register(Req("n1", "i1", "kvm")).status(), kRefused));
  RegisterRequest r = Req("n1");
  r.guest_os = {"plan9"};
  EXPECT_TRUE(Is(PlaneTestPeer(*plane_).Register(r).status(), kRefused));
}

// R30, S19: every field is a claim; it decides what the node is asked to do.
TEST_F(RegistrationTest, R30_AClaimDecidesOnlyWhatANodeIsAsked) {
  RegisterRequest r = Req("win");
  r.guest_os = {"windows"};
  ASSERT_TRUE(PlaneTestPeer(*plane_).Register(r).ok());
  EXPECT_TRUE(Is(PlaneTestPeer(*plane_).Pick(Lease("l1")).status(), kNoNode));  // a Linux lease is never aimed at it
  Reg("lin");
  EXPECT_EQ(*PlaneTestPeer(*plane_).Pick(Lease("l1")), "lin");
}

// R11: with no sites declared, a node claiming one is refused.
TEST_F(RegistrationTest, R11_ASiteClaimWithNoSitesDeclaredIsRefused) {
  PlaneOptions o = Options();
  o.sites.clear();
  plane_ = std::make_unique<Plane>(o);
  RegisterRequest r = Req("n1");
  r.site = "fra";
  auto got = PlaneTestPeer(*plane_).Register(r);
  EXPECT_TRUE(Is(got.status(), kRefused));
  EXPECT_NE(got.status().message().find("declares no sites"), std::string::npos);
  r.site = "";
  EXPECT_TRUE(PlaneTestPeer(*plane_).Register(r).ok());  // no claim, no problem
}

// R12: site names are keyed exactly as declared.
TEST_F(RegistrationTest, R12_SiteNamesAreComparedByteForByte) {
  for (const char* claim : {"iad ", " iad", "IAD", "ia"}) {
    RegisterRequest r = Req("n1");
    r.site = claim;
    auto got = PlaneTestPeer(*plane_).Register(r);
    EXPECT_TRUE(Is(got.status(), kRefused)) << "\"" << claim << "\"";
    EXPECT_NE(got.status().message().find("(have fra, iad)"), std::string::npos);
  }
  RegisterRequest r = Req("n1");
  r.site = "iad";
  EXPECT_TRUE(PlaneTestPeer(*plane_).Register(r).ok());
}

TEST_F(RegistrationTest, ASiteStoreAcceptsOnlyItsProvider) {
  RegisterRequest r = Req("n1", "i1", "docker");
  r.site = "fra";  // ceph
  EXPECT_TRUE(Is(PlaneTestPeer(*plane_).Register(r).status(), kRefused));
  r.provider = "firecracker";
  EXPECT_TRUE(PlaneTestPeer(*plane_).Register(r).ok());
}

// R16, R17: the barrier proof is discarded first, even for a registration then refused.
TEST_F(RegistrationTest, R16_R17_ArrivalDiscardsTheBarrierProofBeforeAnyCheck) {
  RegisterRequest r = Req("n1");
  r.deployment = "other";
  ASSERT_TRUE(Is(PlaneTestPeer(*plane_).Register(r).status(), kRefused));
  std::lock_guard l(ledger_.mu);
  EXPECT_EQ(ledger_.invalidated, std::vector<std::string>{"n1"});
}

// R15: an unreadable arrival discards every host's proof.
TEST_F(RegistrationTest, R15_AnUnreadableArrivalDiscardsEveryProof) {
  ASSERT_TRUE(plane_->ArrivalWasUnreadable().ok());
  std::lock_guard l(ledger_.mu);
  EXPECT_EQ(ledger_.invalidated, std::vector<std::string>{"*"});
}

// R18: the wire's own path (arrival, then completion) adopts too.
TEST_F(RegistrationTest, R18_TheWirePathAdoptsWhatTheLedgerPlacesOnTheNode) {
  ledger_.Place("n1", "lease-a");
  ASSERT_TRUE(plane_->ArrivingForRegistration("n1").ok());
  auto r = plane_->CompleteRegistration(Req("n1"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("lease-a", "n1", "i1"));
}

// A refused registration changes nothing in memory.
TEST_F(RegistrationTest, ARefusedRegistrationLeavesTheIncumbentUntouched) {
  RegisterRequest r = Req("n1");
  r.inventory_known = true;
  ASSERT_TRUE(PlaneTestPeer(*plane_).Register(r).ok());
  ASSERT_TRUE(PlaneTestPeer(*plane_).Reconciled("n1"));
  RegisterRequest bad = Req("n1", "i2");
  bad.vcpu = 0;
  ASSERT_TRUE(Is(PlaneTestPeer(*plane_).Register(bad).status(), kRefused));
  EXPECT_TRUE(PlaneTestPeer(*plane_).Reconciled("n1"));
  EXPECT_EQ(PlaneTestPeer(*plane_).CurrentIncarnation("n1"), "i1");
}

TEST_F(RegistrationTest, AnInventoryAtRegistrationIsReconciled) {
  ledger_.Place("n1", "l1");
  RegisterRequest r = Req("n1");
  r.inventory_known = true;
  r.instances = {"l1"};
  ASSERT_TRUE(PlaneTestPeer(*plane_).Register(r).ok());
  EXPECT_TRUE(PlaneTestPeer(*plane_).Reconciled("n1"));
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("l1", "n1", "i1"));
  std::lock_guard l(ledger_.mu);
  ASSERT_EQ(ledger_.resolved.size(), 1u);
  EXPECT_EQ(ledger_.resolved[0].second, std::vector<std::string>{"l1"});
}

// A node the ledger charges no open lease to has no quarantine to free: its
// registration is one ledger write, not two (a restart storm's cost).
TEST_F(RegistrationTest, ANodeWithNothingPlacedResolvesNoQuarantine) {
  RegisterRequest r = Req("n1");
  r.inventory_known = true;
  ASSERT_TRUE(PlaneTestPeer(*plane_).Register(r).ok());
  EXPECT_TRUE(PlaneTestPeer(*plane_).Reconciled("n1"));
  std::lock_guard l(ledger_.mu);
  EXPECT_TRUE(ledger_.resolved.empty());
}

// R02: two processes under one name; only the registered one may act.
TEST_F(RegistrationTest, R02_ANewProcessSupersedesTheOld) {
  Reg("n1", "i1");
  Reg("n1", "i2");
  EXPECT_TRUE(Is(plane_->CheckIncarnation("n1", "i1"), kSuperseded));
  EXPECT_TRUE(plane_->CheckIncarnation("n1", "i2").ok());
  EXPECT_TRUE(Is(PlaneTestPeer(*plane_).Poll("n1", "i1").status(), kSuperseded));
}

// R23: absence is accepted only while the node has never claimed an incarnation.
TEST_F(RegistrationTest, R23_AnAbsentIncarnationIsAcceptedOnlyUntilOneIsClaimed) {
  Reg("old", "");
  EXPECT_TRUE(plane_->CheckIncarnation("old", "").ok());
  EXPECT_TRUE(plane_->CheckIncarnation("old", "anything").ok());
  Reg("n1", "i1");
  EXPECT_TRUE(Is(plane_->CheckIncarnation("n1", ""), kSuperseded));
  // A registration without one is another process, refused before it can
  // blank the fence or reach the ledger.
  EXPECT_TRUE(Is(PlaneTestPeer(*plane_).Register(Req("n1", "")).status(), kSuperseded));
  EXPECT_EQ(PlaneTestPeer(*plane_).CurrentIncarnation("n1"), "i1");
  {
    std::lock_guard l(ledger_.mu);
    EXPECT_EQ(ledger_.incarnations["n1"], "i1");
  }
  EXPECT_TRUE(Is(plane_->CheckIncarnation("n1", ""), kSuperseded));
}

TEST_F(RegistrationTest, S03_AnUnknownNodeIsToldToRegister) {
  EXPECT_TRUE(Is(plane_->CheckIncarnation("ghost", "i1"), kUnregistered));
  EXPECT_TRUE(Is(PlaneTestPeer(*plane_).Poll("ghost", "i1").status(), kUnregistered));
  EXPECT_TRUE(Is(plane_->ReceiveResult("ghost", "i1", CommandResult{"x", false, "", false, "", {}}), kUnregistered));
}

}  // namespace
}  // namespace nodeplane::plane
