// The SQL ledger: every operation of np_ledger_v1 as one transaction over a
// SOCI session, shared by the SQLite and PostgreSQL plugins (the Dialect
// holds their differences).
//
// Design notes:
//   L1. One writer session, guarded by a mutex, opens every write with the
//       dialect's exclusive begin (BEGIN IMMEDIATE; a transaction-scoped
//       advisory lock), so writes are serialized across processes too, and
//       escrow's read-measure-insert cannot interleave with another writer.
//   L2. Reads run on a small pool of read-only sessions, each in one
//       snapshot transaction, and never wait on the writer.
//   L3. "now" is the host's wall clock, read once per operation.
//   L4. Fence first: every lease write loads the row and compares epochs
//       before looking at anything else, so a reaped holder hears "fenced",
//       not "not found".
//   L5. Verdicts are thrown as LedgerError; a database failure surfaces as a
//       soci_error and becomes NP_UNAVAILABLE at the vtable.
//   L6. Every write that changes a node row's place in the fleet (a
//       registration, a node gone or withdrawn) bumps fleet.generation in
//       the same transaction. Escrow reads the generation inside its write
//       transaction and re-reads the placeable fleet only when it moved (or
//       the catalogue changed); otherwise it places on its copy from the
//       last read, which is exactly what the rows say: every change to them
//       moves the generation, and no writer runs between the check and the
//       placement (L1). At ten thousand nodes the re-read was most of a
//       launch's cost (docs/performance.md).
//   L7. A write never does the engine's housekeeping: a dialect that has
//       some (SQLite's WAL checkpoint) gets a Checkpointer, told of every
//       commit, which does it on its own session (checkpointer.h).
//   L8. Writes that queue while a transaction commits share the next one,
//       each in a savepoint of its own (group commit, group_commit.h): under
//       load one commit, so one fdatasync, serves many writes, and the order
//       and isolation of L1 are unchanged. A transaction that rolls back
//       drops the fleet copy (L6), which may have been read inside it.
//   L9. Leadership (sql_ledger_leadership.cpp): once this instance has won
//       a campaign, every Write() first reads the leadership row inside its
//       transaction and refuses (NP_FENCED) when the generation is no longer
//       the one it won. A takeover is itself a write, serialized with ours
//       (L1), so a write either commits before the takeover or sees it.
//       Terms are measured by the store's clock (Dialect::clock_ns).
//   L10. What open leases hold is kept between escrows as L6 keeps the
//       fleet (charge_tally.h): a trigger bumps fleet.charges whenever a
//       write changes it, escrow reads the counter inside its write
//       transaction and re-reads the open leases only when it moved; escrow
//       and release apply their own change to the copy. Without it each
//       escrow read every open lease of the fleet: a launch cost more the
//       more the fleet ran (docs/performance.md).
//   L11. Both copies (L6, L10) are dropped when the writer has connected
//       again. Each is trusted while its counter keeps the value read with
//       it, which holds only while counters never go back; a new connection
//       may be to another server (a failover to a standby that missed the
//       last writes) whose counters lag the rows read, and other writes
//       could bring them back to the values held over other rows.
// Thread-safe: every public method may be called concurrently.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "charge_tally.h"
#include "checkpointer.h"
#include "dialect.h"
#include "group_commit.h"
#include "nodeplane/np_ledger_v1.h"
#include "lease_rules.h"
#include "placement.h"
#include "plugin_time.h"

