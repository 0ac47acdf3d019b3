// The ledger ports: what the Plane, the wire and the admin API ask of the
// durable ledger, as C++ interfaces (the seed's LeaseStore, Registrar,
// BarrierStore, Enrollments and Revocations, plus lease creation, reaping and
// the operator's queries).
//
// Implemented by loader/ledger_adapter.h over any nodeplane.ledger plugin,
// and by in-memory fakes in tests. Every method may block and is thread-safe;
// callers on an I/O thread hand the call to a worker. Failures are Status
// values with a verdict (ports/verdict.h: Is(s, Verdict::kFenced), ...) for
// callers that branch on why. "Not found" results of lookups are
// std::optional, not errors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "ports/verdict.h"

namespace nodeplane::ports {

// Stable numbers, equal to the ABI's NP_PHASE_*.
enum class Phase : int32_t {
  kCapacity = 1,
  kAssigned = 2,
  kLaunching = 3,
  kOnline = 4,
  kBusy = 5,
  kCustody = 6,
  kTeardown = 7,
  kQuarantine = 8,
  kDone = 9,
  kFailed = 10,
};
const char* PhaseName(Phase p);
// Launching, online, busy, custody or teardown: its node was told to start
// compute and has not said it is gone (the ledger's LaunchedLeaseIds).
bool Launched(Phase p);

struct Lease {
  std::string id, tier, node, target_node;
  Phase phase = Phase::kCapacity;
  int64_t epoch = 0, vcpu = 0, memory = 0, requested_vcpu = 0, requested_memory = 0;
  std::string instance_type;
  int64_t run_id = 0, request_id = 0;
  int64_t created_at_ns = 0, heartbeat_at_ns = 0, expires_at_ns = 0, held_at_ns = 0;
  std::string guest_os, providers, chosen_provider, site, failure_reason, holder_incarnation;
  bool force_release = false, deregistered = false, macos_slot = false;
  bool operator==(const Lease&) const = default;
};

// The one spelling of a certificate serial the ledger uses (lower-case hex,
// no leading zeros), from any spelling an operator pastes ("serial=0A1B",
// "0a:1b", "0x0A1B"); empty when `raw` is not a serial. The ledger's own
// rule (np_ledger_v1.h, SERIALS), so the host and every store agree.
std::optional<std::string> NormalizeSerial(const std::string& raw);

// A lease's acceptable providers, in preference order (stored as "a,b").
std::vector<std::string> ProvidersOf(std::string_view providers);

struct NodeRegistration {
  std::string name, provider, site, incarnation, release;
  int64_t total_vcpu = 0, total_memory = 0;
  int32_t wire_version = 0;
};

struct Node {
  std::string name, provider, site, incarnation;
  int64_t epoch = 0, total_vcpu = 0, total_memory = 0, last_seen_at_ns = 0, dispatch_generation = 0;
  int32_t wire_version = 0;
  bool live = false, drained = false, withdrawn = false;
};

struct NodeFence {
  int64_t epoch = 0, dispatch = 0;
  int32_t wire_version = 0;
  bool live = false;  // carried, not part of the fence
};

// A lease escrowed and assigned for one launch, in one write with the
// advance of its node's dispatch fence (R37).
struct EscrowedLaunch {
  Lease lease;                      // assigned, placed on lease.target_node
  int64_t dispatch_generation = 0;  // lease.target_node's fence, already advanced
};

struct ComputeBarrier {
  std::string id;
  int64_t generation = 0, requested_at_ns = 0;
  std::string requested_by;
};

struct BarrierObservation {
  std::string node, barrier_id;
  int64_t fence_epoch = 0, fence_dispatch = 0;
  bool empty = false;
};

struct Quiescence {
  bool sealed = false;
  int64_t generation = 0;
  std::vector<Lease> outstanding;
  bool Quiet() const { return sealed && outstanding.empty(); }
};

enum class EnrollmentState : int32_t { kPending = 1, kApproved = 2, kDenied = 3 };
const char* EnrollmentStateName(EnrollmentState s);  // pending, approved, denied

struct Enrollment {
  std::string name, fingerprint, csr_pem, cert_pem;
  EnrollmentState state = EnrollmentState::kPending;
  int64_t requested_at_ns = 0, decided_at_ns = 0;
  std::string source;
};

struct JoinToken {
  std::string token_sha256, note;
  int64_t uses_remaining = 0, created_at_ns = 0, expires_at_ns = 0;
};

struct IssuedCert {
  std::string serial, node, source;
  int64_t not_after_ns = 0, issued_at_ns = 0;
  bool revoked = false;
};

struct Job {
  std::string lease_id, tier, node;
  int64_t run_id = 0, request_id = 0;
  std::optional<Phase> conclusion;  // absent while the job is in flight
  int64_t queued_at_ns = 0, assigned_at_ns = 0, started_at_ns = 0, finished_at_ns = 0;
  std::string failure_reason, image_cache, cache_generation, actions_cache;
  // The forge's verdict on the job this lease's runner ran (the journal's
  // result), beside the lease's own: an ephemeral runner exits 0 whatever
  // its job's result, so only the forge can say the job failed.
  std::string forge_result{};  // {}: readers fill it after the positional fields
};

// A forge's job as the job intake journals it (np_forge_job_v1): keyed by
// tier and job_id; times are wall-clock ns, 0 until known.
struct ForgeJob {
  std::string tier, job_id;
  int64_t request_id = 0;  // 0 when the forge assigned the job directly
  std::string repository, workflow_ref, display_name;
  int64_t workflow_run_id = 0;
  int64_t queued_at_ns = 0, received_at_ns = 0, acquired_at_ns = 0, started_at_ns = 0, completed_at_ns = 0;
  std::string runner_name, lease_id, result;
  int64_t settled_at_ns = 0;  // when the lease was settled with the result
  std::string event_name{};                   // push, pull_request, schedule, ...
  std::vector<std::string> request_labels{};  // the job's runs-on
  int64_t runner_id = 0;                    // the forge's id of the runner that took it
  // When the forge last assigned it to the scale set (a later assignment
  // after a cancelled one re-opens the job), and gave it to a runner.
  int64_t assigned_at_ns = 0, runner_assigned_at_ns = 0;
  int64_t requeues = 0;            // assignments the forge ended before any runner took the job
  int64_t settle_tried_at_ns = 0;  // the host's last attempt to settle it that failed
};

struct CacheObservation {
  std::string image_cache, cache_generation, actions_cache;
};

// The catalogue the ledger places against (from the config's tiers, nodes
// and limits).
struct TierSpec {
  std::string label;
  int64_t vcpu = 0, memory = 0;
  std::vector<std::string> providers;
  std::string guest_os = "linux", node, site;
  uint32_t max_concurrent = 0, reserved = 0;
};

struct NodePolicy {
  std::string name, provider;
  std::vector<std::string> guest_os;
  uint32_t macos_vm_limit = 2;
  int64_t max_vcpu = 0, max_memory = 0;
};

struct Catalog {
  int64_t lease_ttl_ns = 0, max_vcpu = 0, max_memory = 0;
  bool spread = false;
  std::vector<TierSpec> tiers;
  std::vector<NodePolicy> nodes;
};

// Contracts below are one line each; the full text (every verdict, every
// idempotence rule) is the ABI's, np_ledger_v1.h, slot by slot. "Fenced"
// means a stale `epoch` is Verdict::kFenced.
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  // Binds the lease to its escrowed node, recording `incarnation` as holder; the same node again is Ok.
  virtual Status Bind(const std::string& lease, int64_t epoch, const std::string& node,
                      const std::string& incarnation) = 0;
  // Moves the lease along a legal edge (kBadTransition otherwise); a terminal phase archives the job.
  virtual Status Advance(const std::string& lease, int64_t epoch, Phase to, const std::string& incarnation) = 0;
  // Extends expiry by the TTL; kForceRelease when an operator asked for the lease back.
  virtual Status Heartbeat(const std::string& lease, int64_t epoch) = 0;
  // Records why an open lease will fail; the first reason wins (another is kConflict).
  virtual Status MarkFailure(const std::string& lease, int64_t epoch, const std::string& reason) = 0;
  // Changes a remote lease's shape; kNoCapacity when it does not fit.
  virtual Status Resize(const std::string& lease, int64_t epoch, const std::string& instance_type, int64_t vcpu,
                        int64_t memory) = 0;
  // Ends the lease with kDone or kFailed, freeing its capacity; the same outcome again is Ok.
  virtual Status Release(const std::string& lease, int64_t epoch, Phase outcome) = 0;
  // One open lease; a missing or ended one is kNotFound.
  virtual Result<Lease> GetLease(const std::string& lease) = 0;
  // Records what the runner found cached, first value of each column kept; fenced.
  virtual Status RecordCacheObservation(const std::string& lease, int64_t epoch, const CacheObservation& obs) = 0;
  // Marks the lease's GitHub registration removed; unfenced, and Ok for a missing lease.
  virtual Status MarkDeregistered(const std::string& lease) = 0;
  // Leases bound to `node` that may have compute (launching, online, busy, custody, teardown).
  virtual Result<std::vector<std::string>> LaunchedLeaseIds(const std::string& node) = 0;
  // The node an ended lease's job ran on ("" when unattributed); kNotFound without history.
  virtual Result<std::string> EndedLeaseNode(const std::string& lease) = 0;
  // Quarantined leases charged to `node`, whatever their age.
  virtual Result<std::vector<std::string>> QuarantinedLeaseIds(const std::string& node) = 0;
  // Every open lease charged to `node` (bound there, or escrowed for it);
  // "" for every open lease.
  virtual Result<std::vector<Lease>> ListLeases(const std::string& node) = 0;
  // The job record of a lease, readable after the lease ended.
  virtual Result<std::optional<Job>> JobForLease(const std::string& lease) = 0;
};

