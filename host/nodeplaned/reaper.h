// The reaper: expires leases past their TTL on a timer, and once at start.
//
// Expiry never frees capacity while compute may exist (the ledger moves such
// leases to quarantine); an unreachable ledger is logged and retried on the
// next tick. After a reap that ended leases, the fleet is asked to tend and
// sweep (R44): a lease just terminalised is exactly what leaves compute
// unaccounted for, and only the control plane knows when that happened. The
// sweep runs on its own thread, so a slow node never delays the next reap.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "common/units.h"
#include "plane/plane.h"

namespace nodeplane {

class Reaper {
 public:
  // `reap` expires leases (the ledger's Reap) and says how many it ended.
  // `runner` and `log` are borrowed and must outlive the Reaper.
  using ReapFn = std::function<Result<int64_t>()>;
  Reaper(ReapFn reap, plane::Runner& runner, Logger& log, Nanos interval);
  ~Reaper();  // stops and joins
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

 private:
  void Run();
  void SweepAfterReap();

  ReapFn reap_;
  plane::Runner& runner_;
  Logger& log_;
  Nanos interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::jthread sweeper_;  // at most one sweep at a time
  bool sweeping_ = false;
  std::thread thread_;
};

}  // namespace nodeplane
