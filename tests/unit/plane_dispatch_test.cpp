// Polling, launches and their three outcomes, results and custody (R03, R13,
// R24, R28, R37, R43, S01, S02, S06).
#include "plane_fixture.h"

namespace nodeplane::plane {
namespace {

using DispatchTest = PlaneTest;

// R28: "nothing to do" is an explicit empty answer when the window closes.
TEST_F(DispatchTest, R28_AQuietPollEndsWithNothingToDo) {
  Reg("n1");
  std::promise<Result<std::optional<Command>>> answered;
  plane_->PollAsync("n1", "i1", [&](Result<std::optional<Command>> r) { answered.set_value(std::move(r)); });
  WaitWaiters("n1", 1);
  clock_.Advance(50 * kS);
  auto r = answered.get_future().get();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  EXPECT_EQ(PlaneTestPeer(*plane_).Waiters("n1"), 0u);
}

// A clock that wakes a waiter only when its deadline comes, where FakeClock
// re-checks every millisecond: what it does not wake, only the plane's own
// notification can.
class DeadlineOnlyClock : public Clock {
 public:
  explicit DeadlineOnlyClock(int64_t start) : now_(start) {}
  int64_t Now() const override { return now_.load(); }
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, int64_t deadline,
                 const std::function<bool()>& done) const override {
    {
      std::lock_guard g(mu_);
      waiter_ = {lock.mutex(), &cv, deadline};
      ++waits_;
    }
    cv.wait(lock, [&] { return done() || Now() >= deadline; });
  }
  void Advance(int64_t ns) {
    now_ += ns;
    Waiter w;
    {
      std::lock_guard g(mu_);
      w = waiter_;
    }
    if (w.cv == nullptr || now_.load() < w.deadline) return;
    { std::lock_guard g(*w.mutex); }  // the waiter is waiting, or has yet to look at the time
    w.cv->notify_all();
  }
  int64_t waits() const {
    std::lock_guard g(mu_);
    return waits_;
  }

