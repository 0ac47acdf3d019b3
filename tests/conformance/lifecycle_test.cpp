// The lease lifecycle, fencing, idempotence and bind (C23–C42, C81–C83).
#include "ledger_fixture.h"

namespace nodeplane::conformance {
namespace {

using LifecycleTest = LedgerTest;
const std::string kInc(32, 'a');

// C23
TEST_F(LifecycleTest, C23_TheWholeLifecycleSucceedsAlongListedEdges) {
  Register("n1");
  ports::Lease l = EscrowOne();
  ASSERT_OK(ledger_->Assign(l.id, 0, 7, 8));
  ASSERT_OK(ledger_->Bind(l.id, 0, "n1", kInc));
  for (Phase p : {Phase::kLaunching, Phase::kOnline, Phase::kBusy, Phase::kCustody, Phase::kTeardown}) {
    ASSERT_OK(ledger_->Advance(l.id, 0, p, kInc));
    EXPECT_EQ(Get(l.id).phase, p);
  }
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kDone));
  EXPECT_NP(ledger_->GetLease(l.id).status(), NP_NOT_FOUND);
}

TEST_F(LifecycleTest, C23_UnlistedEdgesAreRefused) {
  Register("n1");
  ports::Lease l = EscrowOne();
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kLaunching, ""), NP_BAD_TRANSITION);  // capacity -> launching
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kCustody, ""), NP_BAD_TRANSITION);
  ASSERT_OK(ledger_->Assign(l.id, 0, 1, 1));
  ASSERT_OK(ledger_->Bind(l.id, 0, "n1", ""));
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kBusy, ""), NP_BAD_TRANSITION);  // assigned -> busy
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kCapacity, ""), NP_BAD_TRANSITION);
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kQuarantine, ""), NP_BAD_TRANSITION);  // only reap quarantines
  ASSERT_OK(ledger_->Advance(l.id, 0, Phase::kLaunching, ""));
  ASSERT_OK(ledger_->Advance(l.id, 0, Phase::kTeardown, ""));
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kBusy, ""), NP_BAD_TRANSITION);  // teardown -> busy
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kCustody, ""), NP_BAD_TRANSITION);
}

TEST_F(LifecycleTest, C23_TerminalPhasesHaveNoSuccessors) {
  Register("n1");
  ports::Lease l = EscrowOne();
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kFailed));
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kAssigned, ""), NP_NOT_FOUND);
  EXPECT_NP(ledger_->Assign(l.id, 0, 1, 1), NP_NOT_FOUND);
  EXPECT_NP(ledger_->Heartbeat(l.id, 0), NP_NOT_FOUND);
}

TEST_F(LifecycleTest, AdvanceToATerminalPhaseArchives) {
  Register("n1");
  ports::Lease l = Running();
  ASSERT_OK(ledger_->Advance(l.id, 0, Phase::kDone, ""));
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->conclusion, Phase::kDone);
}

// C24
TEST_F(LifecycleTest, C24_RepeatedAssignAndReleaseAreIdempotent) {
  Register("n1");
  ports::Lease l = EscrowOne();
  ASSERT_OK(ledger_->Assign(l.id, 0, 5, 6));
  ASSERT_OK(ledger_->Assign(l.id, 0, 5, 6));
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kDone));
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kDone));
}

// C25
TEST_F(LifecycleTest, C25_AssignRejectsAContradictoryRetry) {
  Register("n1");
  ports::Lease l = EscrowOne();
  ASSERT_OK(ledger_->Assign(l.id, 0, 5, 6));
  EXPECT_NP(ledger_->Assign(l.id, 0, 5, 7), NP_CONFLICT);
}

// C26
TEST_F(LifecycleTest, C26_ReleaseDistinguishesMissingFromFinished) {
  Register("n1");
  EXPECT_NP(ledger_->Release(std::string(32, 'f'), 0, Phase::kDone), NP_NOT_FOUND);
  ports::Lease l = EscrowOne();
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kDone));
  EXPECT_NP(ledger_->Release(l.id, 0, Phase::kFailed), NP_CONFLICT);
  EXPECT_NP(ledger_->Release(l.id, 0, Phase::kBusy), NP_BAD_TRANSITION);
}

// C27
TEST_F(LifecycleTest, C27_AnyOtherEpochIsFenced) {
  Register("n1");
  ports::Lease l = Running();
  for (int64_t wrong : {l.epoch - 1, l.epoch + 1}) {
    EXPECT_NP(ledger_->Heartbeat(l.id, wrong), NP_FENCED);
    EXPECT_NP(ledger_->Advance(l.id, wrong, Phase::kCustody, ""), NP_FENCED);
    EXPECT_NP(ledger_->Release(l.id, wrong, Phase::kDone), NP_FENCED);
    EXPECT_NP(ledger_->MarkFailure(l.id, wrong, "x"), NP_FENCED);
  }
}

