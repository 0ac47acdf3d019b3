// The job intake for one tier: the tier's runner scale set, read through
// its target's job source (ports/jobs.h), turned into leases and launches.
//
// THE MODEL. GitHub assigns queued jobs to the scale set; a runner of the
// scale set (a JIT registration, ephemeral) takes whichever assigned job is
// next, runs it and deregisters. So the intake keeps as many runners as
// GitHub has jobs assigned (totalAssignedJobs, which counts running ones),
// up to the tier's ceiling: each runner is one lease, escrowed, assigned a
// request id of its own and launched; its runner name (np-<lease>) ties
// every later message back to the lease. This is how GitHub.com delivers
// work (JobAssigned with runnerRequestId 0, no offer to acquire) and how
// ARC sizes its pool; offers (JobAvailable, GHES) are acquired first.
//
// Invariants:
//   J1. The deficit is computed from durable state, never from memory: the
//       ledger's open leases of the tier, and the journal's jobs a runner
//       started whose completion has not come yet (GitHub still counts
//       them assigned though their runner may be gone; counting their
//       leases too is what keeps a stale statistic from launching a runner
//       no job is left for). A restart, a redelivered message or a lost
//       launch can never launch twice or forget a runner. A lease escrowed
//       but never launched (a crash in between) is open until the reaper
//       ends it, and only then is replaced.
//   J2. A message is acknowledged only after what it said is in the job
//       journal (ports::JobJournal) and what it asked for is done or
//       durable: offers acquired, the deficit escrowed in the ledger. A crash at any point leaves the message (redelivered) or
//       the journal entry, never neither.
//   J3. A completion is settled from the journal, not from the message:
//       the lease its runner name carries ends with GitHub's result, and
//       the entry is marked settled only after. Until then it is retried,
//       through every restart. A completion this process read settles with
//       DestroyCompleted (the holder found by its request); one restored
//       from the journal with DestroyCompletedBound (the recorded node and
//       lease, S20); a lease already ended only has its verdict corrected
//       (SettleCompletionOnTerminalLease, S17). After a destroy the lease
//       is read again: it may have ended otherwise meanwhile (its node's
//       inventory freeing a quarantine), which is corrected the same way,
//       or not yet, which leaves the entry owed. Then MarkDeregistered: an
//       ephemeral runner leaves GitHub by itself after its job.
//   J4. A 409 session means another holder (perhaps this host before a
//       restart) may still be alive: the listener waits and tries again,
//       forever; jobs wait queued at GitHub meanwhile. The session is
//       closed on shutdown, so a successor need not wait for it to expire.
//   J5. A message that cannot be decoded is left for redelivery
//       kMaxUndecodable times, then acknowledged and counted.
//
// Thread-safe. Two threads of its own (the queue, the settler); launches run
// on threads of their own, at most the tier's ceiling at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
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
  std::vector<std::string> labels;
  int64_t max_runners = 0;  // the ceiling advertised to GitHub
  Nanos session_retry = std::chrono::seconds(30);  // a held session is asked again this often (J4)
};

struct ListenerTiming {
  Nanos poll = std::chrono::seconds(50);           // a long poll's bound
  Nanos retry_min = std::chrono::seconds(1);       // after an outage, doubling
  Nanos retry_max = std::chrono::seconds(60);
  Nanos settle_retry = std::chrono::seconds(5);    // an unsettled completion is tried again this often
};

struct IntakeCounters {
  std::atomic<uint64_t> launched{0}, launch_failed{0}, completed_succeeded{0}, completed_failed{0};
  std::atomic<uint64_t> acquire_failed{0}, undecodable{0}, sessions_open{0}, settle_failed{0};
  // Message received -> the node answered that the runner it asked for is
  // up: the control plane's share of a job's queue time.
  Histogram plane_share{Histogram::kLatency};
  // Queued at the forge -> a runner was up for it (its runner's launch, or
  // the job's arrival when an idle runner was waiting) -> a runner took it.
  Histogram queued_to_launched{Histogram::kWait}, queued_to_started{Histogram::kWait};
};

class ScaleSetListener {
 public:
  static constexpr int kMaxUndecodable = 5;

  // Everything is borrowed and must outlive the listener.
  ScaleSetListener(ScaleSetTier tier, std::string owner, ports::JobSource& source, ports::Ledger& ledger,
                   plane::Runner& runner, Logger& log, LeaseEvents* events, IntakeCounters& counters,
                   ListenerTiming timing = {});
  ~ScaleSetListener();  // Stop()
  ScaleSetListener(const ScaleSetListener&) = delete;
  ScaleSetListener& operator=(const ScaleSetListener&) = delete;

  // Cancels the parked poll, waits for launches, closes the session.
  void Stop();

  // The scale set's id once found or created; 0 before.
  int64_t scale_set_id() const { return scale_set_id_.load(); }
  const ScaleSetTier& tier() const { return tier_; }

 private:
  void Run(std::stop_token stop);
  bool Wait(std::stop_token stop, Nanos d);
  // One message's work (J2); false when it must not be acknowledged yet.
  bool Handle(uint64_t session, const ports::QueueMessage& m, int64_t received_ns, std::stop_token stop);
  // acquired_ns: when the intake acquired the job's offer, else 0.
  Status Journal(const ports::QueuedJob& j, int64_t received_ns, int64_t acquired_ns);
  void Reconcile(int64_t assigned, int64_t received_ns, std::stop_token stop);
  void Launch(ports::Lease lease, int64_t received_ns, std::stop_token stop);
  // The settler's thread (J3).
  void SettleOwed(std::stop_token stop);
  Status Settle(const ports::ForgeJob& j, bool fresh, std::stop_token stop);

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

  std::mutex mu_;
  std::condition_variable_any cv_;
  uint64_t session_ = 0;                 // guarded by mu_: Stop cancels it
  std::map<int64_t, int> undecodable_;   // message id -> deliveries seen
  struct Launching {
    std::shared_ptr<std::atomic<bool>> done;
    std::jthread thread;
  };
  std::vector<Launching> launches_;      // guarded by mu_
  std::map<std::string, int64_t> launched_at_;  // guarded by mu_: lease -> when its runner was up
  std::set<std::string> fresh_;          // guarded by mu_: completions read by this process, not yet tried
  std::set<std::string> running_;        // guarded by mu_: leases whose job started, not completed (J1)
  bool settle_wake_ = false;             // guarded by mu_
  std::condition_variable_any settle_cv_;
  std::jthread thread_, settler_;
};

}  // namespace nodeplane::jobs
