// The job intake for one tier: the tier's runner scale set, read through
// its target's job source (ports/jobs.h), turned into leases and launches.
//
// THE MODEL. GitHub assigns queued jobs to the scale set; a runner of the
// scale set (a JIT registration, ephemeral) takes whichever assigned job is
// next, runs it and deregisters. So the intake keeps as many runners as
// GitHub has jobs assigned (totalAssignedJobs, which counts running ones),
// plus the tier's min_idle, up to the tier's ceiling: each runner is one
// lease, escrowed, assigned a request id of its own and launched; its runner
// name (np-<lease>) ties every later message back to the lease. This is how
// GitHub.com delivers work (JobAssigned with runnerRequestId 0, no offer to
// acquire) and how ARC sizes its pool; offers (JobAvailable, GHES) are
// acquired first. Runners beyond what is wanted, idle longer than the tier's
// idle_timeout, are retired, as are idle runners on a node that is leaving
// and every idle runner while the deployment is sealed (a drain).
//
// Invariants (each pinned by a test named for it: intake_listener_test.cpp,
// intake_settle_test.cpp, e2e scale-set-*):
//   J1. The runners counted are computed from durable state at each
//       reconcile: the tier's open leases in the ledger that can still run a
//       job (not deregistered, and not quarantined unless the job they
//       started has not completed yet), plus the jobs a runner started whose
//       completion has not come while their lease closed less than
//       kRunningGrace ago (GitHub still counts all those jobs assigned). A
//       restart, a redelivered message or a lost launch can never launch
//       twice; a lost completion can hold a slot for kRunningGrace at most.
//   J2. A message is acknowledged only after what it said is in the job
//       journal (ports::JobJournal, each job's entries in the order GitHub
//       sent them), the leases of runners it reported finished are marked
//       deregistered, and the offers it made are acquired. A crash at any
//       point leaves the message (redelivered) or the journal entry.
//   J3. A completion is settled from the journal, not from the message, and
//       only a completion that names a runner: GitHub's cancellation of an
//       assignment no runner took is undone by its re-assignment (the
//       journal's rules J3/J4, np_ledger_v1.h), so the runner that then
//       takes the job is never torn down on its account. The lease the
//       runner name carries ends with GitHub's result and the entry is
//       marked settled only after. A completion this process read settles
//       with DestroyCompleted (the holder found by its request); one
//       restored from the journal with DestroyCompletedBound (the recorded
//       node, lease and epoch, S20); a lease already ended only has its
//       verdict corrected (SettleCompletionOnTerminalLease, S17). A settle
//       that fails is tried again with a growing backoff, and the journal
//       hands out the least recently tried first, so none starves another.
//   J4. A 409 session means another holder (perhaps this host before a
//       restart) may still be alive: the listener waits and tries again,
//       forever; jobs wait queued at GitHub meanwhile. A session GitHub
//       dropped is opened again; a scale set GitHub deleted is found or
//       created again. The session is closed on shutdown.
//   J5. A message that cannot be decoded is left for redelivery
//       kMaxUndecodable times, then acknowledged and counted.
//   J6. A runner is retired only after GitHub removed its registration (a
//       busy runner's removal is refused, and it is left alone); its lease
//       is then marked deregistered, which its node's next heartbeat hears
//       (NP_DEREGISTERED) and answers by stopping the runner and releasing
//       the lease done.
//   J7. While GitHub refuses runner registrations for a rate limit, the
//       tier launches nothing until the time GitHub named.
//   J8. Every ScaleSetTier::ghost_check, GitHub's runners of the scale set's
//       group are compared with the open leases, read after GitHub's list
//       (a runner is minted only for an open lease, so a runner GitHub
//       listed whose lease is not open now was left behind). Such a runner
//       named as ours, not running a job, is removed by its exact id, and
//       remove_runner refuses one of another scale set. An up lease of the
//       tier older than ListenerTiming::ghost_grace whose runner GitHub did not list is
//       reported, never acted on.
//
// Thread-safe. Two threads of its own (the queue, the settler); launches and
// retirements run on threads of their own, at most the tier's ceiling at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/lease_events.h"
#include "common/log.h"
#include "common/metrics.h"
#include "plane/plane.h"
#include "ports/jobs.h"
#include "ports/ledger.h"

