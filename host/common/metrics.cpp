#include "common/metrics.h"

#include <cstdio>

namespace nodeplane {

void Histogram::Observe(std::chrono::nanoseconds d) {
  const double seconds = std::chrono::duration<double>(d).count();
  size_t i = 0;
  while (i < bounds_.size() && seconds > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(d.count() > 0 ? d.count() : 0), std::memory_order_relaxed);
}

void Histogram::Render(std::string& out, const std::string& name, const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  char le[32];
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    if (i < bounds_.size()) {
      std::snprintf(le, sizeof le, "%g", bounds_[i]);
    } else {
      std::snprintf(le, sizeof le, "+Inf");
    }
    out += name + "_bucket{" + labels + sep + "le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  char sum[64];
  std::snprintf(sum, sizeof sum, "%.9f", static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9);
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + sum + "\n";
  out += name + "_count" + braces + " " + std::to_string(count_.load(std::memory_order_relaxed)) + "\n";
}

Histogram::Snapshot Histogram::Take() const {
  Snapshot s;
  for (size_t i = 0; i < buckets_.size(); ++i) s.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
  s.count = count_.load(std::memory_order_relaxed);
  return s;
}

double Histogram::Quantile(const Snapshot& before, const Snapshot& after, double q) const {
  uint64_t total = 0;
  std::array<uint64_t, std::tuple_size_v<Bounds> + 1> delta{};
  for (size_t i = 0; i < delta.size(); ++i) {
    delta[i] = after.buckets[i] >= before.buckets[i] ? after.buckets[i] - before.buckets[i] : 0;
    total += delta[i];
  }
  if (total == 0) return -1;
  const double rank = q * static_cast<double>(total);
  uint64_t below = 0;
  for (size_t i = 0; i < delta.size(); ++i) {
    if (static_cast<double>(below + delta[i]) >= rank && delta[i] > 0) {
      if (i == bounds_.size()) return bounds_.back();
      const double lo = i == 0 ? 0 : bounds_[i - 1], hi = bounds_[i];
      return lo + (hi - lo) * (rank - static_cast<double>(below)) / static_cast<double>(delta[i]);
    }
    below += delta[i];
  }
  return bounds_.back();
}

Histogram& HistogramFamily::For(const std::string& labels) {
  std::lock_guard lock(mu_);
  auto& h = by_labels_[labels];
  if (!h) h = std::make_unique<Histogram>(bounds_);
  return *h;
}

void HistogramFamily::Render(std::string& out, const std::string& name, const std::string& help) const {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  std::lock_guard lock(mu_);
  for (const auto& [labels, h] : by_labels_) h->Render(out, name, labels);
}

}  // namespace nodeplane