// C28
TEST_F(LifecycleTest, C28_ReapFencesTheOldHolder) {
  Register("n1");
  ports::Lease l = Running();
  Advance(kTTL);
  auto reaped = ledger_->Reap();
  ASSERT_TRUE(reaped.ok());
  EXPECT_EQ(*reaped, 1);
  EXPECT_NP(ledger_->Heartbeat(l.id, l.epoch), NP_FENCED);  // fenced, not "not found"
  ports::Lease now = Get(l.id);
  EXPECT_GT(now.epoch, l.epoch);
  EXPECT_EQ(now.phase, Phase::kQuarantine);
}

// C29
TEST_F(LifecycleTest, C29_AHeartbeatExtendsTheLease) {
  Register("n1");
  ports::Lease l = Running();
  Advance(kTTL - kSecond);
  ASSERT_OK(ledger_->Heartbeat(l.id, l.epoch));
  Advance(kTTL - kSecond);
  EXPECT_EQ(*ledger_->Reap(), 0);
  EXPECT_EQ(Get(l.id).phase, Phase::kBusy);
}

// C30
TEST_F(LifecycleTest, C30_ExpiryIsExactToTheNanosecond) {
  Register("n1");
  ports::Lease l = EscrowOne();
  clock_ = l.expires_at_ns - 1;
  EXPECT_EQ(*ledger_->Reap(), 0);
  clock_ = l.expires_at_ns;
  EXPECT_EQ(*ledger_->Reap(), 1);
  EXPECT_NP(ledger_->GetLease(l.id).status(), NP_NOT_FOUND);  // an expired escrow fails
}

// C31
TEST_F(LifecycleTest, C31_RunningPhasesNeedABoundNode) {
  Register("n1");
  ports::Lease l = EscrowOne();
  ASSERT_OK(ledger_->Assign(l.id, 0, 1, 1));
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kLaunching, ""), NP_NOT_PLACED);
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kOnline, ""), NP_BAD_TRANSITION);  // only through launching
}

// C32
TEST_F(LifecycleTest, C32_ASamePhaseAdvanceStillChecksPlacement) {
  Register("n1");
  ports::Lease l = Running("small", Phase::kLaunching);
  ports::Catalog c = DefaultCatalog();
  c.nodes.push_back({"n1", "", {"windows"}, 2, 0, 0});  // the host no longer allows Linux
  UseCatalog(c);
  EXPECT_NP(ledger_->Advance(l.id, 0, Phase::kLaunching, ""), NP_GUEST_OS_NOT_ALLOWED);
}

TEST_F(LifecycleTest, ASamePhaseAdvanceDoesNotRefreshTheTTL) {
  Register("n1");
  ports::Lease l = Running("small", Phase::kOnline);
  Advance(10 * kSecond);
  ASSERT_OK(ledger_->Advance(l.id, 0, Phase::kOnline, ""));
  EXPECT_EQ(Get(l.id).expires_at_ns, l.expires_at_ns);
  ASSERT_OK(ledger_->Advance(l.id, 0, Phase::kBusy, ""));
  EXPECT_EQ(Get(l.id).expires_at_ns, Now() + kTTL);
}

// C34
TEST_F(LifecycleTest, C34_AFailureReasonSurvivesUntilJobHistory) {
  Register("n1");
  ports::Lease l = Running();
  ASSERT_OK(ledger_->MarkFailure(l.id, 0, "  spot reclaimed  "));
  ASSERT_OK(ledger_->MarkFailure(l.id, 0, "spot reclaimed"));
  EXPECT_NP(ledger_->MarkFailure(l.id, 0, "another"), NP_CONFLICT);
  EXPECT_NP(ledger_->MarkFailure(l.id, 0, "   "), NP_INVALID);
  EXPECT_NP(ledger_->MarkFailure(l.id, 0, "nodeplane:provisional:inventory-absence"), NP_INVALID);
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kFailed));
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->failure_reason, "spot reclaimed");
  EXPECT_EQ((*job)->conclusion, Phase::kFailed);
}

