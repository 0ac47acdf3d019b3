#include "nodeplaned/leadership_loop.h"

#include <condition_variable>
#include <mutex>

namespace nodeplane {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Waits `d` or until `stop`; false when stopped.
bool Wait(const std::stop_token& stop, Nanos d) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  return !cv.wait_for(lock, stop, d, [&stop] { return stop.stop_requested(); });
}

}  // namespace

LeadershipLoop::LeadershipLoop(ports::LeaderElection& election, LeadershipOptions options, Logger& log)
    : election_(election), o_(std::move(options)), log_(log), margin_(o_.term / 5) {
  campaign_ = std::jthread([this](std::stop_token stop) { Campaign(stop); });
  watchdog_ = std::jthread([this](std::stop_token stop) { Watch(stop); });
}

LeadershipLoop::~LeadershipLoop() { StopCampaigning(); }

void LeadershipLoop::StopCampaigning() {
  if (campaign_.joinable()) {
    campaign_.request_stop();
    campaign_.join();
  }
  if (watchdog_.joinable()) {
    watchdog_.request_stop();
    watchdog_.join();
  }
}

void LeadershipLoop::Resign() {
  if (leading_.exchange(false) && !demoted_.load()) {
    Status s = election_.Resign();
    log_.Info("ha.resigned", {{"replica", o_.replica}, {"generation", generation_.load()},
                              {"error", s.ok() ? std::string() : s.message()}});
  }
}

void LeadershipLoop::Campaign(std::stop_token stop) {
  bool failing = false;
  std::string last_holder;
  do {
    const int64_t started = SteadyNs();  // H2: before the call
    Result<ports::Leadership> r = election_.Campaign(o_.replica, o_.address, o_.term.count());
    if (!r.ok()) {
      if (Is(r.status(), ports::Verdict::kFenced)) {
        Demote("the ledger fenced this replica: " + r.status().message());
        return;
      }
      if (!failing) log_.Warn("ha.campaign_failed", {{"replica", o_.replica}, {"error", r.status().message()}});
      failing = true;
      continue;  // a leader keeps its deadline; the watchdog decides
    }
    if (failing) log_.Info("ha.campaign_recovered", {{"replica", o_.replica}});
    failing = false;
    if (r->active) {
      deadline_ns_.store(started + (o_.term - margin_).count());
      if (!leading_.exchange(true)) {
        generation_.store(r->generation);
        log_.Info("ha.elected", {{"replica", o_.replica}, {"generation", r->generation}, {"address", o_.address}});
        o_.on_elected(*r);
      }
      continue;
    }
    if (leading_.load()) {
      Demote("replica \"" + r->holder + "\" took over at generation " + std::to_string(r->generation));
      return;
    }
    if (r->holder != last_holder) {
      log_.Info("ha.standby", {{"replica", o_.replica}, {"active", r->holder}, {"active_address", r->address},
                               {"generation", r->generation}});
      last_holder = r->holder;
    }
    o_.on_standby(*r);
  } while (Wait(stop, o_.term / 4));
}

void LeadershipLoop::Watch(std::stop_token stop) {
  const Nanos tick = std::min<Nanos>(std::chrono::milliseconds(100), o_.term / 20);
  while (Wait(stop, tick)) {
    if (leading_.load() && SteadyNs() >= deadline_ns_.load()) {
      Demote("the leadership could not be renewed within its term (" + FormatDuration(o_.term) + ")");
      return;
    }
  }
}

void LeadershipLoop::Demote(const std::string& why) {
  if (demoted_.exchange(true)) return;
  leading_.store(false);
  log_.Error("ha.demoted", {{"replica", o_.replica}, {"generation", generation_.load()}, {"reason", why}});
  o_.on_demoted(why);
}

}  // namespace nodeplane