namespace nodeplane::jobs {

struct ScaleSetTier {
  std::string tier, target, scale_set, runner_group;
  std::vector<std::string> labels;  // the scale set's labels: its name first (runs-on: <name> always matches)
  int64_t max_runners = 0;          // the ceiling advertised to GitHub
  int64_t min_idle = 0;             // runners kept registered and waiting beyond the jobs assigned
  Nanos idle_timeout = std::chrono::minutes(5);    // a surplus runner idle this long is retired
  Nanos session_retry = std::chrono::seconds(30);  // a held session is asked again this often (J4)
  // A long poll's bound: GitHub holds an idle poll ~50 s (GHES) to ~88 s
  // (github.com); one it still holds at the bound is no message.
  Nanos poll = std::chrono::minutes(2);
  std::string web_url = "https://github.com";  // the target's forge, for links to runs
  Nanos ghost_check = std::chrono::minutes(5);  // J8; 0: never
};

struct ListenerTiming {
  Nanos retry_min = std::chrono::seconds(1);       // after an outage, doubling
  Nanos retry_max = std::chrono::seconds(60);
  Nanos settle_retry = std::chrono::seconds(5);    // the settler's pass, and its first backoff
  Nanos settle_retry_max = std::chrono::minutes(5);
  Nanos reconcile = std::chrono::seconds(10);      // the pool is reconciled at least this often
  // How old an up lease must be before its runner missing from GitHub's
  // list is reported (J8): longer than a launch takes to mint and start.
  Nanos ghost_grace = std::chrono::minutes(1);
};

struct IntakeCounters {
  std::atomic<uint64_t> launched{0}, launch_failed{0}, completed_succeeded{0}, completed_failed{0};
  std::atomic<uint64_t> acquire_failed{0}, undecodable{0}, sessions_open{0}, settle_failed{0};
  std::atomic<uint64_t> retired{0}, requeued{0};
  std::atomic<uint64_t> settle_passes{0};  // the settler's passes over the journal
  // Message received -> the node answered that the runner it asked for is
  // up: the control plane's share of a job's queue time.
  Histogram plane_share{Histogram::kLatency};
  // Queued at the forge -> a runner was up for it (its runner's launch, or
  // the job's arrival when an idle runner was waiting) -> a runner took it.
  Histogram queued_to_launched{Histogram::kWait}, queued_to_started{Histogram::kWait};
  // A settled job's stages by GitHub's own times, as actions-runner-controller
  // measures them, labelled tier="..",stage="..": "queued" (queued until
  // GitHub assigned it to the scale set), "startup" (assigned until GitHub
  // gave it to a runner), "boot" (its runner's process started until it
  // took the job, for a runner launched after the assignment).
  HistogramFamily stages{Histogram::kWait};
  HistogramFamily execution{Histogram::kRun};  // tier="..": given to a runner until finished
};

// What a listener knows of its scale set now: the facts a waiting job is
// explained by (job_status.h), and what the dashboard's scale-set view and
// the metrics show. Times are wall-clock ns, 0 when not so.
struct TierStatus {
  std::string tier, scale_set, web_url;
  int64_t scale_set_id = 0;            // 0 until found or created
  bool session_open = false;           // a session is held and its last poll answered
  int64_t session_down_since_ns = 0;   // while not open: since when
  std::string session_error;           // while not open: GitHub's last refusal ("" before any)
  ports::QueueStatistics statistics;   // GitHub's latest seven counters
  int64_t statistics_at_ns = 0;
  int64_t ceiling = 0;                 // the tier's max_runners
  int64_t runners = 0;                 // the runners counted at the last reconcile (J1)
  int64_t wanted = 0;                  // min(assigned + min_idle, ceiling) then
  int64_t short_since_ns = 0;          // the ledger escrowed fewer runners than wanted since
  std::string short_why;               // what the escrow said
  int64_t rate_limited_until_ns = 0;   // J7
  std::string rate_limit_why;
  // The ghost check (J8): when it last ran, what it found.
  int64_t ghost_checked_at_ns = 0;
  int64_t ghosts_removed = 0;          // since start
  std::vector<std::string> runners_missing;  // leases whose runner GitHub did not list, at the last check
};

class ScaleSetListener {
 public:
  static constexpr int kMaxUndecodable = 5;
  // Non-transient poll failures in a row after which the session is opened again.
  static constexpr int kMaxPollRefusals = 3;
  // How long a started job still counts as a runner after its lease closed
  // (J1): its completion normally arrives within seconds.
  static constexpr Nanos kRunningGrace = std::chrono::minutes(2);


  // Everything is borrowed and must outlive the listener.
  ScaleSetListener(ScaleSetTier tier, std::string owner, ports::JobSource& source, ports::Ledger& ledger,
                   plane::Runner& runner, Logger& log, LeaseEvents* events, IntakeCounters& counters,
                   ListenerTiming timing = {});
  ~ScaleSetListener();  // Stop()
  ScaleSetListener(const ScaleSetListener&) = delete;
  ScaleSetListener& operator=(const ScaleSetListener&) = delete;

  // Cancels the parked poll, waits for launches, closes the session.
  void Stop();
  // GitHub refused a runner registration for a rate limit until `until_ns`
  // (wall clock): no launch before then (J7).
  void PauseLaunches(int64_t until_ns, const std::string& why);

  // The scale set's id once found or created; 0 before.
  int64_t scale_set_id() const { return scale_set_id_.load(); }
  const ScaleSetTier& tier() const { return tier_; }
  TierStatus Snapshot() const;

