// The job intake's listener against a scripted job source that behaves as
// GitHub's queue does (intake_fixture.h), one test per defect the review of
// the intake found (shared/docs/reviews/2026-12-07-code-review.md: D1, D3,
// D4, D6, D13, D17, D18, D22) and per invariant of scale_set_listener.h.
#include <gtest/gtest.h>

#include "intake_fixture.h"
#include "jobs/job_intake.h"

namespace nodeplane::jobs {
namespace {

using ports::JobEvent;
using IntakeListenerTest = IntakeFixture;

std::string RunnerOf(const ports::Lease& l) { return "np-" + l.id; }

// D1 (critical): GitHub re-queues a job no runner took within its pickup
// window: JobAssigned, then JobCompleted "canceled" naming no runner, then
// JobAssigned again for the same jobId. The runner that then starts it must
// never be destroyed on the cancellation's account.
TEST_F(IntakeListenerTest, D1_AJobGithubRequeuedRunsToItsEndAndItsRunnerIsNeverDestroyed) {
  Node("n1");
  Listen(Tier(), source_);
  source_.Deliver({Entry(JobEvent::kAssigned, "job-x")}, 1);
  const ports::Lease lease = RunLaunch("n1");
  source_.Deliver({Entry(JobEvent::kCompleted, "job-x", "", "canceled")}, 1);
  source_.Deliver({Entry(JobEvent::kAssigned, "job-x")}, 1);
  const int64_t started = source_.Deliver({Entry(JobEvent::kStarted, "job-x", RunnerOf(lease))}, 1);
  ASSERT_TRUE(source_.AwaitAcked(started));
  ASSERT_TRUE(AwaitSettlePasses(3, "n1"));
  EXPECT_EQ(plane::PlaneTestPeer(*plane_).Queued("n1"), 0u) << "the re-queued job's runner was destroyed";
  auto owed = ledger_sql_->UnsettledForgeJobs("small", 10);
  ASSERT_TRUE(owed.ok());
  EXPECT_TRUE(owed->empty()) << "a runnerless cancellation is owed to the runner that started the job again";
  // Its real completion settles it.
  source_.Deliver({Entry(JobEvent::kCompleted, "job-x", RunnerOf(lease), "succeeded")}, 0);
  ASSERT_TRUE(AwaitQueued("n1", 1));
  plane::Command destroy = Take("n1");
  EXPECT_EQ(destroy.kind, plane::CommandKind::kDestroy);
  EXPECT_EQ(destroy.job_result, "succeeded");
}

// D1, across a restart: the journal alone (a new listener) must not owe
// the re-queued job's cancellation to its runner.
TEST_F(IntakeListenerTest, D1_ARequeuedJobJournalledBeforeARestartIsNotOwed) {
  Node("n1");
  auto escrowed = ledger_sql_->EscrowForLaunch("small", 0, 4242);
  ASSERT_TRUE(escrowed.ok() && escrowed->has_value());
  const std::string lease = (*escrowed)->lease.id;
  auto record = [&](ports::ForgeJob j) {
    j.tier = "small";
    j.job_id = "job-y";
    ASSERT_TRUE(ledger_sql_->RecordForgeJob(j).ok());
  };
  ports::ForgeJob assigned;
  assigned.received_at_ns = now_ - 9 * kS;
  assigned.assigned_at_ns = now_ - 9 * kS;
  record(assigned);
  ports::ForgeJob cancelled;
  cancelled.completed_at_ns = now_ - 8 * kS;
  cancelled.result = "canceled";
  record(cancelled);
  ports::ForgeJob again;
  again.assigned_at_ns = now_ - 7 * kS;
  record(again);
  ports::ForgeJob started;
  started.started_at_ns = now_ - 6 * kS;
  started.runner_name = "np-" + lease;
  started.lease_id = lease;
  record(started);
  auto owed = ledger_sql_->UnsettledForgeJobs("small", 10);
  ASSERT_TRUE(owed.ok());
  EXPECT_TRUE(owed->empty());
  auto entry = ledger_sql_->ListForgeJobs("small", 0, 10);
  ASSERT_TRUE(entry.ok() && entry->size() == 1);
  EXPECT_EQ((*entry)[0].completed_at_ns, 0);
  EXPECT_EQ((*entry)[0].result, "");
  EXPECT_EQ((*entry)[0].requeues, 1);
}

// J4: a session GitHub dropped is opened again; a scale set GitHub deleted
// is ensured again (with its new id) before the next session.
TEST_F(IntakeListenerTest, J4_ADroppedSessionIsOpenedAgainAndADeletedScaleSetEnsuredAgain) {
  Listen(Tier(), source_);
  ASSERT_TRUE(Eventually([&] { return source_.sessions() == 1; }));
  source_.DropSession(false);
  ASSERT_TRUE(Eventually([&] { return source_.sessions() == 2; }));
  EXPECT_EQ(source_.ensured(), 1);
  source_.DropSession(true);
  ASSERT_TRUE(Eventually([&] { return source_.sessions() == 3; }));
  EXPECT_EQ(source_.ensured(), 2);
  EXPECT_EQ(listener_->scale_set_id(), ScriptedSource::kScaleSetId + 1);
}

// J5: a message that cannot be decoded is left for redelivery
// kMaxUndecodable times, then acknowledged and counted.
TEST_F(IntakeListenerTest, J5_AnUndecodableMessageIsAcknowledgedAfterItsRedeliveriesRunOut) {
  Listen(Tier(), source_);
  const int64_t id = source_.DeliverUndecodable();
  ASSERT_TRUE(source_.AwaitAcked(id));
  EXPECT_EQ(counters_.undecodable.load(), 1u);
  EXPECT_GE(source_.polls(), ScaleSetListener::kMaxUndecodable);
}

// D3 (a): a quarantined lease (its node lost) can take no job; it must not
// count against the tier's ceiling.
TEST_F(IntakeListenerTest, D3_AQuarantinedLeaseDoesNotCountAsARunner) {
  const int64_t n1 = Node("n1");
  Listen(Tier(1), source_);
  source_.Deliver({Entry(JobEvent::kAssigned, "job-1")}, 1);
  const ports::Lease lost = RunLaunch("n1");
  now_ += 10 * kS;  // n1 stopped heartbeating it: the reaper quarantines it
  ASSERT_TRUE(ledger_sql_->Reap().ok());
  ASSERT_EQ(ledger_sql_->GetLease(lost.id)->phase, ports::Phase::kQuarantine);
  ASSERT_TRUE(ledger_sql_->NodeGone("n1", n1).ok());  // it lost power
  Node("n2");
  source_.Deliver({Entry(JobEvent::kAssigned, "job-2")}, 1);
  const ports::Lease replacement = RunLaunch("n2");
  EXPECT_NE(replacement.id, lost.id);
}

// J1: a quarantined runner that started a job still counts while GitHub
// counts that job (its completion has not come): a spare runner launched
// for it would only wait idle.
TEST_F(IntakeListenerTest, J1_AQuarantinedRunnerWhoseJobIsStillRunningCounts) {
  const int64_t n1 = Node("n1");
  Listen(Tier(1), source_);
  source_.Deliver({Entry(JobEvent::kAssigned, "job-1")}, 1);
  const ports::Lease lost = RunLaunch("n1");
  source_.Deliver({Entry(JobEvent::kStarted, "job-1", RunnerOf(lost))}, 1);
  now_ += 10 * kS;
  ASSERT_TRUE(ledger_sql_->Reap().ok());
  ASSERT_TRUE(ledger_sql_->NodeGone("n1", n1).ok());
  Node("n2");
  const int64_t still = source_.Deliver({}, 1);
  ASSERT_TRUE(source_.AwaitAcked(still));  // reconciled (and escrowed, if it would) before it was acknowledged
  EXPECT_EQ(OpenLeases().size(), 1u) << "a spare runner was escrowed for a job still running";
  // GitHub fails the job: the slot is free again.
  source_.Deliver({Entry(JobEvent::kCompleted, "job-1", RunnerOf(lost), "failed"), Entry(JobEvent::kAssigned, "job-2")}, 1);
  EXPECT_NE(RunLaunch("n2").id, lost.id);
}

// J1, J6: a session opened with jobs GitHub already assigned keeps their
// runners; the settler's timer, which reconciles while no message comes,
// uses the count the session opened with.
TEST_F(IntakeListenerTest, J6_RunnersForJobsAssignedBeforeTheSessionAreNotRetired) {
  Node("n1");
  source_.SetSessionStatistics(2);
  ScaleSetTier tier = Tier();
  tier.idle_timeout = Nanos(0);
  Listen(tier, source_);
  ASSERT_TRUE(AwaitQueued("n1", 2));
  const ports::Lease a = RunLaunch("n1"), b = RunLaunch("n1");
  ASSERT_TRUE(AwaitSettlePasses(10, "n1"));
  EXPECT_FALSE(Deregistered(a.id) || Deregistered(b.id)) << "runners GitHub still counts were retired";
}

// D3 (b): GitHub batches one job's completion with the next job's
// assignment; the completed runner's lease, still open until its node's
// release lands, must not stand in for the new job's runner.
TEST_F(IntakeListenerTest, D3_ARunnerWhoseJobCompletedDoesNotCountAsARunner) {
  Node("n1");
  Listen(Tier(), source_);
  source_.Deliver({Entry(JobEvent::kAssigned, "job-a")}, 1);
  const ports::Lease first = RunLaunch("n1");
  source_.Deliver({Entry(JobEvent::kStarted, "job-a", RunnerOf(first))}, 1);
  source_.Deliver({Entry(JobEvent::kCompleted, "job-a", RunnerOf(first), "succeeded"), Entry(JobEvent::kAssigned, "job-b")},
                 1);
  // A launch for job-b, and the settling destroy of job-a's runner, in either order.
  ASSERT_TRUE(AwaitQueued("n1", 2)) << "no runner was launched for the job assigned with the completion";
  bool launched = false;
  for (int i = 0; i < 2; ++i) {
    plane::Command c = Take("n1");
    if (c.kind == plane::CommandKind::kLaunch) launched = true;
  }
  EXPECT_TRUE(launched) << "no runner was launched for the job assigned with the completion";
}

// D13: within one message a start is handled before a completion, and a
// runner whose lease has ended does not hold its slot for ever.
TEST_F(IntakeListenerTest, D13_ACompletionBatchedBeforeItsStartDoesNotPinTheSlot) {
  Node("n1");
  Listen(Tier(1), source_);
  source_.Deliver({Entry(JobEvent::kAssigned, "job-a")}, 1);
  const ports::Lease first = RunLaunch("n1");
  const int64_t both = source_.Deliver({Entry(JobEvent::kCompleted, "job-a", RunnerOf(first), "succeeded"),
                                       Entry(JobEvent::kStarted, "job-a", RunnerOf(first))},
                                      0);
  ASSERT_TRUE(source_.AwaitAcked(both));
  // The node releases the runner's lease as its process exits.
  ASSERT_TRUE(ledger_sql_->Release(first.id, first.epoch + 0, ports::Phase::kDone).ok() ||
              ledger_sql_->GetLease(first.id).status().code() == Code::kNotFound);
  source_.Deliver({Entry(JobEvent::kAssigned, "job-b")}, 1);
  plane::Command c;
  for (;;) {  // the settling destroy of job-a's runner may come first
    ASSERT_TRUE(AwaitQueued("n1", 1)) << "no runner was launched: the slot stayed pinned";
    c = Take("n1");
    if (c.kind == plane::CommandKind::kLaunch) break;
    ASSERT_TRUE(Answer("n1", c, true).ok());
  }
  EXPECT_EQ(c.kind, plane::CommandKind::kLaunch);
}

// D6 (GHES): an offer whose acquisition failed is not acknowledged; the
// redelivered message acquires it.
TEST_F(IntakeListenerTest, D6_AnOfferWhoseAcquisitionFailedIsNotAcknowledged) {
  Node("n1");
  int failures = 1;
  source_.acquire = [&](const std::vector<int64_t>& ids) -> Result<std::vector<int64_t>> {
    if (failures-- > 0) return Status::Unavailable("GitHub answered 502");
    return ids;
  };
  Listen(Tier(), source_);
  ports::QueuedJob offer = Entry(JobEvent::kAvailable, "job-o");
  offer.runner_request_id = 5;
  const int64_t id = source_.Deliver({offer}, 0);
  ASSERT_TRUE(source_.AwaitAcked(id));
  std::lock_guard lock(source_.mu());
  ASSERT_EQ(source_.acquired.size(), 2u) << "the offer was acknowledged without being acquired";
  EXPECT_EQ(source_.acquired[1], std::vector<int64_t>{5});
}

// D22: completions that cannot settle (their leases are quarantined on a
// dead node) must not starve a newer one that can.
TEST_F(IntakeListenerTest, D22_CompletionsThatCannotSettleDoNotStarveOneThatCan) {
  auto dead = ledger_sql_->RegisterNode(ports::NodeRegistration{"dead", "docker", "", "d1", "", 8 * 120,
                                                                 32 * kGiB * 120, 1});
  ASSERT_TRUE(dead.ok()) << dead.status().ToString();
  for (int i = 0; i < 101; ++i) {
    auto e = ledger_sql_->EscrowForLaunch("small", 0, 9000 + i);
    ASSERT_TRUE(e.ok() && e->has_value()) << i;
    const ports::Lease& l = (*e)->lease;
    ASSERT_EQ(l.target_node, "dead");  // the big node takes them
    ASSERT_TRUE(ledger_sql_->Bind(l.id, l.epoch, "dead", "d1").ok());
    ASSERT_TRUE(ledger_sql_->Advance(l.id, l.epoch, ports::Phase::kLaunching, "d1").ok());
    ports::ForgeJob j;
    j.tier = "small";
    j.job_id = "stuck-" + std::to_string(i);
    j.runner_name = "np-" + l.id;
    j.lease_id = l.id;
    j.started_at_ns = now_ - 20 * kS;
    j.completed_at_ns = now_ - 10 * kS + i;
    j.result = "failed";
    ASSERT_TRUE(ledger_sql_->RecordForgeJob(j).ok());
  }
  now_ += 10 * kS;
  ASSERT_TRUE(ledger_sql_->Reap().ok());  // every one of them quarantined: S17, never settled
  ASSERT_TRUE(ledger_sql_->NodeGone("dead", *dead).ok());
  Node("n1");
  Listen(Tier(), source_);
  source_.Deliver({Entry(JobEvent::kAssigned, "job-live")}, 1);
  const ports::Lease live = RunLaunch("n1");
  source_.Deliver({Entry(JobEvent::kStarted, "job-live", RunnerOf(live))}, 1);
  source_.Deliver({Entry(JobEvent::kCompleted, "job-live", RunnerOf(live), "succeeded")}, 0);
  ASSERT_TRUE(AwaitQueued("n1", 1)) << "the newer completion was never settled";
  plane::Command destroy = Take("n1");
  EXPECT_EQ(destroy.kind, plane::CommandKind::kDestroy);
}

// D4 (J6): runners beyond the jobs GitHub has assigned (cancelled before any
// runner took them) are retired once idle past the tier's idle_timeout:
// removed at GitHub first, then their lease marked deregistered, which the
// node's next heartbeat hears.
TEST_F(IntakeListenerTest, D4_IdleRunnersBeyondTheJobsAreRemovedAtGithubThenDeregistered) {
  Node("n1");
  ScaleSetTier tier = Tier();
  tier.idle_timeout = Nanos(0);
  Listen(tier, source_);
  source_.Deliver({Entry(JobEvent::kAssigned, "job-1"), Entry(JobEvent::kAssigned, "job-2")}, 2);
  ASSERT_TRUE(AwaitQueued("n1", 2));
  const ports::Lease a = RunLaunch("n1"), b = RunLaunch("n1");
  // GitHub cancels both before a runner took them: nothing is assigned.
  source_.Deliver({Entry(JobEvent::kCompleted, "job-1", "", "canceled"), Entry(JobEvent::kCompleted, "job-2", "", "canceled")}, 0);
  ASSERT_TRUE(Eventually([&] { return Deregistered(a.id) && Deregistered(b.id); }));
  {
    std::lock_guard lock(source_.mu());
    EXPECT_EQ(std::set<std::string>(source_.removed.begin(), source_.removed.end()),
              (std::set<std::string>{RunnerOf(a), RunnerOf(b)}));
  }
  EXPECT_TRUE(ports::Is(ledger_sql_->Heartbeat(a.id, a.epoch), ports::Verdict::kDeregistered));
  EXPECT_EQ(counters_.retired.load(), 2u);
}

// J8: a registration GitHub keeps that no open lease owns is removed by its
// exact id; the runners of open leases, a busy one, and one not named as
// ours are left alone; an up lease whose runner GitHub does not list is
// reported, and nothing is done to it.
TEST_F(IntakeListenerTest, J8_ARegistrationNoLeaseOwnsIsRemovedAndALeaseWithoutItsRunnerIsReported) {
  Node("n1");
  ScaleSetTier tier = Tier();
  tier.min_idle = 2;
  tier.ghost_check = std::chrono::milliseconds(10);
  const std::string ghost = protocol::RunnerNameFor("0123456789abcdef0123456789abcdef");
  {
    std::lock_guard lock(source_.mu());
    source_.listed = {{21, ghost, false, false},
                      {22, protocol::RunnerNameFor("fedcba9876543210fedcba9876543210"), true, true},  // busy
                      {23, "someone-elses-runner", false, false}};
  }
  Listen(tier, source_);
  const ports::Lease listed = RunLaunch("n1"), unlisted = RunLaunch("n1");
  {
    std::lock_guard lock(source_.mu());
    source_.listed.push_back({24, RunnerOf(listed), true, false});
  }
  ASSERT_TRUE(Eventually([&] {
    const TierStatus s = listener_->Snapshot();
    return s.ghosts_removed == 1 && s.runners_missing == std::vector<std::string>{unlisted.id};
  })) << "ghosts removed " << listener_->Snapshot().ghosts_removed;
  std::lock_guard lock(source_.mu());
  EXPECT_EQ(source_.removed, std::vector<std::string>{ghost});
  EXPECT_FALSE(Deregistered(unlisted.id)) << "a lease missing at GitHub is only reported";
}

// D4: min_idle runners are kept waiting, and one that takes a job is
// replaced; after the jobs, the surplus is retired down to min_idle.
TEST_F(IntakeListenerTest, D4_MinIdleRunnersAreKeptWaitingAndReplaced) {
  Node("n1");
  ScaleSetTier tier = Tier();
  tier.min_idle = 1;
  tier.idle_timeout = Nanos(0);
  Listen(tier, source_);
  const ports::Lease warm = RunLaunch("n1");  // at the session's start, with nothing assigned
  source_.Deliver({Entry(JobEvent::kAssigned, "job-1")}, 1);
  const int64_t took = source_.Deliver({Entry(JobEvent::kStarted, "job-1", RunnerOf(warm))}, 1);
  const ports::Lease next = RunLaunch("n1");  // the one taken is replaced
  ASSERT_TRUE(source_.AwaitAcked(took));
  source_.Deliver({Entry(JobEvent::kCompleted, "job-1", RunnerOf(warm), "succeeded")}, 0);
  ASSERT_TRUE(Eventually([&] { return Deregistered(warm.id); }));
  ASSERT_TRUE(AwaitQueued("n1", 1));
  ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());  // the settling destroy of the finished runner
  AwaitSettlePasses(3, "n1");
  EXPECT_FALSE(Deregistered(next.id)) << "the one idle runner min_idle keeps was retired";
  std::lock_guard lock(source_.mu());
  EXPECT_TRUE(source_.removed.empty());
}

// J6: a runner GitHub says is busy (it just took a job) is not retired.
TEST_F(IntakeListenerTest, D4_ARunnerGithubWillNotRemoveIsLeftAlone) {
  Node("n1");
  source_.remove_runner = [](const std::string& name) {
    return Status::Conflict(name + " is running a job; it was not removed");
  };
  ScaleSetTier tier = Tier();
  tier.idle_timeout = Nanos(0);
  Listen(tier, source_);
  source_.Deliver({Entry(JobEvent::kAssigned, "job-1")}, 1);
  const ports::Lease l = RunLaunch("n1");
  source_.Deliver({}, 0);
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(source_.mu());
    return source_.removed.size() >= 2;  // asked, refused, asked again later
  }));
  EXPECT_FALSE(Deregistered(l.id));
  EXPECT_EQ(counters_.retired.load(), 0u);
}

