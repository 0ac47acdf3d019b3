// Daemon::Metrics: the Prometheus text exposition the admin API serves.
// Every gauge is read when asked (the ledger's counts included), so the
// figures are as fresh as the scrape; histograms accumulate from start.
#include <chrono>
#include <map>

#include "common/units.h"
#include "nodeplaned/daemon.h"
#include "observe/process_stats.h"
#include "version.h"

namespace nodeplane {
namespace {

void Family(std::string& out, const char* type, const std::string& name, const std::string& help,
            const std::map<std::string, double>& by_labels) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  for (const auto& [labels, v] : by_labels) {
    char num[32];
    std::snprintf(num, sizeof num, "%.17g", v);
    out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + num + "\n";
  }
}

void Gauge(std::string& out, const std::string& name, const std::string& help, const std::map<std::string, double>& by_labels) {
  Family(out, "gauge", name, help, by_labels);
}

void Counter(std::string& out, const std::string& name, const std::string& help,
             const std::map<std::string, double>& by_labels) {
  Family(out, "counter", name, help, by_labels);
}

std::string Labels(const std::string& tier, const char* key = nullptr, const std::string& value = "") {
  return "tier=\"" + tier + "\"" + (key ? std::string(",") + key + "=\"" + value + "\"" : "");
}

// Each scale set as GitHub counts it beside the control plane's own count,
// and the jobs waiting by reason (jobs/job_status.h).
void ScaleSetMetrics(std::string& out, const jobs::JobIntake& intake) {
  std::map<std::string, double> up, github_jobs, github_runners, ours, apart, ghosts, missing;
  for (const auto& [tier, t] : intake.Statuses()) {
    const ports::QueueStatistics& q = t.statistics;
    up[Labels(tier)] = t.session_open ? 1 : 0;
    for (const auto& [state, n] : {std::pair<const char*, int64_t>{"available", q.available}, {"acquired", q.acquired},
                                   {"assigned", q.assigned}, {"running", q.running}}) {
      github_jobs[Labels(tier, "state", state)] = double(n);
    }
    for (const auto& [state, n] : {std::pair<const char*, int64_t>{"registered", q.registered_runners},
                                   {"busy", q.busy_runners}, {"idle", q.idle_runners}}) {
      github_runners[Labels(tier, "state", state)] = double(n);
    }
    ours[Labels(tier)] = double(t.runners);
    apart[Labels(tier)] = double(q.registered_runners - t.runners);
    ghosts[Labels(tier)] = double(t.ghosts_removed);
    missing[Labels(tier)] = double(t.runners_missing.size());
  }
  Gauge(out, "nodeplane_scale_set_session_up", "1 while the tier's scale-set message session is held and answering.", up);
  Gauge(out, "nodeplane_github_jobs", "GitHub's job counts for the tier's scale set, from its latest message.",
        github_jobs);
  Gauge(out, "nodeplane_github_runners", "GitHub's runner counts for the tier's scale set, from its latest message.",
        github_runners);
  Gauge(out, "nodeplane_scale_set_runners", "The runners the control plane counts for the tier (open leases that can take a job).", ours);
  Gauge(out, "nodeplane_scale_set_runners_disagreement",
        "GitHub's registered runners minus the control plane's count, for the tier.", apart);
  Counter(out, "nodeplane_scale_set_ghosts_removed_total",
          "Runner registrations GitHub kept that no lease owned, removed by the ghost check.", ghosts);
  Gauge(out, "nodeplane_scale_set_runners_missing",
        "Leases of the tier whose runner GitHub did not list at the last ghost check.", missing);
  const jobs::JobIntake::Waits w = intake.waits();
  std::map<std::string, double> entered, waiting, oldest;
  for (const auto& [key, n] : w.entered) {
    entered[Labels(key.first, "reason", key.second)] = double(n);
    waiting[Labels(key.first, "reason", key.second)] = 0;
    oldest[Labels(key.first, "reason", key.second)] = 0;
  }
  for (const auto& [key, n] : w.waiting) waiting[Labels(key.first, "reason", key.second)] = double(n);
  for (const auto& [key, ns] : w.oldest_ns) oldest[Labels(key.first, "reason", key.second)] = double(ns) / kSecondNs;
  Counter(out, "nodeplane_job_waits_total", "GitHub jobs that waited for a runner, counted once per reason they waited for.",
          entered);
  Gauge(out, "nodeplane_jobs_waiting", "GitHub jobs waiting for a runner now, by reason.", waiting);
  Gauge(out, "nodeplane_jobs_wait_oldest_seconds", "How long the longest-waiting job of each reason has waited.", oldest);
}

}  // namespace

