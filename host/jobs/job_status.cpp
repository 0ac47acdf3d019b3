#include "jobs/job_status.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "common/units.h"
#include "protocol/codec.h"

namespace nodeplane::jobs {
namespace {

std::string Seconds(int64_t ns) {
  const int64_t s = std::max<int64_t>(ns, 0) / kSecondNs;
  if (s < 120) return std::to_string(s) + " s";
  if (s < 7200) return std::to_string(s / 60) + " min";
  return std::to_string(s / 3600) + " h";
}

// A runner's lease is launching until its node says the runner's process
// runs (online, then busy at once); it is idle from then until GitHub
// hands it a job (its JobStarted).
bool IsBooting(const ports::Lease& l) {
  return l.phase == ports::Phase::kCapacity || l.phase == ports::Phase::kAssigned || l.phase == ports::Phase::kLaunching;
}
bool IsUp(const ports::Lease& l) { return l.phase == ports::Phase::kOnline || l.phase == ports::Phase::kBusy; }

// A tier's open runners that can still take a job, by kind, oldest first.
struct Runners {
  std::vector<const ports::Lease*> idle, booting;
};

std::map<std::string, Runners> RunnersByTier(const std::vector<ports::Lease>& leases,
                                             const std::set<std::string>& with_job) {
  std::map<std::string, Runners> out;
  for (const ports::Lease& l : leases) {
    if (l.deregistered) continue;
    if (IsUp(l) && with_job.count(l.id) == 0) out[l.tier].idle.push_back(&l);
    if (IsBooting(l)) out[l.tier].booting.push_back(&l);
  }
  auto older = [](const ports::Lease* a, const ports::Lease* b) { return a->created_at_ns < b->created_at_ns; };
  for (auto& [tier, r] : out) {
    std::sort(r.idle.begin(), r.idle.end(), older);
    std::sort(r.booting.begin(), r.booting.end(), older);
  }
  return out;
}

JobState Finished(const ports::ForgeJob& j, const std::string& node) {
  JobState s{"finished", kReasonFinished, "", j.completed_at_ns, node};
  if (j.runner_name.empty()) {
    s.text = "ended by GitHub (" + j.result + ") before any runner took it";
  } else {
    s.text = "finished: " + j.result + (node.empty() ? "" : " on node " + node);
  }
  return s;
}

JobState Running(const ports::ForgeJob& j, const std::string& node, int64_t now) {
  const int64_t since = j.runner_assigned_at_ns > 0 ? j.runner_assigned_at_ns : j.started_at_ns;
  return {"running", kReasonRunning,
          "running on node " + (node.empty() ? std::string("(unknown)") : node) + " as runner " + j.runner_name +
              " for " + Seconds(now - since),
          since, node};
}

// A waiting job's reason from its tier's state, before any runner is
// matched with it: the conditions that stop every launch.
bool TierBlocked(const std::string& tier, const Fleet& f, const TierStatus* t, JobState& s) {
  if (auto p = f.paused.find(tier); p != f.paused.end()) {
    s.reason = kReasonPaused;
    s.text = "tier " + tier + " is paused: " + p->second + "; make its image current, then nodeplanectl tiers resume " + tier;
    return true;
  }
  if (t == nullptr) {
    s.reason = kReasonUnknownTier;
    s.text = "tier " + tier + " takes no jobs from a scale set in this control plane's configuration";
    return true;
  }
  if (!t->session_open) {
    s.reason = kReasonSessionDown;
    s.text = "GitHub session for scale set " + t->scale_set + " down for " + Seconds(f.now_ns - t->session_down_since_ns) +
             (t->session_error.empty() ? ": not opened yet" : ": " + t->session_error);
    return true;
  }
  if (t->rate_limited_until_ns > f.now_ns) {
    s.reason = kReasonRateLimited;
    s.text = "GitHub refuses runner registrations for tier " + tier + " for another " +
             Seconds(t->rate_limited_until_ns - f.now_ns) + ": " + t->rate_limit_why;
    return true;
  }
  return false;
}

// A waiting job no runner is matched with: what keeps the next one from launching.
void Unmatched(const std::string& tier, const Fleet& f, const TierStatus& t, JobState& s) {
  if (t.runners >= t.ceiling) {
    s.reason = kReasonCeiling;
    s.text = "waiting for capacity in tier " + tier + ": " + std::to_string(t.runners) + " of " +
             std::to_string(t.ceiling) + " runners busy, ceiling reached (max_concurrent)";
  } else if (t.short_since_ns != 0) {
    s.reason = kReasonNoNode;
    s.text = "waiting for a node: " + t.short_why + " (" + std::to_string(t.runners) + " of " +
             std::to_string(t.ceiling) + " runners; short for " + Seconds(f.now_ns - t.short_since_ns) + ")";
  } else {
    s.reason = kReasonLaunching;
    s.text = "a runner for tier " + tier + " is about to be launched (" + std::to_string(t.runners) + " of " +
             std::to_string(t.ceiling) + " runners)";
  }
}

}  // namespace

std::vector<JobState> ExplainJobs(const std::vector<ports::ForgeJob>& jobs, const Fleet& fleet) {
  std::vector<JobState> out(jobs.size());
  std::map<std::string, const ports::Lease*> open;
  for (const ports::Lease& l : fleet.leases) open[l.id] = &l;
  auto node_of = [&](const std::string& lease) -> std::string {
    if (lease.empty()) return "";
    if (auto it = open.find(lease); it != open.end()) return it->second->node;
    auto ended = fleet.ended_lease_node.find(lease);
    return ended != fleet.ended_lease_node.end() ? ended->second : "";
  };
  std::map<std::string, std::vector<size_t>> waiting;  // tier -> indexes of its waiting jobs
  std::set<std::string> with_job;                      // leases whose runner runs a job
  for (size_t i = 0; i < jobs.size(); ++i) {
    const ports::ForgeJob& j = jobs[i];
    if (j.completed_at_ns != 0) {
      out[i] = Finished(j, node_of(j.lease_id));
    } else if (j.started_at_ns != 0 || !j.runner_name.empty()) {
      out[i] = Running(j, node_of(j.lease_id), fleet.now_ns);
      with_job.insert(j.lease_id);
    } else {
      waiting[j.tier].push_back(i);
    }
  }
  std::map<std::string, Runners> runners = RunnersByTier(fleet.leases, with_job);
  for (auto& [tier, idx] : waiting) {
    // Oldest first: GitHub hands the longest-waiting job to the next runner.
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const int64_t qa = jobs[a].queued_at_ns ? jobs[a].queued_at_ns : jobs[a].received_at_ns;
      const int64_t qb = jobs[b].queued_at_ns ? jobs[b].queued_at_ns : jobs[b].received_at_ns;
      return qa != qb ? qa < qb : jobs[a].job_id < jobs[b].job_id;
    });
    auto t = fleet.tiers.find(tier);
    const TierStatus* status = t == fleet.tiers.end() ? nullptr : &t->second;
    const Runners& r = runners[tier];
    size_t idle = 0, booting = 0;
    for (size_t i : idx) {
      const ports::ForgeJob& j = jobs[i];
      JobState& s = out[i];
      s.state = "waiting";
      s.since_ns = j.queued_at_ns ? j.queued_at_ns : j.received_at_ns;
      if (TierBlocked(tier, fleet, status, s)) continue;
      if (idle < r.idle.size()) {
        const ports::Lease& l = *r.idle[idle++];
        s.reason = kReasonRunnerIdle;
        s.node = l.node;
        s.text = "runner " + protocol::RunnerNameFor(l.id) + " waits on node " + l.node +
                 "; GitHub has not handed it the job yet";
      } else if (booting < r.booting.size()) {
        const ports::Lease& l = *r.booting[booting++];
        s.reason = kReasonRunnerBooting;
        s.node = l.node.empty() ? l.target_node : l.node;
        s.text = "runner booting on node " + (s.node.empty() ? std::string("(being placed)") : s.node) + " for " +
                 Seconds(fleet.now_ns - l.created_at_ns);
      } else {
        Unmatched(tier, fleet, *status, s);
      }
    }
  }
  return out;
}

