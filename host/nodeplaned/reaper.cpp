#include "nodeplaned/reaper.h"

namespace nodeplane {

Reaper::Reaper(ports::LedgerAdmin& ledger, Logger& log, Nanos interval)
    : ledger_(ledger), log_(log), interval_(interval), thread_([this] { Run(); }) {}

Reaper::~Reaper() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Reaper::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    Result<int64_t> reaped = ledger_.Reap();
    if (!reaped.ok()) {
      log_.Warn("ledger.reap_failed", {{"error", reaped.status().ToString()}});
    } else if (*reaped > 0) {
      log_.Info("ledger.reaped", {{"leases", static_cast<long long>(*reaped)}});
    }
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace nodeplane
