// The last hour of the fleet, one sample every ten seconds, for the
// dashboard's plot: dispatch latency (a launch queued until its node took
// it) and capacity. Memory only: a restart starts a new hour.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

namespace nodeplane::observe {

struct Sample {
  int64_t at_ns = 0;
  double dispatch_p50_s = -1;  // over the sample's interval; -1: no launch
  double dispatch_p99_s = -1;
  int64_t launches = 0;        // launches taken by a node in the interval
  int64_t vcpu_total = 0;      // what live nodes contribute
  int64_t vcpu_used = 0;       // what open leases charge
  int64_t leases_open = 0;
  int64_t nodes_live = 0;
};

class History {
 public:
  explicit History(size_t keep = 360) : keep_(keep) {}
  void Add(const Sample& s);
  // {"samples": [{"at_ns", ...}, ...]}, oldest first.
  std::string Json() const;

 private:
  const size_t keep_;
  mutable std::mutex mu_;
  std::deque<Sample> samples_;
};

}  // namespace nodeplane::observe