class Registrar {
 public:
  virtual ~Registrar() = default;
  // Records a registration and returns the node's new epoch (+1 each time); a blank incarnation over a recorded one is kConflict.
  virtual Result<int64_t> RegisterNode(const NodeRegistration& reg) = 0;
  // Marks the node unreachable; a stale epoch is Ok and changes nothing.
  virtual Status NodeGone(const std::string& node, int64_t epoch) = 0;
  // The node asked to leave (fenced on epoch and incarnation: kWithdrawalStale); releases no lease.
  virtual Status NodeWithdrawn(const std::string& node, int64_t epoch, const std::string& incarnation) = 0;
  // A plane that has just started marks every node unreachable.
  virtual Status ForgetEveryNode() = 0;
  // Advances the node's dispatch fence before a launch is handed to it; 0 for an unknown node.
  virtual Result<int64_t> BumpDispatch(const std::string& node) = 0;
  // Frees quarantined leases of `node` its inventory `running` shows gone, at its current epoch; how many.
  virtual Result<int64_t> ResolveQuarantineFor(const std::string& node, const std::vector<std::string>& running,
                                               int64_t epoch) = 0;
  // Corrects an ended lease's verdict from a completion; never ends an open lease (false).
  virtual Result<bool> SettleCompletionOnTerminalLease(const std::string& lease, int64_t lease_epoch,
                                                       Phase outcome) = 0;
};