// C35, C36
TEST_F(LifecycleTest, C35_HistoryAttributesALeaseToTheNodeEscrowChose) {
  Register("n1");
  ports::Lease l = EscrowOne();
  ASSERT_OK(ledger_->Assign(l.id, 0, 41, 42));
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kFailed));
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->node, "n1");
  EXPECT_EQ((*job)->run_id, 41);  // C36: the identity outlives the lease
  EXPECT_EQ((*job)->request_id, 42);
  EXPECT_EQ((*job)->tier, "small");
}

TEST_F(LifecycleTest, C35_AReapedLeaseKeepsItsAttribution) {
  Register("n1");
  ports::Lease l = EscrowOne();
  ASSERT_OK(ledger_->Assign(l.id, 0, 41, 42));
  Advance(kTTL);
  EXPECT_EQ(*ledger_->Reap(), 1);
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->node, "n1");
  EXPECT_EQ((*job)->run_id, 41);
  EXPECT_EQ((*job)->conclusion, Phase::kFailed);
}

TEST_F(LifecycleTest, BusyStampsTheJobStart) {
  Register("n1");
  ports::Lease l = Running("small", Phase::kOnline);
  Advance(3 * kSecond);
  ASSERT_OK(ledger_->Advance(l.id, 0, Phase::kBusy, ""));
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->started_at_ns, Now());
  EXPECT_FALSE((*job)->conclusion.has_value());
}

// C38
TEST_F(LifecycleTest, C38_BindRefusesTheWrongNodeAndARebind) {
  Register("n1");
  Register("n2");
  ports::Lease l = EscrowOne();
  ASSERT_EQ(l.target_node, "n1");
  EXPECT_NP(ledger_->Bind(l.id, 0, "n2", ""), NP_WRONG_NODE);
  ASSERT_OK(ledger_->Bind(l.id, 0, "n1", ""));
  EXPECT_NP(ledger_->Bind(l.id, 0, "n2", ""), NP_WRONG_NODE);
  EXPECT_NP(ledger_->Bind(l.id, 0, "", ""), NP_INVALID);
}

TEST_F(LifecycleTest, C38_ABindRetryStaysIdempotentAfterPolicyTightens) {
  Register("n1");
  ports::Lease l = EscrowOne();
  ASSERT_OK(ledger_->Bind(l.id, 0, "n1", ""));
  ports::Catalog c = DefaultCatalog();
  c.nodes.push_back({"n1", "", {"windows"}, 2, 0, 0});
  UseCatalog(c);
  ASSERT_OK(ledger_->Bind(l.id, 0, "n1", ""));
}

// C39
TEST_F(LifecycleTest, C39_BindRefusesAGuestOSTheHostDisallows) {
  ports::Catalog c = DefaultCatalog();
  UseCatalog(c);
  Register("n1");
  ports::Lease l = EscrowOne();
  c.nodes.push_back({"n1", "", {"macos"}, 2, 0, 0});
  UseCatalog(c);
  EXPECT_NP(ledger_->Bind(l.id, 0, "n1", ""), NP_GUEST_OS_NOT_ALLOWED);
}

// C40
TEST_F(LifecycleTest, C40_BindRefusesANodeRunningAnotherProvider) {
  Register("n1", "docker");
  ports::Lease l = EscrowOne();
  Advance(kTTL);  // the escrow expires (not yet reaped), so the backend may change
  Register("n1", "firecracker");
  EXPECT_NP(ledger_->Bind(l.id, 0, "n1", ""), NP_WRONG_PROVIDER);
}

TEST_F(LifecycleTest, C40_BindRefusesAnUnregisteredNode) {
  ports::Catalog c = DefaultCatalog();
  c.tiers.push_back({"pinned", 2, 4 * kGiB, {"docker"}, "linux", "", "", 0, 0});
  UseCatalog(c);
  Register("n1");
  ports::Lease l = EscrowOne("pinned");
  EXPECT_NP(ledger_->Bind(l.id, 0, "ghost", ""), NP_WRONG_NODE);
}

// C41
TEST_F(LifecycleTest, C41_AMultiProviderTierRecordsTheChosenBackendAtBind) {
  Register("dk", "docker");
  ports::Lease l = EscrowOne("multi");
  EXPECT_EQ(l.chosen_provider, "");
  EXPECT_EQ(l.providers, "firecracker,docker");
  ASSERT_OK(ledger_->Bind(l.id, 0, "dk", kInc));
  ports::Lease bound = Get(l.id);
  EXPECT_EQ(bound.chosen_provider, "docker");
  EXPECT_EQ(bound.node, "dk");
  EXPECT_EQ(bound.holder_incarnation, kInc);
}

