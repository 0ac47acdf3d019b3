// When nodeplaned hands freed memory back to the kernel.
//
// A reconnect storm of ten thousand TLS handshakes leaves a hundred MiB or
// more free but resident in malloc's arenas; malloc_trim gives it back. But
// trimming costs the threads that allocate: the pages it releases fault in
// again when reused, and it takes the arenas' locks for up to hundreds of
// milliseconds right after a storm. Trimming every ten seconds regardless
// cost the wire a quarter of its /healthz throughput and raised dispatch
// latency (docs/performance.md). So it trims only when the memory free in
// the arenas has grown by `kTrimGrowth` since it last trimmed: once after a
// storm, not in a steady state that frees and reuses the same memory.
//
// Not thread-safe: the main thread alone keeps it.
#pragma once

#include <cstddef>

namespace nodeplane {

class TrimPolicy {
 public:
  static constexpr size_t kTrimGrowth = size_t{32} << 20;

  // Given the bytes free in malloc's arenas now, whether to trim. Trimming
  // leaves them counted as free (the pages go, the chunks stay), so the
  // mark is where the next growth is measured from; free memory that is
  // used again lowers it.
  bool ShouldTrim(size_t free_now) {
    if (free_now < mark_) mark_ = free_now;
    if (free_now < mark_ + kTrimGrowth) return false;
    mark_ = free_now;
    return true;
  }

 private:
  size_t mark_ = 0;
};

}  // namespace nodeplane
