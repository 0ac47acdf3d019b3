// Latency histograms in the Prometheus text format: fixed buckets, lock-free
// observation, so timing a call costs two clock reads and three atomic adds.
//
// Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace nodeplane {

class Histogram {
 public:
  // Upper bounds in seconds; the last bucket (+Inf) is implicit.
  static constexpr std::array<double, 12> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,   0.25,   0.5,   1.0,  2.5};
  void Observe(std::chrono::nanoseconds d);
  // Appends `name`'s _bucket, _sum and _count lines; `labels` is either
  // empty or `key="value",...` without braces.
  void Render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_ns_{0};
};

}  // namespace nodeplane
