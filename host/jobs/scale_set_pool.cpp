// The listener's runner pool: how many runners the tier's scale set needs
// and which to retire (J1, J6, J7 of scale_set_listener.h).
#include <algorithm>
#include <cstdlib>

#include "common/units.h"
#include "jobs/launch_assigned.h"
#include "jobs/scale_set_listener.h"

namespace nodeplane::jobs {
namespace {

// A runner's request id, fixed by its lease: in a range of its own (bit 62
// set), far above the ids GitHub hands out, and the same on every restart.
int64_t RequestIdFor(const std::string& lease_id) {
  const uint64_t bits = std::strtoull(lease_id.substr(0, 15).c_str(), nullptr, 16);
  return static_cast<int64_t>((uint64_t{1} << 62) | (bits & ((uint64_t{1} << 60) - 1)));
}

}  // namespace

void ScaleSetListener::Spawn(std::function<void(std::stop_token)> work) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  launches_.push_back({done, std::jthread([work = std::move(work), done](std::stop_token s) {
                         work(s);
                         *done = true;
                       })});
}

void ScaleSetListener::Reconcile(int64_t assigned, int64_t received_ns, std::stop_token stop) {
  std::lock_guard one(reconcile_mu_);
  auto open = ledger_.ListLeases("");
  if (!open.ok()) {
    log_.Warn("jobs.ledger_unavailable", {{"tier", tier_.tier}, {"error", open.status().message()}});
    return;
  }
  const int64_t now = WallNowNs();
  const int64_t want = std::min(assigned + tier_.min_idle, tier_.max_runners);
  int64_t have = 0;
  std::vector<ports::Lease> idle;
  {
    std::lock_guard lock(mu_);  // finished launches are joined here
    reconciled_at_ns_ = now;
    std::erase_if(launches_, [](const Launching& l) { return l.done->load(); });
    std::set<std::string> mine;
    for (const ports::Lease& l : *open) {
      if (l.tier != tier_.tier) continue;
      mine.insert(l.id);
      // A deregistered runner left GitHub. A quarantined one's node is lost:
      // it counts only while the job it started is still GitHub's to end.
      if (l.deregistered || deregistered_.count(l.id) != 0) continue;
      if (l.phase == ports::Phase::kQuarantine && running_.count(l.id) == 0) continue;
      ++have;
      const bool up = l.phase == ports::Phase::kOnline || l.phase == ports::Phase::kBusy;
      if (up && running_.count(l.id) == 0 && retiring_.count(l.id) == 0) idle.push_back(l);
    }
    // A started job whose lease closed still counts, for a grace (J1).
    for (auto it = running_.begin(); it != running_.end();) {
      if (mine.count(it->first) != 0) {
        it->second = 0;
        ++it;
        continue;
      }
      if (it->second == 0) it->second = now;
      if (now - it->second > kRunningGrace.count()) {
        it = running_.erase(it);
        continue;
      }
      ++have;
      ++it;
    }
    std::erase_if(deregistered_, [&](const std::string& id) { return mine.count(id) == 0; });
    status_.runners = have;
    status_.wanted = want;
    if (want <= have) status_.short_since_ns = 0;
  }
  for (auto& [lease, why] : Retirements(idle, have - want)) Retire(lease, why);
  if (want <= have || stop.stop_requested()) return;
  {
    std::lock_guard lock(mu_);
    if (now < paused_until_ns_) {  // J7
      log_.Debug("jobs.launch_paused", {{"tier", tier_.tier}, {"assigned", assigned}, {"runners", have}});
      return;
    }
  }
  // The whole deficit in one escrow (one ledger write); each lease is then
  // assigned and launched on a thread of its own, so a burst of jobs costs
  // the time of the slowest launch, not the sum of them.
  auto escrowed = ledger_.Escrow(tier_.tier, static_cast<int32_t>(want - have));
  const bool short_of_room = !escrowed.ok() || static_cast<int64_t>(escrowed->size()) < want - have;
  if (short_of_room) {
    log_.Info("jobs.no_capacity", {{"tier", tier_.tier}, {"assigned", assigned}, {"runners", have},
                                   {"escrowed", escrowed.ok() ? escrowed->size() : 0},
                                   {"why", escrowed.ok() ? std::string("no room") : escrowed.status().message()}});
  }
  {
    std::lock_guard lock(mu_);
    if (!short_of_room) {
      status_.short_since_ns = 0;
    } else {
      if (status_.short_since_ns == 0) status_.short_since_ns = now;
      status_.short_why = escrowed.ok() ? "no live node has room for another runner of the tier"
                                        : escrowed.status().message();
    }
  }
  if (!escrowed.ok()) return;
  if (events_ != nullptr) events_->escrowed += escrowed->size();
  std::lock_guard lock(mu_);
  for (ports::Lease& lease : *escrowed) {
    Spawn([this, lease = std::move(lease), received_ns](std::stop_token s) mutable { Launch(std::move(lease), received_ns, s); });
  }
}

