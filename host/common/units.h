// Durations ("50s", "10m", "1h30m", "250ms") and byte sizes ("8GiB", "512MiB",
// "4GB", "1024B") as operators write them in config.
//
// A duration is a sequence of <integer><unit> with units ms, s, m, h, d; the
// total must be positive and fit in int64 nanoseconds. A size is one
// <integer><unit> with binary (KiB MiB GiB TiB) or decimal (B KB MB GB TB)
// units; a bare number is refused, because "8" meaning eight bytes is never
// what somebody writing a memory size meant.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace nodeplane {

using Nanos = std::chrono::nanoseconds;

// Times and durations cross module lines (the ledger, the ABI, the Plane) as
// int64_t nanoseconds; these are their units, so no file spells 10^9.
inline constexpr int64_t kSecondNs = 1'000'000'000;
inline constexpr int64_t kHourNs = 3600 * kSecondNs;
inline constexpr int64_t kDayNs = 24 * kHourNs;
// Whole seconds of a duration in nanoseconds, rounded up (a Retry-After
// never promises less than the wait).
constexpr int64_t SecondsCeil(int64_t ns) { return (ns + kSecondNs - 1) / kSecondNs; }

// The wall clock, in nanoseconds since the epoch: the one the host stamps
// times with (the Plane's SystemClock, the ledger's times, certificates).
inline int64_t WallNowNs() {
  return std::chrono::duration_cast<Nanos>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<Nanos> ParseDuration(std::string_view text);
Result<uint64_t> ParseByteSize(std::string_view text);

// Renders a duration the way ParseDuration reads it, largest units first;
// anything below a millisecond is dropped.
std::string FormatDuration(Nanos d);

}  // namespace nodeplane