WorkflowRef ParseWorkflowRef(const std::string& workflow_ref) {
  const size_t at = workflow_ref.rfind('@');
  const size_t dir = workflow_ref.rfind("/.github/workflows/", at);
  if (at == std::string::npos || dir == std::string::npos) return {};
  const size_t file = dir + std::string_view("/.github/workflows/").size();
  return {workflow_ref.substr(file, at - file), workflow_ref.substr(at + 1)};
}

std::string RunLink(const std::string& web, const ports::ForgeJob& job) {
  const size_t slash = job.repository.find('/');
  if (job.workflow_run_id <= 0 || slash == std::string::npos) return "";
  // GitHub's names are [A-Za-z0-9._-]; anything else a message carries is
  // percent-encoded and "." or ".." refused, so the link stays the run's
  // page under the forge's root.
  auto segment = [](std::string_view name, std::string& out) {
    if (name.empty() || name == "." || name == "..") return false;
    for (const char c : name) {
      const auto u = static_cast<unsigned char>(c);
      if (std::isalnum(u) || c == '.' || c == '_' || c == '-') {
        out += c;
      } else {
        static constexpr char kHex[] = "0123456789ABCDEF";
        out += {'%', kHex[u >> 4], kHex[u & 15]};
      }
    }
    return true;
  };
  std::string path;
  const std::string_view repo(job.repository);
  if (!segment(repo.substr(0, slash), path)) return "";
  path += '/';
  if (!segment(repo.substr(slash + 1), path)) return "";
  return web + "/" + path + "/actions/runs/" + std::to_string(job.workflow_run_id);
}

}  // namespace nodeplane::jobs