TEST_F(LifecycleTest, CustodyRecordsWhenTheObligationBeganAndWhoHoldsIt) {
  Register("n1");
  ports::Lease l = Running();
  Advance(kSecond);
  const int64_t entered = Now();
  ASSERT_OK(ledger_->Advance(l.id, 0, Phase::kCustody, std::string(32, 'c')));
  Advance(kSecond);
  ASSERT_OK(ledger_->Advance(l.id, 0, Phase::kTeardown, std::string(32, 'd')));
  ports::Lease held = Get(l.id);
  EXPECT_EQ(held.held_at_ns, entered);  // set on first entry, never reset
  EXPECT_EQ(held.holder_incarnation, std::string(32, 'd'));
}

TEST_F(LifecycleTest, ResizeIsRefusedForHostBackedLeases) {
  Register("n1");
  ports::Lease l = Running("small", Phase::kLaunching);
  EXPECT_NP(ledger_->Resize(l.id, 0, "m5.large", 2, 8 * kGiB), NP_WRONG_PROVIDER);
  ASSERT_OK(ledger_->Advance(l.id, 0, Phase::kOnline, ""));
  EXPECT_NP(ledger_->Resize(l.id, 0, "m5.large", 2, 8 * kGiB), NP_BAD_TRANSITION);
}

// C81
TEST_F(LifecycleTest, C81_MarkDeregisteredIsUnfencedAndNeverFails) {
  Register("n1");
  ports::Lease l = Running();
  ASSERT_OK(ledger_->MarkDeregistered(l.id));
  EXPECT_TRUE(Get(l.id).deregistered);
  ASSERT_OK(ledger_->MarkDeregistered(std::string(32, '0')));
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kDone));
  ASSERT_OK(ledger_->MarkDeregistered(l.id));
}

// C107 (S14; review D4, D18): a deregistered lease's runner left the forge.
// Its heartbeat still extends the expiry (the holder keeps the lease until
// it has stopped the runner) and says so: NP_DEREGISTERED.
TEST_F(LifecycleTest, C107_ADeregisteredLeasesHeartbeatExtendsItAndSaysSo) {
  Register("n1");
  ports::Lease l = Running();
  ASSERT_OK(ledger_->Heartbeat(l.id, l.epoch));
  ASSERT_OK(ledger_->MarkDeregistered(l.id));
  const int64_t before = Get(l.id).expires_at_ns;
  Advance(kSecond);
  EXPECT_NP(ledger_->Heartbeat(l.id, l.epoch), NP_DEREGISTERED);
  EXPECT_EQ(Get(l.id).expires_at_ns, before + kSecond);
  ASSERT_OK(ledger_->Release(l.id, l.epoch, Phase::kDone));
}

// C108 (review D19): a lease's job record carries the forge's verdict on
// the job its runner ran, from the job journal, beside the lease's own.
TEST_F(LifecycleTest, C108_AJobRecordCarriesTheForgesVerdict) {
  Register("n1");
  ports::Lease l = Running();
  ASSERT_OK(ledger_->Release(l.id, l.epoch, Phase::kDone));  // the runner exited 0
  EXPECT_EQ((*ledger_->JobForLease(l.id))->forge_result, "");
  ports::ForgeJob j;
  j.tier = "small";
  j.job_id = "job-f";
  j.runner_name = "np-" + l.id;
  j.lease_id = l.id;
  j.completed_at_ns = Now();
  j.result = "failed";
  ASSERT_OK(ledger_->RecordForgeJob(j));
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->conclusion, Phase::kDone);  // the lease's verdict stands (C61)
  EXPECT_EQ((*job)->forge_result, "failed");
}

// C82
TEST_F(LifecycleTest, C82_CacheObservationsKeepTheFirstValue) {
  Register("n1");
  ports::Lease l = Running();
  EXPECT_NP(ledger_->RecordCacheObservation(l.id, 0, {"", "", ""}), NP_INVALID);
  EXPECT_NP(ledger_->RecordCacheObservation(l.id, 0, {"lukewarm", "", ""}), NP_INVALID);
  EXPECT_NP(ledger_->RecordCacheObservation(l.id, 0, {"warm", "", ""}), NP_INVALID);
  EXPECT_NP(ledger_->RecordCacheObservation(l.id, 0, {"cold", "g1", ""}), NP_INVALID);
  EXPECT_NP(ledger_->RecordCacheObservation(l.id, 0, {"", "", "sideways"}), NP_INVALID);
  EXPECT_NP(ledger_->RecordCacheObservation(l.id, 7, {"cold", "", ""}), NP_FENCED);
  ASSERT_OK(ledger_->RecordCacheObservation(l.id, 0, {"warm", "g1", ""}));
  ASSERT_OK(ledger_->RecordCacheObservation(l.id, 0, {"cold", "", "intercepted"}));
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kDone));
  auto job = ledger_->JobForLease(l.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->image_cache, "warm");
  EXPECT_EQ((*job)->cache_generation, "g1");
  EXPECT_EQ((*job)->actions_cache, "intercepted");
}

