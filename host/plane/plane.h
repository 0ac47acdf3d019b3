// The Plane: what the control plane knows about each registered node, the
// commands waiting for nodes that long-poll for them, and what their results
// mean for a lease. Its Runner is the same launch/destroy interface an
// in-process runner offers, so a job source cannot tell the difference.
//
// It depends only on the ports (ledger, and through the wire the JIT source
// and cache policy): no HTTP, no plugin loader, no Asio here.
//
// Design notes:
//   P1. One mutex guards all in-memory state. No ledger call is made while
//       holding it: each operation reads what it needs, calls the ledger
//       outside, then re-checks its fences (the node's generation, epoch or
//       incarnation) when it takes the mutex again. The members it guards
//       are NP_GUARDED_BY(mu_) and every *Locked method NP_REQUIRES(mu_);
//       clang checks both in CI (NODEPLANE_THREAD_SAFETY).
//   P2. A command is queued, delivered to exactly one poll (FIFO, one per
//       poll answer), and answered exactly once: by the node's result, by an
//       abandonment (timeout, cancellation, expiry, withdrawal,
//       re-registration), never twice. Delivered-and-abandoned launches and
//       destroys leave a tombstone, so a late result is still understood.
//   P3. Poll completions and dispatch wake-ups happen outside the mutex.
//   P4. Time comes from the Clock only (WithClock), so tests drive expiry,
//       poll windows and command timeouts by advancing a fake clock.
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status.h"
#include "plane/clock.h"
#include "plane/errors.h"
#include "ports/ledger.h"
#include "protocol/messages.h"

namespace nodeplane::plane {

// The node protocol's messages are the Plane's vocabulary.
using protocol::Command;
using protocol::CommandKind;
using protocol::CommandKindName;
using protocol::CommandResult;
using protocol::Job;
using protocol::kMaxProtocol;
using protocol::kMinProtocol;
using protocol::RegisterRequest;
using protocol::RegisterResponse;
using protocol::TierShape;
using protocol::UpgradeSpec;

struct Site {
  std::string name;   // byte-exact
  std::string store;  // "ceph", "ebs-s3" or "" (any provider)
};

struct Tier {
  TierShape shape;
  std::vector<std::string> providers;  // preference order
};

struct PlaneOptions {
  std::string deployment;
  int64_t lease_ttl_ns = 90'000'000'000;
  int64_t poll_window_ns = 50'000'000'000;
  int64_t command_timeout_ns = 600'000'000'000;
  int64_t barrier_round_ns = 30'000'000'000;  // between rounds of asking the fleet (R20)
  std::vector<Site> sites;
  std::vector<Tier> tiers;
  const Clock* clock = nullptr;                  // null: the system clock
  ports::Registrar* registrar = nullptr;         // null: memory only (tests)
  ports::LeaseStore* leases = nullptr;           // launched leases at registration
  ports::BarrierStore* barrier = nullptr;        // null: never proves anything (R07)
  Logger* log = nullptr;
  // A backstop (R25): records of ended leases are forgotten when their node
  // reconciles or registers; this bounds what nodes that never return leave.
  size_t max_owners = 65536;
  size_t max_tombstones = 1024;                  // per node
};

// The process holding a lease's compute (R39: a snapshot, never proof of who answered).
struct RequestOwner {
  std::string node;
  std::string incarnation;
  bool current = false;
};

class Plane;

// A parked poll, for the wire: cancelled when the client goes away.
class PollTicket {
 public:
  using Callback = std::function<void(Result<std::optional<Command>>)>;

 private:
  friend class Plane;
  std::string node, incarnation;
  int64_t deadline = 0;
  Callback callback;
  bool finished = false;
};

class Runner {
 public:
  explicit Runner(Plane& plane) : plane_(plane) {}

