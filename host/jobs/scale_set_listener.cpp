#include "jobs/scale_set_listener.h"

#include "common/units.h"
#include "jobs/launch_assigned.h"

#include <algorithm>
#include <cstdlib>
#include <future>

namespace nodeplane::jobs {
namespace {

// How far back the journal is read for jobs still running at a start: a job
// runs at most a few days at GitHub.
constexpr int64_t kRunningLookbackNs = 7 * kDayNs;

// A runner's request id, fixed by its lease: in a range of its own (bit 62
// set), far above the ids GitHub hands out, and the same on every restart.
int64_t RequestIdFor(const std::string& lease_id) {
  const uint64_t bits = std::strtoull(lease_id.substr(0, 15).c_str(), nullptr, 16);
  return static_cast<int64_t>((uint64_t{1} << 62) | (bits & ((uint64_t{1} << 60) - 1)));
}

}  // namespace

ScaleSetListener::ScaleSetListener(ScaleSetTier tier, std::string owner, ports::JobSource& source,
                                   ports::Ledger& ledger, plane::Runner& runner, Logger& log, LeaseEvents* events,
                                   IntakeCounters& counters, ListenerTiming timing)
    : tier_(std::move(tier)),
      owner_(std::move(owner)),
      source_(source),
      ledger_(ledger),
      runner_(runner),
      log_(log),
      events_(events),
      counters_(counters),
      timing_(timing),
      thread_([this](std::stop_token stop) { Run(stop); }),
      settler_([this](std::stop_token stop) { SettleOwed(stop); }) {}

ScaleSetListener::~ScaleSetListener() { Stop(); }

void ScaleSetListener::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  settler_.request_stop();
  {
    std::lock_guard lock(mu_);
    if (session_ != 0) source_.Cancel(session_);
  }
  cv_.notify_all();
  settle_cv_.notify_all();
  thread_.join();
  settler_.join();
}

bool ScaleSetListener::Wait(std::stop_token stop, Nanos d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, stop, d, [&stop] { return stop.stop_requested(); });
}

