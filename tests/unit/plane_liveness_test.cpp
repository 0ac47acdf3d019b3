// Liveness, expiry, withdrawal and the compute barrier (R07, R20–R22,
// R31–R36, S05, S15, S16).
#include "plane_fixture.h"

namespace nodeplane::plane {
namespace {

using LivenessTest = PlaneTest;

// R31, S05: membership is bounded by silence: four poll windows.
TEST_F(LivenessTest, R31_S05_ASilentNodeIsForgottenAfterFourWindows) {
  Reg("n1");
  clock_.Advance(200 * kS);
  plane_->ExpireSilentNodes();
  EXPECT_EQ(plane_->Nodes(), std::vector<std::string>{"n1"});  // exactly four windows: not yet
  clock_.Advance(1);
  plane_->ExpireSilentNodes();
  EXPECT_TRUE(plane_->Nodes().empty());
}

TEST_F(LivenessTest, S05_ThePollWindowSetsTheSilenceWindow) {
  PlaneTestPeer(*plane_).SetPollWindow(10 * kS);
  Reg("n1");
  clock_.Advance(40 * kS + 1);
  plane_->ExpireSilentNodes();
  EXPECT_TRUE(plane_->Nodes().empty());
}

// R31: every request is evidence of life.
TEST_F(LivenessTest, R31_AnyRequestKeepsANodeAlive) {
  Reg("n1", "i1");
  clock_.Advance(150 * kS);
  plane_->Seen("n1", "i1");  // a heartbeat from a node whose command loop is wedged
  clock_.Advance(150 * kS);
  plane_->ExpireSilentNodes();
  EXPECT_EQ(plane_->Nodes(), std::vector<std::string>{"n1"});
  Reg("n1", "i2");
  clock_.Advance(150 * kS);
  plane_->Seen("n1", "i1");  // a superseded process is no evidence
  clock_.Advance(150 * kS);
  plane_->ExpireSilentNodes();
  EXPECT_TRUE(plane_->Nodes().empty());
}

TEST_F(LivenessTest, ANodeWithACommandInFlightIsNotExpired) {
  Reg("n1");
  auto launch = LaunchAsync(Lease("l1"), 1);
  WaitQueued("n1", 1);
  Command c = Take("n1");
  clock_.Advance(300 * kS);
  plane_->ExpireSilentNodes();
  EXPECT_EQ(plane_->Nodes(), std::vector<std::string>{"n1"});
  ASSERT_TRUE(Answer("n1", c, true).ok());
  EXPECT_TRUE(launch.get().ok());
}

// Expiry answers queued commands "nothing started", releases parked polls,
// and records NodeGone fenced on the epoch (S15).
TEST_F(LivenessTest, S15_ExpiryAnswersWhatWasQueuedAndTellsTheLedger) {
  Reg("n1");
  Reg("n2");
  // The poll is parked under a window longer than the silence window that
  // follows, so only expiry can answer it: under the usual window the poll
  // timer closes it first, and the two would race.
  PlaneTestPeer(*plane_).SetPollWindow(1000 * kS);
  std::promise<Result<std::optional<Command>>> parked;
  plane_->PollAsync("n2", "i1", [&](Result<std::optional<Command>> r) { parked.set_value(std::move(r)); });
  WaitWaiters("n2", 1);
  PlaneTestPeer(*plane_).SetPollWindow(50 * kS);
  auto launch = LaunchAsync(Lease("l1", "n1"), 1);
  WaitQueued("n1", 1);
  clock_.Advance(201 * kS);
  plane_->ExpireSilentNodes();
  Status s = launch.get();
  EXPECT_NE(s.message().find("went silent before taking this command, so nothing started"), std::string::npos)
      << s.ToString();
  EXPECT_FALSE(Is(s, kCustody));
  auto answered = parked.get_future();  // expiry answers the poll before it returns: no poll left parked
  ASSERT_EQ(answered.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_TRUE(Is(answered.get().status(), kUnregistered));
  std::lock_guard l(ledger_.mu);
  ASSERT_EQ(ledger_.gone_calls.size(), 2u);
  EXPECT_EQ(ledger_.gone_calls[0].second, ledger_.epochs[ledger_.gone_calls[0].first]);
}

// R32: expiry runs on a timer, because an idle deployment asks nothing.
TEST_F(LivenessTest, R32_WatchExpiresNodesOnItsOwnTimer) {
  Reg("n1");
  std::stop_source stop;
  std::thread watch([&] { plane_->Watch(stop.get_token()); });
  clock_.Advance(201 * kS);
  while (!plane_->Nodes().empty()) clock_.Advance(kS);  // nothing asks; only the timer can notice
  stop.request_stop();
  watch.join();
  std::lock_guard l(ledger_.mu);
  EXPECT_FALSE(ledger_.gone_calls.empty());
}

// R33: withdraw is only from the currently registered process.
TEST_F(LivenessTest, R33_OnlyTheCurrentProcessMayWithdraw) {
  Reg("n1", "i1");
  Reg("n1", "i2");
  EXPECT_TRUE(Is(plane_->Withdraw("n1", "i1"), kSuperseded));
  EXPECT_EQ(plane_->Nodes(), std::vector<std::string>{"n1"});
  EXPECT_TRUE(Is(plane_->Withdraw("ghost", "i1"), kUnregistered));
  EXPECT_TRUE(plane_->Withdraw("n1", "i2").ok());
  EXPECT_TRUE(plane_->Nodes().empty());
}

// R34: ledger first; if it cannot record it, the node stays placeable.
TEST_F(LivenessTest, R34_AWithdrawalTheLedgerCannotRecordChangesNothing) {
  Reg("n1", "i1");
  ledger_.fail_withdraw = true;
  Status s = plane_->Withdraw("n1", "i1");
  EXPECT_TRUE(s.retryable()) << s.ToString();
  EXPECT_EQ(plane_->Nodes(), std::vector<std::string>{"n1"});
}

// R35: the race between the two sections resolves as expiry would.
TEST_F(LivenessTest, R35_ANodeForgottenDuringTheLedgerWriteIsSuperseded) {
  Reg("n1", "i1");
  ledger_.on_withdraw = [&] { PlaneTestPeer(*plane_).Forget("n1"); };
  EXPECT_TRUE(Is(plane_->Withdraw("n1", "i1"), kSuperseded));
}

// R35: a registration that lands between the ledger's write and the memory
// section is left alone: the withdrawal re-checks its fence and answers
// superseded instead of taking the new process out of the fleet.
TEST_F(LivenessTest, R35_ARegistrationBetweenTheTwoSectionsIsNotWithdrawn) {
  Reg("n1", "i1");
  ledger_.after_withdraw = [&] { Reg("n1", "i2"); };
  EXPECT_TRUE(Is(plane_->Withdraw("n1", "i1"), kSuperseded));
  EXPECT_EQ(PlaneTestPeer(*plane_).CurrentIncarnation("n1"), "i2");
}

// R36: withdraw releases nothing; queued work was never started; in-flight
// work is tombstoned so a late result is still redirected.
TEST_F(LivenessTest, R36_WithdrawAnswersQueuedAndTombstonesInFlight) {
  Reg("n1", "i1");
  auto taken = LaunchAsync(Lease("l1", "n1"), 1);
  WaitQueued("n1", 1);
  Command c = Take("n1", "i1");
  auto queued = LaunchAsync(Lease("l2", "n1"), 2);
  WaitQueued("n1", 1);
  ASSERT_TRUE(plane_->Withdraw("n1", "i1").ok());
  EXPECT_TRUE(Is(taken.get(), kCustody));
  Status q = queued.get();
  EXPECT_NE(q.message().find("withdrew before taking this command, so nothing started"), std::string::npos);
  EXPECT_TRUE(PlaneTestPeer(*plane_).Owns("l1", "n1", "i1"));  // owners untouched
  EXPECT_TRUE(Is(Answer("n1", c, true), kTakeCustody));  // the tombstone outlived the record
  std::lock_guard l(ledger_.mu);
  EXPECT_TRUE(ledger_.gone_calls.empty());
  EXPECT_EQ(ledger_.invalidated, std::vector<std::string>{"n1"});  // only the registration's arrival
}

// R07: a plane without a barrier store never proves anything.
TEST_F(LivenessTest, R07_WithoutABarrierStoreTheLoopDoesNothing) {
  PlaneOptions o = Options();
  o.barrier = nullptr;
  plane_ = std::make_unique<Plane>(o);
  plane_->BarrierLoop(std::stop_token());  // returns at once
  EXPECT_FALSE(PlaneTestPeer(*plane_).AskNode("n1", "b").ok());
}

// R22: targets are sorted.
TEST_F(LivenessTest, R22_BarrierTargetsAreSorted) {
  for (const char* n : {"zeta", "alpha", "mid"}) Reg(n);
  EXPECT_EQ(PlaneTestPeer(*plane_).BarrierTargets(), (std::vector<std::string>{"alpha", "mid", "zeta"}));
}

// R21: each answer is recorded against the fence captured before asking.
TEST_F(LivenessTest, R21_AnAnswerIsRecordedAgainstTheFenceTakenBeforeAsking) {
  Reg("n1");
  auto ask = std::async(std::launch::async, [&] { return PlaneTestPeer(*plane_).AskNode("n1", "b1"); });
  WaitQueued("n1", 1);
  Command c = Take("n1");
  EXPECT_EQ(c.kind, CommandKind::kInventory);
  EXPECT_EQ(c.barrier_id, "b1");
  {
    std::lock_guard l(ledger_.mu);
    ledger_.dispatch["n1"] = 99;  // a launch lands while the question is out
  }
  ASSERT_TRUE(plane_->ReceiveResult("n1", "i1", CommandResult{c.id, true, "", false, "b1", {"l7"}}).ok());
  ASSERT_TRUE(ask.get().ok());
  std::lock_guard l(ledger_.mu);
  ASSERT_EQ(ledger_.observations.size(), 1u);
  EXPECT_EQ(ledger_.observations[0].fence_dispatch, 0);  // the fence from before, for the ledger to judge
  EXPECT_FALSE(ledger_.observations[0].empty);
  ASSERT_EQ(ledger_.resolved.size(), 1u);  // the inventory also resolves quarantine
  EXPECT_EQ(ledger_.resolved[0].second, std::vector<std::string>{"l7"});
}

TEST_F(LivenessTest, R21_AFailedOrMismatchedAnswerIsNeverEmpty) {
  Reg("n1");
  for (const CommandResult& answer : {CommandResult{"", false, "cannot list", false, "", {}},
                                      CommandResult{"", true, "", false, "other-barrier", {}}}) {
    auto ask = std::async(std::launch::async, [&] { return PlaneTestPeer(*plane_).AskNode("n1", "b1"); });
    WaitQueued("n1", 1);
    CommandResult r = answer;
    r.id = Take("n1").id;
    ASSERT_TRUE(plane_->ReceiveResult("n1", "i1", r).ok());
    ASSERT_TRUE(ask.get().ok());
  }
  std::lock_guard l(ledger_.mu);
  ASSERT_EQ(ledger_.observations.size(), 2u);
  EXPECT_FALSE(ledger_.observations[0].empty);
  EXPECT_FALSE(ledger_.observations[1].empty);
}

// R20: the loop asks while a durable request exists and the ledger is quiet.
TEST_F(LivenessTest, R20_TheBarrierLoopAsksOnlyWhileARequestStandsAndTheLedgerIsQuiet) {
  Reg("n1");
  {
    std::lock_guard l(ledger_.mu);
    ledger_.barrier = ports::ComputeBarrier{"b1", 3, 0, "op"};
    ledger_.admission = {3, true};
    ledger_.outstanding = {Lease("busy")};  // not quiet yet
  }
  std::stop_source stop;
  std::thread loop([&] { plane_->BarrierLoop(stop.get_token()); });
  // The loop looks, finds a lease open, and looks again a round later
  // having asked nothing: a loop that asked would be blocked on its
  // question, with the command queued, and never look again.
  for (;;) {
    {
      std::lock_guard l(ledger_.mu);
      if (ledger_.quiescence_calls >= 2) break;
    }
    if (PlaneTestPeer(*plane_).Queued("n1") != 0) break;
    plane_->Seen("n1", "i1");
    clock_.Advance(kS);
    std::this_thread::yield();
  }
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n1"), 0u);
  {
    std::lock_guard l(ledger_.mu);
    ledger_.outstanding.clear();
  }
  // Time passes until the loop looks again; the node keeps talking meanwhile.
  while (PlaneTestPeer(*plane_).Queued("n1") == 0) {
    plane_->Seen("n1", "i1");
    clock_.Advance(kS);
    std::this_thread::yield();
  }
  Command c = Take("n1");
  ASSERT_TRUE(plane_->ReceiveResult("n1", "i1", CommandResult{c.id, true, "", false, "b1", {}}).ok());
  for (;;) {
    std::lock_guard l(ledger_.mu);
    if (!ledger_.observations.empty()) break;
  }
  stop.request_stop();
  loop.join();
  std::lock_guard l(ledger_.mu);
  EXPECT_TRUE(ledger_.observations[0].empty);
}

TEST_F(LivenessTest, R20_ABarrierAskedAtAnOldGenerationIsDropped) {
  {
    std::lock_guard l(ledger_.mu);
    ledger_.barrier = ports::ComputeBarrier{"b1", 3, 0, "op"};
    ledger_.admission = {4, true};  // resumed and sealed again since
  }
  std::stop_source stop;
  std::thread loop([&] { plane_->BarrierLoop(stop.get_token()); });
  for (;;) {
    std::lock_guard l(ledger_.mu);
    if (!ledger_.barrier) break;
  }
  stop.request_stop();
  loop.join();
}

}  // namespace
}  // namespace nodeplane::plane
