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
//   J1. The deficit is computed from the ledger's open leases of the tier,
//       never from memory: a restart, a redelivered message or a lost
//       launch can never launch twice or forget a runner. A lease escrowed
//       but never launched (a crash in between) is open until the reaper
//       ends it, and only then is replaced.
//   J2. A message is acknowledged only after what it asked for is done or
//       durable: completions handed to the fleet, offers acquired, the
//       deficit escrowed and assigned in the ledger.
//   J3. JobCompleted settles the lease its runner name carries, with
//       GitHub's result (DestroyCompleted, then MarkDeregistered: an
//       ephemeral runner leaves GitHub by itself after its job).
//   J4. A 409 session means another holder (perhaps this host before a
//       restart) may still be alive: the listener waits and tries again,
//       forever; jobs wait queued at GitHub meanwhile. The session is
//       closed on shutdown, so a successor need not wait for it to expire.
//   J5. A message that cannot be decoded is left for redelivery
//       kMaxUndecodable times, then acknowledged and counted.
//
// Thread-safe. One thread of its own; launches run on threads of their own,
// at most the tier's ceiling at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/lease_events.h"
#include "common/log.h"
#include "plane/plane.h"
#include "ports/jobs.h"
#include "ports/ledger.h"

namespace nodeplane::jobs {

struct ScaleSetTier {
  std::string tier, target, scale_set, runner_group;
  std::vector<std::string> labels;
  int64_t max_runners = 0;  // the ceiling advertised to GitHub
};

struct ListenerTiming {
  Nanos poll = std::chrono::seconds(50);           // a long poll's bound
  Nanos retry_min = std::chrono::seconds(1);       // after an outage, doubling
  Nanos retry_max = std::chrono::seconds(60);
  Nanos conflict_wait = std::chrono::seconds(30);  // a held session is asked again this often
};

struct IntakeCounters {
  std::atomic<uint64_t> launched{0}, launch_failed{0}, completed_succeeded{0}, completed_failed{0};
  std::atomic<uint64_t> acquire_failed{0}, undecodable{0}, sessions_open{0};
};

class ScaleSetListener {
 public:
  static constexpr int kMaxUndecodable = 5;

  // Everything is borrowed and must outlive the listener.
  ScaleSetListener(ScaleSetTier tier, std::string owner, ports::JobSource& source, ports::LeaseStore& leases,
                   ports::LedgerAdmin& admin, plane::Runner& runner, Logger& log, LeaseEvents* events,
                   IntakeCounters& counters, ListenerTiming timing = {});
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
  // One message's work (J2).
  void Handle(uint64_t session, const ports::QueueMessage& m, std::stop_token stop);
  void Complete(const ports::QueuedJob& j, std::stop_token stop);
  void Reconcile(int64_t assigned, std::stop_token stop);
  void Launch(ports::Lease lease, std::stop_token stop);

  ScaleSetTier tier_;
  std::string owner_;
  ports::JobSource& source_;
  ports::LeaseStore& leases_;
  ports::LedgerAdmin& admin_;
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
  std::jthread thread_;
};

}  // namespace nodeplane::jobs
