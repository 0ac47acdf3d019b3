// The reaper (R44): after a reap that ended leases, the fleet is asked to
// tend and then sweep.
#include "nodeplaned/reaper.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "plane/plane.h"

namespace nodeplane {
namespace {

constexpr int64_t kGiB = 1LL << 30;

plane::Command Take(plane::Plane& p) {
  auto r = p.Poll("n1", "i1");
  EXPECT_TRUE(r.ok() && r->has_value());
  return r.ok() && r->has_value() ? **r : plane::Command{};
}

TEST(Reaper, R44_AReapThatEndedLeasesIsFollowedByTendAndSweep) {
  Logger log(LogLevel::kError);
  plane::PlaneOptions o;
  o.deployment = "dep";
  plane::Plane p(o);
  plane::RegisterRequest r;
  r.version = 1;
  r.node = "n1";
  r.provider = "process";
  r.deployment = "dep";
  r.incarnation = "i1";
  r.vcpu = 1;
  r.memory = kGiB;
  ASSERT_TRUE(p.Register(r).ok());
  std::atomic<int> reaps{0};
  {
    Reaper reaper([&]() -> Result<int64_t> { return reaps++ == 0 ? 1 : 0; }, p.runner(), log, std::chrono::hours(1));
    while (p.QueuedForTest("n1") == 0) std::this_thread::yield();
    plane::Command tend = Take(p);
    EXPECT_EQ(tend.kind, plane::CommandKind::kTend);
    ASSERT_TRUE(p.ReceiveResult("n1", "i1", plane::CommandResult{tend.id, true, "", false, "", {}}).ok());
    while (p.QueuedForTest("n1") == 0) std::this_thread::yield();
    plane::Command sweep = Take(p);
    EXPECT_EQ(sweep.kind, plane::CommandKind::kSweep);
    ASSERT_TRUE(p.ReceiveResult("n1", "i1", plane::CommandResult{sweep.id, true, "", false, "", {}}).ok());
  }
  EXPECT_EQ(reaps.load(), 1);  // once at start; the next tick is an hour away
  EXPECT_EQ(p.QueuedForTest("n1"), 0u);
}

}  // namespace
}  // namespace nodeplane