  // Three outcomes (R43): NoNode (nothing sent; release safely), the node's
  // answer (Custody when it says it holds the compute), or Custody when it
  // took the command and said nothing before the command timeout. On
  // success and on custody `lease.node` names the node (where compute may
  // be running). `fenced_node` names the node whose dispatch fence the
  // caller's ledger write already advanced for this launch
  // (Ledger::EscrowForLaunch); any other node's is advanced here (R37).
  Status Launch(ports::Lease& lease, const Job& job, std::stop_token stop = {}, const std::string& fenced_node = {});
  // Addressed to the process that owns the request, else broadcast to every
  // live node (R41); idempotent; a partial destroy is a failure.
  Status Destroy(int64_t request_id, std::stop_token stop = {});
  Status DestroyCompleted(int64_t request_id, const std::string& job_result, std::stop_token stop = {});
  // A completion restored from durable state, reconciled with its recorded
  // host and lease rather than with whoever happens to be live (S20).
  Status DestroyCompletedBound(int64_t request_id, const std::string& job_result, const std::string& lease_id,
                               const std::string& node, int64_t lease_epoch, ports::Phase outcome,
                               std::stop_token stop = {});
  // Fleet housekeeping, broadcast (R44).
  Status Sweep(std::stop_token stop = {});
  Status Tend(std::stop_token stop = {});
  // A documented no-op: custody renewal happens on the node. Blocks until
  // `stop` is requested (R42).
  void KeepAlive(std::stop_token stop);
  // One node, never a broadcast (R45); returns when the updater started
  // (R46). Whether the node's version has the command is the caller's
  // check (R47).
  Status Upgrade(const std::string& node, const UpgradeSpec& spec, std::stop_token stop = {});

 private:
  Status DestroyImpl(int64_t request_id, const std::string& job_result, std::stop_token stop);
  Status Broadcast(CommandKind kind, std::stop_token stop);
  Plane& plane_;
};

class Plane {
 public:
  explicit Plane(PlaneOptions options);
  ~Plane();
  Plane(const Plane&) = delete;
  Plane& operator=(const Plane&) = delete;

  Runner& runner() { return runner_; }

  // ---- Registration ----
  // Discards what the host proved to a compute barrier; every registration
  // path calls it FIRST, before any check, even for one that is then
  // refused (R16, R17).
  Status ArrivingForRegistration(const std::string& node);
  // For an arrival whose identity cannot be read (R15).
  Status ArrivalWasUnreadable();
  // Everything after the arrival, for every path (the wire calls it once it
  // has authenticated the node, R18): the verdicts, the ledger's row, the
  // quarantine the node's inventory frees, and ownership of what the ledger
  // places on the node (R14).
  Result<RegisterResponse> CompleteRegistration(const RegisterRequest& req);
  // Whether a request comes from the current process (R23).
  Status CheckIncarnation(const std::string& node, const std::string& claimed) const;
  // Every request is evidence of life (R31).
  void Seen(const std::string& node, const std::string& incarnation);

  // ---- Polling and results ----
  // Answers through `callback` (once, on any thread) with a command, or,
  // when the poll window passes, "nothing to do": an empty optional, never a
  // null command (R28). The wire parks a request this way without holding
  // a thread.
  std::shared_ptr<PollTicket> PollAsync(const std::string& node, const std::string& incarnation,
                                        PollTicket::Callback callback);
  // The poll's client went away: forget the ticket without answering.
  void CancelPoll(const std::shared_ptr<PollTicket>& ticket);
  // A command handed to a poll whose client went away before the answer was
  // written: it goes back to the head of the node's queue, untaken, for the
  // next poll (P2). A command already answered or abandoned stays so.
  void GiveBack(const std::string& node, const std::string& incarnation, const std::string& command_id);
  // What a node made of a command (the seed's Result). TakeCustody for a launch the plane
  // stopped waiting for (R03).
  Status ReceiveResult(const std::string& node, const std::string& incarnation, const CommandResult& result);