// Which idle runners to retire: all of those on a node that is leaving,
// all while the deployment is sealed, and the oldest idle past the tier's
// idle_timeout while there are more runners than wanted.
std::vector<std::pair<ports::Lease, const char*>> ScaleSetListener::Retirements(const std::vector<ports::Lease>& idle,
                                                                                int64_t surplus) {
  std::vector<std::pair<ports::Lease, const char*>> out;
  if (idle.empty()) return out;
  const int64_t now = WallNowNs();
  NodeView view;
  {
    std::lock_guard lock(mu_);
    if (now - nodes_.read_at_ns >= timing_.reconcile.count()) {
      nodes_.read_at_ns = now;  // read below, outside the lock; a failed read is tried at the next
      view.read_at_ns = -1;
    } else {
      view = nodes_;
    }
  }
  if (view.read_at_ns == -1) {
    view = NodeView{now, {}, false};
    if (auto nodes = ledger_.ListNodes(); nodes.ok()) {
      for (const ports::Node& n : *nodes) {
        if (n.withdrawn || n.drained) view.leaving.insert(n.name);
      }
    }
    if (auto admission = ledger_.AdmissionGeneration(); admission.ok()) view.sealed = admission->second;
    std::lock_guard lock(mu_);
    nodes_ = view;
  }
  std::vector<ports::Lease> aged;
  for (const ports::Lease& l : idle) {
    if (view.sealed) {
      out.emplace_back(l, "the deployment is draining");
    } else if (view.leaving.count(l.node) != 0) {
      out.emplace_back(l, "its node is leaving");
    } else if (now - l.created_at_ns >= tier_.idle_timeout.count()) {
      aged.push_back(l);
    }
  }
  std::sort(aged.begin(), aged.end(), [](const ports::Lease& a, const ports::Lease& b) { return a.created_at_ns < b.created_at_ns; });
  surplus -= static_cast<int64_t>(out.size());
  for (size_t i = 0; i < aged.size() && static_cast<int64_t>(i) < surplus; ++i) {
    out.emplace_back(aged[i], "more runners than jobs and min_idle");
  }
  return out;
}

// J6: GitHub first (a busy runner's removal is refused), then the lease is
// marked deregistered, which its node's heartbeat hears.
void ScaleSetListener::Retire(const ports::Lease& lease, const char* why) {
  std::lock_guard lock(mu_);
  if (!retiring_.insert(lease.id).second) return;
  Spawn([this, lease, why](std::stop_token) {
    const std::string name = protocol::RunnerNameFor(lease.id);
    Status s = source_.RemoveRunner(scale_set_id_, name, 0);
    if (s.ok()) s = ledger_.MarkDeregistered(lease.id);
    std::lock_guard relock(mu_);
    retiring_.erase(lease.id);
    if (!s.ok()) {
      log_.Info("jobs.retire_skipped", {{"tier", tier_.tier}, {"lease", lease.id}, {"runner", name},
                                        {"why", why}, {"error", s.message()}});
      return;
    }
    deregistered_.insert(lease.id);
    launched_at_.erase(lease.id);
    started_early_.erase(lease.id);
    ++counters_.retired;
    log_.Info("jobs.runner_retired", {{"tier", tier_.tier}, {"lease", lease.id}, {"node", lease.node},
                                      {"runner", name}, {"why", why}});
  });
}

void ScaleSetListener::Launch(ports::Lease lease, int64_t received_ns, std::stop_token stop) {
  // The request id is the lease's own (RequestIdFor): a crash before this
  // assign leaves an escrow the reaper ends (J1).
  if (Status s = ledger_.Assign(lease.id, lease.epoch, 0, RequestIdFor(lease.id)); !s.ok()) {
    (void)ledger_.Release(lease.id, lease.epoch, ports::Phase::kFailed);
    ++counters_.launch_failed;
    log_.Warn("jobs.assign_failed", {{"tier", tier_.tier}, {"lease", lease.id}, {"error", s.message()}});
    return;
  }
  protocol::Job job{RequestIdFor(lease.id), 0, "scale-set", "", "", ""};
  Status s = LaunchAssigned(ledger_, runner_, events_, lease, job, stop);
  if (s.ok() || plane::Is(s, plane::kCustody)) {
    const int64_t up = WallNowNs();
    ++counters_.launched;
    if (s.ok()) counters_.plane_share.Observe(Nanos(std::max<int64_t>(up - received_ns, 0)));
    std::optional<std::pair<int64_t, int64_t>> started;  // (queued, received) of a JobStarted already in
    {
      std::lock_guard lock(mu_);
      if (auto it = started_early_.find(lease.id); it != started_early_.end()) {
        started = it->second;
        started_early_.erase(it);
      } else {
        launched_at_[lease.id] = up;
      }
    }
    if (started) ObserveQueueTimes(started->first, up, started->second);
    log_.Info("jobs.runner_launched", {{"tier", tier_.tier}, {"lease", lease.id}, {"node", lease.node}});
  } else {
    ++counters_.launch_failed;
    log_.Warn("jobs.launch_failed", {{"tier", tier_.tier}, {"lease", lease.id}, {"error", s.message()}});
  }
}

}  // namespace nodeplane::jobs
