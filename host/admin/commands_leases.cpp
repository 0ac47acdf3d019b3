// Leases, jobs and admission: leases.list, leases.show, leases.release,
// jobs.list, jobs.show, launch, destroy, drain, admission.open.
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "admin/commands.h"
#include "admin/job_json.h"
#include "common/units.h"
#include "jobs/drain.h"
#include "jobs/job_intake.h"
#include "jobs/launch_for_request.h"
#include "protocol/codec.h"

namespace nodeplane::admin {
namespace json = boost::json;
namespace {

// What the operator's commands are recorded as, in the ledger and the job.
constexpr const char* kActor = "nodeplanectl";

Result<std::string> ListLeases(const Call& c) {
  auto leases = c.deps.ledger->ListLeases(c.args.String("node"));
  if (!leases.ok()) return leases.status();
  std::string out = "[";
  for (size_t i = 0; i < leases->size(); ++i) out += (i ? "," : "") + protocol::EncodeValue((*leases)[i]);
  return out + "]";
}

Result<std::string> ShowLease(const Call& c) {
  const std::string& id = c.args.String("lease");
  ports::Ledger& ledger = *c.deps.ledger;
  auto lease = ledger.GetLease(id);
  if (lease.ok()) return protocol::EncodeValue(*lease);
  if (!ports::Is(lease.status(), ports::Verdict::kNotFound)) return lease.status();
  // Ended: the job history still knows how.
  auto job = ledger.JobForLease(id);
  if (!job.ok()) return job.status();
  if (!job->has_value()) return Status::NotFound("no lease " + id);
  const ports::Job& j = **job;
  return Text(json::object{{"id", id},
                           {"tier", j.tier},
                           {"node", j.node},
                           {"phase", j.conclusion ? ports::PhaseName(*j.conclusion) : "unknown"},
                           {"request_id", j.request_id},
                           {"failure_reason", j.failure_reason},
                           {"forge_result", j.forge_result},
                           {"finished_at_ns", j.finished_at_ns}});
}

Result<std::string> ReleaseLease(const Call& c) {
  const std::string& id = c.args.String("lease");
  if (Status s = c.deps.ledger->ForceRelease(id); !s.ok()) return s;
  c.Count(&LeaseEvents::force_released);
  c.deps.log->Info("admin.lease_force_released", {{"lease", id}});
  return Text(json::object{{"lease", id}, {"force_release", true}});
}

Result<std::string> ResumeTier(const Call& c) {
  const std::string& tier = c.args.String("tier");
  if (!c.deps.plane->ResumeTier(tier)) {
    return Status::NotFound("tier \"" + tier + "\" is not paused");
  }
  c.deps.log->Info("admin.tier_resumed", {{"tier", tier}});
  return Text(json::object{{"tier", tier}, {"resumed", true}});
}

// The journalled jobs with their state and reason (jobs/job_status.h).
Result<jobs::JobIntake::Explained> ExplainedJobs(const Call& c, const std::string& tier, int64_t since_ns,
                                                 uint32_t limit) {
  if (c.deps.intake != nullptr) return c.deps.intake->Explain(tier, since_ns, limit, c.Now(), c.deps.plane->PausedTiers());
  // No scale-set tier is configured: the journal may still hold jobs of
  // tiers that had one.
  auto listed = c.deps.ledger->ListForgeJobs(tier, since_ns, limit);
  if (!listed.ok()) return listed.status();
  jobs::Fleet fleet;
  fleet.now_ns = c.Now();
  jobs::JobIntake::Explained out;
  out.states = jobs::ExplainJobs(*listed, fleet);
  for (const ports::ForgeJob& j : *listed) out.links.push_back(jobs::RunLink("https://github.com", j));
  out.jobs = std::move(*listed);
  return out;
}

Result<std::string> ListJobs(const Call& c) {
  auto explained = ExplainedJobs(c, c.args.String("tier"), c.Now() - c.args.Int("since_seconds") * kSecondNs,
                                 static_cast<uint32_t>(c.args.Int("limit")));
  if (!explained.ok()) return explained.status();
  json::array out;
  for (size_t i = 0; i < explained->jobs.size(); ++i) {
    out.push_back(JobJson(explained->jobs[i], explained->states[i], explained->links[i], c.Now()));
  }
  return Text(out);
}

// How far back `jobs show` looks for a job id: the journal keeps more, but
// an operator asks of recent jobs.
constexpr int64_t kShowLookbackNs = 30 * kDayNs;

Result<std::string> ShowJob(const Call& c) {
  const std::string& id = c.args.String("job");
  auto explained = ExplainedJobs(c, "", c.Now() - kShowLookbackNs, 1000);
  if (!explained.ok()) return explained.status();
  for (size_t i = 0; i < explained->jobs.size(); ++i) {
    const ports::ForgeJob& j = explained->jobs[i];
    if (j.job_id != id && j.lease_id != id) continue;
    json::object out = JobJson(j, explained->states[i], explained->links[i], c.Now());
    // The control plane's times for the runner that took it, from its lease.
    if (!j.lease_id.empty()) {
      if (auto lease = c.deps.ledger->GetLease(j.lease_id); lease.ok()) out["escrowed_at_ns"] = lease->created_at_ns;
      if (auto record = c.deps.ledger->JobForLease(j.lease_id); record.ok() && record->has_value()) {
        out["launch_sent_at_ns"] = (*record)->assigned_at_ns;
        out["runner_started_at_ns"] = (*record)->started_at_ns;
        out["lease_ended_at_ns"] = (*record)->finished_at_ns;
      }
    }
    return Text(out);
  }
  return Status::NotFound("no job " + id + " in the journal of the last 30 days (the 1000 newest)");
}

// Follows a lease until it ends or the call stops, saying each phase it
// reaches; the phase it was last seen in.
std::string Follow(const Call& c, const std::string& id, std::string phase) {
  std::mutex mu;
  std::condition_variable_any cv;
  while (!c.stop.stop_requested()) {
    auto now = c.deps.ledger->GetLease(id);
    if (!now.ok() && ports::Is(now.status(), ports::Verdict::kNotFound)) {
      auto j = c.deps.ledger->JobForLease(id);
      phase = j.ok() && j->has_value() && (*j)->conclusion ? ports::PhaseName(*(*j)->conclusion) : "ended";
      c.Say("lease " + id + " is " + phase);
      break;
    }
    if (now.ok() && phase != ports::PhaseName(now->phase)) {
      phase = ports::PhaseName(now->phase);
      c.Say("lease " + id + " is " + phase);
    }
    std::unique_lock lock(mu);
    cv.wait_for(lock, c.stop, std::chrono::milliseconds(200), [] { return false; });  // pacing a display
  }
  return phase;
}

Result<std::string> Launch(const Call& c) {
  const jobs::LaunchRequest req{c.args.String("tier"), c.args.Int("request_id"), c.args.Int("run_id"), kActor};
  auto launched = jobs::LaunchForRequest(*c.deps.ledger, c.deps.plane->runner(), c.deps.lease_events, req, c.Now(),
                                         [&c](const std::string& text) { c.Say(text); }, c.stop);
  if (!launched.ok()) return launched.status();
  std::string phase = launched->phase;
  if (c.args.Switch("wait") && !launched->ended) phase = Follow(c, launched->lease, phase);
  json::object out{{"lease", launched->lease}, {"node", launched->node}, {"request_id", req.request_id}, {"outcome", phase}};
  if (launched->existing) out["existing"] = true;
  return Text(out);
}

Result<std::string> Destroy(const Call& c) {
  const int64_t request_id = c.args.Int("request_id");
  if (Status s = c.deps.plane->runner().Destroy(request_id, c.stop); !s.ok()) return s;
  return Text(json::object{{"request_id", request_id}, {"destroyed", true}});
}

Result<std::string> DrainFleet(const Call& c) {
  const jobs::DrainRequest req{kActor, c.args.Int("timeout_seconds") * kSecondNs};
  auto barrier = jobs::Drain(*c.deps.ledger, *c.deps.plane, req, [&c](const std::string& text) { c.Say(text); }, c.stop);
  if (!barrier.ok()) return barrier.status();
  return Text(json::object{{"barrier", *barrier}, {"clear", true}});
}

Result<std::string> OpenAdmission(const Call& c) {
  ports::Ledger& ledger = *c.deps.ledger;
  auto admission = ledger.AdmissionGeneration();
  if (!admission.ok()) return admission.status();
  if (!admission->second) return Text(json::object{{"admission", "open"}});
  auto g = ledger.SetAdmission(false, admission->first, c.args.String("reason"), kActor);
  if (!g.ok()) return g.status();
  return Text(json::object{{"admission", "open"}, {"generation", *g}});
}

}  // namespace

void AddLeaseCommands(Handlers& h) {
  h["leases.list"] = ListLeases;
  h["leases.show"] = ShowLease;
  h["leases.release"] = ReleaseLease;
  h["tiers.resume"] = ResumeTier;
  h["jobs.list"] = ListJobs;
  h["jobs.show"] = ShowJob;
  h["launch"] = Launch;
  h["destroy"] = Destroy;
  h["drain"] = DrainFleet;
  h["admission.open"] = OpenAdmission;
}

}  // namespace nodeplane::admin
