// The listener's settler: completions GitHub reported, settled from the job
// journal (J3 of scale_set_listener.h). Its pass also reconciles the runner
// pool on a timer, so idle runners are retired while no message comes, and
// runs the ghost check when due (J8, scale_set_ghosts.cpp).
#include <algorithm>

#include "common/units.h"
#include "jobs/scale_set_listener.h"

namespace nodeplane::jobs {

void ScaleSetListener::SettleOwed(std::stop_token stop) {
  while (!stop.stop_requested()) {
    auto owed = ledger_.UnsettledForgeJobs(tier_.tier, 100);
    if (!owed.ok()) {
      log_.Warn("jobs.journal_unavailable", {{"tier", tier_.tier}, {"error", owed.status().message()}});
    } else {
      for (const ports::ForgeJob& j : *owed) {
        if (stop.stop_requested()) return;
        bool fresh = false;
        {
          std::lock_guard lock(mu_);
          auto backoff = settle_backoff_.find(j.job_id);
          if (backoff != settle_backoff_.end() && WallNowNs() < backoff->second.next_ns) continue;  // not due
          fresh = fresh_.erase(j.job_id) > 0;
        }
        if (Status s = Settle(j, fresh, stop); !s.ok()) SettleFailed(j, s);
      }
    }
    ++counters_.settle_passes;
    int64_t assigned = 0;
    bool due = false;
    {
      std::unique_lock lock(mu_);
      settle_cv_.wait_for(lock, stop, timing_.settle_retry, [&] { return settle_wake_; });
      settle_wake_ = false;
      due = scale_set_id_ != 0 && WallNowNs() - reconciled_at_ns_ >= timing_.reconcile.count();
      assigned = assigned_;
    }
    if (due && !stop.stop_requested()) Reconcile(assigned, WallNowNs(), stop);
    if (tier_.ghost_check.count() > 0 && scale_set_id_ != 0 && WallNowNs() >= ghost_due_ns_ && !stop.stop_requested()) {
      ghost_due_ns_ = WallNowNs() + tier_.ghost_check.count();
      GhostCheck();
    }
  }
}

// A settle that failed is tried again later, each time later still, and the
// journal is told, so the completions read next are the least recently
// tried: none that cannot settle yet hides one that can.
void ScaleSetListener::SettleFailed(const ports::ForgeJob& j, const Status& s) {
  ++counters_.settle_failed;
  log_.Warn("jobs.settle_failed", {{"tier", tier_.tier}, {"job_id", j.job_id}, {"lease", j.lease_id},
                                   {"error", s.message()}});
  const int64_t now = WallNowNs();
  {
    std::lock_guard lock(mu_);
    Backoff& b = settle_backoff_[j.job_id];
    b.wait = b.wait.count() == 0 ? timing_.settle_retry : std::min(b.wait * 2, timing_.settle_retry_max);
    b.next_ns = now + b.wait.count();
  }
  ports::ForgeJob tried;
  tried.tier = j.tier;
  tried.job_id = j.job_id;
  tried.settle_tried_at_ns = now;
  (void)ledger_.RecordForgeJob(tried);  // only the order changes if this is lost
}

Status ScaleSetListener::Settle(const ports::ForgeJob& j, bool fresh, std::stop_token stop) {
  auto job = ledger_.JobForLease(j.lease_id);
  if (!job.ok()) return job.status();
  const ports::Phase outcome = protocol::JobSucceeded(j.result) ? ports::Phase::kDone : ports::Phase::kFailed;
  const char* how = "unknown_lease";
  if (job->has_value()) {
    const ports::Job& lease = **job;
    int64_t epoch = 0;
    if (!lease.conclusion) {
      auto open = ledger_.GetLease(j.lease_id);
      if (open.ok()) epoch = open->epoch;
      Status s = fresh ? runner_.DestroyCompleted(lease.request_id, j.result, stop)
                       : runner_.DestroyCompletedBound(lease.request_id, j.result, j.lease_id, lease.node, epoch,
                                                       outcome, stop);
      if (!s.ok()) return s;
    }
    // An ended lease only has its verdict corrected (S17). A destroyed one
    // is read again: it may have ended otherwise meanwhile (its node's
    // inventory freeing a quarantine), or not yet, which leaves it owed (J3).
    auto corrected = ledger_.SettleCompletionOnTerminalLease(j.lease_id, epoch, outcome);
    if (!corrected.ok()) return corrected.status();
    if (!*corrected) return Status::Unavailable("lease " + j.lease_id + " is still open in the ledger");
    how = lease.conclusion ? "verdict" : fresh ? "destroyed" : "destroyed_bound";
  }
  ObserveStages(j, job->has_value() ? &**job : nullptr);
  // A lease the ledger never had is not ours to settle (a runner name that
  // only looks like one of ours): the entry is closed as it is.
  ports::ForgeJob settled;
  settled.tier = j.tier;
  settled.job_id = j.job_id;
  settled.settled_at_ns = WallNowNs();
  if (Status s = ledger_.RecordForgeJob(settled); !s.ok()) return s;
  {
    std::lock_guard lock(mu_);
    launched_at_.erase(j.lease_id);
    started_early_.erase(j.lease_id);
    settle_backoff_.erase(j.job_id);
  }
  ++(protocol::JobSucceeded(j.result) ? counters_.completed_succeeded : counters_.completed_failed);
  log_.Info("jobs.settled", {{"tier", tier_.tier}, {"job_id", j.job_id}, {"lease", j.lease_id}, {"result", j.result},
                             {"restored", fresh ? "false" : "true"}, {"how", how}});
  return Status::Ok();
}

// GitHub's clock for GitHub's stages; the runner's boot spans both clocks
// and is left out when they disagree on its order.
void ScaleSetListener::ObserveStages(const ports::ForgeJob& j, const ports::Job* lease) {
  const std::string tier = "tier=\"" + tier_.tier + "\"";
  auto stage = [&](const char* name, int64_t from, int64_t to) {
    if (from <= 0 || to < from) return;
    counters_.stages.For(tier + ",stage=\"" + name + "\"").Observe(Nanos(to - from));
  };
  stage("queued", j.queued_at_ns, j.assigned_at_ns);
  stage("startup", j.assigned_at_ns, j.runner_assigned_at_ns);
  if (lease != nullptr && lease->started_at_ns >= j.assigned_at_ns) stage("boot", lease->started_at_ns, j.runner_assigned_at_ns);
  if (j.runner_assigned_at_ns > 0 && j.completed_at_ns >= j.runner_assigned_at_ns) {
    counters_.execution.For(tier).Observe(Nanos(j.completed_at_ns - j.runner_assigned_at_ns));
  }
}

}  // namespace nodeplane::jobs