class BarrierStore {
 public:
  virtual ~BarrierStore() = default;
  // The durable barrier request, if one exists.
  virtual Result<std::optional<ComputeBarrier>> ComputeBarrierInForce() = 0;
  // Drops the barrier if its id is still `id`, with every run.
  virtual Status DropComputeBarrier(const std::string& id) = 0;
  // The admission generation, and whether the deployment is sealed at it (unreadable counts as sealed).
  virtual Result<std::pair<int64_t, bool>> AdmissionGeneration() = 0;
  // Admission and every open lease, oldest first, from one snapshot.
  virtual Result<Quiescence> GetQuiescence() = 0;
  // The fence an observation must be taken against; empty for an unknown node.
  virtual Result<std::optional<NodeFence>> NodeFenceOf(const std::string& node) = 0;
  // Records one fenced answer; a stale fence or a non-empty node ends that node's run.
  virtual Status RecordBarrierObservation(const BarrierObservation& obs) = 0;
  // Ends the node's barrier run (it must be observed empty twice again).
  virtual Status InvalidateBarrierRun(const std::string& node) = 0;
  // Ends every node's barrier run.
  virtual Status InvalidateEveryBarrierRun() = 0;
  // As Registrar::ResolveQuarantineFor: the barrier's path to the same rule.
  virtual Result<int64_t> ResolveQuarantineFor(const std::string& node, const std::vector<std::string>& running,
                                               int64_t epoch) = 0;
};