 private:
  // scale_set_listener.cpp: the queue (J2, J4, J5).
  void Run(std::stop_token stop);
  bool EnsureScaleSet(std::stop_token stop, Nanos& backoff);
  bool RestoreRunning(std::stop_token stop, Nanos& backoff);
  // One session's messages, until it ends; false when the scale set is gone.
  bool Listen(uint64_t session, ports::QueueStatistics stats, std::stop_token stop, Nanos& backoff);
  bool Failed(const char* event, const Status& s, std::stop_token stop, Nanos& backoff);
  // The session is not serving (not yet opened, lost, or refusing polls) because of `why`.
  void SessionDown(const std::string& why);
  bool Wait(std::stop_token stop, Nanos d);
  // One message's work (J2); false when it must not be acknowledged yet.
  bool Handle(uint64_t session, const ports::QueueMessage& m, int64_t received_ns, std::stop_token stop);
  Status Acquire(uint64_t session, const ports::QueueMessage& m, std::vector<int64_t>& granted);
  // One job's entries of a message, in order, into the journal.
  Status Journal(const std::vector<const ports::QueuedJob*>& entries, int64_t received_ns,
                 const std::vector<int64_t>& granted);
  // The queue-time histograms for one job, once its runner's launch and its start are both known.
  void ObserveQueueTimes(int64_t queued_ns, int64_t up_ns, int64_t started_ns);
  void ObserveStart(const ports::QueuedJob& j, const std::string& lease, int64_t received_ns);

  // scale_set_pool.cpp: how many runners, which to retire (J1, J6, J7).
  void Reconcile(int64_t assigned, int64_t received_ns, std::stop_token stop);
  void Launch(ports::Lease lease, int64_t received_ns, std::stop_token stop);
  void Retire(const ports::Lease& lease, const char* why);
  // Idle runners to retire now beyond `surplus`, and on leaving nodes.
  std::vector<std::pair<ports::Lease, const char*>> Retirements(const std::vector<ports::Lease>& idle,
                                                                int64_t surplus);
  void Spawn(std::function<void(std::stop_token)> work);  // with mu_ held

  // scale_set_settler.cpp: the settler's thread (J3).
  void SettleOwed(std::stop_token stop);
  Status Settle(const ports::ForgeJob& j, bool fresh, std::stop_token stop);
  void SettleFailed(const ports::ForgeJob& j, const Status& s);
  void ObserveStages(const ports::ForgeJob& j, const ports::Job* lease);

  // scale_set_ghosts.cpp: J8.
  void GhostCheck();
  void RemoveGhost(const ports::ForgeRunner& r);

  ScaleSetTier tier_;
  std::string owner_;
  ports::JobSource& source_;
  ports::Ledger& ledger_;
  plane::Runner& runner_;
  Logger& log_;
  LeaseEvents* events_;
  IntakeCounters& counters_;
  ListenerTiming timing_;
  std::atomic<int64_t> scale_set_id_{0};
  std::atomic<int64_t> runner_group_id_{0};  // the scale set's, as GitHub answered
  int64_t ghost_due_ns_ = 0;                 // the settler's thread only (J8)

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  uint64_t session_ = 0;                 // guarded by mu_: Stop cancels it
  std::map<int64_t, int> undecodable_;   // message id -> deliveries seen
  struct Launching {
    std::shared_ptr<std::atomic<bool>> done;
    std::jthread thread;
  };
  std::vector<Launching> launches_;      // guarded by mu_: launches and retirements
  std::map<std::string, int64_t> launched_at_;  // guarded by mu_: lease -> when its runner was up
  // guarded by mu_: lease -> (queued, received) of a JobStarted that came
  // before its launch returned (a runner takes its job as soon as it is up).
  std::map<std::string, std::pair<int64_t, int64_t>> started_early_;
  std::set<std::string> fresh_;          // guarded by mu_: completions read by this process, not yet tried
  // guarded by mu_: leases whose runner started a job not yet completed ->
  // when their lease was first seen closed (0 while open) (J1).
  std::map<std::string, int64_t> running_;
  std::set<std::string> deregistered_;   // guarded by mu_: runners gone by this process's word (J2, J6)
  std::set<std::string> retiring_;       // guarded by mu_: retirements in progress
  int64_t paused_until_ns_ = 0;          // guarded by mu_ (J7)
  std::string paused_why_;               // guarded by mu_
  TierStatus status_;                    // guarded by mu_: the session and pool fields of Status()
  struct Backoff {
    int64_t next_ns = 0;
    Nanos wait{0};
  };
  std::map<std::string, Backoff> settle_backoff_;  // guarded by mu_: job id -> when to try again (J3)
  struct NodeView {
    int64_t read_at_ns = 0;
    std::set<std::string> leaving;       // withdrawn or drained nodes
    bool sealed = false;                 // the deployment takes no new work
  };
  NodeView nodes_;                       // guarded by mu_: read at most every timing_.reconcile
  int64_t assigned_ = 0;                 // guarded by mu_: GitHub's latest totalAssignedJobs
  int64_t reconciled_at_ns_ = 0;         // guarded by mu_
  std::mutex reconcile_mu_;              // one reconcile at a time: the queue's, or the settler's timer
  bool settle_wake_ = false;             // guarded by mu_
  std::condition_variable_any settle_cv_;
  std::jthread thread_, settler_;
};

}  // namespace nodeplane::jobs
