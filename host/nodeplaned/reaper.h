// The reaper: expires leases past their TTL on a timer, and once at start.
//
// Expiry never frees capacity while compute may exist (the ledger moves such
// leases to quarantine); an unreachable ledger is logged and retried on the
// next tick.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "common/units.h"
#include "ports/ledger.h"

namespace nodeplane {

class Reaper {
 public:
  // `ledger` and `log` are borrowed and must outlive the Reaper.
  Reaper(ports::LedgerAdmin& ledger, Logger& log, Nanos interval);
  ~Reaper();  // stops and joins
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

 private:
  void Run();

  ports::LedgerAdmin& ledger_;
  Logger& log_;
  Nanos interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace nodeplane
