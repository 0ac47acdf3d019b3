#include "nodeplaned/reaper.h"

#include <algorithm>

namespace nodeplane {

Reaper::Reaper(ReapFn reap, ProbeFn probe, plane::Runner& runner, Logger& log, ReapTiming timing,
               const plane::Clock* clock)
    : reap_(std::move(reap)),
      probe_(std::move(probe)),
      runner_(runner),
      log_(log),
      timing_(timing),
      clock_(clock != nullptr ? clock : &system_clock_),
      hold_until_ns_(clock_->Now() + timing_.grace.count()),
      tick_ns_(clock_->Now() + timing_.interval.count()),
      thread_([this] { Run(); }) {}

Reaper::~Reaper() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  sweeper_.request_stop();
}

int64_t Reaper::hold_until_ns() const {
  std::lock_guard lock(mu_);
  return hold_until_ns_;
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
    clock_->WaitUntil(lock, cv_, tick_ns_, [this] { return stopping_; });
    if (stopping_) break;
    const bool holding = clock_->Now() < hold_until_ns_;
    lock.unlock();
    Status answered = Status::Ok();
    if (holding) {
      answered = probe_();
    } else {
      Result<int64_t> reaped = reap_();
      answered = reaped.status();
      if (reaped.ok() && *reaped > 0) {
        log_.Info("ledger.reaped", {{"leases", static_cast<long long>(*reaped)}});
        SweepAfterReap();
      }
    }
    if (!answered.ok()) log_.Warn("ledger.reap_failed", {{"error", answered.ToString()}});
    lock.lock();
    if (!answered.ok()) hold_until_ns_ = clock_->Now() + timing_.grace.count();  // the holders could not heartbeat either
    // The next tick, but never one already past: a slow call is not
    // followed by a burst.
    tick_ns_ = std::max(tick_ns_ + timing_.interval.count(), clock_->Now());
  }
}

}  // namespace nodeplane
