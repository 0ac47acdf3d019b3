// Many nodes registering, polling, being superseded, withdrawing and
// expiring while launches and destroys run concurrently, for a fixed number
// of operations. Checks: no command is delivered twice; a lease the caller
// was told to release was never started; no poll is left parked after its
// node is gone.
#include <atomic>
#include <mutex>
#include <random>
#include <set>

#include "plane_fixture.h"

namespace nodeplane::plane {
namespace {

constexpr int kNodes = 200;
constexpr int kSimOps = 6000;
constexpr int kLaunches = 400;

class StressTest : public PlaneTest {
 protected:
  struct Delivery {
    std::string node, inc;
    Command cmd;
  };
  std::mutex mu_;
  std::deque<Delivery> inbox_;
  std::set<std::string> delivered_;        // command ids handed to a poll
  std::set<std::string> started_leases_;   // a node answered ok to their launch
  std::set<std::string> taken_leases_;     // a node took their launch
  std::vector<std::string> incarnation_;   // per node, the one registered last
  std::atomic<int> polls_issued_{0}, polls_answered_{0};
  std::atomic<bool> duplicate_{false};

  std::string Name(int i) { return "node-" + std::to_string(i); }

  void Poll(int i) {
    std::string inc;
    {
      std::lock_guard l(mu_);
      inc = incarnation_[i];
    }
    polls_issued_++;
    plane_->PollAsync(Name(i), inc, [this, i, inc](Result<std::optional<Command>> r) {
      polls_answered_++;
      if (!r.ok() || !r->has_value()) return;
      std::lock_guard l(mu_);
      if (!delivered_.insert((*r)->id).second) duplicate_ = true;
      if ((*r)->kind == CommandKind::kLaunch) taken_leases_.insert((*r)->lease->id);
      inbox_.push_back({Name(i), inc, **r});
    });
  }

  void SimStep(std::mt19937& rng) {
    int i = static_cast<int>(rng() % kNodes);
    switch (rng() % 20) {
      case 0: {  // a (re)registration, sometimes as a new process
        std::string inc = "inc-" + std::to_string(rng() % 3);
        if (PlaneTestPeer(*plane_).Register(Req(Name(i), inc)).ok()) {
          std::lock_guard l(mu_);
          incarnation_[i] = inc;
        }
        break;
      }
      case 1: {
        std::string inc;
        {
          std::lock_guard l(mu_);  // another thread may be re-registering node i
          inc = incarnation_[i];
        }
        (void)plane_->Withdraw(Name(i), inc);
        break;
      }
      case 2:
        clock_.Advance(static_cast<int64_t>(rng() % 5) * kS);
        plane_->ExpireSilentNodes();
        break;
      case 3:
      case 4:
      case 5:
      case 6:
      case 7:
      case 8:
        Poll(i);
        break;
      default: {
        std::optional<Delivery> d;
        {
          std::lock_guard l(mu_);
          if (!inbox_.empty()) {
            d = inbox_.front();
            inbox_.pop_front();
          }
        }
        if (!d) break;
        int roll = static_cast<int>(rng() % 4);
        bool ok = roll < 2, custody = roll == 2;
        if (ok && d->cmd.kind == CommandKind::kLaunch) {
          std::lock_guard l(mu_);
          started_leases_.insert(d->cmd.lease->id);
        }
        (void)plane_->ReceiveResult(d->node, d->inc,
                                    CommandResult{d->cmd.id, ok, ok ? "" : "no", custody, d->cmd.barrier_id, {}});
      }
    }
  }
};

TEST_F(StressTest, TwoHundredNodesUnderConcurrentLaunchesAndDestroys) {
  incarnation_.assign(kNodes, "inc-0");
  for (int i = 0; i < kNodes; ++i) Reg(Name(i), "inc-0");

  std::mutex outcome_mu;
  std::set<std::string> released;  // launches the caller may release (nothing running)
  std::atomic<int> launches_done{0};
  std::vector<std::thread> launchers;
  for (int t = 0; t < 2; ++t) {
    launchers.emplace_back([&, t] {
      for (int k = 0; k < kLaunches / 2; ++k) {
        std::string id = "lease-" + std::to_string(t) + "-" + std::to_string(k);
        ports::Lease lease = Lease(id, Name((k * 7 + t) % kNodes));
        Status s = plane_->runner().Launch(lease, JobFor(1000 * t + k + 1));
        if (Is(s, kNoNode) || (!s.ok() && !Is(s, kCustody))) {
          std::lock_guard l(outcome_mu);
          released.insert(id);
        }
        launches_done++;
      }
    });
  }
  std::atomic<bool> destroyer_done{false};
  std::thread destroyer([&] {
    std::mt19937 rng(7);
    while (launches_done.load() < kLaunches) {
      (void)plane_->runner().Destroy(static_cast<int64_t>(rng() % 500 + 1), {});
    }
    destroyer_done = true;
  });
  std::vector<std::thread> sims;
  std::atomic<int> ops{0};
  for (int t = 0; t < 4; ++t) {
    sims.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      // The nodes keep answering (and time keeps passing) until every caller is done.
      while (ops++ < kSimOps || launches_done.load() < kLaunches || !destroyer_done.load()) SimStep(rng);
    });
  }
  for (auto& l : launchers) l.join();
  destroyer.join();
  for (auto& s : sims) s.join();

  {
    std::lock_guard l(mu_);
    std::lock_guard o(outcome_mu);
    // The run must have exercised the paths it checks.
    EXPECT_GT(delivered_.size(), 50u);
    EXPECT_GT(started_leases_.size(), 10u);
    EXPECT_GT(released.size(), 10u);
    std::printf("stress: %zu commands delivered, %zu launches started, %zu released, %d polls\n",
                delivered_.size(), started_leases_.size(), released.size(), polls_issued_.load());
  }
  EXPECT_FALSE(duplicate_.load()) << "a command was delivered twice";
  {
    std::lock_guard l(mu_);
    std::lock_guard o(outcome_mu);
    for (const std::string& id : released) {
      // Released means nothing started: no node said it launched it.
      EXPECT_EQ(started_leases_.count(id), 0u) << id << " was released while a node ran it";
    }
  }
  // Every node goes silent: none may leave a poll parked.
  clock_.Advance(1000 * kS);
  plane_->ExpireSilentNodes();
  EXPECT_TRUE(plane_->Nodes().empty());
  for (int i = 0; i < kNodes; ++i) EXPECT_EQ(PlaneTestPeer(*plane_).Waiters(Name(i)), 0u);
  // Every poll was answered exactly once (the poll timer may still be
  // delivering answers it collected: stopping the plane waits for it).
  plane_.reset();
  EXPECT_EQ(polls_answered_.load(), polls_issued_.load());
}

}  // namespace
}  // namespace nodeplane::plane