 private:
  struct Waiter {
    std::mutex* mutex = nullptr;
    std::condition_variable* cv = nullptr;
    int64_t deadline = 0;
  };
  std::atomic<int64_t> now_;
  mutable std::mutex mu_;
  mutable Waiter waiter_;
  mutable int64_t waits_ = 0;
};

// The poll timer sleeps until the earliest deadline; a poll parked on a
// quiet plane, whose deadline comes before that, wakes it (and one parked
// behind others does not, which only the benchmark's context switches show).
TEST_F(DispatchTest, R28_APollWhoseDeadlineComesFirstWakesThePollTimer) {
  DeadlineOnlyClock clock(clock_.Now());
  PlaneOptions o = Options();
  o.clock = &clock;
  o.poll_window_ns = kS / 2;  // before the timer's one-second sleep on an empty plane
  std::promise<Result<std::optional<Command>>> answered;
  plane_ = std::make_unique<Plane>(o);
  struct Reset {
    std::unique_ptr<Plane>& plane;
    ~Reset() { plane.reset(); }  // before the clock it uses and the promise it may answer
  } reset{plane_};
  while (clock.waits() == 0) std::this_thread::yield();  // the timer is asleep
  Reg("n1");
  plane_->PollAsync("n1", "i1", [&](Result<std::optional<Command>> r) { answered.set_value(std::move(r)); });
  clock.Advance(kS / 2);
  auto f = answered.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "the poll timer slept through";
  auto r = f.get();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST_F(DispatchTest, AParkedPollIsHandedTheNextCommand) {
  Reg("n1");
  std::promise<Result<std::optional<Command>>> answered;
  plane_->PollAsync("n1", "i1", [&](Result<std::optional<Command>> r) { answered.set_value(std::move(r)); });
  WaitWaiters("n1", 1);
  auto launch = LaunchAsync(Lease("l1"), 11);
  auto r = answered.get_future().get();
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->kind, CommandKind::kLaunch);
  ASSERT_TRUE(Answer("n1", **r, true).ok());
  EXPECT_TRUE(launch.get().ok());
}

TEST_F(DispatchTest, AWokenPollFromASupersededProcessIsNotHandedWork) {
  Reg("n1", "i1");
  std::promise<Result<std::optional<Command>>> answered;
  plane_->PollAsync("n1", "i1", [&](Result<std::optional<Command>> r) { answered.set_value(std::move(r)); });
  WaitWaiters("n1", 1);
  Reg("n1", "i2");
  auto launch = LaunchAsync(Lease("l1"), 11);
  EXPECT_TRUE(Is(answered.get_future().get().status(), kSuperseded));
  Command c = Take("n1", "i2");  // the current process takes it
  ASSERT_TRUE(Answer("n1", c, true, false, "i2").ok());
  EXPECT_TRUE(launch.get().ok());
}

// R43, S01: nothing sent.
TEST_F(DispatchTest, R43_S01_NoNodeMeansNothingWasSent) {
  ports::Lease l = Lease("l1");
  EXPECT_TRUE(Is(plane_->runner().Launch(l, JobFor(1)), kNoNode));
  Reg("n1");
  ports::Lease unknown = Lease("l2", "", "gpu");
  EXPECT_TRUE(Is(plane_->runner().Launch(unknown, JobFor(1)), kNoNode));
  ports::Lease elsewhere = Lease("l3", "n9");
  EXPECT_TRUE(Is(plane_->runner().Launch(elsewhere, JobFor(1)), kNoNode));
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n1"), 0u);
}

// R43: the node's answer, translated.
TEST_F(DispatchTest, R43_TheNodesAnswerIsTranslated) {
  Reg("n1");
  ports::Lease lease = Lease("l1");
  auto ok = std::async(std::launch::async, [&] { return plane_->runner().Launch(lease, JobFor(1)); });
  WaitQueued("n1", 1);
  Command c = Take("n1");
  EXPECT_EQ(c.lease->id, "l1");
  ASSERT_TRUE(Answer("n1", c, true).ok());
  EXPECT_TRUE(ok.get().ok());
  EXPECT_EQ(lease.node, "n1");

  auto custody = LaunchAsync(Lease("l2"), 2);
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1"), false, true).ok());
  EXPECT_TRUE(Is(custody.get(), kCustody));

  auto failed = LaunchAsync(Lease("l3"), 3);
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1"), false).ok());
  Status f = failed.get();
  EXPECT_FALSE(f.ok());
  EXPECT_FALSE(Is(f, kCustody));
  EXPECT_FALSE(Is(f, kNoNode));
  EXPECT_NE(f.message().find("could not launch lease l3: it broke"), std::string::npos);
  EXPECT_FALSE(plane_->OwnerOfLease("l3").has_value());  // nothing started: no owner
}

// R43, S06: taken and silent is custody; queued and never taken is NoNode.
TEST_F(DispatchTest, R43_S06_SilenceAfterDeliveryIsCustodyAndBeforeItIsNoNode) {
  Reg("n1");
  auto silent = LaunchAsync(Lease("l1"), 1);
  WaitQueued("n1", 1);
  Take("n1");
  clock_.Advance(600 * kS);  // the command timeout, from enqueue
  EXPECT_TRUE(Is(silent.get(), kCustody));

  plane_->Seen("n1", "i1");  // alive, but never takes the next one
  auto untaken = LaunchAsync(Lease("l2"), 2);
  WaitQueued("n1", 1);
  clock_.Advance(600 * kS);
  EXPECT_TRUE(Is(untaken.get(), kNoNode));
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n1"), 0u);
}

// Issue 22 #5: a custody outcome names the node, exactly when the caller
// needs to know where compute may be running: the node's own custody answer
// and a launch taken and never answered alike.
TEST_F(DispatchTest, ACustodyOutcomeNamesTheNode) {
  Reg("n1");
  for (bool answered : {true, false}) {
    ports::Lease lease = Lease(answered ? "l1" : "l2");
    auto launch = std::async(std::launch::async, [&] { return plane_->runner().Launch(lease, JobFor(1)); });
    WaitQueued("n1", 1);
    Command c = Take("n1");
    if (answered) {
      ASSERT_TRUE(Answer("n1", c, false, /*custody=*/true).ok());
    } else {
      clock_.Advance(600 * kS);
    }
    EXPECT_TRUE(Is(launch.get(), kCustody));
    EXPECT_EQ(lease.node, "n1");
  }
}

// R03: a late result is redirected, not rejected.
TEST_F(DispatchTest, R03_ALateSuccessfulLaunchIsTakenIntoCustody) {
  Reg("n1");
  auto silent = LaunchAsync(Lease("l1"), 1);
  WaitQueued("n1", 1);
  Command c = Take("n1");
  clock_.Advance(600 * kS);
  ASSERT_TRUE(Is(silent.get(), kCustody));
  EXPECT_TRUE(Is(Answer("n1", c, true), kTakeCustody));
  // Again, its tombstone consumed: an id the plane no longer knows still
  // keeps custody, never a bare success (R03).
  EXPECT_TRUE(Is(Answer("n1", c, true), kTakeCustody));
}

TEST_F(DispatchTest, ALateFailedLaunchEndsItsOwnership) {
  Reg("n1");
  auto silent = LaunchAsync(Lease("l1"), 1);
  WaitQueued("n1", 1);
  Command c = Take("n1");
  EXPECT_TRUE(plane_->OwnerOfLease("l1").has_value());
  clock_.Advance(600 * kS);
  ASSERT_TRUE(Is(silent.get(), kCustody));
  EXPECT_TRUE(Answer("n1", c, false).ok());
  EXPECT_FALSE(plane_->OwnerOfLease("l1").has_value());
}

TEST_F(DispatchTest, AStoppedCallerAbandonsTheCommand) {
  Reg("n1");
  std::stop_source stop;
  auto queued = LaunchAsync(Lease("l1"), 1, stop.get_token());
  WaitQueued("n1", 1);
  stop.request_stop();
  EXPECT_TRUE(Is(queued.get(), kNoNode));

  std::stop_source stop2;
  auto delivered = LaunchAsync(Lease("l2"), 2, stop2.get_token());
  WaitQueued("n1", 1);
  Command c = Take("n1");
  stop2.request_stop();
  EXPECT_TRUE(Is(delivered.get(), kCustody));
  EXPECT_TRUE(Is(Answer("n1", c, true), kTakeCustody));
}

// An in-flight launch across a re-registration: its outcome is unknown.
TEST_F(DispatchTest, AReRegistrationMakesInFlightLaunchesCustody) {
  Reg("n1", "i1");
  auto launch = LaunchAsync(Lease("l1"), 1);
  WaitQueued("n1", 1);
  Command c = Take("n1", "i1");
  Reg("n1", "i2");
  EXPECT_TRUE(Is(launch.get(), kCustody));
  EXPECT_TRUE(Is(Answer("n1", c, true, false, "i1"), kTakeCustody));
}

// R13: the tier's shape travels on the launch command.
TEST_F(DispatchTest, R13_TheTierShapeTravelsOnTheLaunch) {
  Reg("n1");
  auto launch = LaunchAsync(Lease("l1"), 42);
  WaitQueued("n1", 1);
  Command c = Take("n1");
  ASSERT_TRUE(c.tier.has_value());
  EXPECT_EQ(c.tier->label, "small");
  EXPECT_EQ(c.tier->image, "img");
  EXPECT_EQ(c.tier->command, std::vector<std::string>{"/bin/run"});
  EXPECT_EQ(c.job->request_id, 42);
  EXPECT_EQ(c.id.size(), 32u);
  ASSERT_TRUE(Answer("n1", c, true).ok());
  EXPECT_TRUE(launch.get().ok());
}

// R37: the dispatch fence moves before a launch can be taken.
TEST_F(DispatchTest, R37_ALaunchAdvancesTheDispatchFenceFirst) {
  Reg("n1");
  auto launch = LaunchAsync(Lease("l1"), 1);
  WaitQueued("n1", 1);
  {
    std::lock_guard l(ledger_.mu);
    EXPECT_EQ(ledger_.dispatch["n1"], 1);
  }
  ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());
  EXPECT_TRUE(launch.get().ok());
  ledger_.fail_bump = true;
  ports::Lease l = Lease("l2");
  EXPECT_TRUE(Is(plane_->runner().Launch(l, JobFor(2)), kNoNode));
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n1"), 0u);
}