  // ---- Ownership ----
  // Records who holds each lease the ledger places on `node` and that may
  // have compute (R14): the holder the ledger recorded, else `incarnation`.
  // Fills gaps only: a replacement never takes another process's records;
  // only the process that holds a lease, or an operator, settles it.
  void AdoptOwnership(const std::string& node, const std::string& incarnation,
                      const std::vector<ports::Lease>& leases);
  std::optional<RequestOwner> OwnerOfLease(const std::string& lease_id) const;
  std::optional<RequestOwner> OwnerOfRequest(int64_t request_id) const;
  // What the ledger says holds a request's compute, for a request the plane
  // keeps no record of (a restart forgot it): the node an open lease for it
  // is bound to, with the holder the ledger recorded. Empty when no open
  // lease may have compute.
  Result<std::optional<RequestOwner>> DurableOwnerOfRequest(int64_t request_id) const;
  void ForgetLease(const std::string& node, const std::string& lease_id);
  // The current process, or the one that was given the launch (R26).
  Status MayMutateLease(const std::string& node, const std::string& incarnation, const std::string& lease_id) const;
  // The same, saying whether it admitted by ownership (true) or by
  // membership alone (false), read in one snapshot (R19).
  Result<bool> AuthorizeLease(const std::string& node, const std::string& incarnation,
                              const std::string& lease_id) const;
  // Whether a request of `node`'s process `incarnation` may act on the lease
  // (the node wire's forOwnLease guard): the recorded owner; else, read from
  // the ledger in the same request, the holder it recorded (R14, R26), or,
  // admitted by membership alone, the current process of the node the
  // ledger places the lease on (R19: kSuperseded when it places it
  // elsewhere); for an ended lease, the node its job was attributed to
  // (R25). Blocks on the ledger.
  Status AdmitLeaseRequest(const std::string& node, const std::string& incarnation,
                           const std::string& lease_id) const;
  // Frees quarantine the host's inventory proves gone, adopts what it runs,
  // and forgets the records of the node's leases that have ended (R25, R29).
  Result<int64_t> ReconcileInventory(const std::string& node, const std::string& incarnation,
                                     const std::vector<std::string>& running);
  // The tier of the launch this process is executing for `lease_id`, or
  // NotEntitled (R24).
  Result<std::string> EntitledToLaunch(const std::string& node, const std::string& incarnation,
                                       const std::string& lease_id) const;

  // ---- Liveness ----
  // Expires silent nodes every half silence window until `stop` (R32).
  void Watch(std::stop_token stop);
  // One Watch round: forgets nodes silent for four windows, answering what
  // was queued for them, and records NodeGone in the ledger.
  void ExpireSilentNodes();
  // An operator took the node's credentials back (R40, S11): it is
  // forgotten at once, as expiry forgets a node (queued commands answered
  // "nothing started", parked polls "unregistered", commands in flight
  // tombstoned), and the ledger is told it is gone, so escrow stops placing
  // on it now rather than when it falls silent. Owners stay, as on expiry:
  // its leases are still its to release.
  void Evict(const std::string& node, const std::string& why);
  // The current process says it will not poll again (R33–R36).
  Status Withdraw(const std::string& node, const std::string& incarnation);
  // Asks the fleet for its inventory while a barrier is requested and the
  // ledger is quiescent (R20, R21).
  void BarrierLoop(std::stop_token stop);
  std::vector<std::string> Nodes() const;
  int64_t poll_window_ns() const;
  // Stops dispatching: queued commands are answered "nothing started",
  // parked polls "nothing to do", and every dispatch still waiting for an
  // answer stops waiting (a launch taken by a node is custody). Bounds a
  // shutdown by nothing but the ledger calls in flight. Idempotent.
  void Shutdown();

  // What an operator's metrics show, read in one snapshot.
  struct Stats {
    size_t nodes = 0;
    size_t queued_commands = 0;
    size_t in_flight_commands = 0;
    size_t parked_polls = 0;
    size_t lease_owners = 0;
  };
  Stats GetStats() const;
  // How long launches waited from being queued until a node took them.
  const Histogram& dispatch_latency() const { return dispatch_latency_; }
  // When each registered node was last heard from (clock ns): fresher than
  // the ledger's record, which is written at registration.
  std::map<std::string, int64_t> LastSeen() const;

