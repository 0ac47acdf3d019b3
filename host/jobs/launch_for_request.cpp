#include "jobs/launch_for_request.h"

#include "jobs/launch_assigned.h"

namespace nodeplane::jobs {
namespace {

// The lease that already serves the request, if it is still remembered (L1).
Result<std::optional<Launched>> Served(ports::Ledger& ledger, int64_t request_id, int64_t now_ns) {
  auto job = ledger.JobForRequest(request_id);
  if (!job.ok() && ports::Is(job.status(), ports::Verdict::kUnsupported)) return std::optional<Launched>();
  if (!job.ok()) return job.status();
  if (!job->has_value()) return std::optional<Launched>();
  const ports::Job& j = **job;
  if (j.conclusion && j.finished_at_ns < now_ns - kRequestMemoryNs) return std::optional<Launched>();
  Launched out{j.lease_id, j.node, j.conclusion ? ports::PhaseName(*j.conclusion) : "open", true, j.conclusion.has_value()};
  if (!j.conclusion) {
    if (auto l = ledger.GetLease(j.lease_id); l.ok()) out.phase = ports::PhaseName(l->phase);
  }
  return std::optional<Launched>(std::move(out));
}

// One lease escrowed and assigned to the request.
struct Reserved {
  ports::Lease lease;
  std::string fenced_node;  // whose dispatch fence the same write advanced; "" when none
};

// In one ledger write with the node's dispatch fence when the plugin offers
// it, else escrow then assign (the Runner then advances the fence). Empty
// without headroom; kConflict when another launch of the request won the
// race (L2), with nothing of ours left open.
Result<std::optional<Reserved>> Reserve(ports::Ledger& ledger, LeaseEvents* events, const LaunchRequest& req,
                                        int64_t run_id) {
  auto one = ledger.EscrowForLaunch(req.tier, run_id, req.request_id);
  if (one.ok()) {
    if (!one->has_value()) return std::optional<Reserved>();
    if (events != nullptr) ++events->escrowed;
    ports::Lease lease = std::move((*one)->lease);
    std::string node = lease.target_node;
    return std::optional<Reserved>(Reserved{std::move(lease), std::move(node)});
  }
  if (!ports::Is(one.status(), ports::Verdict::kUnsupported)) return one.status();
  auto escrowed = ledger.Escrow(req.tier, 1);
  if (!escrowed.ok()) return escrowed.status();
  if (escrowed->empty()) return std::optional<Reserved>();
  ports::Lease lease = escrowed->front();
  if (events != nullptr) ++events->escrowed;
  if (Status s = ledger.Assign(lease.id, lease.epoch, run_id, req.request_id); !s.ok()) {
    if (ledger.Release(lease.id, lease.epoch, ports::Phase::kFailed).ok() && events != nullptr) {
      ++events->released_failed;
    }
    return s;
  }
  return std::optional<Reserved>(Reserved{std::move(lease), ""});
}

}  // namespace

Result<Launched> LaunchForRequest(ports::Ledger& ledger, plane::Runner& runner, LeaseEvents* events,
                                  const LaunchRequest& req, int64_t now_ns,
                                  const std::function<void(const std::string&)>& say, std::stop_token stop) {
  auto tell = [&](const std::string& text) {
    if (say) say(text);
  };
  auto answer_prior = [&](const Launched& prior) {
    tell("request " + std::to_string(req.request_id) + " is already served by lease " + prior.lease + " (" +
         prior.phase + "); nothing new was escrowed");
    return prior;
  };
  auto prior = Served(ledger, req.request_id, now_ns);
  if (!prior.ok()) return prior.status();
  if (prior->has_value()) return answer_prior(**prior);

  const int64_t run_id = req.run_id != 0 ? req.run_id : req.request_id;
  auto reserved = Reserve(ledger, events, req, run_id);
  if (!reserved.ok()) {
    // Another launch of the same request won the race (L2): theirs is answered.
    if (!ports::Is(reserved.status(), ports::Verdict::kConflict)) return reserved.status();
    auto winner = Served(ledger, req.request_id, now_ns);
    if (!winner.ok()) return winner.status();
    if (!winner->has_value()) return reserved.status();
    return answer_prior(**winner);
  }
  if (!reserved->has_value()) {
    return ports::WithVerdict(Status::Refused("no capacity for tier " + req.tier + " now"), ports::Verdict::kNoCapacity);
  }
  ports::Lease& lease = (*reserved)->lease;
  tell("escrowed lease " + lease.id + " for tier " + req.tier);
  protocol::Job job{req.request_id, run_id, req.source, "", "", ""};
  // Nothing runs after a clean failure: nothing was sent (S01), or the
  // node said it started nothing, so the lease was released (R43).
  Status launched = LaunchAssigned(ledger, runner, events, lease, job, stop, (*reserved)->fenced_node);
  const bool custody = plane::Is(launched, plane::kCustody);
  if (!launched.ok() && !custody) return launched;
  tell("lease " + lease.id + (custody ? " is in the custody of node " : " launched on node ") + lease.node);
  return Launched{lease.id, lease.node, custody ? "custody" : "launched", false, false};
}

}  // namespace nodeplane::jobs