namespace nodeplane::ledger {

struct NodePolicy {
  std::string provider;
  std::vector<std::string> guest_os;
  uint32_t macos_vm_limit = 2;
  int64_t max_vcpu = 0;
  int64_t max_memory = 0;
};

struct Catalog {
  int64_t lease_ttl_ns = 90 * plugins::kSecondNs;
  int64_t max_vcpu = 0;
  int64_t max_memory = 0;
  bool spread = false;
  std::map<std::string, TierSpec> tiers;
  std::map<std::string, NodePolicy> nodes;
};

struct LeaseRow {
  std::string id, tier, node, target_node, phase;
  long long epoch = 0, vcpu = 0, memory = 0, requested_vcpu = 0, requested_memory = 0;
  std::string instance_type;
  long long run_id = 0, request_id = 0, created_at = 0, heartbeat_at = 0, expires_at = 0, held_at = 0;
  std::string guest_os, providers, chosen_provider, site, failure_reason, holder_incarnation;
  long long force_release = 0, deregistered = 0, macos_slot = 0;
  std::string image_cache, cache_generation, actions_cache;
};

struct NodeRow {
  std::string name, provider, site, incarnation;
  long long epoch = 0, total_vcpu = 0, total_memory = 0, last_seen_at = 0;
  long long live = 0, drained = 0, withdrawn = 0, dispatch_generation = 0, wire_version = 0;
  std::string release;
};

struct JobRow {
  std::string lease_id, tier, node, conclusion;
  long long run_id = 0, request_id = 0, queued_at = 0, assigned_at = 0, started_at = 0, finished_at = 0;
  std::string failure_reason, image_cache, cache_generation, actions_cache;
  std::string forge_result;  // the journal's result for the job the lease's runner ran
};

struct ForgeJobRow {
  std::string tier, job_id;
  long long request_id = 0;
  std::string repository, workflow_ref, display_name;
  long long workflow_run_id = 0, queued_at = 0, received_at = 0, acquired_at = 0, started_at = 0, completed_at = 0;
  std::string runner_name, lease_id, result;
  long long settled_at = 0;
  std::string event_name{};      // {}: appended, filled after the positional fields
  std::string request_labels{};  // one label per line
  long long runner_id = 0, assigned_at = 0, runner_assigned_at = 0, requeues = 0, settle_tried_at = 0;
};

struct BarrierRow {
  std::string id;
  long long generation = 0, requested_at = 0;
  std::string requested_by;
};

struct FenceRow {
  long long epoch = 0, dispatch = 0, wire_version = 0, live = 0;
};

struct EnrollmentRow {
  std::string name, fingerprint, csr_pem, cert_pem, state;
  long long requested_at = 0, decided_at = 0;
  std::string source;
};

struct TokenRow {
  std::string token_sha256, note;
  long long uses_remaining = 0, created_at = 0, expires_at = 0;
};

struct CertRow {
  std::string serial, node, source;
  long long not_after = 0, issued_at = 0, revoked = 0;
};

struct Registration {
  std::string name, provider, site, incarnation, release;
  int64_t total_vcpu = 0, total_memory = 0;
  int32_t wire_version = 0;
};

struct CacheObservation {
  std::string image_cache, cache_generation, actions_cache;
};

struct BarrierObservation {
  std::string node, barrier_id;
  int64_t fence_epoch = 0, fence_dispatch = 0;
  bool empty = false;
};

struct LeadershipRow {
  bool active = false;
  long long generation = 0, term_left_ns = 0;
  std::string holder, address;
};

struct Quiescence {
  bool sealed = true;
  int64_t generation = 0;
  std::vector<LeaseRow> outstanding;
};

class SqlLedger {
 public:
  struct Options {
    Dialect dialect;
    std::string connection;  // SOCI connection string for the dialect's backend
    unsigned readers = 4;
    // How long a node must have been seen empty before it counts as proved
    // empty for a compute barrier.
    int64_t barrier_grace_ns = kBarrierGraceNs;
    // How long a lease must have been quarantined before a node's inventory
    // that lacks it may free it.
    int64_t quarantine_grace_ns = kQuarantineGraceNs;
    // Held for the instance's life: what the engine needs kept while the
    // ledger is open (SQLite's one-process lock, replica_lock.h).
    std::shared_ptr<const void> guard;
  };

  // Opens the sessions and migrates the schema; throws LedgerError or soci_error.
  SqlLedger(const np_host_v1* host, Options options);
  ~SqlLedger();

