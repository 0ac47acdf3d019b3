// Leases, jobs and admission: leases.list, leases.show, leases.release,
// jobs.list, launch, destroy, drain, admission.open.
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "admin/commands.h"
#include "common/units.h"
#include "jobs/drain.h"
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

Result<std::string> ListJobs(const Call& c) {
  ports::Ledger& ledger = *c.deps.ledger;
  auto jobs = ledger.ListForgeJobs(c.args.String("tier"), c.Now() - c.args.Int("since_seconds") * kSecondNs,
                                   static_cast<uint32_t>(c.args.Int("limit")));
  if (!jobs.ok()) return jobs.status();
  json::array out;
  for (const ports::ForgeJob& j : *jobs) {
    std::string node;
    if (!j.lease_id.empty()) {
      if (auto lease = ledger.JobForLease(j.lease_id); lease.ok() && lease->has_value()) node = (*lease)->node;
    }
    out.push_back(json::object{{"job_id", j.job_id},
                               {"tier", j.tier},
                               {"repository", j.repository},
                               {"workflow", j.display_name},
                               {"request_id", j.request_id},
                               {"lease", j.lease_id},
                               {"node", node},
                               {"queued_at_ns", j.queued_at_ns},
                               {"received_at_ns", j.received_at_ns},
                               {"started_at_ns", j.started_at_ns},
                               {"completed_at_ns", j.completed_at_ns},
                               {"result", j.result.empty() ? (j.started_at_ns ? "running" : "queued") : j.result},
                               {"requeues", j.requeues},
                               {"settled", j.settled_at_ns != 0}});
  }
  return Text(out);
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
  h["launch"] = Launch;
  h["destroy"] = Destroy;
  h["drain"] = DrainFleet;
  h["admission.open"] = OpenAdmission;
}

}  // namespace nodeplane::admin
