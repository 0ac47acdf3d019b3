// Counters of what happened to leases, for the metrics endpoint: each is
// counted where the host makes it happen (the admin API escrows and
// force-releases, the node wire records a node's release, the reaper reaps),
// so a counter never guesses from the ledger's totals.
//
// Thread-safe: plain atomics, read by a scrape.
#pragma once

#include <atomic>
#include <cstdint>

namespace nodeplane {

struct LeaseEvents {
  std::atomic<uint64_t> escrowed{0};
  std::atomic<uint64_t> released_done{0};    // a release recorded as done
  std::atomic<uint64_t> released_failed{0};  // a release recorded as failed (the node's, or a launch's)
  std::atomic<uint64_t> reaped{0};           // leases the reaper expired
  std::atomic<uint64_t> quarantined{0};      // of those, the ones that went to quarantine
  std::atomic<uint64_t> force_released{0};   // an operator's force-release accepted
};

}  // namespace nodeplane
