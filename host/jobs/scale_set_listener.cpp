#include "jobs/scale_set_listener.h"

#include "jobs/launch_assigned.h"

#include <algorithm>
#include <cstdlib>

namespace nodeplane::jobs {
namespace {

// A runner's request id, fixed by its lease: in a range of its own (bit 62
// set), far above the ids GitHub hands out, and the same on every restart.
int64_t RequestIdFor(const std::string& lease_id) {
  const uint64_t bits = std::strtoull(lease_id.substr(0, 15).c_str(), nullptr, 16);
  return static_cast<int64_t>((uint64_t{1} << 62) | (bits & ((uint64_t{1} << 60) - 1)));
}

}  // namespace

ScaleSetListener::ScaleSetListener(ScaleSetTier tier, std::string owner, ports::JobSource& source,
                                   ports::LeaseStore& leases, ports::LedgerAdmin& admin, plane::Runner& runner,
                                   Logger& log, LeaseEvents* events, IntakeCounters& counters, ListenerTiming timing)
    : tier_(std::move(tier)),
      owner_(std::move(owner)),
      source_(source),
      leases_(leases),
      admin_(admin),
      runner_(runner),
      log_(log),
      events_(events),
      counters_(counters),
      timing_(timing),
      thread_([this](std::stop_token stop) { Run(stop); }) {}

ScaleSetListener::~ScaleSetListener() { Stop(); }

void ScaleSetListener::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  {
    std::lock_guard lock(mu_);
    if (session_ != 0) source_.Cancel(session_);
  }
  cv_.notify_all();
  thread_.join();
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
  while (!stop.stop_requested()) {  // one session after another
    ports::QueueStatistics stats;
    auto opened = source_.OpenSession(scale_set_id_, owner_, &stats);
    if (!opened.ok()) {
      if (opened.status().code() == Code::kConflict) {  // J4
        log_.Warn("jobs.session_held", {{"tier", tier_.tier}, {"scale_set", tier_.scale_set},
                                         {"error", opened.status().message()}});
        if (!Wait(stop, timing_.conflict_wait)) return;
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
    Reconcile(stats.assigned, stop);
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
      if (!next->has_value()) {
        Reconcile(stats.assigned, stop);
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
        Handle(*opened, m, stop);
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

void ScaleSetListener::Handle(uint64_t session, const ports::QueueMessage& m, std::stop_token stop) {
  std::vector<int64_t> offered;
  for (const ports::QueuedJob& j : m.jobs) {
    switch (j.kind) {
      case ports::JobEvent::kCompleted: Complete(j, stop); break;
      case ports::JobEvent::kAvailable:
        if (j.runner_request_id != 0) offered.push_back(j.runner_request_id);
        break;
      case ports::JobEvent::kStarted:
        log_.Info("jobs.started", {{"tier", tier_.tier}, {"job_id", j.job_id}, {"runner", j.runner_name},
                                   {"repository", j.owner + "/" + j.repository}});
        break;
      case ports::JobEvent::kAssigned:
        log_.Debug("jobs.assigned", {{"tier", tier_.tier}, {"job_id", j.job_id}});
        break;
    }
  }
  if (!offered.empty()) {
    auto granted = source_.Acquire(session, offered);
    if (!granted.ok()) {
      ++counters_.acquire_failed;
      log_.Warn("jobs.acquire_failed", {{"tier", tier_.tier}, {"error", granted.status().message()}});
    }
  }
  Reconcile(m.statistics.assigned, stop);
}

void ScaleSetListener::Complete(const ports::QueuedJob& j, std::stop_token stop) {
  const std::string lease = plane::LeaseOfRunnerName(j.runner_name);
  if (lease.empty()) {
    // No runner of ours took it (cancelled before any did, or another
    // manager's runner): nothing of ours to settle.
    log_.Info("jobs.completed_elsewhere", {{"tier", tier_.tier}, {"job_id", j.job_id}, {"result", j.result}});
    return;
  }
  ++(plane::JobSucceeded(j.result) ? counters_.completed_succeeded : counters_.completed_failed);
  auto job = leases_.JobForLease(lease);
  if (!job.ok() || !job->has_value()) {
    log_.Warn("jobs.completion_unmatched", {{"tier", tier_.tier}, {"lease", lease}, {"job_id", j.job_id}});
    return;
  }
  // J3: the runner's lease ends with GitHub's verdict; a lease the node has
  // already released is left as it is.
  if (!(*job)->conclusion) {
    if (Status s = runner_.DestroyCompleted((*job)->request_id, j.result, stop); !s.ok()) {
      log_.Warn("jobs.destroy_failed", {{"tier", tier_.tier}, {"lease", lease}, {"error", s.message()}});
    }
  }
  (void)leases_.MarkDeregistered(lease);
  log_.Info("jobs.completed", {{"tier", tier_.tier}, {"lease", lease}, {"job_id", j.job_id}, {"result", j.result},
                               {"repository", j.owner + "/" + j.repository}});
}

void ScaleSetListener::Reconcile(int64_t assigned, std::stop_token stop) {
  auto open = leases_.ListLeases("");
  if (!open.ok()) {
    log_.Warn("jobs.ledger_unavailable", {{"tier", tier_.tier}, {"error", open.status().message()}});
    return;
  }
  const int64_t have = std::count_if(open->begin(), open->end(), [&](const ports::Lease& l) { return l.tier == tier_.tier; });
  const int64_t want = std::min(assigned, tier_.max_runners);
  {
    std::lock_guard lock(mu_);  // finished launches are joined here
    std::erase_if(launches_, [](const Launching& l) { return l.done->load(); });
  }
  for (int64_t i = have; i < want && !stop.stop_requested(); ++i) {
    auto escrowed = admin_.Escrow(tier_.tier, 1);
    if (!escrowed.ok() || escrowed->empty()) {
      log_.Info("jobs.no_capacity", {{"tier", tier_.tier}, {"assigned", assigned}, {"runners", i},
                                     {"why", escrowed.ok() ? std::string("no room") : escrowed.status().message()}});
      return;
    }
    ports::Lease lease = escrowed->front();
    if (events_ != nullptr) ++events_->escrowed;
    if (Status s = admin_.Assign(lease.id, lease.epoch, 0, RequestIdFor(lease.id)); !s.ok()) {
      (void)leases_.Release(lease.id, lease.epoch, ports::Phase::kFailed);
      log_.Warn("jobs.assign_failed", {{"tier", tier_.tier}, {"lease", lease.id}, {"error", s.message()}});
      return;
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::lock_guard lock(mu_);
    launches_.push_back({done, std::jthread([this, lease, done](std::stop_token s) mutable {
                           Launch(std::move(lease), s);
                           *done = true;
                         })});
  }
}

void ScaleSetListener::Launch(ports::Lease lease, std::stop_token stop) {
  plane::Job job{RequestIdFor(lease.id), 0, "scale-set", "", "", ""};
  Status s = LaunchAssigned(leases_, runner_, events_, lease, job, stop);
  if (s.ok() || plane::Is(s, plane::kCustody)) {
    ++counters_.launched;
    log_.Info("jobs.runner_launched", {{"tier", tier_.tier}, {"lease", lease.id}, {"node", lease.node}});
  } else {
    ++counters_.launch_failed;
    log_.Warn("jobs.launch_failed", {{"tier", tier_.tier}, {"lease", lease.id}, {"error", s.message()}});
  }
}

}  // namespace nodeplane::jobs