  // A tier whose runner GitHub refused as outdated (the runner's exit 7) is
  // paused: no launch is placed for it (each refused, saying why) until an
  // operator resumes it, having made its image current. Held in memory: a
  // restarted control plane launches again, and the next outdated runner
  // pauses the tier again.
  void PauseTier(const std::string& tier, const std::string& why);
  bool ResumeTier(const std::string& tier);          // false: it was not paused
  std::map<std::string, std::string> PausedTiers() const;  // tier -> why

 private:
  friend class Runner;
  friend class PlaneTestPeer;  // tests/support: the state tests synchronise on

  struct Pending;
  struct Tombstone {
    CommandKind kind;
    std::string taken_by;
    int64_t request_id;
    std::string lease_id;
  };
  struct NodeState;
  struct Completion {
    std::shared_ptr<PollTicket> ticket;
    ::nodeplane::Result<std::optional<Command>> answer;
  };
  using Completions = std::vector<Completion>;

  // Everything below runs with mu_ held unless it says otherwise.
  NodeState* Find(const std::string& node) NP_REQUIRES(mu_);
  const NodeState* Find(const std::string& node) const NP_REQUIRES(mu_);
  bool SupersededLocked(const NodeState& n, const std::string& incarnation) const NP_REQUIRES(mu_);
  void TakeLocked(NodeState& n, const std::string& incarnation, std::optional<Command>& out) NP_REQUIRES(mu_);
  void AnswerLocked(const std::shared_ptr<Pending>& p, CommandResult r) NP_REQUIRES(mu_);
  void TombstoneLocked(const std::string& node, const std::shared_ptr<Pending>& p) NP_REQUIRES(mu_);
  void ResolveInFlightLocked(NodeState& n, const std::string& why) NP_REQUIRES(mu_);
  void FailQueuedLocked(NodeState& n, const std::string& why) NP_REQUIRES(mu_);
  void ReleaseWaitersLocked(NodeState& n, Completions& done, ::nodeplane::Result<std::optional<Command>> answer)
      NP_REQUIRES(mu_);
  void WakeOneLocked(NodeState& n, Completions& done) NP_REQUIRES(mu_);
  void ExpireStaleLocked(Completions& done) NP_REQUIRES(mu_);
  struct OwnerRecord;
  using OwnerMap = std::map<std::string, OwnerRecord>;
  // Returns the record's sequence number.
  uint64_t RecordOwnerLocked(const std::string& lease_id, RequestOwner owner, int64_t request_id) NP_REQUIRES(mu_);
  // Every record leaves owners_ through here, which keeps the indexes by node
  // and by request in step.
  OwnerMap::iterator EraseOwnerLocked(OwnerMap::iterator it) NP_REQUIRES(mu_);
  // `inventory`, when known, is what the registering process runs: a lease
  // it names is its own even where the ledger recorded another holder.
  void AdoptLocked(const std::string& node, const std::string& incarnation, const std::vector<ports::Lease>& leases,
                   const std::set<std::string>* inventory) NP_REQUIRES(mu_);
  // Drops the records of `node`'s leases that are not in `open` (the ledger's
  // open leases on it, read after `before` was the newest record): those
  // leases ended, by a release the plane did not see, the reaper, a freed
  // quarantine or an operator (R25).
  void ForgetEndedLocked(const std::string& node, const std::vector<ports::Lease>& open, uint64_t before)
      NP_REQUIRES(mu_);
  void ForgetForRequestLocked(int64_t request_id) NP_REQUIRES(mu_);
  ::nodeplane::Result<std::string> PickLocked(const ports::Lease& lease, const Tier** tier) NP_REQUIRES(mu_);
  const Tier* TierOf(const std::string& label) const;
  int64_t StaleAfterLocked() const NP_REQUIRES(mu_) { return 4 * poll_window_ns_; }
  static void Fire(Completions& done);  // without mu_

