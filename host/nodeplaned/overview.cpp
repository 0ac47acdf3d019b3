// Daemon::Overview and Daemon::SampleHistory: what the dashboard shows,
// read from the ledger and the plane when asked (observe_handler.h).
#include <boost/json.hpp>
#include <algorithm>
#include <chrono>
#include <map>

#include "admin/job_json.h"
#include "common/units.h"
#include "nodeplaned/daemon.h"
#include "version.h"

namespace nodeplane {
namespace json = boost::json;
namespace {

constexpr uint32_t kRecentJobs = 50;
// GitHub jobs the dashboard lists: every waiting and running one of the
// last day the journal's newest 500 hold, and the newest finished ones.
constexpr uint32_t kGithubJobs = 500;
constexpr size_t kFinishedShown = 50;

const std::string& ChargedNode(const ports::Lease& l) { return l.node.empty() ? l.target_node : l.node; }

// Waiting first (the longest wait first), then running, then finished (the
// newest first).
json::array GithubJobs(jobs::JobIntake& intake, int64_t now, const std::map<std::string, std::string>& paused) {
  auto explained = intake.Explain("", now - kDayNs, kGithubJobs, now, paused);
  json::array out;
  if (!explained.ok()) return out;
  std::vector<size_t> order(explained->jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rank = [&](size_t i) {
    const std::string& state = explained->states[i].state;
    return state == "waiting" ? 0 : state == "running" ? 1 : 2;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return rank(a) == 2 ? explained->states[a].since_ns > explained->states[b].since_ns
                        : explained->states[a].since_ns < explained->states[b].since_ns;
  });
  size_t finished = 0;
  for (size_t i : order) {
    if (explained->states[i].state == "finished" && ++finished > kFinishedShown) break;
    out.push_back(admin::JobJson(explained->jobs[i], explained->states[i], explained->links[i], now));
  }
  return out;
}

json::array ScaleSets(const jobs::JobIntake& intake, int64_t now) {
  json::array out;
  for (const auto& [tier, t] : intake.Statuses()) {
    const ports::QueueStatistics& q = t.statistics;
    out.push_back(json::object{
        {"tier", tier},
        {"scale_set", t.scale_set},
        {"scale_set_id", t.scale_set_id},
        {"session", t.session_open ? "open" : "down"},
        {"session_down_since_ns", t.session_down_since_ns},
        {"session_error", t.session_error},
        {"rate_limited_until_ns", t.rate_limited_until_ns > now ? t.rate_limited_until_ns : 0},
        {"statistics_at_ns", t.statistics_at_ns},
        {"github", json::object{{"available_jobs", q.available}, {"acquired_jobs", q.acquired},
                                {"assigned_jobs", q.assigned}, {"running_jobs", q.running},
                                {"registered_runners", q.registered_runners}, {"busy_runners", q.busy_runners},
                                {"idle_runners", q.idle_runners}}},
        {"runners", t.runners},
        {"wanted", t.wanted},
        {"ceiling", t.ceiling},
        {"disagreement", q.registered_runners - t.runners},
        {"short_since_ns", t.short_since_ns},
        {"ghost_checked_at_ns", t.ghost_checked_at_ns},
        {"ghosts_removed", t.ghosts_removed},
        {"runners_missing", t.runners_missing.size()}});
  }
  return out;
}

}  // namespace

std::string Daemon::Overview() {
  ports::Ledger& ledger = *plugins_.ledger;
  const int64_t now = WallNowNs();
  json::object out{{"deployment", cfg_.deployment}, {"version", NODEPLANE_VERSION}, {"now_ns", now}};

  auto leases = ledger.ListLeases("");
  struct Use {
    int64_t vcpu = 0, memory = 0, leases = 0;
  };
  std::map<std::string, Use> used;
  json::array lease_list;
  if (leases.ok()) {
    for (const ports::Lease& l : *leases) {
      Use& u = used[ChargedNode(l)];
      u.vcpu += l.vcpu;
      u.memory += l.memory;
      u.leases++;
      lease_list.push_back(json::object{{"id", l.id},
                                        {"phase", ports::PhaseName(l.phase)},
                                        {"tier", l.tier},
                                        {"node", ChargedNode(l)},
                                        {"request_id", l.request_id},
                                        {"created_at_ns", l.created_at_ns}});
    }
  }
  out["leases"] = std::move(lease_list);
  json::array paused;  // tiers launching nothing: GitHub refused their runner as outdated
  for (const auto& [tier, why] : plane_->PausedTiers()) paused.push_back(json::object{{"tier", tier}, {"why", why}});
  out["paused_tiers"] = std::move(paused);

  std::map<std::string, int64_t> cert_expiry;  // the newest live certificate of each node
  if (auto certs = ledger.ListCerts(""); certs.ok()) {
    for (const ports::IssuedCert& c : *certs) {
      if (!c.revoked && c.not_after_ns > cert_expiry[c.node]) cert_expiry[c.node] = c.not_after_ns;
    }
  }
  const std::map<std::string, int64_t> seen = plane_->LastSeen();
  json::array nodes;
  if (auto listed = ledger.ListNodes(); listed.ok()) {
    for (const ports::Node& n : *listed) {
      auto s = seen.find(n.name);
      const Use& u = used[n.name];
      nodes.push_back(json::object{{"name", n.name},
                                   {"state", n.withdrawn ? "withdrawn" : n.live ? "live" : "gone"},
                                   {"site", n.site},
                                   {"provider", n.provider},
                                   {"vcpu", n.total_vcpu},
                                   {"memory", n.total_memory},
                                   {"vcpu_used", u.vcpu},
                                   {"memory_used", u.memory},
                                   {"leases", u.leases},
                                   {"last_seen_at_ns", s != seen.end() ? s->second : n.last_seen_at_ns},
                                   {"cert_expires_at_ns", cert_expiry.count(n.name) ? cert_expiry[n.name] : 0}});
    }
  }
  out["nodes"] = std::move(nodes);

  json::array enrollments;
  if (auto pending = ledger.ListEnrollments(ports::EnrollmentState::kPending); pending.ok()) {
    for (const ports::Enrollment& e : *pending) {
      enrollments.push_back(
          json::object{{"node", e.name}, {"fingerprint", e.fingerprint}, {"requested_at_ns", e.requested_at_ns}});
    }
  }
  out["enrollments"] = std::move(enrollments);

  json::array jobs;
  if (auto recent = ledger.RecentJobs(now - kDayNs, kRecentJobs); recent.ok()) {
    for (const ports::Job& j : *recent) {
      jobs.push_back(json::object{{"lease", j.lease_id},
                                  {"tier", j.tier},
                                  {"node", j.node},
                                  {"request_id", j.request_id},
                                  {"queued_at_ns", j.queued_at_ns},
                                  {"started_at_ns", j.started_at_ns},
                                  {"finished_at_ns", j.finished_at_ns},
                                  // GitHub's verdict when the job came from it (its runner exits 0
                                  // whatever the job's result), else the lease's own.
                                  {"result", !j.forge_result.empty() ? j.forge_result
                                             : j.conclusion          ? ports::PhaseName(*j.conclusion)
                                                                     : "running"}});
    }
  }
  out["jobs"] = std::move(jobs);
  if (intake_) {
    const std::map<std::string, std::string> paused_now = plane_->PausedTiers();
    out["github_jobs"] = GithubJobs(*intake_, now, paused_now);
    out["scale_sets"] = ScaleSets(*intake_, now);
  } else {
    out["github_jobs"] = json::array();
    out["scale_sets"] = json::array();
  }
  return json::serialize(out);
}

void Daemon::SampleHistory(Histogram::Snapshot& dispatch_before) {
  ports::Ledger& ledger = *plugins_.ledger;
  observe::Sample s;
  s.at_ns = WallNowNs();
  const Histogram::Snapshot now = plane_->dispatch_latency().Take();
  s.dispatch_p50_s = plane_->dispatch_latency().Quantile(dispatch_before, now, 0.5);
  s.dispatch_p99_s = plane_->dispatch_latency().Quantile(dispatch_before, now, 0.99);
  s.launches = static_cast<int64_t>(now.count - dispatch_before.count);
  dispatch_before = now;
  if (auto nodes = ledger.ListNodes(); nodes.ok()) {
    for (const ports::Node& n : *nodes) {
      if (!n.live) continue;
      s.nodes_live++;
      s.vcpu_total += n.total_vcpu;
    }
  }
  if (auto leases = ledger.ListLeases(""); leases.ok()) {
    s.leases_open = static_cast<int64_t>(leases->size());
    for (const ports::Lease& l : *leases) s.vcpu_used += l.vcpu;
  }
  history_.Add(s);
  if (intake_) intake_->Tally(s.at_ns, plane_->PausedTiers());
}

}  // namespace nodeplane