class Enrollments {
 public:
  virtual ~Enrollments() = default;
  // Records the request and spends one use of the token, in one transaction; the same name and
  // fingerprint again returns the row unspent. kBadJoinToken, kEnrollmentConflict. The token
  // crosses as its SHA-256 (hex of the lower-cased, trimmed secret): the secret never reaches the store.
  virtual Result<Enrollment> RequestEnrollmentWithToken(const std::string& name, const std::string& fingerprint,
                                                        const std::string& csr_pem,
                                                        const std::string& token_sha256) = 0;
  // The enrollment named `name`, if any.
  virtual Result<std::optional<Enrollment>> LookupEnrollment(const std::string& name) = 0;
};

class Revocations {
 public:
  virtual ~Revocations() = default;
  // Whether a certificate is revoked: by serial, or issued before the node's cut-off.
  virtual Result<bool> CertRevokedFor(const std::string& node, const std::string& serial, int64_t issued_at_ns) = 0;
  // CertRevokedFor's answer when it can be had without blocking (a store
  // that remembers answers); empty when only CertRevokedFor can tell.
  virtual std::optional<bool> KnownRevoked(const std::string& /*node*/, const std::string& /*serial*/,
                                           int64_t /*issued_at_ns*/) {
    return std::nullopt;
  }
  // Records a certificate handed out; a known serial is Ok.
  virtual Status RecordIssuedCert(const IssuedCert& cert) = 0;
  // Records a renewal in one transaction; kParentRevoked if the parent was revoked meanwhile.
  virtual Status RecordRenewedCert(const IssuedCert& cert, const std::string& parent_serial,
                                   int64_t parent_issued_at_ns) = 0;
};

