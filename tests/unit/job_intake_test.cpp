// The job intake's pure rules (host/jobs/job_intake.h); its conversation
// with GitHub and the fleet is tested end to end (tests/e2e, scale-set-*).
#include <gtest/gtest.h>

#include "jobs/job_intake.h"

namespace nodeplane::jobs {
namespace {

constexpr uint64_t kGiB = 1ULL << 30;

TEST(AdvertisedCeiling, IsTheTiersMaxConcurrentWhenSet) {
  EXPECT_EQ(AdvertisedCeiling(4, 2, 4 * kGiB, 100, 1000 * kGiB), 4);
}

TEST(AdvertisedCeiling, IsWhatTheDeploymentsLimitsHoldOfTheTiersShape) {
  EXPECT_EQ(AdvertisedCeiling(0, 2, 4 * kGiB, 16, 0), 8);             // by vCPU
  EXPECT_EQ(AdvertisedCeiling(0, 2, 4 * kGiB, 0, 20 * kGiB), 5);      // by memory
  EXPECT_EQ(AdvertisedCeiling(0, 2, 4 * kGiB, 16, 20 * kGiB), 5);     // the tighter
  EXPECT_EQ(AdvertisedCeiling(0, 4, 4 * kGiB, 2, 0), 1);              // never 0: GitHub would send nothing
}

TEST(AdvertisedCeiling, IsTheDefaultWithNoLimits) {
  EXPECT_EQ(AdvertisedCeiling(0, 2, 4 * kGiB, 0, 0), kDefaultCeiling);
}

}  // namespace
}  // namespace nodeplane::jobs