// R37 with the fence advanced in the ledger write that escrowed the lease
// (Ledger::EscrowForLaunch): the Runner does not move it again for that
// node, and still moves it for any other node the launch goes to.
TEST_F(DispatchTest, R37_AFenceAdvancedWithTheEscrowIsNotAdvancedAgain) {
  Reg("n1");
  ports::Lease l1 = Lease("l1");
  auto launch = std::async(std::launch::async, [&] { return plane_->runner().Launch(l1, JobFor(1), {}, "n1"); });
  WaitQueued("n1", 1);
  {
    std::lock_guard l(ledger_.mu);
    EXPECT_EQ(ledger_.dispatch["n1"], 0);
  }
  ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());
  EXPECT_TRUE(launch.get().ok());
  ports::Lease l2 = Lease("l2");
  launch = std::async(std::launch::async, [&] { return plane_->runner().Launch(l2, JobFor(2), {}, "n9"); });
  WaitQueued("n1", 1);
  {
    std::lock_guard l(ledger_.mu);
    EXPECT_EQ(ledger_.dispatch["n1"], 1);
  }
  ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());
  EXPECT_TRUE(launch.get().ok());
}

TEST_F(DispatchTest, PlacementFollowsProviderPreferenceThenName) {
  Reg("zz", "i1", "docker");
  Reg("bb", "i1", "firecracker");
  Reg("aa", "i1", "docker");
  EXPECT_EQ(*PlaneTestPeer(*plane_).Pick(Lease("l1", "", "multi", "firecracker,docker")), "bb");
  EXPECT_EQ(*PlaneTestPeer(*plane_).Pick(Lease("l2", "", "multi", "docker,firecracker")), "aa");
  EXPECT_EQ(*PlaneTestPeer(*plane_).Pick(Lease("l3", "zz")), "zz");  // pinned
  ports::Lease bound = Lease("l4");
  bound.node = "zz";
  EXPECT_EQ(*PlaneTestPeer(*plane_).Pick(bound), "zz");
}

