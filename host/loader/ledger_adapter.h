// A nodeplane.ledger plugin instance behind the ports::Ledger interfaces.
//
// Every call runs on the instance's own CallPool (plugin calls block), or on
// the caller's thread when the instance takes calls from any thread
// (np_ledger_v1.call_model: NP_CALLS_ANY_THREAD); every
// record the plugin puts to a sink is copied in by the size the plugin
// declared, so a plugin built against an older header, whose records are
// shorter, reads as having the newer fields absent.
#pragma once

#include <memory>
#include <string>

#include "common/call_pool.h"
#include "loader/plugin_library.h"
#include "loader/revocation_memo.h"
#include "nodeplane/np_ledger_v1.h"
#include "ports/ledger.h"

namespace nodeplane::loader {

class LedgerAdapter : public ports::Ledger {
 public:
  // Creates the instance named `instance` from `library`'s ledger interface.
  // With validate_only the plugin only checks `config_json` and the result is
  // null. `threads` sizes the instance's call pool.
  static Result<std::unique_ptr<LedgerAdapter>> Create(std::shared_ptr<const PluginLibrary> library,
                                                       const std::string& instance, const std::string& config_json,
                                                       const np_host_v1* host, bool validate_only,
                                                       unsigned threads = 4);
  ~LedgerAdapter() override;
  // How long calls take, queueing on the instance's pool included.
  const Histogram& call_latency() const { return pool_.latency(); }
  // Whether calls run on the caller's thread (the plugin said
  // NP_CALLS_ANY_THREAD) rather than on the instance's pool.
  bool calls_on_caller_thread() const { return any_thread_; }

  // LeaseStore
  Status Bind(const std::string& lease, int64_t epoch, const std::string& node,
              const std::string& incarnation) override;
  Status Advance(const std::string& lease, int64_t epoch, ports::Phase to, const std::string& incarnation) override;
  Status Heartbeat(const std::string& lease, int64_t epoch) override;
  Status MarkFailure(const std::string& lease, int64_t epoch, const std::string& reason) override;
  Status Resize(const std::string& lease, int64_t epoch, const std::string& instance_type, int64_t vcpu,
                int64_t memory) override;
  Status Release(const std::string& lease, int64_t epoch, ports::Phase outcome) override;
  Result<ports::Lease> GetLease(const std::string& lease) override;
  Status RecordCacheObservation(const std::string& lease, int64_t epoch, const ports::CacheObservation& obs) override;
  Status MarkDeregistered(const std::string& lease) override;
  Result<std::vector<std::string>> LaunchedLeaseIds(const std::string& node) override;
  Result<std::string> EndedLeaseNode(const std::string& lease) override;
  Result<std::vector<std::string>> QuarantinedLeaseIds(const std::string& node) override;
  Result<std::vector<ports::Lease>> ListLeases(const std::string& node) override;
  Result<std::optional<ports::Job>> JobForLease(const std::string& lease) override;
  Result<std::optional<ports::Job>> JobForRequest(int64_t request_id) override;
  Result<std::vector<ports::Job>> RecentJobs(int64_t since_ns, uint32_t limit) override;

  // JobJournal
  Status RecordForgeJob(const ports::ForgeJob& job) override;
  Result<std::vector<ports::ForgeJob>> ListForgeJobs(const std::string& tier, int64_t since_ns,
                                                     uint32_t limit) override;
  Result<std::vector<ports::ForgeJob>> UnsettledForgeJobs(const std::string& tier, uint32_t limit) override;
  // LeaderElection
  Result<ports::Leadership> Campaign(const std::string& replica, const std::string& address, int64_t term_ns) override;
  Status Resign() override;

  // Registrar
  Result<int64_t> RegisterNode(const ports::NodeRegistration& reg) override;
  Status NodeGone(const std::string& node, int64_t epoch) override;
  Status NodeWithdrawn(const std::string& node, int64_t epoch, const std::string& incarnation) override;
  Status ForgetEveryNode() override;
  Result<int64_t> BumpDispatch(const std::string& node) override;
  Result<int64_t> ResolveQuarantineFor(const std::string& node, const std::vector<std::string>& running,
                                       int64_t epoch) override;
  Result<bool> SettleCompletionOnTerminalLease(const std::string& lease, int64_t lease_epoch,
                                               ports::Phase outcome) override;

