// Latency histograms in the Prometheus text format: fixed buckets, lock-free
// observation, so timing a call costs two clock reads and three atomic adds.
//
// Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

namespace nodeplane {

class Histogram {
 public:
  // Upper bounds in seconds; the last bucket (+Inf) is implicit.
  using Bounds = std::array<double, 12>;
  // For calls and requests.
  static constexpr Bounds kLatency = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};
  // For what waits on people and machines: a job in a queue, a runner starting.
  static constexpr Bounds kWait = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900};
  // For what runs for minutes to hours: a job's execution.
  static constexpr Bounds kRun = {1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200};

  explicit Histogram(const Bounds& bounds = kLatency) : bounds_(bounds) {}
  void Observe(std::chrono::nanoseconds d);
  // Appends `name`'s _bucket, _sum and _count lines; `labels` is either
  // empty or `key="value",...` without braces.
  void Render(std::string& out, const std::string& name, const std::string& labels) const;

  // The counts at one moment, for what happened between two of them.
  struct Snapshot {
    std::array<uint64_t, std::tuple_size_v<Bounds> + 1> buckets{};
    uint64_t count = 0;
  };
  Snapshot Take() const;
  // The q-quantile (0 < q < 1), in seconds, of what was observed between
  // `before` and `after`, interpolated within its bucket as Prometheus's
  // histogram_quantile does; -1 when nothing was observed, and the largest
  // bound when it falls in the last bucket.
  double Quantile(const Snapshot& before, const Snapshot& after, double q) const;

 private:
  const Bounds& bounds_;
  std::array<std::atomic<uint64_t>, std::tuple_size_v<Bounds> + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_ns_{0};
};

// Histograms of one family, one per label set, made on first use.
// Thread-safe; an observation takes a mutex only to find its histogram.
class HistogramFamily {
 public:
  explicit HistogramFamily(const Histogram::Bounds& bounds = Histogram::kLatency) : bounds_(bounds) {}
  Histogram& For(const std::string& labels);
  void Render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  const Histogram::Bounds& bounds_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Histogram>> by_labels_;
};

}  // namespace nodeplane
