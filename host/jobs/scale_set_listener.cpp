// The listener's queue: the scale set, its sessions and their messages (J2,
// J4, J5 of scale_set_listener.h). The runner pool is scale_set_pool.cpp's,
// the settler scale_set_settler.cpp's.
#include "jobs/scale_set_listener.h"

#include <algorithm>
#include <cctype>
#include <future>

#include "common/units.h"

namespace nodeplane::jobs {
namespace {

// How far back the journal is read for jobs still running at a start: a job
// runs at most a few days at GitHub.
constexpr int64_t kRunningLookbackNs = 7 * kDayNs;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The labels asked for that GitHub did not keep (compared as runs-on does,
// without regard to case).
std::vector<std::string> Dropped(const std::vector<std::string>& wanted, const std::vector<std::string>& kept) {
  std::set<std::string> have;
  for (const std::string& l : kept) have.insert(Lower(l));
  std::vector<std::string> out;
  for (const std::string& l : wanted) {
    if (have.count(Lower(l)) == 0) out.push_back(l);
  }
  return out;
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// Before the first session: down since now, with no error yet.
TierStatus InitialStatus(const ScaleSetTier& t) {
  TierStatus s;
  s.tier = t.tier;
  s.scale_set = t.scale_set;
  s.web_url = t.web_url;
  s.session_down_since_ns = WallNowNs();
  s.ceiling = t.max_runners;
  return s;
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
      status_(InitialStatus(tier_)),
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

TierStatus ScaleSetListener::Snapshot() const {
  std::lock_guard lock(mu_);
  TierStatus out = status_;
  out.scale_set_id = scale_set_id_.load();
  if (paused_until_ns_ > WallNowNs()) {
    out.rate_limited_until_ns = paused_until_ns_;
    out.rate_limit_why = paused_why_;
  }
  return out;
}

void ScaleSetListener::SessionDown(const std::string& why) {
  std::lock_guard lock(mu_);
  if (status_.session_open || status_.session_down_since_ns == 0) status_.session_down_since_ns = WallNowNs();
  status_.session_open = false;
  status_.session_error = why;
}

bool ScaleSetListener::Failed(const char* event, const Status& s, std::stop_token stop, Nanos& backoff) {
  SessionDown(s.message());
  log_.Warn(event, {{"tier", tier_.tier}, {"target", tier_.target}, {"scale_set", tier_.scale_set},
                    {"error", s.message()}});
  const Nanos wait = s.retry_after_ns() > 0 ? Nanos(s.retry_after_ns()) : backoff;
  backoff = std::min(backoff * 2, timing_.retry_max);
  return Wait(stop, wait);
}

void ScaleSetListener::Run(std::stop_token stop) {
  Nanos backoff = timing_.retry_min;
  if (!RestoreRunning(stop, backoff)) return;
  while (!stop.stop_requested()) {  // the scale set, then one session after another (J4)
    if (!EnsureScaleSet(stop, backoff)) return;
    ports::QueueStatistics stats;
    auto opened = source_.OpenSession(scale_set_id_, owner_, &stats);
    if (!opened.ok()) {
      if (opened.status().code() == Code::kConflict) {
        SessionDown(opened.status().message());
        log_.Warn("jobs.session_held", {{"tier", tier_.tier}, {"scale_set", tier_.scale_set},
                                         {"error", opened.status().message()}});
        if (!Wait(stop, tier_.session_retry)) return;
      } else if (opened.status().code() == Code::kNotFound) {
        // GitHub deleted the scale set (offline for a day, or an admin):
        // found or created again before the next session.
        log_.Warn("jobs.scale_set_gone", {{"tier", tier_.tier}, {"scale_set", tier_.scale_set},
                                          {"id", scale_set_id_.load()}, {"error", opened.status().message()}});
        scale_set_id_ = 0;
        SessionDown(opened.status().message());
      } else if (!Failed("jobs.session_unavailable", opened.status(), stop, backoff)) {
        return;
      }
      continue;
    }
    if (!Listen(*opened, stats, stop, backoff)) return;
  }
}

bool ScaleSetListener::EnsureScaleSet(std::stop_token stop, Nanos& backoff) {
  while (scale_set_id_ == 0) {
    auto set = source_.EnsureScaleSet(tier_.scale_set, tier_.runner_group, tier_.labels);
    if (!set.ok()) {
      if (!Failed("jobs.scale_set_unavailable", set.status(), stop, backoff)) return false;
      continue;
    }
    scale_set_id_ = set->id;
    runner_group_id_ = set->runner_group_id;
    log_.Info("jobs.scale_set_ready", {{"tier", tier_.tier}, {"target", tier_.target}, {"scale_set", tier_.scale_set},
                                       {"id", set->id}, {"labels", Joined(set->labels)}});
    // GHES without custom labels keeps only the name: say what runs-on can match.
    if (std::vector<std::string> dropped = Dropped(tier_.labels, set->labels); !dropped.empty()) {
      log_.Warn("jobs.labels_dropped", {{"tier", tier_.tier}, {"scale_set", tier_.scale_set},
                                        {"kept", Joined(set->labels)}, {"dropped", Joined(dropped)}});
    }
  }
  return !stop.stop_requested();
}

// The jobs still running when the last process stopped (J1).
bool ScaleSetListener::RestoreRunning(std::stop_token stop, Nanos& backoff) {
  while (!stop.stop_requested()) {
    auto recent = ledger_.ListForgeJobs(tier_.tier, WallNowNs() - kRunningLookbackNs, 1000);
    if (recent.ok()) {
      std::lock_guard lock(mu_);
      for (const ports::ForgeJob& j : *recent) {
        if (j.started_at_ns != 0 && j.completed_at_ns == 0 && !j.lease_id.empty()) running_.emplace(j.lease_id, 0);
      }
      return true;
    }
    if (!Failed("jobs.journal_unavailable", recent.status(), stop, backoff)) return false;
  }
  return false;
}

// The session's messages until it ends: false when the listener stops.
bool ScaleSetListener::Listen(uint64_t session, ports::QueueStatistics stats, std::stop_token stop, Nanos& backoff) {
  {
    std::lock_guard lock(mu_);
    session_ = session;
    assigned_ = stats.assigned;  // the settler's timer reconciles with it until a message comes
    status_.session_open = true;
    status_.session_down_since_ns = 0;
    status_.session_error.clear();
    status_.statistics = stats;
    status_.statistics_at_ns = WallNowNs();
  }
  ++counters_.sessions_open;
  log_.Info("jobs.session_opened", {{"tier", tier_.tier}, {"scale_set", tier_.scale_set}, {"assigned", stats.assigned}});
  backoff = timing_.retry_min;
  Reconcile(stats.assigned, WallNowNs(), stop);
  int64_t last = 0;
  int refusals = 0;
  while (!stop.stop_requested()) {
    auto next = source_.NextMessage(session, last, tier_.max_runners, tier_.poll);
    if (!next.ok()) {
      if (stop.stop_requested()) break;
      if (next.status().code() == Code::kNotFound) {  // GitHub dropped it: a new session (J4)
        log_.Info("jobs.session_lost", {{"tier", tier_.tier}, {"scale_set", tier_.scale_set},
                                        {"error", next.status().message()}});
        SessionDown(next.status().message());
        break;
      }
      // A refusal that no retry heals (a session GitHub no longer honours in
      // a way not yet seen): a new session after a few in a row.
      if (next.status().code() != Code::kUnavailable && ++refusals >= kMaxPollRefusals) break;
      if (!Failed("jobs.poll_failed", next.status(), stop, backoff)) break;
      continue;
    }
    backoff = timing_.retry_min;
    refusals = 0;
    const int64_t received = WallNowNs();
    {
      std::lock_guard lock(mu_);
      status_.session_open = true;  // polls answer again after a failure
      status_.session_down_since_ns = 0;
      status_.session_error.clear();
    }
    if (!next->has_value()) {  // no message within the bound: GitHub's word is unchanged
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
      if (!Handle(session, m, received, stop)) {
        if (!Wait(stop, backoff)) break;  // left unacknowledged: it comes back (J2)
        backoff = std::min(backoff * 2, timing_.retry_max);
        continue;
      }
    }
    if (stop.stop_requested()) break;
    if (Status s = source_.Acknowledge(session, m.id); !s.ok()) {
      if (s.code() == Code::kNotFound) break;  // the session is gone: the message comes back to the next
      if (!Failed("jobs.acknowledge_failed", s, stop, backoff)) break;
      continue;  // it comes back, and is handled again: every step is idempotent (J1)
    }
    last = m.id;
  }
  {
    std::lock_guard lock(mu_);
    session_ = 0;
  }
  if (!stop.stop_requested()) SessionDown("the session ended; opening a new one");
  --counters_.sessions_open;
  if (!stop.stop_requested()) {
    (void)source_.CloseSession(session);
    return true;
  }
  std::vector<Launching> launches;
  {
    std::lock_guard lock(mu_);
    launches.swap(launches_);
  }
  launches.clear();  // joins: each ends when its node answers or the plane stops
  if (Status s = source_.CloseSession(session); !s.ok()) {
    log_.Warn("jobs.session_close_failed", {{"tier", tier_.tier}, {"error", s.message()}});
  } else {
    log_.Info("jobs.session_closed", {{"tier", tier_.tier}, {"scale_set", tier_.scale_set}});
  }
  return false;
}

bool ScaleSetListener::Handle(uint64_t session, const ports::QueueMessage& m, int64_t received_ns,
                              std::stop_token stop) {
  // Starts before completions, even when GitHub batches them (a runner's
  // start and end in one message, in either order).
  std::vector<std::string> finished;
  for (const ports::JobEvent kind : {ports::JobEvent::kStarted, ports::JobEvent::kCompleted}) {
    for (const ports::QueuedJob& j : m.jobs) {
      if (j.kind != kind) continue;
      const std::string lease = protocol::LeaseOfRunnerName(j.runner_name);
      if (kind == ports::JobEvent::kStarted) {
        ObserveStart(j, lease, received_ns);
        continue;
      }
      log_.Info("jobs.completed", {{"tier", tier_.tier}, {"job_id", j.job_id}, {"runner", j.runner_name},
                                   {"result", j.result}, {"repository", j.owner + "/" + j.repository}});
      if (lease.empty()) {  // GitHub took back an assignment no runner took (J3)
        ++counters_.requeued;
        continue;
      }
      finished.push_back(lease);
      std::lock_guard lock(mu_);
      running_.erase(lease);
      deregistered_.insert(lease);  // an ephemeral runner leaves GitHub after its job
      fresh_.insert(j.job_id);
    }
  }
  std::vector<int64_t> granted;
  if (Status s = Acquire(session, m, granted); !s.ok()) return false;  // redelivered: acquired then (J2)
  {
    std::lock_guard lock(mu_);
    assigned_ = m.statistics.assigned;
    status_.statistics = m.statistics;
    status_.statistics_at_ns = received_ns;
  }
  // Runners first: their launches run while the journal is written.
  Reconcile(m.statistics.assigned, received_ns, stop);
  // Each job's entries in order, the jobs at once, so the ledger commits
  // them together (J2).
  std::map<std::string, std::vector<const ports::QueuedJob*>> by_job;
  for (const ports::QueuedJob& j : m.jobs) {
    if (!j.job_id.empty()) by_job[j.job_id].push_back(&j);  // nothing to key it by: the message still counts
  }
  std::vector<std::future<Status>> writes;
  for (const auto& [job, entries] : by_job) {
    writes.push_back(std::async(std::launch::async, [&, &entries = entries] { return Journal(entries, received_ns, granted); }));
  }
  for (const std::string& lease : finished) {
    writes.push_back(std::async(std::launch::async, [&, lease] { return ledger_.MarkDeregistered(lease); }));
  }
  bool durable = true;
  for (std::future<Status>& w : writes) {
    if (Status s = w.get(); !s.ok()) {
      log_.Warn("jobs.journal_failed", {{"tier", tier_.tier}, {"message_id", m.id}, {"error", s.message()}});
      durable = false;
    }
  }
  if (durable && !finished.empty()) {
    std::lock_guard lock(mu_);
    settle_wake_ = true;
    settle_cv_.notify_all();
  }
  return durable;
}

void ScaleSetListener::ObserveStart(const ports::QueuedJob& j, const std::string& lease, int64_t received_ns) {
  if (!lease.empty()) {
    std::lock_guard lock(mu_);
    if (deregistered_.count(lease) == 0) running_.emplace(lease, 0);
  }
  log_.Info("jobs.started", {{"tier", tier_.tier}, {"job_id", j.job_id}, {"runner", j.runner_name},
                             {"repository", j.owner + "/" + j.repository}});
  // The queue-time histograms, once per job: at its first JobStarted in
  // this process (a redelivery after a restart may count one twice).
  if (j.queued_at_ns <= 0 || lease.empty()) return;
  int64_t up = 0;
  {
    std::lock_guard lock(mu_);
    auto it = launched_at_.find(lease);
    if (it == launched_at_.end()) {
      // Its launch has not returned yet (Launch observes it then), was
      // counted already, or was an earlier process's (forgotten at settle).
      started_early_.emplace(lease, std::make_pair(j.queued_at_ns, received_ns));
      return;
    }
    up = it->second;
    launched_at_.erase(it);
  }
  ObserveQueueTimes(j.queued_at_ns, up, received_ns);
}

void ScaleSetListener::ObserveQueueTimes(int64_t queued_ns, int64_t up_ns, int64_t started_ns) {
  counters_.queued_to_launched.Observe(Nanos(std::max<int64_t>(up_ns - queued_ns, 0)));
  counters_.queued_to_started.Observe(Nanos(std::max<int64_t>(started_ns - queued_ns, 0)));
}

// Claims the message's offers (GHES); a failure leaves the message to be
// delivered again (J2). GitHub grants a subset of what was asked.
Status ScaleSetListener::Acquire(uint64_t session, const ports::QueueMessage& m, std::vector<int64_t>& granted) {
  std::vector<int64_t> offered;
  for (const ports::QueuedJob& j : m.jobs) {
    if (j.kind == ports::JobEvent::kAvailable && j.runner_request_id != 0) offered.push_back(j.runner_request_id);
  }
  if (offered.empty()) return Status::Ok();
  auto acquired = source_.Acquire(session, offered);
  if (!acquired.ok()) {
    ++counters_.acquire_failed;
    log_.Warn("jobs.acquire_failed", {{"tier", tier_.tier}, {"message_id", m.id}, {"error", acquired.status().message()}});
    return acquired.status();
  }
  for (int64_t id : *acquired) {
    if (std::find(offered.begin(), offered.end(), id) == offered.end()) {
      log_.Warn("jobs.acquire_unasked", {{"tier", tier_.tier}, {"request_id", id}});
      continue;
    }
    granted.push_back(id);
  }
  return Status::Ok();
}

// One job's entries into the journal, in the order GitHub sent them (the
// journal's J3/J4 depend on it). The times of a runner taking and finishing
// a job are GitHub's when it gives them.
Status ScaleSetListener::Journal(const std::vector<const ports::QueuedJob*>& entries, int64_t received_ns,
                                 const std::vector<int64_t>& granted) {
  for (const ports::QueuedJob* p : entries) {
    const ports::QueuedJob& j = *p;
    ports::ForgeJob e;
    e.tier = tier_.tier;
    e.job_id = j.job_id;
    e.request_id = j.runner_request_id;
    e.repository = j.owner.empty() ? j.repository : j.owner + "/" + j.repository;
    e.workflow_ref = j.workflow_ref;
    e.display_name = j.display_name;
    e.workflow_run_id = j.workflow_run_id;
    e.event_name = j.event_name;
    e.request_labels = j.request_labels;
    e.queued_at_ns = j.queued_at_ns;
    e.received_at_ns = received_ns;
    const bool got = j.kind == ports::JobEvent::kAvailable &&
                     std::find(granted.begin(), granted.end(), j.runner_request_id) != granted.end();
    if (got) e.acquired_at_ns = WallNowNs();
    if (j.kind == ports::JobEvent::kAssigned) e.assigned_at_ns = j.assigned_at_ns > 0 ? j.assigned_at_ns : received_ns;
    if (j.kind == ports::JobEvent::kStarted || j.kind == ports::JobEvent::kCompleted) {
      e.runner_name = j.runner_name;
      e.lease_id = protocol::LeaseOfRunnerName(j.runner_name);
      e.runner_id = j.runner_id;
      e.runner_assigned_at_ns = j.runner_assigned_at_ns;
    }
    if (j.kind == ports::JobEvent::kStarted) e.started_at_ns = received_ns;
    if (j.kind == ports::JobEvent::kCompleted) {
      e.completed_at_ns = j.finished_at_ns > 0 ? j.finished_at_ns : received_ns;
      e.result = j.result.empty() ? "unknown" : j.result;
    }
    if (Status s = ledger_.RecordForgeJob(e); !s.ok()) return s;
  }
  return Status::Ok();
}

void ScaleSetListener::PauseLaunches(int64_t until_ns, const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (until_ns <= paused_until_ns_) return;
    paused_until_ns_ = until_ns;
    paused_why_ = why;
  }
  log_.Warn("jobs.launches_paused", {{"tier", tier_.tier}, {"until_ns", until_ns},
                                     {"seconds", (until_ns - WallNowNs() + kSecondNs - 1) / kSecondNs}, {"why", why}});
}

}  // namespace nodeplane::jobs
