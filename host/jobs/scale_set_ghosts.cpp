// The listener's ghost check (J8 of scale_set_listener.h): registrations
// GitHub keeps that no lease owns are removed, and leases whose runner
// GitHub does not list are reported.
#include <algorithm>
#include <cstdint>
#include <set>

#include "common/units.h"
#include "jobs/scale_set_listener.h"

namespace nodeplane::jobs {

void ScaleSetListener::GhostCheck() {
  const int64_t id = scale_set_id_;
  const int64_t listed_at = WallNowNs();
  auto listed = source_.ListRunners(id, runner_group_id_);
  if (!listed.ok()) {
    if (ports::Is(listed.status(), ports::Verdict::kUnsupported)) {
      log_.Info("jobs.ghost_check_unsupported", {{"tier", tier_.tier}, {"why", listed.status().message()}});
      ghost_due_ns_ = INT64_MAX;  // never again: the source cannot list
      return;
    }
    log_.Warn("jobs.ghost_check_failed", {{"tier", tier_.tier}, {"error", listed.status().message()}});
    return;
  }
  // Read after GitHub's list (J8): a runner GitHub listed whose lease is
  // not open now outlived its lease.
  auto open = ledger_.ListLeases("");
  if (!open.ok()) {
    log_.Warn("jobs.ghost_check_failed", {{"tier", tier_.tier}, {"error", open.status().message()}});
    return;
  }
  std::set<std::string> leases, names;
  for (const ports::Lease& l : *open) leases.insert(l.id);
  for (const ports::ForgeRunner& r : *listed) {
    names.insert(r.name);
    const std::string lease = protocol::LeaseOfRunnerName(r.name);
    // Not named as ours, still owned, or running a job (its completion ends it).
    if (lease.empty() || leases.count(lease) != 0 || r.busy) continue;
    RemoveGhost(r);
  }
  std::vector<std::string> missing;
  for (const ports::Lease& l : *open) {
    const bool up = l.phase == ports::Phase::kOnline || l.phase == ports::Phase::kBusy;
    if (l.tier != tier_.tier || !up || l.deregistered || l.created_at_ns > listed_at - timing_.ghost_grace.count()) continue;
    if (names.count(protocol::RunnerNameFor(l.id)) == 0) missing.push_back(l.id);
  }
  std::lock_guard lock(mu_);
  for (const std::string& lease : missing) {
    if (deregistered_.count(lease) != 0) continue;
    const bool known = std::find(status_.runners_missing.begin(), status_.runners_missing.end(), lease) !=
                       status_.runners_missing.end();
    if (!known) {
      log_.Warn("jobs.runner_missing", {{"tier", tier_.tier}, {"lease", lease}, {"runner", protocol::RunnerNameFor(lease)},
                                        {"why", "GitHub does not list the lease's runner"}});
    }
  }
  std::erase_if(missing, [this](const std::string& l) { return deregistered_.count(l) != 0; });
  status_.runners_missing = std::move(missing);
  status_.ghost_checked_at_ns = listed_at;
}

// By exact id; remove_runner refuses a runner of another scale set of the
// group (Conflict), which is that scale set's to judge.
void ScaleSetListener::RemoveGhost(const ports::ForgeRunner& r) {
  Status s = source_.RemoveRunner(scale_set_id_, r.name, r.id);
  if (s.ok()) {
    {
      std::lock_guard lock(mu_);
      ++status_.ghosts_removed;
    }
    log_.Info("jobs.ghost_removed", {{"tier", tier_.tier}, {"runner", r.name}, {"runner_id", r.id},
                                     {"online", r.online ? "true" : "false"}});
  } else if (s.code() == Code::kConflict) {
    log_.Debug("jobs.ghost_not_ours", {{"tier", tier_.tier}, {"runner", r.name}, {"why", s.message()}});
  } else {
    log_.Warn("jobs.ghost_remove_failed", {{"tier", tier_.tier}, {"runner", r.name}, {"error", s.message()}});
  }
}

}  // namespace nodeplane::jobs
