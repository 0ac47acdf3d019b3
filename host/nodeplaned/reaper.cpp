#include "nodeplaned/reaper.h"

namespace nodeplane {

Reaper::Reaper(ReapFn reap, plane::Runner& runner, Logger& log, Nanos interval)
    : reap_(std::move(reap)), runner_(runner), log_(log), interval_(interval), thread_([this] { Run(); }) {}

Reaper::~Reaper() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  sweeper_.request_stop();
}

void Reaper::SweepAfterReap() {
  std::lock_guard lock(mu_);
  if (sweeping_ || stopping_) return;
  sweeping_ = true;
  sweeper_ = std::jthread([this](std::stop_token stop) {
    for (Status s : {runner_.Tend(stop), runner_.Sweep(stop)}) {
      if (!s.ok()) log_.Warn("plane.sweep_incomplete", {{"error", s.message()}});
    }
    std::lock_guard finished(mu_);
    sweeping_ = false;
  });
}

void Reaper::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    Result<int64_t> reaped = reap_();
    if (!reaped.ok()) {
      log_.Warn("ledger.reap_failed", {{"error", reaped.status().ToString()}});
    } else if (*reaped > 0) {
      log_.Info("ledger.reaped", {{"leases", static_cast<long long>(*reaped)}});
      SweepAfterReap();
    }
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace nodeplane