// D4: a node that is leaving (withdrawn, its SIGTERM drain) gets its idle
// runners retired whatever their age, so its drain can end; the job still
// assigned gets a runner elsewhere.
TEST_F(IntakeListenerTest, D4_IdleRunnersOnALeavingNodeAreRetiredAndReplacedElsewhere) {
  const int64_t n1 = Node("n1");
  Listen(Tier(), source_);  // idle_timeout: the default, minutes
  source_.Deliver({Entry(JobEvent::kAssigned, "job-1")}, 1);
  const ports::Lease idle = RunLaunch("n1");
  ASSERT_TRUE(ledger_sql_->NodeWithdrawn("n1", n1, "i1").ok());
  Node("n2");
  ASSERT_TRUE(Eventually([&] { return Deregistered(idle.id); }));
  const ports::Lease moved = RunLaunch("n2");
  EXPECT_NE(moved.id, idle.id);
}

// D4: a deployment drain (admission sealed) retires every idle runner,
// min_idle's included, and launches none.
TEST_F(IntakeListenerTest, D4_ADeploymentDrainRetiresEveryIdleRunner) {
  Node("n1");
  ScaleSetTier tier = Tier();
  tier.min_idle = 2;
  Listen(tier, source_);
  ASSERT_TRUE(AwaitQueued("n1", 2));
  const ports::Lease a = RunLaunch("n1"), b = RunLaunch("n1");
  ASSERT_TRUE(ledger_sql_->SetAdmission(true, -1, "drain", "test").ok());
  ASSERT_TRUE(Eventually([&] { return Deregistered(a.id) && Deregistered(b.id); }));
  source_.Deliver({Entry(JobEvent::kAssigned, "job-1")}, 1);
  AwaitSettlePasses(3, "n1");
  EXPECT_EQ(plane::PlaneTestPeer(*plane_).Queued("n1"), 0u) << "a drained deployment launched a runner";
}

