// nodeplaned's trim policy (nodeplaned/memory_trim.h): once after memory is
// freed in bulk, not again while the same memory is freed and reused.
#include "nodeplaned/memory_trim.h"

#include <gtest/gtest.h>

namespace nodeplane {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(TrimPolicyTest, AStormIsTrimmedOnceAndASteadyStateNever) {
  TrimPolicy trim;
  EXPECT_FALSE(trim.ShouldTrim(5 * kMiB));  // what a quiet process keeps free
  EXPECT_FALSE(trim.ShouldTrim(20 * kMiB));
  EXPECT_TRUE(trim.ShouldTrim(150 * kMiB));  // a storm's buffers freed
  // The trimmed chunks still count as free: no second trim for them.
  EXPECT_FALSE(trim.ShouldTrim(150 * kMiB));
  EXPECT_FALSE(trim.ShouldTrim(170 * kMiB));
}

TEST(TrimPolicyTest, MemoryUsedAgainLowersTheMarkSoTheNextStormIsTrimmed) {
  TrimPolicy trim;
  EXPECT_TRUE(trim.ShouldTrim(150 * kMiB));
  EXPECT_FALSE(trim.ShouldTrim(10 * kMiB));  // reconnected: the memory is in use again
  EXPECT_FALSE(trim.ShouldTrim(40 * kMiB));
  EXPECT_TRUE(trim.ShouldTrim(160 * kMiB));  // the next storm
}

}  // namespace
}  // namespace nodeplane
