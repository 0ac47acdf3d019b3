#include "loader/ledger_adapter.h"

#include <cstddef>
#include <cstring>

#include "loader/plugin_call.h"

namespace nodeplane::loader {
namespace {

using ports::Phase;


ports::Lease ToLease(const np_lease_v1* p) {
  np_lease_v1 r = CopyRecord(p);
  ports::Lease l;
  l.id = TextOf(r.id);
  l.tier = TextOf(r.tier);
  l.node = TextOf(r.node);
  l.target_node = TextOf(r.target_node);
  l.phase = static_cast<Phase>(r.phase);
  l.epoch = r.epoch;
  l.vcpu = r.vcpu;
  l.memory = r.memory;
  l.requested_vcpu = r.requested_vcpu;
  l.requested_memory = r.requested_memory;
  l.instance_type = TextOf(r.instance_type);
  l.run_id = r.run_id;
  l.request_id = r.request_id;
  l.created_at_ns = r.created_at_ns;
  l.heartbeat_at_ns = r.heartbeat_at_ns;
  l.expires_at_ns = r.expires_at_ns;
  l.held_at_ns = r.held_at_ns;
  l.guest_os = TextOf(r.guest_os);
  l.providers = TextOf(r.providers);
  l.chosen_provider = TextOf(r.chosen_provider);
  l.site = TextOf(r.site);
  l.failure_reason = TextOf(r.failure_reason);
  l.holder_incarnation = TextOf(r.holder_incarnation);
  l.force_release = r.force_release != 0;
  l.deregistered = r.deregistered != 0;
  l.macos_slot = r.macos_slot != 0;
  return l;
}

ports::Enrollment ToEnrollment(const np_enrollment_v1* p) {
  np_enrollment_v1 r = CopyRecord(p);
  return ports::Enrollment{TextOf(r.name),        TextOf(r.fingerprint),  TextOf(r.csr_pem), TextOf(r.cert_pem),
                           static_cast<ports::EnrollmentState>(r.state), r.requested_at_ns, r.decided_at_ns,
                           TextOf(r.source)};
}

ports::ComputeBarrier ToBarrier(const np_compute_barrier_v1* p) {
  np_compute_barrier_v1 r = CopyRecord(p);
  return ports::ComputeBarrier{TextOf(r.id), r.generation, r.requested_at_ns, TextOf(r.requested_by)};
}

// A sink that appends every record, converted, to a vector.
template <typename NP, typename Out, Out (*Convert)(const NP*)>
int32_t Append(void* ctx, const NP* item) {
  static_cast<std::vector<Out>*>(ctx)->push_back(Convert(item));
  return 0;
}

int32_t AppendString(void* ctx, const char* v) {
  static_cast<std::vector<std::string>*>(ctx)->push_back(TextOf(v));
  return 0;
}

np_lease_sink LeaseSink(std::vector<ports::Lease>* out) {
  return {sizeof(np_lease_sink), out, &Append<np_lease_v1, ports::Lease, &ToLease>};
}
np_enrollment_sink EnrollmentSink(std::vector<ports::Enrollment>* out) {
  return {sizeof(np_enrollment_sink), out, &Append<np_enrollment_v1, ports::Enrollment, &ToEnrollment>};
}
np_barrier_sink BarrierSink(std::vector<ports::ComputeBarrier>* out) {
  return {sizeof(np_barrier_sink), out, &Append<np_compute_barrier_v1, ports::ComputeBarrier, &ToBarrier>};
}
np_string_sink StringSink(std::vector<std::string>* out) { return {sizeof(np_string_sink), out, &AppendString}; }

#define NP_SLOT(name) RequiredSlot{offsetof(np_ledger_v1, name), #name}

}  // namespace

template <typename F>
Status LedgerAdapter::Call(F&& call) {
  return pool_.Run([&]() -> Status {
    PluginError err;
    np_code rc = call(self_, err.c());
    return err.ToStatus(rc, who_);
  });
}

Result<std::unique_ptr<LedgerAdapter>> LedgerAdapter::Create(std::shared_ptr<const PluginLibrary> library,
                                                             const std::string& instance,
                                                             const std::string& config_json, const np_host_v1* host,
                                                             bool validate_only, unsigned threads) {
  const std::string who = "ledger \"" + instance + "\" (" + library->path() + ")";
  auto desc = library->Find(NP_LEDGER_INTERFACE, NP_LEDGER_MAJOR);
  if (!desc.ok()) return desc.status();
  // Every slot of the first release of v1 is required; slots appended later
  // will be optional and checked before each call.
  auto vt = CopyVtable<np_ledger_v1>(
      **desc, library->path(),
      {NP_SLOT(create), NP_SLOT(destroy), NP_SLOT(set_catalog), NP_SLOT(escrow), NP_SLOT(assign), NP_SLOT(bind),
       NP_SLOT(advance), NP_SLOT(heartbeat), NP_SLOT(mark_failure), NP_SLOT(resize), NP_SLOT(release),
       NP_SLOT(get_lease), NP_SLOT(record_cache_observation), NP_SLOT(mark_deregistered),
       NP_SLOT(launched_lease_ids), NP_SLOT(ended_lease_node), NP_SLOT(quarantined_lease_ids),
       NP_SLOT(register_node), NP_SLOT(node_gone), NP_SLOT(node_withdrawn), NP_SLOT(forget_every_node),
       NP_SLOT(bump_dispatch), NP_SLOT(resolve_quarantine_for), NP_SLOT(settle_completion_on_terminal_lease),
       NP_SLOT(compute_barrier_in_force), NP_SLOT(request_compute_barrier), NP_SLOT(drop_compute_barrier),
       NP_SLOT(admission_generation), NP_SLOT(set_admission), NP_SLOT(quiescence), NP_SLOT(node_fence_of),
       NP_SLOT(record_barrier_observation), NP_SLOT(invalidate_barrier_run), NP_SLOT(invalidate_every_barrier_run),
       NP_SLOT(compute_clear), NP_SLOT(create_join_token), NP_SLOT(list_join_tokens), NP_SLOT(revoke_join_token),
       NP_SLOT(request_enrollment_with_token), NP_SLOT(lookup_enrollment), NP_SLOT(list_enrollments),
       NP_SLOT(decide_enrollment), NP_SLOT(record_issued_cert), NP_SLOT(record_renewed_cert),
       NP_SLOT(cert_revoked_for), NP_SLOT(revoke_cert), NP_SLOT(revoke_node), NP_SLOT(list_certs), NP_SLOT(reap),
       NP_SLOT(force_release), NP_SLOT(list_leases), NP_SLOT(list_nodes), NP_SLOT(job_for_lease)});
  if (!vt.ok()) return vt.status();
  if (vt->record_forge_job == nullptr || vt->list_forge_jobs == nullptr || vt->unsettled_forge_jobs == nullptr) {
    vt->record_forge_job = nullptr;  // the journal is all three slots or none
    vt->list_forge_jobs = nullptr;
    vt->unsettled_forge_jobs = nullptr;
  }
  if (vt->campaign == nullptr || vt->resign == nullptr) {
    vt->campaign = nullptr;  // leadership is both slots or none
    vt->resign = nullptr;
  }
  auto self = CreateInstance(*vt, host, config_json, validate_only, who);
  if (!self.ok()) return self.status();
  if (validate_only) return std::unique_ptr<LedgerAdapter>();
  // Asked once, before any other call (np_ledger_v1.call_model); a plugin
  // built before the slot keeps its pool.
  const bool any_thread = vt->call_model != nullptr && (vt->call_model(*self) & NP_CALLS_ANY_THREAD) != 0;
  return std::unique_ptr<LedgerAdapter>(new LedgerAdapter(std::move(library), who, *vt, *self, any_thread, threads));
}

LedgerAdapter::LedgerAdapter(std::shared_ptr<const PluginLibrary> library, std::string who, np_ledger_v1 vt,
                             void* self, bool any_thread, unsigned threads)
    : library_(std::move(library)),
      who_(std::move(who)),
      vt_(vt),
      self_(self),
      any_thread_(any_thread),
      pool_(any_thread ? 0 : threads) {}

LedgerAdapter::~LedgerAdapter() { vt_.destroy(self_); }

// ---- LeaseStore ----

Status LedgerAdapter::Bind(const std::string& lease, int64_t epoch, const std::string& node,
                           const std::string& incarnation) {
  return Call([&](void* s, np_error* e) {
    return vt_.bind(s, lease.c_str(), epoch, node.c_str(), incarnation.c_str(), e);
  });
}

Status LedgerAdapter::Advance(const std::string& lease, int64_t epoch, Phase to, const std::string& incarnation) {
  return Call([&](void* s, np_error* e) {
    return vt_.advance(s, lease.c_str(), epoch, static_cast<int32_t>(to), incarnation.c_str(), e);
  });
}

Status LedgerAdapter::Heartbeat(const std::string& lease, int64_t epoch) {
  return Call([&](void* s, np_error* e) { return vt_.heartbeat(s, lease.c_str(), epoch, e); });
}

Status LedgerAdapter::MarkFailure(const std::string& lease, int64_t epoch, const std::string& reason) {
  return Call([&](void* s, np_error* e) { return vt_.mark_failure(s, lease.c_str(), epoch, reason.c_str(), e); });
}

Status LedgerAdapter::Resize(const std::string& lease, int64_t epoch, const std::string& instance_type, int64_t vcpu,
                             int64_t memory) {
  return Call([&](void* s, np_error* e) {
    return vt_.resize(s, lease.c_str(), epoch, instance_type.c_str(), vcpu, memory, e);
  });
}

Status LedgerAdapter::Release(const std::string& lease, int64_t epoch, Phase outcome) {
  return Call([&](void* s, np_error* e) {
    return vt_.release(s, lease.c_str(), epoch, static_cast<int32_t>(outcome), e);
  });
}

Result<ports::Lease> LedgerAdapter::GetLease(const std::string& lease) {
  std::vector<ports::Lease> out;
  Status st = Call([&](void* s, np_error* e) { return vt_.get_lease(s, lease.c_str(), LeaseSink(&out), e); });
  if (!st.ok()) return st;
  if (out.size() != 1) return Status::Internal(who_ + ": get_lease put " + std::to_string(out.size()) + " leases");
  return out.front();
}

Status LedgerAdapter::RecordCacheObservation(const std::string& lease, int64_t epoch,
                                             const ports::CacheObservation& obs) {
  np_cache_observation_v1 o{sizeof o, obs.image_cache.c_str(), obs.cache_generation.c_str(),
                            obs.actions_cache.c_str()};
  return Call([&](void* s, np_error* e) { return vt_.record_cache_observation(s, lease.c_str(), epoch, &o, e); });
}

Status LedgerAdapter::MarkDeregistered(const std::string& lease) {
  return Call([&](void* s, np_error* e) { return vt_.mark_deregistered(s, lease.c_str(), e); });
}

Result<std::vector<std::string>> LedgerAdapter::LaunchedLeaseIds(const std::string& node) {
  std::vector<std::string> out;
  Status st = Call([&](void* s, np_error* e) { return vt_.launched_lease_ids(s, node.c_str(), StringSink(&out), e); });
  if (!st.ok()) return st;
  return out;
}

Result<std::string> LedgerAdapter::EndedLeaseNode(const std::string& lease) {
  std::vector<std::string> out;
  Status st = Call([&](void* s, np_error* e) { return vt_.ended_lease_node(s, lease.c_str(), StringSink(&out), e); });
  if (!st.ok()) return st;
  return out.empty() ? std::string() : out.front();
}

Result<std::vector<std::string>> LedgerAdapter::QuarantinedLeaseIds(const std::string& node) {
  std::vector<std::string> out;
  Status st =
      Call([&](void* s, np_error* e) { return vt_.quarantined_lease_ids(s, node.c_str(), StringSink(&out), e); });
  if (!st.ok()) return st;
  return out;
}

// ---- Registrar ----

Result<int64_t> LedgerAdapter::RegisterNode(const ports::NodeRegistration& reg) {
  np_node_registration_v1 r{sizeof r,           reg.name.c_str(),     reg.provider.c_str(), reg.site.c_str(),
                            reg.incarnation.c_str(), reg.total_vcpu, reg.total_memory,     reg.wire_version,
                            reg.release.c_str()};
  int64_t epoch = 0;
  Status st = Call([&](void* s, np_error* e) { return vt_.register_node(s, &r, &epoch, e); });
  if (!st.ok()) return st;
  return epoch;
}

Status LedgerAdapter::NodeGone(const std::string& node, int64_t epoch) {
  return Call([&](void* s, np_error* e) { return vt_.node_gone(s, node.c_str(), epoch, e); });
}

Status LedgerAdapter::NodeWithdrawn(const std::string& node, int64_t epoch, const std::string& incarnation) {
  return Call([&](void* s, np_error* e) {
    return vt_.node_withdrawn(s, node.c_str(), epoch, incarnation.c_str(), e);
  });
}

Status LedgerAdapter::ForgetEveryNode() {
  return Call([&](void* s, np_error* e) { return vt_.forget_every_node(s, e); });
}

Result<int64_t> LedgerAdapter::BumpDispatch(const std::string& node) {
  int64_t generation = 0;
  Status st = Call([&](void* s, np_error* e) { return vt_.bump_dispatch(s, node.c_str(), &generation, e); });
  if (!st.ok()) return st;
  return generation;
}

Result<int64_t> LedgerAdapter::ResolveQuarantineFor(const std::string& node, const std::vector<std::string>& running,
                                                    int64_t epoch) {
  std::vector<const char*> ids;
  for (const std::string& id : running) ids.push_back(id.c_str());
  int64_t freed = 0;
  Status st = Call([&](void* s, np_error* e) {
    return vt_.resolve_quarantine_for(s, node.c_str(), ids.data(), static_cast<uint32_t>(ids.size()), epoch, &freed,
                                      e);
  });
  if (!st.ok()) return st;
  return freed;
}

Result<bool> LedgerAdapter::SettleCompletionOnTerminalLease(const std::string& lease, int64_t lease_epoch,
                                                            Phase outcome) {
  uint32_t settled = 0;
  Status st = Call([&](void* s, np_error* e) {
    return vt_.settle_completion_on_terminal_lease(s, lease.c_str(), lease_epoch, static_cast<int32_t>(outcome),
                                                   &settled, e);
  });
  if (!st.ok()) return st;
  return settled != 0;
}

// ---- BarrierStore ----

Result<std::optional<ports::ComputeBarrier>> LedgerAdapter::ComputeBarrierInForce() {
  std::vector<ports::ComputeBarrier> out;
  Status st = Call([&](void* s, np_error* e) { return vt_.compute_barrier_in_force(s, BarrierSink(&out), e); });
  if (!st.ok()) return st;
  if (out.empty()) return std::optional<ports::ComputeBarrier>();
  return std::optional<ports::ComputeBarrier>(out.front());
}

Status LedgerAdapter::DropComputeBarrier(const std::string& id) {
  return Call([&](void* s, np_error* e) { return vt_.drop_compute_barrier(s, id.c_str(), e); });
}

Result<std::pair<int64_t, bool>> LedgerAdapter::AdmissionGeneration() {
  int64_t generation = 0;
  uint32_t sealed = 1;
  Status st = Call([&](void* s, np_error* e) { return vt_.admission_generation(s, &generation, &sealed, e); });
  if (!st.ok()) return st;
  return std::make_pair(generation, sealed != 0);
}

Result<ports::Quiescence> LedgerAdapter::GetQuiescence() {
  ports::Quiescence q;
  uint32_t sealed = 1;
  Status st = Call([&](void* s, np_error* e) {
    return vt_.quiescence(s, &sealed, &q.generation, LeaseSink(&q.outstanding), e);
  });
  if (!st.ok()) return st;
  q.sealed = sealed != 0;
  return q;
}

Result<std::optional<ports::NodeFence>> LedgerAdapter::NodeFenceOf(const std::string& node) {
  np_node_fence_v1 f{};
  f.struct_size = sizeof f;
  uint32_t found = 0;
  Status st = Call([&](void* s, np_error* e) { return vt_.node_fence_of(s, node.c_str(), &f, &found, e); });
  if (!st.ok()) return st;
  if (found == 0) return std::optional<ports::NodeFence>();
  return std::optional<ports::NodeFence>(ports::NodeFence{f.epoch, f.dispatch, f.wire_version, f.live != 0});
}

Status LedgerAdapter::RecordBarrierObservation(const ports::BarrierObservation& obs) {
  np_barrier_observation_v1 o{sizeof o,         obs.node.c_str(),   obs.barrier_id.c_str(),
                              obs.fence_epoch, obs.fence_dispatch, obs.empty ? 1u : 0u};
  return Call([&](void* s, np_error* e) { return vt_.record_barrier_observation(s, &o, e); });
}

Status LedgerAdapter::InvalidateBarrierRun(const std::string& node) {
  return Call([&](void* s, np_error* e) { return vt_.invalidate_barrier_run(s, node.c_str(), e); });
}

Status LedgerAdapter::InvalidateEveryBarrierRun() {
  return Call([&](void* s, np_error* e) { return vt_.invalidate_every_barrier_run(s, e); });
}

// ---- Enrollments ----

Result<ports::Enrollment> LedgerAdapter::RequestEnrollmentWithToken(const std::string& name,
                                                                    const std::string& fingerprint,
                                                                    const std::string& csr_pem,
                                                                    const std::string& token_sha256) {
  std::vector<ports::Enrollment> out;
  Status st = Call([&](void* s, np_error* e) {
    return vt_.request_enrollment_with_token(s, name.c_str(), fingerprint.c_str(), csr_pem.c_str(),
                                             token_sha256.c_str(), EnrollmentSink(&out), e);
  });
  if (!st.ok()) return st;
  if (out.size() != 1) return Status::Internal(who_ + ": enrollment put " + std::to_string(out.size()) + " rows");
  return out.front();
}

Result<std::optional<ports::Enrollment>> LedgerAdapter::LookupEnrollment(const std::string& name) {
  std::vector<ports::Enrollment> out;
  Status st = Call([&](void* s, np_error* e) { return vt_.lookup_enrollment(s, name.c_str(), EnrollmentSink(&out), e); });
  if (!st.ok()) return st;
  if (out.empty()) return std::optional<ports::Enrollment>();
  return std::optional<ports::Enrollment>(out.front());
}

// ---- Revocations ----

Result<bool> LedgerAdapter::CertRevokedFor(const std::string& node, const std::string& serial, int64_t issued_at_ns) {
  uint64_t asked_at = 0;
  if (auto known = revocations_.Lookup(node, serial, issued_at_ns, &asked_at)) return *known;
  uint32_t revoked = 1;  // an unanswered question is never "not revoked"
  Status st = Call([&](void* s, np_error* e) {
    return vt_.cert_revoked_for(s, node.c_str(), serial.c_str(), issued_at_ns, &revoked, e);
  });
  if (!st.ok()) return st;
  revocations_.Remember(node, serial, issued_at_ns, revoked != 0, asked_at);
  return revoked != 0;
}

std::optional<bool> LedgerAdapter::KnownRevoked(const std::string& node, const std::string& serial,
                                                int64_t issued_at_ns) {
  uint64_t unused = 0;
  return revocations_.Lookup(node, serial, issued_at_ns, &unused);
}

Status LedgerAdapter::RecordIssuedCert(const ports::IssuedCert& c) {
  np_issued_cert_v1 r{sizeof r, c.serial.c_str(), c.node.c_str(), c.source.c_str(), c.not_after_ns, 0, 0};
  return Call([&](void* s, np_error* e) { return vt_.record_issued_cert(s, &r, e); });
}

Status LedgerAdapter::RecordRenewedCert(const ports::IssuedCert& c, const std::string& parent_serial,
                                        int64_t parent_issued_at_ns) {
  np_issued_cert_v1 r{sizeof r, c.serial.c_str(), c.node.c_str(), c.source.c_str(), c.not_after_ns, 0, 0};
  return Call([&](void* s, np_error* e) {
    return vt_.record_renewed_cert(s, &r, parent_serial.c_str(), parent_issued_at_ns, e);
  });
}

// ---- LedgerAdmin ----

Status LedgerAdapter::SetCatalog(const ports::Catalog& catalog) {
  // The C records point into these vectors; they live until the call returns.
  std::vector<np_tier_v1> tiers;
  std::vector<std::vector<const char*>> tier_providers;
  std::vector<np_node_policy_v1> nodes;
  std::vector<std::vector<const char*>> node_os;
  tiers.reserve(catalog.tiers.size());
  tier_providers.reserve(catalog.tiers.size());
  for (const ports::TierSpec& t : catalog.tiers) {
    auto& providers = tier_providers.emplace_back();
    for (const std::string& p : t.providers) providers.push_back(p.c_str());
    tiers.push_back(np_tier_v1{sizeof(np_tier_v1), t.label.c_str(), t.vcpu, t.memory, providers.data(),
                               static_cast<uint32_t>(providers.size()), t.guest_os.c_str(), t.node.c_str(),
                               t.site.c_str(), t.max_concurrent, t.reserved});
  }
  nodes.reserve(catalog.nodes.size());
  node_os.reserve(catalog.nodes.size());
  for (const ports::NodePolicy& n : catalog.nodes) {
    auto& os = node_os.emplace_back();
    for (const std::string& o : n.guest_os) os.push_back(o.c_str());
    nodes.push_back(np_node_policy_v1{sizeof(np_node_policy_v1), n.name.c_str(), n.provider.c_str(), os.data(),
                                      static_cast<uint32_t>(os.size()), n.macos_vm_limit, n.max_vcpu, n.max_memory});
  }
  std::vector<const np_tier_v1*> tier_ptrs;
  for (const np_tier_v1& t : tiers) tier_ptrs.push_back(&t);
  std::vector<const np_node_policy_v1*> node_ptrs;
  for (const np_node_policy_v1& n : nodes) node_ptrs.push_back(&n);
  np_catalog_v1 c{sizeof c,
                  catalog.lease_ttl_ns,
                  catalog.max_vcpu,
                  catalog.max_memory,
                  catalog.spread ? static_cast<uint32_t>(NP_PLACEMENT_SPREAD) : static_cast<uint32_t>(NP_PLACEMENT_PACK),
                  tier_ptrs.data(),
                  static_cast<uint32_t>(tier_ptrs.size()),
                  node_ptrs.data(),
                  static_cast<uint32_t>(node_ptrs.size())};
  return Call([&](void* s, np_error* e) { return vt_.set_catalog(s, &c, e); });
}

Result<std::vector<ports::Lease>> LedgerAdapter::Escrow(const std::string& tier, int32_t want) {
  std::vector<ports::Lease> out;
  Status st = Call([&](void* s, np_error* e) { return vt_.escrow(s, tier.c_str(), want, LeaseSink(&out), e); });
  if (!st.ok()) return st;
  return out;
}

Result<std::optional<ports::EscrowedLaunch>> LedgerAdapter::EscrowForLaunch(const std::string& tier, int64_t run_id,
                                                                              int64_t request_id) {
  if (vt_.escrow_for_launch == nullptr) {  // optional: appended with launches in one write
    return ports::WithVerdict(Status(Code::kRefused, who_ + ": this ledger plugin makes a launch's writes one by one"),
                              ports::Verdict::kUnsupported);
  }
  std::vector<ports::Lease> out;
  int64_t generation = 0;
  Status st = Call([&](void* s, np_error* e) {
    return vt_.escrow_for_launch(s, tier.c_str(), run_id, request_id, LeaseSink(&out), &generation, e);
  });
  if (!st.ok()) return st;
  if (out.empty()) return std::optional<ports::EscrowedLaunch>();
  return std::optional<ports::EscrowedLaunch>(ports::EscrowedLaunch{std::move(out.front()), generation});
}

Status LedgerAdapter::Assign(const std::string& lease, int64_t epoch, int64_t run_id, int64_t request_id) {
  return Call([&](void* s, np_error* e) { return vt_.assign(s, lease.c_str(), epoch, run_id, request_id, e); });
}

Result<int64_t> LedgerAdapter::Reap() {
  int64_t reaped = 0;
  Status st = Call([&](void* s, np_error* e) { return vt_.reap(s, &reaped, e); });
  if (!st.ok()) return st;
  return reaped;
}

Status LedgerAdapter::ForceRelease(const std::string& lease) {
  return Call([&](void* s, np_error* e) { return vt_.force_release(s, lease.c_str(), e); });
}

Result<std::vector<ports::Lease>> LedgerAdapter::ListLeases(const std::string& node) {
  std::vector<ports::Lease> out;
  Status st = Call([&](void* s, np_error* e) { return vt_.list_leases(s, node.c_str(), LeaseSink(&out), e); });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<ports::Node>> LedgerAdapter::ListNodes() {
  std::vector<ports::Node> out;
  np_node_sink sink{sizeof(np_node_sink), &out, [](void* ctx, const np_node_v1* p) -> int32_t {
                      np_node_v1 n = CopyRecord(p);
                      static_cast<std::vector<ports::Node>*>(ctx)->push_back(
                          ports::Node{TextOf(n.name), TextOf(n.provider), TextOf(n.site), TextOf(n.incarnation), n.epoch, n.total_vcpu,
                                      n.total_memory, n.last_seen_at_ns, n.dispatch_generation, n.wire_version,
                                      n.live != 0, n.drained != 0, n.withdrawn != 0});
                      return 0;
                    }};
  Status st = Call([&](void* s, np_error* e) { return vt_.list_nodes(s, sink, e); });
  if (!st.ok()) return st;
  return out;
}

namespace {

np_job_sink JobSink(std::vector<ports::Job>* out) {
  return np_job_sink{sizeof(np_job_sink), out, [](void* ctx, const np_job_v1* p) -> int32_t {
                       np_job_v1 j = CopyRecord(p);
                       ports::Job job{TextOf(j.lease_id), TextOf(j.tier), TextOf(j.node), j.run_id, j.request_id,
                                      std::nullopt, j.queued_at_ns, j.assigned_at_ns, j.started_at_ns,
                                      j.finished_at_ns, TextOf(j.failure_reason), TextOf(j.image_cache),
                                      TextOf(j.cache_generation), TextOf(j.actions_cache)};
                       if (j.conclusion != 0) job.conclusion = static_cast<Phase>(j.conclusion);
                       job.forge_result = TextOf(j.forge_result);  // "" from a plugin built before it
                       static_cast<std::vector<ports::Job>*>(ctx)->push_back(std::move(job));
                       return 0;
                     }};
}

}  // namespace

Result<std::optional<ports::Job>> LedgerAdapter::JobForLease(const std::string& lease) {
  std::vector<ports::Job> out;
  Status st = Call([&](void* s, np_error* e) { return vt_.job_for_lease(s, lease.c_str(), JobSink(&out), e); });
  if (ports::Is(st, ports::Verdict::kNotFound)) return std::optional<ports::Job>();
  if (!st.ok()) return st;
  if (out.empty()) return std::optional<ports::Job>();
  return std::optional<ports::Job>(out.front());
}

Result<std::optional<ports::Job>> LedgerAdapter::JobForRequest(int64_t request_id) {
  if (vt_.job_for_request == nullptr) {  // optional: appended after 0.1.0
    return ports::WithVerdict(
        Status(Code::kRefused, who_ + ": this ledger plugin cannot find a lease by its request id"),
        ports::Verdict::kUnsupported);
  }
  std::vector<ports::Job> out;
  Status st = Call([&](void* s, np_error* e) { return vt_.job_for_request(s, request_id, JobSink(&out), e); });
  if (!st.ok()) return st;
  if (out.empty()) return std::optional<ports::Job>();
  return std::optional<ports::Job>(out.front());
}

Result<std::vector<ports::Job>> LedgerAdapter::RecentJobs(int64_t since_ns, uint32_t limit) {
  std::vector<ports::Job> out;
  if (vt_.recent_jobs == nullptr) return out;  // optional: a plugin from before lists none
  Status st = Call([&](void* s, np_error* e) { return vt_.recent_jobs(s, since_ns, limit, JobSink(&out), e); });
  if (!st.ok()) return st;
  return out;
}

namespace {

np_forge_job_sink ForgeJobSink(std::vector<ports::ForgeJob>* out) {
  return np_forge_job_sink{sizeof(np_forge_job_sink), out, [](void* ctx, const np_forge_job_v1* p) -> int32_t {
                             np_forge_job_v1 j = CopyRecord(p);
                             ports::ForgeJob f{TextOf(j.tier), TextOf(j.job_id), j.request_id, TextOf(j.repository),
                                               TextOf(j.workflow_ref), TextOf(j.display_name), j.workflow_run_id,
                                               j.queued_at_ns, j.received_at_ns, j.acquired_at_ns, j.started_at_ns,
                                               j.completed_at_ns, TextOf(j.runner_name), TextOf(j.lease_id),
                                               TextOf(j.result), j.settled_at_ns};
                             // Appended fields: zero from a plugin built before them (CopyRecord).
                             f.event_name = TextOf(j.event_name);
                             for (uint32_t i = 0; j.request_labels != nullptr && i < j.n_request_labels; ++i) {
                               f.request_labels.push_back(TextOf(j.request_labels[i]));
                             }
                             f.runner_id = j.runner_id;
                             f.assigned_at_ns = j.assigned_at_ns;
                             f.runner_assigned_at_ns = j.runner_assigned_at_ns;
                             f.requeues = j.requeues;
                             f.settle_tried_at_ns = j.settle_tried_at_ns;
                             static_cast<std::vector<ports::ForgeJob>*>(ctx)->push_back(std::move(f));
                             return 0;
                           }};
}

}  // namespace

Status LedgerAdapter::NoJournal() const {
  return ports::WithVerdict(Status(Code::kRefused, who_ + ": this ledger plugin keeps no job journal (record_forge_job)"),
                            ports::Verdict::kUnsupported);
}

Status LedgerAdapter::RecordForgeJob(const ports::ForgeJob& job) {
  if (vt_.record_forge_job == nullptr) return NoJournal();  // optional: appended with the job intake
  np_forge_job_v1 j{};
  j.struct_size = sizeof j;
  j.tier = job.tier.c_str();
  j.job_id = job.job_id.c_str();
  j.request_id = job.request_id;
  j.repository = job.repository.c_str();
  j.workflow_ref = job.workflow_ref.c_str();
  j.display_name = job.display_name.c_str();
  j.workflow_run_id = job.workflow_run_id;
  j.queued_at_ns = job.queued_at_ns;
  j.received_at_ns = job.received_at_ns;
  j.acquired_at_ns = job.acquired_at_ns;
  j.started_at_ns = job.started_at_ns;
  j.completed_at_ns = job.completed_at_ns;
  j.runner_name = job.runner_name.c_str();
  j.lease_id = job.lease_id.c_str();
  j.result = job.result.c_str();
  j.settled_at_ns = job.settled_at_ns;
  j.event_name = job.event_name.c_str();
  std::vector<const char*> labels;
  for (const std::string& l : job.request_labels) labels.push_back(l.c_str());
  j.request_labels = labels.empty() ? nullptr : labels.data();
  j.n_request_labels = static_cast<uint32_t>(labels.size());
  j.runner_id = job.runner_id;
  j.assigned_at_ns = job.assigned_at_ns;
  j.runner_assigned_at_ns = job.runner_assigned_at_ns;
  j.settle_tried_at_ns = job.settle_tried_at_ns;
  return Call([&](void* s, np_error* e) { return vt_.record_forge_job(s, &j, e); });
}

Result<std::vector<ports::ForgeJob>> LedgerAdapter::ListForgeJobs(const std::string& tier, int64_t since_ns,
                                                                  uint32_t limit) {
  if (vt_.list_forge_jobs == nullptr) return NoJournal();
  std::vector<ports::ForgeJob> out;
  Status st = Call([&](void* s, np_error* e) {
    return vt_.list_forge_jobs(s, tier.c_str(), since_ns, limit, ForgeJobSink(&out), e);
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<ports::ForgeJob>> LedgerAdapter::UnsettledForgeJobs(const std::string& tier, uint32_t limit) {
  if (vt_.unsettled_forge_jobs == nullptr) return NoJournal();
  std::vector<ports::ForgeJob> out;
  Status st = Call([&](void* s, np_error* e) {
    return vt_.unsettled_forge_jobs(s, tier.c_str(), limit, ForgeJobSink(&out), e);
  });
  if (!st.ok()) return st;
  return out;
}

Status LedgerAdapter::NoLeadership() const {
  return ports::WithVerdict(
      Status(Code::kRefused, who_ + ": this ledger plugin cannot elect a leader among replicas (campaign)"),
      ports::Verdict::kUnsupported);
}

Result<ports::Leadership> LedgerAdapter::Campaign(const std::string& replica, const std::string& address,
                                                  int64_t term_ns) {
  if (vt_.campaign == nullptr) return NoLeadership();  // optional: appended with high availability
  std::optional<ports::Leadership> out;
  np_leadership_sink sink{sizeof(np_leadership_sink), &out, [](void* ctx, const np_leadership_v1* p) -> int32_t {
                            np_leadership_v1 l = CopyRecord(p);
                            *static_cast<std::optional<ports::Leadership>*>(ctx) = ports::Leadership{
                                l.active != 0, l.generation, l.term_left_ns, TextOf(l.holder), TextOf(l.address)};
                            return 0;
                          }};
  Status st = Call([&](void* s, np_error* e) {
    return vt_.campaign(s, replica.c_str(), address.c_str(), term_ns, sink, e);
  });
  if (!st.ok()) return st;
  if (!out) return Status::Internal(who_ + ": campaign put no leadership");
  return *out;
}

Status LedgerAdapter::Resign() {
  if (vt_.resign == nullptr) return NoLeadership();
  return Call([&](void* s, np_error* e) { return vt_.resign(s, e); });
}

Result<ports::ComputeBarrier> LedgerAdapter::RequestComputeBarrier(const std::string& actor) {
  std::vector<ports::ComputeBarrier> out;
  Status st =
      Call([&](void* s, np_error* e) { return vt_.request_compute_barrier(s, actor.c_str(), BarrierSink(&out), e); });
  if (!st.ok()) return st;
  if (out.size() != 1) return Status::Internal(who_ + ": request_compute_barrier put no barrier");
  return out.front();
}

Result<int64_t> LedgerAdapter::SetAdmission(bool sealed, int64_t expected_generation, const std::string& reason,
                                            const std::string& actor) {
  int64_t generation = 0;
  Status st = Call([&](void* s, np_error* e) {
    return vt_.set_admission(s, sealed ? 1u : 0u, expected_generation, reason.c_str(), actor.c_str(), &generation, e);
  });
  if (!st.ok()) return st;
  return generation;
}

Result<bool> LedgerAdapter::ComputeClear() {
  uint32_t clear = 0;
  Status st = Call([&](void* s, np_error* e) { return vt_.compute_clear(s, &clear, e); });
  if (!st.ok()) return st;
  return clear != 0;
}

Status LedgerAdapter::CreateJoinToken(const std::string& token_sha256, int64_t uses, int64_t expires_at_ns,
                                      const std::string& note) {
  return Call([&](void* s, np_error* e) {
    return vt_.create_join_token(s, token_sha256.c_str(), uses, expires_at_ns, note.c_str(), e);
  });
}

Result<std::vector<ports::JoinToken>> LedgerAdapter::ListJoinTokens() {
  std::vector<ports::JoinToken> out;
  np_join_token_sink sink{sizeof(np_join_token_sink), &out, [](void* ctx, const np_join_token_v1* p) -> int32_t {
                            np_join_token_v1 t = CopyRecord(p);
                            static_cast<std::vector<ports::JoinToken>*>(ctx)->push_back(ports::JoinToken{
                                TextOf(t.token_sha256), TextOf(t.note), t.uses_remaining, t.created_at_ns, t.expires_at_ns});
                            return 0;
                          }};
  Status st = Call([&](void* s, np_error* e) { return vt_.list_join_tokens(s, sink, e); });
  if (!st.ok()) return st;
  return out;
}

Status LedgerAdapter::RevokeJoinToken(const std::string& token_sha256) {
  return Call([&](void* s, np_error* e) { return vt_.revoke_join_token(s, token_sha256.c_str(), e); });
}

Result<std::vector<ports::Enrollment>> LedgerAdapter::ListEnrollments(std::optional<ports::EnrollmentState> state) {
  std::vector<ports::Enrollment> out;
  int32_t filter = state ? static_cast<int32_t>(*state) : 0;
  Status st = Call([&](void* s, np_error* e) { return vt_.list_enrollments(s, filter, EnrollmentSink(&out), e); });
  if (!st.ok()) return st;
  return out;
}

Status LedgerAdapter::DecideEnrollment(const std::string& name, const std::string& fingerprint,
                                       ports::EnrollmentState state, const std::string& cert_pem) {
  return Call([&](void* s, np_error* e) {
    return vt_.decide_enrollment(s, name.c_str(), fingerprint.c_str(), static_cast<int32_t>(state), cert_pem.c_str(),
                                 e);
  });
}

// Whatever the write's outcome (an unknown one may have committed), no
// "not revoked" answer is kept past it (revocation_memo.h, M2).
Status LedgerAdapter::RevokeCert(const std::string& serial, const std::string& node, const std::string& reason) {
  Status st = Call([&](void* s, np_error* e) {
    return vt_.revoke_cert(s, serial.c_str(), node.c_str(), reason.c_str(), e);
  });
  revocations_.Forget();
  return st;
}

Result<std::vector<std::string>> LedgerAdapter::RevokeNode(const std::string& node, const std::string& reason) {
  std::vector<std::string> out;
  Status st = Call([&](void* s, np_error* e) {
    return vt_.revoke_node(s, node.c_str(), reason.c_str(), StringSink(&out), e);
  });
  revocations_.Forget();
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<ports::IssuedCert>> LedgerAdapter::ListCerts(const std::string& node) {
  std::vector<ports::IssuedCert> out;
  np_cert_sink sink{sizeof(np_cert_sink), &out, [](void* ctx, const np_issued_cert_v1* p) -> int32_t {
                      np_issued_cert_v1 c = CopyRecord(p);
                      static_cast<std::vector<ports::IssuedCert>*>(ctx)->push_back(ports::IssuedCert{
                          TextOf(c.serial), TextOf(c.node), TextOf(c.source), c.not_after_ns, c.issued_at_ns, c.revoked != 0});
                      return 0;
                    }};
  Status st = Call([&](void* s, np_error* e) { return vt_.list_certs(s, node.c_str(), sink, e); });
  if (!st.ok()) return st;
  return out;
}

}  // namespace nodeplane::loader