  void SetCatalog(Catalog catalog);

  // Creation
  std::vector<LeaseRow> Escrow(const std::string& tier, int32_t want);
  void Assign(const std::string& id, int64_t epoch, int64_t run_id, int64_t request_id);
  // Escrow of one, Assign and BumpDispatch of the lease's node in one write;
  // empty when there is no headroom. `generation` is set only once a lease
  // is committed.
  std::vector<LeaseRow> EscrowForLaunch(const std::string& tier, int64_t run_id, int64_t request_id,
                                        int64_t* generation);

  // LeaseStore
  void Bind(const std::string& id, int64_t epoch, const std::string& node, const std::string& incarnation);
  void Advance(const std::string& id, int64_t epoch, int32_t to, const std::string& incarnation);
  void Heartbeat(const std::string& id, int64_t epoch);
  void MarkFailure(const std::string& id, int64_t epoch, const std::string& reason);
  void Resize(const std::string& id, int64_t epoch, const std::string& instance_type, int64_t vcpu, int64_t memory);
  void Release(const std::string& id, int64_t epoch, int32_t outcome);
  LeaseRow GetLease(const std::string& id);
  void RecordCacheObservation(const std::string& id, int64_t epoch, const CacheObservation& obs);
  void MarkDeregistered(const std::string& id);
  std::vector<std::string> LaunchedLeaseIds(const std::string& node);
  std::string EndedLeaseNode(const std::string& id);
  std::vector<std::string> QuarantinedLeaseIds(const std::string& node);

  // Registrar
  int64_t RegisterNode(const Registration& reg);
  void NodeGone(const std::string& node, int64_t epoch);
  void NodeWithdrawn(const std::string& node, int64_t epoch, const std::string& incarnation);
  void ForgetEveryNode();
  int64_t BumpDispatch(const std::string& node);
  int64_t ResolveQuarantineFor(const std::string& node, const std::vector<std::string>& running, int64_t epoch);
  bool SettleCompletionOnTerminalLease(const std::string& id, int64_t lease_epoch, int32_t outcome);

  // Admission and the compute barrier
  std::vector<BarrierRow> ComputeBarrierInForce();
  BarrierRow RequestComputeBarrier(const std::string& actor);
  void DropComputeBarrier(const std::string& barrier_id);
  std::pair<int64_t, bool> AdmissionGeneration();
  int64_t SetAdmission(bool sealed, int64_t expected_generation, const std::string& reason, const std::string& actor);
  Quiescence GetQuiescence();
  std::vector<FenceRow> NodeFenceOf(const std::string& node);
  void RecordBarrierObservation(const BarrierObservation& obs);
  void InvalidateBarrierRun(const std::string& node);
  void InvalidateEveryBarrierRun();
  bool ComputeClear();

  // Enrollments and join tokens
  void CreateJoinToken(const std::string& hash, int64_t uses, int64_t expires_at, const std::string& note);
  std::vector<TokenRow> ListJoinTokens();
  void RevokeJoinToken(const std::string& hash);
  EnrollmentRow RequestEnrollmentWithToken(const std::string& name, const std::string& fingerprint,
                                           const std::string& csr_pem, const std::string& token_hash);
  std::vector<EnrollmentRow> LookupEnrollment(const std::string& name);
  std::vector<EnrollmentRow> ListEnrollments(int32_t state);
  void DecideEnrollment(const std::string& name, const std::string& fingerprint, int32_t state,
                        const std::string& cert_pem);

  // Certificates and revocations
  void RecordIssuedCert(const CertRow& cert);
  void RecordRenewedCert(const CertRow& cert, const std::string& parent_serial, int64_t parent_issued_at);
  bool CertRevokedFor(const std::string& node, const std::string& serial, int64_t issued_at);
  void RevokeCert(const std::string& serial, const std::string& node, const std::string& reason);
  std::vector<std::string> RevokeNode(const std::string& node, const std::string& reason);
  std::vector<CertRow> ListCerts(const std::string& node);

