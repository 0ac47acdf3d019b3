// The reaper (R44): after a reap that ended leases, the fleet is asked to
// tend and then sweep.
#include "nodeplaned/reaper.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <mutex>
#include <vector>
#include <thread>

#include "plane/plane.h"
#include "plane_test_peer.h"

namespace nodeplane {
namespace {

constexpr int64_t kGiB = 1LL << 30;

protocol::Command Take(plane::Plane& p) {
  auto r = plane::PlaneTestPeer(p).Poll("n1", "i1");
  EXPECT_TRUE(r.ok() && r->has_value());
  return r.ok() && r->has_value() ? **r : protocol::Command{};
}

TEST(Reaper, R44_AReapThatEndedLeasesIsFollowedByTendAndSweep) {
  Logger log(LogLevel::kError);
  plane::PlaneOptions o;
  o.deployment = "dep";
  plane::Plane p(o);
  protocol::RegisterRequest r;
  r.version = 1;
  r.node = "n1";
  r.provider = "process";
  r.deployment = "dep";
  r.incarnation = "i1";
  r.vcpu = 1;
  r.memory = kGiB;
  ASSERT_TRUE(plane::PlaneTestPeer(p).Register(r).ok());
  std::atomic<int> reaps{0};
  {
    Reaper reaper([&]() -> Result<int64_t> { return reaps++ == 0 ? 1 : 0; }, [] { return Status::Ok(); }, p.runner(),
                  log, ReapTiming{std::chrono::milliseconds(1), std::chrono::seconds(0)});
    while (plane::PlaneTestPeer(p).Queued("n1") == 0) std::this_thread::yield();
    protocol::Command tend = Take(p);
    EXPECT_EQ(tend.kind, protocol::CommandKind::kTend);
    ASSERT_TRUE(p.ReceiveResult("n1", "i1", protocol::CommandResult{tend.id, true, "", false, "", {}}).ok());
    while (plane::PlaneTestPeer(p).Queued("n1") == 0) std::this_thread::yield();
    protocol::Command sweep = Take(p);
    EXPECT_EQ(sweep.kind, protocol::CommandKind::kSweep);
    ASSERT_TRUE(p.ReceiveResult("n1", "i1", protocol::CommandResult{sweep.id, true, "", false, "", {}}).ok());
  }
  EXPECT_GE(reaps.load(), 1);
  EXPECT_EQ(plane::PlaneTestPeer(p).Queued("n1"), 0u);  // later reaps ended nothing: no more sweeps
}

// Issue 24 #2: nothing is reaped until every node had time to come back and
// heartbeat: one grace after start, and one after the ledger was seen out,
// by a reap or by the probe that runs on every tick of a grace.
TEST(Reaper, NothingIsReapedWithinAGraceOfStartOrOfALedgerOutage) {
  Logger log(LogLevel::kError);
  constexpr int64_t kS = 1'000'000'000;
  plane::FakeClock clock(1'800'000'000LL * kS);
  plane::PlaneOptions o;
  o.deployment = "dep";
  plane::Plane p(o);
  std::mutex mu;
  std::string calls;            // one letter a tick: r (reap), p (probe); upper case when it failed
  std::set<size_t> fail_at;     // ticks (1-based) whose call fails
  auto call = [&](char kind) {
    std::lock_guard l(mu);
    const bool fails = fail_at.count(calls.size() + 1) != 0;
    calls.push_back(fails ? static_cast<char>(kind - 'a' + 'A') : kind);
    return fails;
  };
  {
    std::lock_guard l(mu);
    fail_at = {12, 15};
  }
  Reaper reaper([&]() -> Result<int64_t> { return call('r') ? Status::Unavailable("down") : Result<int64_t>(0); },
                [&] { return call('p') ? Status::Unavailable("down") : Status::Ok(); }, p.runner(), log,
                ReapTiming{std::chrono::seconds(1), std::chrono::seconds(10)}, &clock);
  for (size_t tick = 1; tick <= 26; ++tick) {
    const int64_t held = reaper.hold_until_ns();
    clock.Advance(kS);
    const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(10);  // a failing test's bound
    for (;;) {  // each tick makes exactly one call
      std::lock_guard l(mu);
      ASSERT_LE(calls.size(), tick) << calls;
      if (calls.size() == tick) break;
      ASSERT_LT(std::chrono::steady_clock::now(), bound) << "tick " << tick << " made no call: " << calls;
    }
    // A failed call holds reaping from when it returned: the clock stays
    // put until the reaper has set the new hold.
    if (fail_at.count(tick) != 0) {
      while (reaper.hold_until_ns() == held) {
        ASSERT_LT(std::chrono::steady_clock::now(), bound) << "tick " << tick << " failed but set no hold";
        std::this_thread::yield();
      }
    }
  }
  // Probes until 10 s after start; reaps; a failed reap at tick 12 holds
  // reaping for 10 s, and a failed probe at 15 holds it 10 s from then.
  EXPECT_EQ(calls, "ppppppppprrRppPppppppppprr");
}

}  // namespace
}  // namespace nodeplane