TEST_F(DispatchTest, ALaunchIsRefusedIfTheNodeChangedProviderBeforeTakingIt) {
  Reg("n1", "i1", "docker");
  auto launch = LaunchAsync(Lease("l1", "", "multi", "firecracker,docker"), 1);
  WaitQueued("n1", 1);
  Reg("n1", "i1", "firecracker");
  // The poll consumes and answers the stale launch, then parks: nothing is left.
  auto ticket = plane_->PollAsync("n1", "i1", [](Result<std::optional<Command>>) {});
  Status s = launch.get();
  EXPECT_NE(s.message().find("changed provider from docker to firecracker"), std::string::npos) << s.ToString();
  EXPECT_FALSE(Is(s, kCustody));
  plane_->CancelPoll(ticket);
}

// R24, S02: only the launch a process is executing entitles it.
TEST_F(DispatchTest, R24_S02_AJITRegistrationNeedsALaunchInFlight) {
  Reg("n1", "i1");
  Reg("n2", "j1");
  EXPECT_TRUE(Is(plane_->EntitledToLaunch("n1", "i1", "l1").status(), kNotEntitled));
  auto launch = LaunchAsync(Lease("l1", "n1"), 1);
  WaitQueued("n1", 1);
  Command c = Take("n1", "i1");
  auto tier = plane_->EntitledToLaunch("n1", "i1", "l1");
  ASSERT_TRUE(tier.ok()) << tier.status().ToString();
  EXPECT_EQ(*tier, "small");
  EXPECT_TRUE(Is(plane_->EntitledToLaunch("n1", "i1", "other").status(), kNotEntitled));
  EXPECT_TRUE(Is(plane_->EntitledToLaunch("n1", "x9", "l1").status(), kNotEntitled));
  EXPECT_TRUE(Is(plane_->EntitledToLaunch("n2", "j1", "l1").status(), kNotEntitled));  // registered, not entitled
  ASSERT_TRUE(Answer("n1", c, true).ok());
  EXPECT_TRUE(launch.get().ok());
  EXPECT_TRUE(Is(plane_->EntitledToLaunch("n1", "i1", "l1").status(), kNotEntitled));
}