  // Dispatch (called by the Runner without mu_): queue `cmd` for `node`
  // and wait for its answer, the caller's stop, or the command timeout.
  struct Dispatched {
    std::optional<CommandResult> result;  // the node's (or the plane's) answer
    bool delivered = false;               // a node took the command
    bool queued = false;                  // it reached the queue at all
    std::string taken_by;
    bool stopped = false;                 // abandoned because the caller or the plane stopped
    ::nodeplane::Status error;            // timeout, cancellation, refusal to queue
  };
  Dispatched Dispatch(const std::string& node, Command cmd, const std::string& expected_provider,
                      const std::string& expected_incarnation, int64_t expected_epoch, std::stop_token stop);
  std::vector<std::string> LiveNodesLocked() const NP_REQUIRES(mu_);
  std::vector<std::string> BarrierTargets() const;  // sorted
  // Expires silent nodes, then runs `body()` with mu_ held; answers what the
  // expiry released once the mutex is free. Returns body's result. The body
  // declares NP_REQUIRES(mu_) and is checked itself; the analysis cannot see
  // that the Runner's `plane_.mu_` is this `mu_`, so this one is not.
  template <typename F>
  auto AfterExpiry(F&& body) NP_NO_THREAD_SAFETY_ANALYSIS {
    Completions done;
    MutexLock lock(mu_);
    ExpireStaleLocked(done);
    auto result = body();
    lock.Unlock();
    Fire(done);
    return result;
  }
  void RecordGone(std::vector<std::pair<std::string, int64_t>> gone);
  Status AskNode(const std::string& node, const std::string& barrier_id, std::stop_token stop);
  // The open leases the ledger charges to `node`; none without a ledger.
  Result<std::vector<ports::Lease>> LeasesOn(const std::string& node) const;

  PlaneOptions opts_;
  SystemClock system_clock_;
  const Clock* clock_;
  Logger fallback_log_{LogLevel::kError};
  Logger* log_;
  Runner runner_{*this};

  mutable Mutex mu_;
  std::condition_variable results_cv_;  // a dispatched command was answered
  std::condition_variable timer_cv_;    // a poll ticket was parked
  int64_t poll_window_ns_ NP_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::unique_ptr<NodeState>> nodes_ NP_GUARDED_BY(mu_);
  // A lower bound of every node's last_seen, as of the last sweep: no node
  // can be stale before seen_floor_ + StaleAfterLocked(), so until then
  // ExpireStaleLocked returns at once instead of walking the fleet on every
  // launch. It stays a bound because last_seen only moves forward and a new
  // node is seen when it registers.
  int64_t seen_floor_ NP_GUARDED_BY(mu_) = 0;
  std::unordered_map<std::string, std::deque<std::pair<std::string, Tombstone>>> tombstones_ NP_GUARDED_BY(mu_);
  struct OwnerRecord {
    RequestOwner owner;
    int64_t request_id = 0;
    uint64_t seq = 0;
  };
  OwnerMap owners_ NP_GUARDED_BY(mu_);  // lease id -> who holds its compute
  // The same records' lease ids by node and by request (when it has one): a
  // registration forgets its node's ended leases, and a destroy finds its
  // request's holder, without walking the fleet's records (up to
  // max_owners) under mu_.
  std::unordered_map<std::string, std::set<std::string>> owned_by_node_ NP_GUARDED_BY(mu_);
  std::unordered_map<int64_t, std::set<std::string>> owned_by_request_ NP_GUARDED_BY(mu_);
  std::deque<std::pair<uint64_t, std::string>> owner_order_ NP_GUARDED_BY(mu_);  // oldest first, for the bound (R25)
  uint64_t owner_seq_ NP_GUARDED_BY(mu_) = 0;
  std::multimap<int64_t, std::weak_ptr<PollTicket>> poll_deadlines_ NP_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, int64_t>> pending_gone_ NP_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<std::mutex>> registration_locks_ NP_GUARDED_BY(mu_);
  bool stopping_ NP_GUARDED_BY(mu_) = false;
  std::map<std::string, std::string> paused_tiers_ NP_GUARDED_BY(mu_);  // tier -> why
  Histogram dispatch_latency_;
  std::jthread poll_timer_;
};

}  // namespace nodeplane::plane