  // BarrierStore
  Result<std::optional<ports::ComputeBarrier>> ComputeBarrierInForce() override;
  Status DropComputeBarrier(const std::string& id) override;
  Result<std::pair<int64_t, bool>> AdmissionGeneration() override;
  Result<ports::Quiescence> GetQuiescence() override;
  Result<std::optional<ports::NodeFence>> NodeFenceOf(const std::string& node) override;
  Status RecordBarrierObservation(const ports::BarrierObservation& obs) override;
  Status InvalidateBarrierRun(const std::string& node) override;
  Status InvalidateEveryBarrierRun() override;

  // Enrollments
  Result<ports::Enrollment> RequestEnrollmentWithToken(const std::string& name, const std::string& fingerprint,
                                                       const std::string& csr_pem,
                                                       const std::string& token_sha256) override;
  Result<std::optional<ports::Enrollment>> LookupEnrollment(const std::string& name) override;

  // Revocations
  Result<bool> CertRevokedFor(const std::string& node, const std::string& serial, int64_t issued_at_ns) override;
  std::optional<bool> KnownRevoked(const std::string& node, const std::string& serial,
                                   int64_t issued_at_ns) override;
  Status RecordIssuedCert(const ports::IssuedCert& cert) override;
  Status RecordRenewedCert(const ports::IssuedCert& cert, const std::string& parent_serial,
                           int64_t parent_issued_at_ns) override;

  // LedgerAdmin
  Status SetCatalog(const ports::Catalog& catalog) override;
  Result<std::vector<ports::Lease>> Escrow(const std::string& tier, int32_t want) override;
  Result<std::optional<ports::EscrowedLaunch>> EscrowForLaunch(const std::string& tier, int64_t run_id,
                                                               int64_t request_id) override;
  Status Assign(const std::string& lease, int64_t epoch, int64_t run_id, int64_t request_id) override;
  Result<int64_t> Reap() override;
  Status ForceRelease(const std::string& lease) override;
  Result<std::vector<ports::Node>> ListNodes() override;
  Result<ports::ComputeBarrier> RequestComputeBarrier(const std::string& actor) override;
  Result<int64_t> SetAdmission(bool sealed, int64_t expected_generation, const std::string& reason,
                               const std::string& actor) override;
  Result<bool> ComputeClear() override;
  Status CreateJoinToken(const std::string& token_sha256, int64_t uses, int64_t expires_at_ns,
                         const std::string& note) override;
  Result<std::vector<ports::JoinToken>> ListJoinTokens() override;
  Status RevokeJoinToken(const std::string& token_sha256) override;
  Result<std::vector<ports::Enrollment>> ListEnrollments(std::optional<ports::EnrollmentState> state) override;
  Status DecideEnrollment(const std::string& name, const std::string& fingerprint, ports::EnrollmentState state,
                          const std::string& cert_pem) override;
  Status RevokeCert(const std::string& serial, const std::string& node, const std::string& reason) override;
  Result<std::vector<std::string>> RevokeNode(const std::string& node, const std::string& reason) override;
  Result<std::vector<ports::IssuedCert>> ListCerts(const std::string& node) override;

 private:
  LedgerAdapter(std::shared_ptr<const PluginLibrary> library, std::string who, np_ledger_v1 vt, void* self,
                bool any_thread, unsigned threads);

  // Runs `call(self, np_error*)` on the pool (here when any_thread_: a pool
  // of no threads); the Status of its np_code.
  template <typename F>
  Status Call(F&& call);
  Status NoJournal() const;
  Status NoLeadership() const;

  std::shared_ptr<const PluginLibrary> library_;
  std::string who_;
  np_ledger_v1 vt_;
  void* self_;
  RevocationMemo revocations_;  // CertRevokedFor's answers, forgotten at each revocation
  bool any_thread_;
  CallPool pool_;  // of no threads when any_thread_: it only times the calls
};

}  // namespace nodeplane::loader