// R43, S06: a launch handed to a poll whose client could not carry it goes
// back to the queue, untaken: no owner, no entitlement, and the next poll
// gets it, so the node's own answer decides the outcome.
TEST_F(DispatchTest, R43_ALaunchAPollCouldNotDeliverGoesBackToTheQueue) {
  Reg("n1");
  auto launch = LaunchAsync(Lease("l1"), 11);
  WaitQueued("n1", 1);
  Command first = Take("n1");
  EXPECT_TRUE(plane_->OwnerOfLease("l1").has_value());
  plane_->GiveBack("n1", "i1", first.id);
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n1"), 1u);
  EXPECT_EQ(PlaneTestPeer(*plane_).InFlight("n1"), 0u);
  EXPECT_FALSE(plane_->OwnerOfLease("l1").has_value());
  EXPECT_TRUE(Is(plane_->EntitledToLaunch("n1", "i1", "l1").status(), kNotEntitled));
  plane_->GiveBack("n1", "i1", first.id);  // twice changes nothing
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n1"), 1u);
  Command again = Take("n1");
  EXPECT_EQ(again.id, first.id);
  ASSERT_TRUE(Answer("n1", again, false).ok());
  EXPECT_EQ(launch.get().code(), Code::kConflict);  // the node's clean failure, not custody
  plane_->GiveBack("n1", "i1", first.id);  // answered: stays answered
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n1"), 0u);
}

// Shutdown bounds every wait: a launch a node took ends as custody at once,
// an untaken one as nothing sent, and a barrier ask records nothing.
TEST_F(DispatchTest, ShutdownAnswersEveryDispatchAtOnce) {
  Reg("n1");
  Reg("n2", "j1");
  auto taken = LaunchAsync(Lease("l1", "n1"), 1);
  WaitQueued("n1", 1);
  (void)Take("n1");
  auto untaken = LaunchAsync(Lease("l2", "n2"), 2);
  WaitQueued("n2", 1);
  plane_->Shutdown();  // no clock moves: only the shutdown can end these waits
  EXPECT_TRUE(Is(taken.get(), kCustody));
  EXPECT_TRUE(Is(untaken.get(), kNoNode));
  EXPECT_TRUE(Is(plane_->runner().Launch(*std::make_unique<ports::Lease>(Lease("l3")), JobFor(3)), kNoNode));
  ASSERT_TRUE(PlaneTestPeer(*plane_).AskNode("n1", "b1").ok());
  std::lock_guard l(ledger_.mu);
  EXPECT_TRUE(ledger_.observations.empty());
}

// Issue 48 §3: a stopping plane answered a poll "not registered", and its
// nodes registered again at once, 60 to 260 times in 0.2 s. It answers both
// as an outage now, which a node waits out.
TEST_F(DispatchTest, AStoppingPlaneAnswersRegistrationsAndPollsAsUnavailable) {
  Reg("n1");
  plane_->Shutdown();
  auto polled = PlaneTestPeer(*plane_).Poll("n1", "i1");
  EXPECT_EQ(polled.status().code(), Code::kUnavailable) << polled.status().ToString();
  auto registered = PlaneTestPeer(*plane_).Register(Req("n1", "i2"));
  EXPECT_EQ(registered.status().code(), Code::kUnavailable) << registered.status().ToString();
}