void ScaleSetListener::Run(std::stop_token stop) {
  Nanos backoff = timing_.retry_min;
  auto failed = [&](const char* event, const Status& s) {
    log_.Warn(event, {{"tier", tier_.tier}, {"target", tier_.target}, {"scale_set", tier_.scale_set},
                      {"error", s.message()}});
    const Nanos wait = s.retry_after_ns() > 0 ? Nanos(s.retry_after_ns()) : backoff;
    backoff = std::min(backoff * 2, timing_.retry_max);
    return Wait(stop, wait);
  };
  while (!stop.stop_requested()) {  // find or create the scale set
    auto set = source_.EnsureScaleSet(tier_.scale_set, tier_.runner_group, tier_.labels);
    if (set.ok()) {
      scale_set_id_ = set->id;
      log_.Info("jobs.scale_set_ready",
                {{"tier", tier_.tier}, {"target", tier_.target}, {"scale_set", tier_.scale_set}, {"id", set->id}});
      break;
    }
    if (!failed("jobs.scale_set_unavailable", set.status())) return;
  }
  // The jobs still running when the last process stopped (J1).
  while (!stop.stop_requested()) {
    auto recent = ledger_.ListForgeJobs(tier_.tier, WallNowNs() - kRunningLookbackNs, 1000);
    if (recent.ok()) {
      std::lock_guard lock(mu_);
      for (const ports::ForgeJob& j : *recent) {
        if (j.started_at_ns != 0 && j.completed_at_ns == 0 && !j.lease_id.empty()) running_.insert(j.lease_id);
      }
      break;
    }
    if (!failed("jobs.journal_unavailable", recent.status())) return;
  }
  while (!stop.stop_requested()) {  // one session after another
    ports::QueueStatistics stats;
    auto opened = source_.OpenSession(scale_set_id_, owner_, &stats);
    if (!opened.ok()) {
      if (opened.status().code() == Code::kConflict) {  // J4
        log_.Warn("jobs.session_held", {{"tier", tier_.tier}, {"scale_set", tier_.scale_set},
                                         {"error", opened.status().message()}});
        if (!Wait(stop, tier_.session_retry)) return;
        continue;
      }
      if (!failed("jobs.session_unavailable", opened.status())) return;
      continue;
    }
    {
      std::lock_guard lock(mu_);
      session_ = *opened;
    }
    ++counters_.sessions_open;
    log_.Info("jobs.session_opened", {{"tier", tier_.tier}, {"scale_set", tier_.scale_set},
                                      {"assigned", stats.assigned}});
    backoff = timing_.retry_min;
    Reconcile(stats.assigned, WallNowNs(), stop);
    int64_t last = 0;
    while (!stop.stop_requested()) {
      auto next = source_.NextMessage(*opened, last, tier_.max_runners, timing_.poll);
      if (!next.ok()) {
        if (stop.stop_requested()) break;
        if (next.status().code() == Code::kNotFound) break;  // the session expired: a new one
        if (!failed("jobs.poll_failed", next.status())) break;
        continue;
      }
      backoff = timing_.retry_min;
      const int64_t received = WallNowNs();
      if (!next->has_value()) {
        Reconcile(stats.assigned, received, stop);
        continue;
      }
      const ports::QueueMessage& m = **next;
      if (!m.decode_error.empty()) {  // J5
        const int seen = ++undecodable_[m.id];
        log_.Warn("jobs.message_undecodable", {{"tier", tier_.tier}, {"message_id", m.id},
                                               {"error", m.decode_error}, {"deliveries", seen}});
        if (seen < kMaxUndecodable) continue;
        ++counters_.undecodable;
        undecodable_.erase(m.id);
      } else {
        stats = m.statistics;
        if (!Handle(*opened, m, received, stop)) {
          if (!Wait(stop, backoff)) break;  // left unacknowledged: it comes back (J2)
          backoff = std::min(backoff * 2, timing_.retry_max);
          continue;
        }
      }
      if (stop.stop_requested()) break;
      if (Status s = source_.Acknowledge(*opened, m.id); !s.ok()) {
        if (!failed("jobs.acknowledge_failed", s)) break;
        continue;  // it comes back, and is handled again: every step is idempotent (J1)
      }
      last = m.id;
    }
    {
      std::lock_guard lock(mu_);
      session_ = 0;
    }
    --counters_.sessions_open;
    if (stop.stop_requested()) {
      std::vector<Launching> launches;
      {
        std::lock_guard lock(mu_);
        launches.swap(launches_);
      }
      launches.clear();  // joins: each ends when its node answers or the plane stops
      if (Status s = source_.CloseSession(*opened); !s.ok()) {
        log_.Warn("jobs.session_close_failed", {{"tier", tier_.tier}, {"error", s.message()}});
      } else {
        log_.Info("jobs.session_closed", {{"tier", tier_.tier}, {"scale_set", tier_.scale_set}});
      }
      return;
    }
    (void)source_.CloseSession(*opened);
  }
}

bool ScaleSetListener::Handle(uint64_t session, const ports::QueueMessage& m, int64_t received_ns,
                              std::stop_token stop) {
  std::vector<int64_t> offered;
  bool completed = false;
  for (const ports::QueuedJob& j : m.jobs) {
    switch (j.kind) {
      case ports::JobEvent::kAvailable:
        if (j.runner_request_id != 0) offered.push_back(j.runner_request_id);
        break;
      case ports::JobEvent::kStarted:
        if (std::string lease = protocol::LeaseOfRunnerName(j.runner_name); !lease.empty()) {
          std::lock_guard lock(mu_);
          running_.insert(lease);
        }
        log_.Info("jobs.started", {{"tier", tier_.tier}, {"job_id", j.job_id}, {"runner", j.runner_name},
                                   {"repository", j.owner + "/" + j.repository}});
        break;
      case ports::JobEvent::kCompleted:
        log_.Info("jobs.completed", {{"tier", tier_.tier}, {"job_id", j.job_id}, {"runner", j.runner_name},
                                     {"result", j.result}, {"repository", j.owner + "/" + j.repository}});
        if (std::string lease = protocol::LeaseOfRunnerName(j.runner_name); !lease.empty()) {
          std::lock_guard lock(mu_);
          running_.erase(lease);
          fresh_.insert(j.job_id);
          completed = true;
        }
        break;
      case ports::JobEvent::kAssigned:
        log_.Debug("jobs.assigned", {{"tier", tier_.tier}, {"job_id", j.job_id}});
        break;
    }
  }
  std::vector<int64_t> granted;
  if (!offered.empty()) {
    auto acquired = source_.Acquire(session, offered);
    if (!acquired.ok()) {
      ++counters_.acquire_failed;
      log_.Warn("jobs.acquire_failed", {{"tier", tier_.tier}, {"error", acquired.status().message()}});
    } else {
      granted = std::move(*acquired);
    }
  }
  // Runners first: their launches run while the journal is written.
  Reconcile(m.statistics.assigned, received_ns, stop);
  // Every entry at once, so the ledger commits them together (J2).
  const int64_t now = WallNowNs();
  std::vector<std::future<Status>> writes;
  for (const ports::QueuedJob& j : m.jobs) {
    const bool got = j.kind == ports::JobEvent::kAvailable &&
                     std::find(granted.begin(), granted.end(), j.runner_request_id) != granted.end();
    writes.push_back(std::async(std::launch::async, [&, &j = j, got] { return Journal(j, received_ns, got ? now : 0); }));
  }
  bool journalled = true;
  for (size_t i = 0; i < writes.size(); ++i) {
    if (Status s = writes[i].get(); !s.ok()) {
      log_.Warn("jobs.journal_failed", {{"tier", tier_.tier}, {"message_id", m.id}, {"job_id", m.jobs[i].job_id},
                                        {"error", s.message()}});
      journalled = false;
    }
  }
  if (journalled && completed) {
    std::lock_guard lock(mu_);
    settle_wake_ = true;
    settle_cv_.notify_all();
  }
  return journalled;
}

