#include "common/units.h"

#include <gtest/gtest.h>

namespace nodeplane {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(ParseDuration, AcceptsUnitsAndSequences) {
  EXPECT_EQ(*ParseDuration("50s"), seconds(50));
  EXPECT_EQ(*ParseDuration("10m"), minutes(10));
  EXPECT_EQ(*ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("1h30m"), minutes(90));
  EXPECT_EQ(*ParseDuration("2d"), hours(48));
}

TEST(ParseDuration, RefusesWhatIsNotADuration) {
  for (const char* bad : {"", "50", "s", "5x", "-5s", "1.5s", "5 s", "0s", "0ms", "99999999999999999999s"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
  EXPECT_NE(ParseDuration("50").status().message().find("needs a unit"), std::string::npos);
}

TEST(ParseDuration, RefusesOverflow) {
  EXPECT_FALSE(ParseDuration("200000d").ok());  // > int64 nanoseconds
}

TEST(ParseByteSize, AcceptsBinaryAndDecimalUnits) {
  EXPECT_EQ(*ParseByteSize("8GiB"), 8ull << 30);
  EXPECT_EQ(*ParseByteSize("512MiB"), 512ull << 20);
  EXPECT_EQ(*ParseByteSize("4GB"), 4'000'000'000ull);
  EXPECT_EQ(*ParseByteSize("1024B"), 1024ull);
  EXPECT_EQ(*ParseByteSize("1TiB"), 1ull << 40);
}

TEST(ParseByteSize, RefusesABareNumberAndUnknownUnits) {
  for (const char* bad : {"8", "8gb", "8 GiB", "GiB", "8Gi", "", "99999999999TiB"}) {
    EXPECT_FALSE(ParseByteSize(bad).ok()) << bad;
  }
}

TEST(FormatDuration, RoundTrips) {
  EXPECT_EQ(FormatDuration(minutes(90)), "1h30m");
  EXPECT_EQ(FormatDuration(seconds(50)), "50s");
  EXPECT_EQ(*ParseDuration(FormatDuration(milliseconds(90061001))), milliseconds(90061001));
}

}  // namespace
}  // namespace nodeplane