// Issue 48 §2: a tier whose runner GitHub refused as outdated (exit 7) is
// paused: no launch is placed for it, and the refusal says why and how to
// resume, until an operator resumes it.
TEST_F(DispatchTest, AnOutdatedRunnersTierIsPausedUntilResumed) {
  Reg("n1");
  plane_->PauseTier("small", "a runner of lease l0 was refused by GitHub as outdated (exit 7)");
  EXPECT_EQ(plane_->PausedTiers().count("small"), 1u);
  Status refused = plane_->runner().Launch(*std::make_unique<ports::Lease>(Lease("l1")), JobFor(1));
  EXPECT_TRUE(Is(refused, kNoNode)) << refused.ToString();
  EXPECT_NE(refused.message().find("paused"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("nodeplanectl tiers resume small"), std::string::npos) << refused.message();
  EXPECT_EQ(PlaneTestPeer(*plane_).Queued("n1"), 0u);
  EXPECT_TRUE(plane_->ResumeTier("small"));
  EXPECT_FALSE(plane_->ResumeTier("small"));  // not paused any more
  auto launch = LaunchAsync(Lease("l2"), 2);
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());
  EXPECT_TRUE(launch.get().ok());
}

// R03: a success for an id the plane never knew (its tombstone evicted)
// keeps custody; a failure started nothing and is ignored. S03: a node the
// plane does not know (never registered, or a restart since), no tombstone
// of its naming the command, is told to register again, never 204.
TEST_F(DispatchTest, R03_S03_AnUnknownSuccessfulResultKeepsCustodyUnlessItsNodeIsUnknown) {
  Reg("n1");
  EXPECT_TRUE(Is(plane_->ReceiveResult("n1", "i1", CommandResult{"nope", true, "", false, "", {}}), kTakeCustody));
  EXPECT_TRUE(plane_->ReceiveResult("n1", "i1", CommandResult{"nope", false, "x", false, "", {}}).ok());
  EXPECT_TRUE(Is(plane_->ReceiveResult("ghost", "g1", CommandResult{"nope", true, "", false, "", {}}), kUnregistered));
}

}  // namespace
}  // namespace nodeplane::plane

namespace nodeplane::plane {
namespace {

// Tombstones are bounded per node: the oldest abandoned command is forgotten.
TEST_F(PlaneTest, TombstonesAreBoundedPerNode) {
  PlaneOptions o = Options();
  o.max_tombstones = 2;
  plane_ = std::make_unique<Plane>(o);
  Reg("n1");
  std::vector<Command> taken;
  for (int i = 0; i < 3; ++i) {
    std::stop_source stop;
    auto launch = LaunchAsync(Lease("l" + std::to_string(i)), i + 1, stop.get_token());
    WaitQueued("n1", 1);
    taken.push_back(Take("n1"));
    stop.request_stop();  // abandoned after delivery: tombstoned
    ASSERT_TRUE(Is(launch.get(), kCustody));
  }
  // A late failure consumes a kept tombstone and ends the launch's
  // ownership; the evicted one is an unknown id, which changes nothing.
  EXPECT_TRUE(Answer("n1", taken[0], false).ok());
  EXPECT_TRUE(plane_->OwnerOfLease("l0").has_value());
  EXPECT_TRUE(Answer("n1", taken[1], false).ok());
  EXPECT_FALSE(plane_->OwnerOfLease("l1").has_value());
  EXPECT_TRUE(Is(Answer("n1", taken[2], true), kTakeCustody));
}

// R47: whether a node's version has the command is the caller's check; the
// plane sends an upgrade to whichever node it is asked to.
TEST_F(PlaneTest, R47_ThePlaneDoesNotGateUpgradesOnTheNodesVersion) {
  RegisterRequest r = Req("n1");
  r.min_version = kMinProtocol;
  r.version = kMinProtocol;
  ASSERT_TRUE(PlaneTestPeer(*plane_).Register(r).ok());
  auto up = std::async(std::launch::async, [&] { return plane_->runner().Upgrade("n1", UpgradeSpec{"2.0.0", "", "r", 1}); });
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());
  EXPECT_TRUE(up.get().ok());
}

}  // namespace
}  // namespace nodeplane::plane