// Creation, reaping, and what an operator asks for.
class LedgerAdmin {
 public:
  virtual ~LedgerAdmin() = default;
  // Installs the catalogue; called first, and again on a config reload.
  virtual Status SetCatalog(const Catalog& catalog) = 0;
  // Up to min(want, headroom) placed leases of `tier` in one transaction; kUnknownTier, kAdmissionSealed.
  virtual Result<std::vector<Lease>> Escrow(const std::string& tier, int32_t want) = 0;
  // Records the job a capacity lease serves; fenced; other ids, or a request another open lease serves, is kConflict.
  virtual Status Assign(const std::string& lease, int64_t epoch, int64_t run_id, int64_t request_id) = 0;
  // Escrow of one, Assign, and BumpDispatch of the lease's node as one transaction; empty
  // without headroom. kUnsupported from a plugin built before it existed: the caller then
  // makes the three calls.
  virtual Result<std::optional<EscrowedLaunch>> EscrowForLaunch(const std::string& tier, int64_t run_id,
                                                                int64_t request_id) = 0;
  // Expires open leases past their TTL (escrow released, anything with compute quarantined); how many.
  virtual Result<int64_t> Reap() = 0;
  // An operator's word: a quarantined lease fails now, a custody or teardown one is asked back; else kBadTransition.
  virtual Status ForceRelease(const std::string& lease) = 0;
  // Every node the ledger knows.
  virtual Result<std::vector<Node>> ListNodes() = 0;
  // The job of the newest lease assigned `request_id`, open or ended; empty
  // when none was. Verdict::kUnsupported from a plugin built before
  // it existed.
  virtual Result<std::optional<Job>> JobForRequest(int64_t request_id) = 0;
  // Up to `limit` jobs assigned at or after `since_ns`, newest first; none
  // from a plugin built before this existed.
  virtual Result<std::vector<Job>> RecentJobs(int64_t since_ns, uint32_t limit) = 0;
  // Asks for a barrier at the current admission generation (joining one already asked).
  virtual Result<ComputeBarrier> RequestComputeBarrier(const std::string& actor) = 0;
  // Seals or opens admission; kConflict when expected_generation >= 0 and differs. The new generation.
  virtual Result<int64_t> SetAdmission(bool sealed, int64_t expected_generation, const std::string& reason,
                                       const std::string& actor) = 0;
  // Whether the barrier is proved: sealed, no lease open, every node observed empty twice a grace apart.
  virtual Result<bool> ComputeClear() = 0;
  // Stores a join token by its hash; the secret never reaches the store.
  virtual Status CreateJoinToken(const std::string& token_sha256, int64_t uses, int64_t expires_at_ns,
                                 const std::string& note) = 0;
  // Every join token, by hash.
  virtual Result<std::vector<JoinToken>> ListJoinTokens() = 0;
  // Deletes a token; kNotFound when none has that hash.
  virtual Status RevokeJoinToken(const std::string& token_sha256) = 0;
  // Enrollments in `state`, or in every state.
  virtual Result<std::vector<Enrollment>> ListEnrollments(std::optional<EnrollmentState> state) = 0;
  // Approves (with the signed certificate) or denies; the fingerprint must match (kConflict; kNotFound).
  virtual Status DecideEnrollment(const std::string& name, const std::string& fingerprint, EnrollmentState state,
                                  const std::string& cert_pem) = 0;
  // Revokes one serial, idempotent, whether or not it was ever issued.
  virtual Status RevokeCert(const std::string& serial, const std::string& node, const std::string& reason) = 0;
  // Revokes every live certificate of the node and sets its cut-off to now; the serials revoked.
  virtual Result<std::vector<std::string>> RevokeNode(const std::string& node, const std::string& reason) = 0;
  // Certificates recorded for `node` ("" for every node).
  virtual Result<std::vector<IssuedCert>> ListCerts(const std::string& node) = 0;
};

// The job journal (np_ledger_v1.h, record_forge_job). Every call is
// Refused (Verdict::kUnsupported) from a plugin built without it.
class JobJournal {
 public:
  virtual ~JobJournal() = default;
  // Merges into the entry: a field once set never changes.
  virtual Status RecordForgeJob(const ForgeJob& job) = 0;
  // Entries of `tier` ("" for all) first received at or after `since_ns`, newest first.
  virtual Result<std::vector<ForgeJob>> ListForgeJobs(const std::string& tier, int64_t since_ns, uint32_t limit) = 0;
  // Completed entries with a lease, not yet settled, oldest first.
  virtual Result<std::vector<ForgeJob>> UnsettledForgeJobs(const std::string& tier, uint32_t limit) = 0;
};

// Who leads among replicas sharing the ledger (np_ledger_v1.h, campaign).
struct Leadership {
  bool active = false;       // the caller leads, and its writes are accepted
  int64_t generation = 0;    // grows by one at every change of leader
  int64_t term_left_ns = 0;  // the leader's term left, by the store's clock; 0 when ended
  std::string holder;        // the leader's replica name, "" when nobody ever led
  std::string address;       // the node wire address it advertises
};

// Every call is Refused (Verdict::kUnsupported) from a plugin built without
// leadership. Once a campaign is won, every write is fenced on its
// generation: after a takeover the old leader's writes are kFenced.
class LeaderElection {
 public:
  virtual ~LeaderElection() = default;
  // Takes an ended term, renews our own, or learns who leads.
  virtual Result<Leadership> Campaign(const std::string& replica, const std::string& address, int64_t term_ns) = 0;
  // Ends our term now (a clean stop); nothing when we do not lead.
  virtual Status Resign() = 0;
};

// Everything the ledger plugin offers, in one object.
class Ledger : public LeaseStore,
               public JobJournal,
               public LeaderElection,
               public Registrar,
               public BarrierStore,
               public Enrollments,
               public Revocations,
               public LedgerAdmin {};

}  // namespace nodeplane::ports