// What one entry of a message says, into the journal (J2). The times of a
// runner taking and finishing a job are the forge's when it gives them.
Status ScaleSetListener::Journal(const ports::QueuedJob& j, int64_t received_ns, int64_t acquired_ns) {
  if (j.job_id.empty()) return Status::Ok();  // nothing to key it by; the message still counts
  ports::ForgeJob e;
  e.tier = tier_.tier;
  e.job_id = j.job_id;
  e.request_id = j.runner_request_id;
  e.repository = j.owner.empty() ? j.repository : j.owner + "/" + j.repository;
  e.workflow_ref = j.workflow_ref;
  e.display_name = j.display_name;
  e.workflow_run_id = j.workflow_run_id;
  e.queued_at_ns = j.queued_at_ns;
  e.received_at_ns = received_ns;
  e.acquired_at_ns = acquired_ns;
  if (j.kind == ports::JobEvent::kStarted || j.kind == ports::JobEvent::kCompleted) {
    e.runner_name = j.runner_name;
    e.lease_id = protocol::LeaseOfRunnerName(j.runner_name);
  }
  if (j.kind == ports::JobEvent::kStarted) e.started_at_ns = received_ns;
  if (j.kind == ports::JobEvent::kCompleted) {
    e.completed_at_ns = j.finished_at_ns > 0 ? j.finished_at_ns : received_ns;
    e.result = j.result.empty() ? "unknown" : j.result;
  }
  Status s = ledger_.RecordForgeJob(e);
  if (!s.ok() || j.kind != ports::JobEvent::kStarted || e.lease_id.empty()) return s;
  // The queue-time histograms, once per job: at its first JobStarted in
  // this process (a redelivery after a restart may count one twice).
  if (j.queued_at_ns > 0) {
    int64_t up = 0;
    {
      std::lock_guard lock(mu_);
      auto it = launched_at_.find(e.lease_id);
      if (it != launched_at_.end()) {
        up = it->second;
        launched_at_.erase(it);
      }
    }
    if (up > 0) counters_.queued_to_launched.Observe(Nanos(std::max<int64_t>(up - j.queued_at_ns, 0)));
    counters_.queued_to_started.Observe(Nanos(std::max<int64_t>(received_ns - j.queued_at_ns, 0)));
  }
  return s;
}