std::string Daemon::Metrics() {
  std::string out;
  const double now_s = static_cast<double>(WallNowNs()) / kSecondNs;
  Gauge(out, "nodeplane_build_info", "The running version.", {{"version=\"" NODEPLANE_VERSION "\"", 1}});

  plane::Plane::Stats st = plane_->GetStats();
  Gauge(out, "nodeplane_plane_nodes", "Nodes registered in the plane's memory.", {{"", double(st.nodes)}});
  Gauge(out, "nodeplane_commands_queued", "Commands waiting for a poll.", {{"", double(st.queued_commands)}});
  Gauge(out, "nodeplane_commands_in_flight", "Commands delivered and not yet answered.",
        {{"", double(st.in_flight_commands)}});
  Gauge(out, "nodeplane_polls_parked", "Long polls waiting for a command.", {{"", double(st.parked_polls)}});
  std::map<std::string, double> paused;
  for (const auto& [tier, why] : plane_->PausedTiers()) {
    std::string label;  // the label value, escaped as the text format asks
    for (char ch : tier) label += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
    paused["tier=\"" + label + "\""] = 1;
  }
  Gauge(out, "nodeplane_tier_paused",
        "1 for a tier paused because GitHub refused its runner as outdated (exit 7); nodeplanectl tiers resume TIER.",
        paused);
  // One sample per listener this process serves.
  auto by_listener = [&](double (*of)(const wire::HttpServer&)) {
    std::map<std::string, double> m{{"listener=\"wire\"", of(*wire_)}};
    if (bootstrap_) m["listener=\"bootstrap\""] = of(*bootstrap_);
    if (metrics_) m["listener=\"metrics\""] = of(*metrics_);
    return m;
  };
  Gauge(out, "nodeplane_connections", "Connections open, by listener.",
        by_listener([](const wire::HttpServer& l) { return double(l.open_connections()); }));
  Counter(out, "nodeplane_connections_accepted_total",
          "Connections accepted, by listener; over TLS each is a handshake, so a steady rate is nodes reconnecting.",
          by_listener([](const wire::HttpServer& l) { return double(l.accepted_connections()); }));
  Counter(out, "nodeplane_accept_failures_total", "Connections the listener could not accept (out of descriptors, most often).",
          by_listener([](const wire::HttpServer& l) { return double(l.accept_failures()); }));

  const LeaseEvents& e = lease_events_;
  Counter(out, "nodeplane_leases_escrowed_total", "Leases escrowed for a launch.", {{"", double(e.escrowed)}});
  Counter(out, "nodeplane_leases_released_total", "Leases released, by the outcome recorded.",
          {{"outcome=\"done\"", double(e.released_done)}, {"outcome=\"failed\"", double(e.released_failed)}});
  Counter(out, "nodeplane_leases_reaped_total", "Leases the reaper expired.", {{"", double(e.reaped)}});
  Counter(out, "nodeplane_leases_quarantined_total", "Expired leases that went to quarantine (compute may exist).",
          {{"", double(e.quarantined)}});
  Counter(out, "nodeplane_leases_force_released_total", "Force-releases an operator asked for and the ledger accepted.",
          {{"", double(e.force_released)}});
  if (intake_) {
    const jobs::IntakeCounters& j = intake_->counters();
    Counter(out, "nodeplane_jobs_runners_launched_total", "Scale-set runners launched on a node (custody included).",
            {{"", double(j.launched)}});
    Counter(out, "nodeplane_jobs_launch_failures_total", "Scale-set runner launches that started nothing.",
            {{"", double(j.launch_failed)}});
    Counter(out, "nodeplane_jobs_completed_total", "GitHub jobs completed on this fleet's runners, by result.",
            {{"result=\"succeeded\"", double(j.completed_succeeded)}, {"result=\"other\"", double(j.completed_failed)}});
    Counter(out, "nodeplane_jobs_acquire_failures_total", "Offered jobs the control plane could not acquire.",
            {{"", double(j.acquire_failed)}});
    Counter(out, "nodeplane_jobs_runners_retired_total",
            "Idle scale-set runners retired: removed at GitHub, then stopped by their node.", {{"", double(j.retired)}});
    Counter(out, "nodeplane_jobs_requeued_total",
            "Assignments GitHub ended before any runner took the job (a re-queue, or a cancel).",
            {{"", double(j.requeued)}});
    Counter(out, "nodeplane_jobs_undecodable_messages_total",
            "Queue messages acknowledged unread after their redeliveries ran out.", {{"", double(j.undecodable)}});
    Gauge(out, "nodeplane_jobs_sessions_open", "Scale-set message sessions held.", {{"", double(j.sessions_open)}});
    Counter(out, "nodeplane_jobs_settle_failures_total",
            "Attempts to settle a journalled completion that failed and will be retried.", {{"", double(j.settle_failed)}});
    out += "# HELP nodeplane_jobs_plane_seconds A job's queue time the control plane spent: message received until "
           "the node answered that the runner is up.\n# TYPE nodeplane_jobs_plane_seconds histogram\n";
    j.plane_share.Render(out, "nodeplane_jobs_plane_seconds", "");
    out += "# HELP nodeplane_jobs_queued_to_launched_seconds Queued at GitHub until a runner was up for the job.\n"
           "# TYPE nodeplane_jobs_queued_to_launched_seconds histogram\n";
    j.queued_to_launched.Render(out, "nodeplane_jobs_queued_to_launched_seconds", "");
    out += "# HELP nodeplane_jobs_queued_to_started_seconds Queued at GitHub until a runner took the job.\n"
           "# TYPE nodeplane_jobs_queued_to_started_seconds histogram\n";
    j.queued_to_started.Render(out, "nodeplane_jobs_queued_to_started_seconds", "");
    std::map<std::string, double> left;
    for (const auto& [target, source] : plugins_.jobs_by_target) {
      if (auto r = source->RateLimitLeft()) left["target=\"" + target + "\""] = double(r->remaining);
    }
    Gauge(out, "nodeplane_github_rate_limit_remaining",
          "Requests GitHub's REST API said the target's credential has left in its window.", left);
    j.stages.Render(out, "nodeplane_job_stage_seconds",
                    "A settled GitHub job's stages by GitHub's times: queued (until assigned to the scale set), "
                    "startup (assigned until a runner took it), boot (its runner's process started until it took it).");
    j.execution.Render(out, "nodeplane_job_execution_seconds",
                       "A settled GitHub job's execution: given to a runner until finished, by GitHub's times.");
    ScaleSetMetrics(out, *intake_);
  }
  out += "# HELP nodeplane_dispatch_seconds How long a launch waited from being queued until its node took it.\n"
         "# TYPE nodeplane_dispatch_seconds histogram\n";
  plane_->dispatch_latency().Render(out, "nodeplane_dispatch_seconds", "");
  routes_->request_latency().Render(out, "nodeplane_wire_request_seconds",
                                    "Node wire requests by route and status, and how long each took to answer (a "
                                    "long poll's includes its wait).");
  observe::RenderProcessMetrics(out);

  ports::Ledger& ledger = *plugins_.ledger;
  if (auto nodes = ledger.ListNodes(); nodes.ok()) {
    std::map<std::string, double> by{{"state=\"live\"", 0}, {"state=\"withdrawn\"", 0}, {"state=\"gone\"", 0}};
    for (const auto& n : *nodes) by[n.withdrawn ? "state=\"withdrawn\"" : n.live ? "state=\"live\"" : "state=\"gone\""]++;
    Gauge(out, "nodeplane_nodes", "Nodes the ledger knows, by state.", by);
  }
  if (auto leases = ledger.ListLeases(""); leases.ok()) {
    std::map<std::string, double> by;
    for (int p = 1; p <= 8; ++p) by["phase=\"" + std::string(ports::PhaseName(static_cast<ports::Phase>(p))) + "\""] = 0;
    for (const auto& l : *leases) by["phase=\"" + std::string(ports::PhaseName(l.phase)) + "\""]++;
    Gauge(out, "nodeplane_leases", "Open leases, by phase.", by);
  }
  if (auto pending = ledger.ListEnrollments(ports::EnrollmentState::kPending); pending.ok()) {
    Gauge(out, "nodeplane_enrollments_pending", "Enrollment requests waiting for an operator.",
          {{"", double(pending->size())}});
  }
  std::map<std::string, double> expiry;
  if (const pki::Authority* ca = authority()) {
    if (auto info = pki::InspectCert(ca->cert_pem()); info.ok()) expiry["cert=\"ca\""] = info->not_after_ns / 1e9 - now_s;
    if (auto info = pki::InspectCert(tls_->tls.cert_pem); info.ok()) {
      expiry["cert=\"server\""] = info->not_after_ns / 1e9 - now_s;
    }
  }
  if (auto certs = ledger.ListCerts(""); certs.ok()) {
    for (const auto& c : *certs) {
      if (c.revoked) continue;
      const std::string key = "cert=\"node\",node=\"" + c.node + "\"";
      const double left = c.not_after_ns / 1e9 - now_s;
      auto it = expiry.find(key);
      if (it == expiry.end() || left > it->second) expiry[key] = left;  // the newest certificate counts
    }
  }
  Gauge(out, "nodeplane_certificate_expiry_seconds", "Seconds until a certificate expires.", expiry);

  out += "# HELP nodeplane_plugin_call_seconds Plugin call latency, queueing on the instance's pool included.\n"
         "# TYPE nodeplane_plugin_call_seconds histogram\n";
  for (const config::PluginInstance& p : cfg_.plugins) {
    for (config::Interface i : p.provides) {
      const std::string labels = "instance=\"" + p.name + "\",interface=\"" + config::InterfaceName(i) + "\"";
      const Histogram* h = nullptr;
      switch (i) {
        case config::Interface::kLedger: h = &plugins_.ledger->call_latency(); break;
        case config::Interface::kJit: h = &plugins_.jit_instances.at(p.name)->call_latency(); break;
        case config::Interface::kJobs: h = &plugins_.jobs_instances.at(p.name)->call_latency(); break;
        case config::Interface::kCachePolicy: h = &plugins_.cache_policy->call_latency(); break;
        case config::Interface::kRevocation:
          for (const auto& r : plugins_.revocation_lists) {
            if (r->instance() == p.name) h = &r->call_latency();
          }
          break;
      }
      if (h != nullptr) h->Render(out, "nodeplane_plugin_call_seconds", labels);
    }
  }
  return out;
}

}  // namespace nodeplane
