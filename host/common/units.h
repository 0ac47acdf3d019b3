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

// The wall clock, in nanoseconds since the epoch: what the ledger and the
// forge stamp times with.
inline int64_t WallNowNs() {
  return std::chrono::duration_cast<Nanos>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<Nanos> ParseDuration(std::string_view text);
Result<uint64_t> ParseByteSize(std::string_view text);

// Renders a duration the way ParseDuration reads it, largest units first;
// anything below a millisecond is dropped.
std::string FormatDuration(Nanos d);

}  // namespace nodeplane
