// The reaper: expires leases past their TTL on a timer.
//
// Expiry never frees capacity while compute may exist (the ledger moves such
// leases to quarantine); an unreachable ledger is logged and tried again.
// After a reap that ended leases, the fleet is asked to tend and sweep
// (R44): a lease just terminalised is exactly what leaves compute
// unaccounted for, and only the control plane knows when that happened. The
// sweep runs on its own thread, so a slow node never delays the next reap.
//
// A GRACE BEFORE THE FIRST REAP, AND AFTER THE LEDGER WAS OUT. While the
// control plane or its ledger is down, no holder can heartbeat, so every
// lease it holds looks expired the moment the ledger answers again. Reaping
// then would quarantine jobs that are running and fail jobs that succeeded
// (their nodes' releases are still on their way). So nothing is reaped
// until one grace (the lease TTL and a poll window: time for every node to
// come back and heartbeat) has passed since start and since the ledger was
// last seen out. Every tick asks the ledger something: the reap itself, or
// while a grace runs a cheap read (the probe), so an outage is noticed even
// while nothing is being reaped.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "common/units.h"
#include "plane/clock.h"
#include "plane/plane.h"

namespace nodeplane {

struct ReapTiming {
  Nanos interval;  // between reaps
  Nanos grace;     // before the first, and after a failed one
};

class Reaper {
 public:
  // `reap` expires leases (the ledger's Reap) and says how many it ended.
  // `runner`, `log` and `clock` are borrowed and must outlive the Reaper;
  // a null clock is the system's.
  // `probe` reads the ledger and says whether it answered.
  using ReapFn = std::function<Result<int64_t>()>;
  using ProbeFn = std::function<Status()>;
  Reaper(ReapFn reap, ProbeFn probe, plane::Runner& runner, Logger& log, ReapTiming timing,
         const plane::Clock* clock = nullptr);
  ~Reaper();  // stops and joins
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // No reap before this (clock ns): a test hook.
  int64_t hold_until_ns() const;

 private:
  void Run();
  void SweepAfterReap();

  ReapFn reap_;
  ProbeFn probe_;
  plane::Runner& runner_;
  Logger& log_;
  ReapTiming timing_;
  plane::SystemClock system_clock_;
  const plane::Clock* clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int64_t hold_until_ns_ = 0;
  int64_t tick_ns_ = 0;  // the next tick, on the thread's schedule from construction
  std::jthread sweeper_;  // at most one sweep at a time
  bool sweeping_ = false;
  std::thread thread_;
};

}  // namespace nodeplane