  // Reaping and operator queries
  int64_t Reap();
  void ForceRelease(const std::string& id);
  std::vector<LeaseRow> ListLeases(const std::string& node);
  std::vector<NodeRow> ListNodes();
  std::vector<JobRow> JobForLease(const std::string& id);
  std::vector<JobRow> JobForRequest(int64_t request_id);  // the newest lease assigned it
  std::vector<JobRow> RecentJobs(int64_t since_ns, uint32_t limit);  // newest first

  // The job journal
  void RecordForgeJob(const ForgeJobRow& job);
  std::vector<ForgeJobRow> ListForgeJobs(const std::string& tier, int64_t since_ns, uint32_t limit);
  std::vector<ForgeJobRow> UnsettledForgeJobs(const std::string& tier, uint32_t limit);

  // Leadership (L9)
  LeadershipRow Campaign(const std::string& replica, const std::string& address, int64_t term_ns);
  void Resign();

 private:
  class ReadLease;  // a reader session checked out of the pool

  int64_t Now() const;
  std::shared_ptr<const Catalog> CatalogSnapshot() const;
  template <typename F>
  auto Write(F&& body);
  template <typename F>
  auto Read(F&& body);

  // Refuses a write of a leader whose generation has passed (L9).
  void CheckLeadership(Session& s) const;
  // Helpers that run inside a transaction on session `s`.
  LeaseRow LoadFenced(Session& s, const std::string& id, int64_t epoch);
  void CheckPlacement(Session& s, const Catalog& cat, const LeaseRow& lease, const std::string& node);
  void Archive(Session& s, const LeaseRow& lease, int32_t outcome, int64_t now);
  // The bodies of Escrow, Assign and BumpDispatch, so EscrowForLaunch can run
  // the three in one transaction.
  std::vector<LeaseRow> EscrowIn(Session& s, const std::shared_ptr<const Catalog>& catalog, const TierSpec& tier,
                                 int32_t want);
  void AssignIn(Session& s, const std::string& id, int64_t epoch, int64_t run_id, int64_t request_id, int64_t ttl);
  int64_t BumpDispatchIn(Session& s, const std::string& node);
  // The fleet escrow may place on, sorted by name, with `cat`'s node
  // policies applied; re-read only when `generation` moved (L6). Caller
  // holds write_mu_.
  const Fleet& PlaceableFleet(Session& s, const std::shared_ptr<const Catalog>& cat, int64_t generation);
  // What open leases hold; re-read only when `charges` moved (L10). Caller
  // holds write_mu_.
  const ChargeTally& HeldCharges(Session& s, int64_t charges);

  const np_host_v1* host_;
  Options options_;
  mutable std::shared_mutex catalog_mu_;
  std::shared_ptr<const Catalog> catalog_;  // replaced whole, never changed in place
  std::mutex write_mu_;
  std::unique_ptr<Session> writer_;
  struct FleetCopy {
    int64_t generation = -1;
    std::shared_ptr<const Catalog> catalog;
    Fleet hosts;
  } fleet_;              // guarded by write_mu_ (L6)
  ChargeTally charges_;  // guarded by write_mu_ (L10)
  uint64_t copies_connection_ = 0;  // guarded by write_mu_: the writer connection both were read on (L11)
  std::mutex readers_mu_;
  std::condition_variable readers_cv_;
  std::vector<std::unique_ptr<Session>> idle_readers_;
  std::unique_ptr<Checkpointer> checkpointer_;  // null when the dialect has no housekeeping (L7)
  std::atomic<int64_t> led_generation_{0};      // the generation this instance won; 0: not a leader (L9)
  std::string led_by_;                          // the replica name it won as; guarded by write_mu_
  std::unique_ptr<GroupCommit> writes_;         // every Write() (L8); last, so it goes first
};

}  // namespace nodeplane::ledger