// C83
TEST_F(LifecycleTest, C83_EndedLeaseNodeComesFromHistory) {
  Register("n1");
  ports::Lease l = EscrowOne();
  EXPECT_NP(ledger_->EndedLeaseNode(l.id).status(), NP_NOT_FOUND);
  ASSERT_OK(ledger_->Assign(l.id, 0, 1, 1));
  ASSERT_OK(ledger_->Release(l.id, 0, Phase::kDone));
  auto node = ledger_->EndedLeaseNode(l.id);
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(*node, "n1");
}

TEST_F(LifecycleTest, LaunchedLeaseIdsAreTheBoundLeasesWithCompute) {
  Register("n1");
  ports::Lease escrowed = EscrowOne();
  ports::Lease running = Running();
  ports::Lease custody = Running("small", Phase::kCustody);
  auto ids = ledger_->LaunchedLeaseIds("n1");
  ASSERT_TRUE(ids.ok());
  std::vector<std::string> want = {running.id, custody.id};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(*ids, want);
  (void)escrowed;
}

TEST_F(LifecycleTest, DataSurvivesReopeningTheStore) {
  Register("n1");
  ports::Lease l = Running();
  ledger_.reset();
  ledger_ = OpenAnother();
  ASSERT_NE(ledger_, nullptr);
  EXPECT_EQ(Get(l.id).phase, Phase::kBusy);
}

// C90 (nodeplane's own, issue 24 #3): one request is served by one open lease
// at a time, and the newest lease that served a request is found by it, open
// or ended; together they make a launch idempotent per request id.
TEST_F(LifecycleTest, C90_ARequestIsServedByOneOpenLeaseAndFoundByItsId) {
  Register("n1");
  EXPECT_FALSE(ledger_->JobForRequest(77).value().has_value());
  ports::Lease first = EscrowOne();
  ASSERT_OK(ledger_->Assign(first.id, first.epoch, 7, 77));
  ports::Lease second = EscrowOne();
  EXPECT_NP(ledger_->Assign(second.id, second.epoch, 7, 77), NP_CONFLICT);
  auto found = ledger_->JobForRequest(77);
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status().ToString();
  EXPECT_EQ((*found)->lease_id, first.id);
  EXPECT_FALSE((*found)->conclusion.has_value());  // open
  ASSERT_OK(ledger_->Release(first.id, first.epoch, Phase::kDone));
  found = ledger_->JobForRequest(77);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->lease_id, first.id);
  EXPECT_EQ((*found)->conclusion, Phase::kDone);  // ended, still found
  Advance(kSecond);
  ASSERT_OK(ledger_->Assign(second.id, second.epoch, 7, 77));  // once ended, the request may be served again
  EXPECT_EQ(ledger_->JobForRequest(77).value()->lease_id, second.id);  // the newest
  EXPECT_NP(ledger_->JobForRequest(0).status(), NP_INVALID);
}

// C91 (nodeplane's own, issue 19): the newest jobs, open and ended, newest
// first, bounded by time and by count (what the dashboard lists).
TEST_F(LifecycleTest, C91_RecentJobsAreTheNewestFirst) {
  Register("n1");
  const int64_t start = Now();
  std::vector<std::string> ids;
  for (int64_t request = 1; request <= 3; ++request) {
    ports::Lease l = EscrowOne();
    ASSERT_OK(ledger_->Assign(l.id, l.epoch, request, request));
    ids.push_back(l.id);
    Advance(kSecond);
  }
  ASSERT_OK(ledger_->Release(ids[0], 0, Phase::kDone));
  auto recent = ledger_->RecentJobs(start, 10);
  ASSERT_TRUE(recent.ok()) << recent.status().ToString();
  ASSERT_EQ(recent->size(), 3u);
  EXPECT_EQ((*recent)[0].lease_id, ids[2]);
  EXPECT_EQ((*recent)[2].lease_id, ids[0]);
  EXPECT_EQ((*recent)[2].conclusion, Phase::kDone);
  EXPECT_EQ(ledger_->RecentJobs(start, 2)->size(), 2u);
  EXPECT_EQ(ledger_->RecentJobs(start + kSecond, 10)->size(), 2u);  // assigned since
}

}  // namespace
}  // namespace nodeplane::conformance