// D17 (J7): GitHub refusing a runner registration for a rate limit pauses
// the tier's launches until the time it named.
TEST_F(IntakeListenerTest, D17_ARateLimitedRegistrationPausesTheTiersLaunches) {
  Node("n1");
  struct LimitedSource : ScriptedSource {
    Result<ports::JitRegistration> ScaleSetJit(int64_t, const std::string&, const std::string&) override {
      return Status::Unavailable("GitHub's rate limit answered 429; retry after 60 s").WithRetryAfter(60 * kS);
    }
  } limited;
  ListenerTiming timing;
  timing.settle_retry = std::chrono::milliseconds(10);
  JobIntake intake({Tier()}, {{"acme", &limited}}, "test", *ledger_sql_, plane_->runner(), log_, nullptr, timing);
  ASSERT_TRUE(Eventually([&] { return limited.polls() > 0; }));  // the scale set is found
  auto minted = intake.ScaleSetJit("small", "np-x", "");
  ASSERT_FALSE(minted.ok());
  const int64_t id = limited.Deliver({Entry(JobEvent::kAssigned, "job-1")}, 1);
  ASSERT_TRUE(limited.AwaitAcked(id));
  EXPECT_TRUE(OpenLeases().empty()) << "a runner was escrowed while GitHub refused registrations";
  EXPECT_EQ(plane::PlaneTestPeer(*plane_).Queued("n1"), 0u);
}

}  // namespace
}  // namespace nodeplane::jobs