void ScaleSetListener::Reconcile(int64_t assigned, int64_t received_ns, std::stop_token stop) {
  auto open = ledger_.ListLeases("");
  if (!open.ok()) {
    log_.Warn("jobs.ledger_unavailable", {{"tier", tier_.tier}, {"error", open.status().message()}});
    return;
  }
  int64_t have = 0;
  const int64_t want = std::min(assigned, tier_.max_runners);
  {
    std::lock_guard lock(mu_);  // finished launches are joined here
    std::erase_if(launches_, [](const Launching& l) { return l.done->load(); });
    std::set<std::string> runners = running_;
    for (const ports::Lease& l : *open) {
      if (l.tier == tier_.tier) runners.insert(l.id);
    }
    have = static_cast<int64_t>(runners.size());
  }
  if (want <= have || stop.stop_requested()) return;
  // The whole deficit in one escrow (one ledger write); each lease is then
  // assigned and launched on a thread of its own, so a burst of jobs costs
  // the time of the slowest launch, not the sum of them.
  auto escrowed = ledger_.Escrow(tier_.tier, static_cast<int32_t>(want - have));
  if (!escrowed.ok() || static_cast<int64_t>(escrowed->size()) < want - have) {
    log_.Info("jobs.no_capacity", {{"tier", tier_.tier}, {"assigned", assigned}, {"runners", have},
                                   {"escrowed", escrowed.ok() ? escrowed->size() : 0},
                                   {"why", escrowed.ok() ? std::string("no room") : escrowed.status().message()}});
    if (!escrowed.ok()) return;
  }
  if (events_ != nullptr) events_->escrowed += escrowed->size();
  std::lock_guard lock(mu_);
  for (ports::Lease& lease : *escrowed) {
    auto done = std::make_shared<std::atomic<bool>>(false);
    launches_.push_back({done, std::jthread([this, lease = std::move(lease), received_ns, done](std::stop_token s) mutable {
                           Launch(std::move(lease), received_ns, s);
                           *done = true;
                         })});
  }
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
    {
      std::lock_guard lock(mu_);
      launched_at_[lease.id] = up;
    }
    log_.Info("jobs.runner_launched", {{"tier", tier_.tier}, {"lease", lease.id}, {"node", lease.node}});
  } else {
    ++counters_.launch_failed;
    log_.Warn("jobs.launch_failed", {{"tier", tier_.tier}, {"lease", lease.id}, {"error", s.message()}});
  }
}

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
          fresh = fresh_.erase(j.job_id) > 0;
        }
        if (Status s = Settle(j, fresh, stop); !s.ok()) {
          ++counters_.settle_failed;
          log_.Warn("jobs.settle_failed", {{"tier", tier_.tier}, {"job_id", j.job_id}, {"lease", j.lease_id},
                                           {"error", s.message()}});
        }
      }
    }
    std::unique_lock lock(mu_);
    settle_cv_.wait_for(lock, stop, timing_.settle_retry, [&] { return settle_wake_; });
    settle_wake_ = false;
  }
}

Status ScaleSetListener::Settle(const ports::ForgeJob& j, bool fresh, std::stop_token stop) {
  auto job = ledger_.JobForLease(j.lease_id);
  if (!job.ok()) return job.status();
  const ports::Phase outcome = protocol::JobSucceeded(j.result) ? ports::Phase::kDone : ports::Phase::kFailed;
  const char* how = "unknown_lease";
  if (job->has_value()) {
    const ports::Job& lease = **job;
    if (!lease.conclusion) {
      Status s = fresh ? runner_.DestroyCompleted(lease.request_id, j.result, stop)
                       : runner_.DestroyCompletedBound(lease.request_id, j.result, j.lease_id, lease.node, 0,
                                                       outcome, stop);
      if (!s.ok()) return s;
    }
    // An ended lease only has its verdict corrected (S17). A destroyed one
    // is read again: it may have ended otherwise meanwhile (its node's
    // inventory freeing a quarantine), or not yet, which leaves it owed (J3).
    auto corrected = ledger_.SettleCompletionOnTerminalLease(j.lease_id, 0, outcome);
    if (!corrected.ok()) return corrected.status();
    if (!*corrected) return Status::Unavailable("lease " + j.lease_id + " is still open in the ledger");
    how = lease.conclusion ? "verdict" : fresh ? "destroyed" : "destroyed_bound";
    (void)ledger_.MarkDeregistered(j.lease_id);
  }
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
  }
  ++(protocol::JobSucceeded(j.result) ? counters_.completed_succeeded : counters_.completed_failed);
  log_.Info("jobs.settled", {{"tier", tier_.tier}, {"job_id", j.job_id}, {"lease", j.lease_id}, {"result", j.result},
                             {"restored", fresh ? "false" : "true"}, {"how", how}});
  return Status::Ok();
}

}  // namespace nodeplane::jobs
