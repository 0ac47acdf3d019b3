// The plugins' time units. Times and durations cross the C ABI as int64_t
// nanoseconds (np_host_services.now_ns, retry_after_ns, a lease's TTL); these
// name the units, so no plugin spells 10^9. (The host's are in
// host/common/units.h; a plugin sees only the ABI and this folder.)
#pragma once

#include <cstdint>

namespace nodeplane::plugins {

inline constexpr int64_t kSecondNs = 1'000'000'000;
inline constexpr int64_t kMinuteNs = 60 * kSecondNs;

}  // namespace nodeplane::plugins
