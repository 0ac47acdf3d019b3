#include "ledger_vtable.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ledger_error.h"
#include "lease_rules.h"
#include "sql_ledger.h"

namespace nodeplane::ledger {
namespace {

SqlLedger& L(void* self) { return *static_cast<SqlLedger*>(self); }
std::string Str(const char* s) { return s != nullptr ? s : ""; }

// A journal entry's labels are stored one per line (a line break inside a
// label, which GitHub does not allow, becomes a space).
std::string JoinLines(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = items[i];
    for (char& c : item) c = c == '\n' || c == '\r' ? ' ' : c;
    out += (i == 0 ? "" : "\n") + item;
  }
  return out;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// Every slot's body runs here (plugin_error.h G1, ledger_error.h).
template <typename F>
np_code Guard(np_error* err, F&& body) {
  return LedgerCall("ledger-sql", err, "the ledger store failed: ", std::forward<F>(body));
}

template <typename Sink, typename T>
void Put(Sink sink, const T* item) {
  if (sink.put == nullptr) return;
  if (sink.put(sink.ctx, item) != 0) Fail(NP_INTERNAL, "the host's sink refused a record");
}

void PutString(np_string_sink sink, const std::string& v) {
  if (sink.put == nullptr) return;
  if (sink.put(sink.ctx, v.c_str()) != 0) Fail(NP_INTERNAL, "the host's sink refused a record");
}

void PutLease(np_lease_sink sink, const LeaseRow& r) {
  np_lease_v1 l{};
  l.struct_size = sizeof l;
  l.id = r.id.c_str();
  l.tier = r.tier.c_str();
  l.node = r.node.c_str();
  l.target_node = r.target_node.c_str();
  l.phase = PhaseFromName(r.phase).value_or(0);
  l.epoch = r.epoch;
  l.vcpu = r.vcpu;
  l.memory = r.memory;
  l.requested_vcpu = r.requested_vcpu;
  l.requested_memory = r.requested_memory;
  l.instance_type = r.instance_type.c_str();
  l.run_id = r.run_id;
  l.request_id = r.request_id;
  l.created_at_ns = r.created_at;
  l.heartbeat_at_ns = r.heartbeat_at;
  l.expires_at_ns = r.expires_at;
  l.held_at_ns = r.held_at;
  l.guest_os = r.guest_os.c_str();
  l.providers = r.providers.c_str();
  l.chosen_provider = r.chosen_provider.c_str();
  l.site = r.site.c_str();
  l.failure_reason = r.failure_reason.c_str();
  l.holder_incarnation = r.holder_incarnation.c_str();
  l.force_release = static_cast<uint32_t>(r.force_release);
  l.deregistered = static_cast<uint32_t>(r.deregistered);
  l.macos_slot = static_cast<uint32_t>(r.macos_slot);
  Put(sink, &l);
}

void PutEnrollment(np_enrollment_sink sink, const EnrollmentRow& r) {
  np_enrollment_v1 e{};
  e.struct_size = sizeof e;
  e.name = r.name.c_str();
  e.fingerprint = r.fingerprint.c_str();
  e.csr_pem = r.csr_pem.c_str();
  e.cert_pem = r.cert_pem.c_str();
  e.state = r.state == "pending" ? NP_ENROLLMENT_PENDING : r.state == "approved" ? NP_ENROLLMENT_APPROVED
                                                                                  : NP_ENROLLMENT_DENIED;
  e.requested_at_ns = r.requested_at;
  e.decided_at_ns = r.decided_at;
  e.source = r.source.c_str();
  Put(sink, &e);
}

void PutBarrier(np_barrier_sink sink, const BarrierRow& r) {
  np_compute_barrier_v1 b{sizeof(np_compute_barrier_v1), r.id.c_str(), r.generation, r.requested_at,
                          r.requested_by.c_str()};
  Put(sink, &b);
}

TierSpec TierFrom(const np_tier_v1& t) {
  TierSpec out;
  out.label = Str(t.label);
  out.vcpu = t.vcpu;
  out.memory = t.memory;
  for (uint32_t i = 0; i < t.n_providers; ++i) out.providers.push_back(Str(t.providers[i]));
  out.guest_os = t.guest_os != nullptr && t.guest_os[0] != '\0' ? t.guest_os : "linux";
  out.node = Str(t.node);
  out.site = Str(t.site);
  out.max_concurrent = t.max_concurrent;
  out.reserved = t.reserved;
  return out;
}

np_code SetCatalog(void* self, const np_catalog_v1* c, np_error* err) {
  return Guard(err, [&] {
    Catalog cat;
    cat.lease_ttl_ns = c->lease_ttl_ns > 0 ? c->lease_ttl_ns : cat.lease_ttl_ns;
    cat.max_vcpu = c->max_vcpu;
    cat.max_memory = c->max_memory;
    cat.spread = c->placement == NP_PLACEMENT_SPREAD;
    for (uint32_t i = 0; i < c->n_tiers; ++i) {
      TierSpec t = TierFrom(*c->tiers[i]);
      if (t.label.empty() || t.vcpu <= 0 || t.memory <= 0 || t.providers.empty()) {
        Fail(NP_INVALID, "tier \"" + t.label + "\" needs a label, positive vCPU and memory, and providers");
      }
      cat.tiers[t.label] = std::move(t);
    }
    for (uint32_t i = 0; i < c->n_nodes; ++i) {
      const np_node_policy_v1& n = *c->nodes[i];
      NodePolicy p;
      p.provider = Str(n.provider);
      for (uint32_t j = 0; j < n.n_guest_os; ++j) p.guest_os.push_back(Str(n.guest_os[j]));
      p.macos_vm_limit = n.macos_vm_limit;
      p.max_vcpu = n.max_vcpu;
      p.max_memory = n.max_memory;
      cat.nodes[Str(n.name)] = std::move(p);
    }
    L(self).SetCatalog(std::move(cat));
  });
}

// Puts one job record to `out`.
void PutJob(np_job_sink out, const JobRow& j) {
  np_job_v1 o{};
  o.struct_size = sizeof o;
  o.lease_id = j.lease_id.c_str();
  o.tier = j.tier.c_str();
  o.node = j.node.c_str();
  o.run_id = j.run_id;
  o.request_id = j.request_id;
  o.conclusion = PhaseFromName(j.conclusion).value_or(0);
  o.queued_at_ns = j.queued_at;
  o.assigned_at_ns = j.assigned_at;
  o.started_at_ns = j.started_at;
  o.finished_at_ns = j.finished_at;
  o.failure_reason = j.failure_reason.c_str();
  o.image_cache = j.image_cache.c_str();
  o.cache_generation = j.cache_generation.c_str();
  o.actions_cache = j.actions_cache.c_str();
  o.forge_result = j.forge_result.c_str();
  Put(out, &o);
}

// Puts one journal entry to `out`.
void PutForgeJob(np_forge_job_sink out, const ForgeJobRow& j) {
  np_forge_job_v1 o{};
  o.struct_size = sizeof o;
  o.tier = j.tier.c_str();
  o.job_id = j.job_id.c_str();
  o.request_id = j.request_id;
  o.repository = j.repository.c_str();
  o.workflow_ref = j.workflow_ref.c_str();
  o.display_name = j.display_name.c_str();
  o.workflow_run_id = j.workflow_run_id;
  o.queued_at_ns = j.queued_at;
  o.received_at_ns = j.received_at;
  o.acquired_at_ns = j.acquired_at;
  o.started_at_ns = j.started_at;
  o.completed_at_ns = j.completed_at;
  o.runner_name = j.runner_name.c_str();
  o.lease_id = j.lease_id.c_str();
  o.result = j.result.c_str();
  o.settled_at_ns = j.settled_at;
  o.event_name = j.event_name.c_str();
  const std::vector<std::string> labels = SplitLines(j.request_labels);
  std::vector<const char*> names;
  for (const std::string& l : labels) names.push_back(l.c_str());
  o.request_labels = names.empty() ? nullptr : names.data();
  o.n_request_labels = static_cast<uint32_t>(names.size());
  o.runner_id = j.runner_id;
  o.assigned_at_ns = j.assigned_at;
  o.runner_assigned_at_ns = j.runner_assigned_at;
  o.requeues = j.requeues;
  o.settle_tried_at_ns = j.settle_tried_at;
  Put(out, &o);
}

// A journal entry from the host, read by the size the host declared: a host
// built against an older header sends a shorter record.
ForgeJobRow ForgeJobFrom(const np_forge_job_v1* in) {
  np_forge_job_v1 j{};
  if (in == nullptr) Fail(NP_INVALID, "no journal entry given");
  std::memcpy(&j, in, std::min<size_t>(in->struct_size, sizeof j));
  ForgeJobRow r{Str(j.tier),         Str(j.job_id),      j.request_id,     Str(j.repository),  Str(j.workflow_ref),
                Str(j.display_name), j.workflow_run_id,  j.queued_at_ns,   j.received_at_ns,   j.acquired_at_ns,
                j.started_at_ns,     j.completed_at_ns,  Str(j.runner_name), Str(j.lease_id),  Str(j.result),
                j.settled_at_ns};
  r.event_name = Str(j.event_name);
  std::vector<std::string> labels;
  for (uint32_t i = 0; j.request_labels != nullptr && i < j.n_request_labels; ++i) labels.push_back(Str(j.request_labels[i]));
  r.request_labels = JoinLines(labels);
  r.runner_id = j.runner_id;
  r.assigned_at = j.assigned_at_ns;
  r.runner_assigned_at = j.runner_assigned_at_ns;
  r.settle_tried_at = j.settle_tried_at_ns;  // requeues is the store's to count
  return r;
}

void Destroy(void* self) { delete static_cast<SqlLedger*>(self); }

}  // namespace

np_ledger_v1 MakeLedgerVtable(CreateFn create) {
  np_ledger_v1 v{};
  v.struct_size = sizeof v;
  v.create = create;
  v.destroy = &Destroy;
  v.set_catalog = &SetCatalog;
  v.escrow = [](void* self, const char* tier, int32_t want, np_lease_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const LeaseRow& r : L(self).Escrow(Str(tier), want)) PutLease(out, r);
    });
  };
  v.assign = [](void* self, const char* id, int64_t epoch, int64_t run, int64_t req, np_error* err) {
    return Guard(err, [&] { L(self).Assign(Str(id), epoch, run, req); });
  };
  v.bind = [](void* self, const char* id, int64_t epoch, const char* node, const char* inc, np_error* err) {
    return Guard(err, [&] { L(self).Bind(Str(id), epoch, Str(node), Str(inc)); });
  };
  v.advance = [](void* self, const char* id, int64_t epoch, int32_t to, const char* inc, np_error* err) {
    return Guard(err, [&] { L(self).Advance(Str(id), epoch, to, Str(inc)); });
  };
  v.heartbeat = [](void* self, const char* id, int64_t epoch, np_error* err) {
    return Guard(err, [&] { L(self).Heartbeat(Str(id), epoch); });
  };
  v.mark_failure = [](void* self, const char* id, int64_t epoch, const char* reason, np_error* err) {
    return Guard(err, [&] { L(self).MarkFailure(Str(id), epoch, Str(reason)); });
  };
  v.resize = [](void* self, const char* id, int64_t epoch, const char* type, int64_t vcpu, int64_t mem,
                np_error* err) { return Guard(err, [&] { L(self).Resize(Str(id), epoch, Str(type), vcpu, mem); }); };
  v.release = [](void* self, const char* id, int64_t epoch, int32_t outcome, np_error* err) {
    return Guard(err, [&] { L(self).Release(Str(id), epoch, outcome); });
  };
  v.get_lease = [](void* self, const char* id, np_lease_sink out, np_error* err) {
    return Guard(err, [&] { PutLease(out, L(self).GetLease(Str(id))); });
  };
  v.record_cache_observation = [](void* self, const char* id, int64_t epoch, const np_cache_observation_v1* o,
                                  np_error* err) {
    return Guard(err, [&] {
      L(self).RecordCacheObservation(Str(id), epoch,
                                     {Str(o->image_cache), Str(o->cache_generation), Str(o->actions_cache)});
    });
  };
  v.mark_deregistered = [](void* self, const char* id, np_error* err) {
    return Guard(err, [&] { L(self).MarkDeregistered(Str(id)); });
  };
  v.launched_lease_ids = [](void* self, const char* node, np_string_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const std::string& id : L(self).LaunchedLeaseIds(Str(node))) PutString(out, id);
    });
  };
  v.ended_lease_node = [](void* self, const char* id, np_string_sink out, np_error* err) {
    return Guard(err, [&] { PutString(out, L(self).EndedLeaseNode(Str(id))); });
  };
  v.quarantined_lease_ids = [](void* self, const char* node, np_string_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const std::string& id : L(self).QuarantinedLeaseIds(Str(node))) PutString(out, id);
    });
  };
  v.register_node = [](void* self, const np_node_registration_v1* r, int64_t* epoch, np_error* err) {
    return Guard(err, [&] {
      Registration reg{Str(r->name),      Str(r->provider), Str(r->site),  Str(r->incarnation),
                       Str(r->release),   r->total_vcpu,    r->total_memory, r->wire_version};
      *epoch = L(self).RegisterNode(reg);
    });
  };
  v.node_gone = [](void* self, const char* node, int64_t epoch, np_error* err) {
    return Guard(err, [&] { L(self).NodeGone(Str(node), epoch); });
  };
  v.node_withdrawn = [](void* self, const char* node, int64_t epoch, const char* inc, np_error* err) {
    return Guard(err, [&] { L(self).NodeWithdrawn(Str(node), epoch, Str(inc)); });
  };
  v.forget_every_node = [](void* self, np_error* err) { return Guard(err, [&] { L(self).ForgetEveryNode(); }); };
  v.bump_dispatch = [](void* self, const char* node, int64_t* generation, np_error* err) {
    return Guard(err, [&] { *generation = L(self).BumpDispatch(Str(node)); });
  };
  v.resolve_quarantine_for = [](void* self, const char* node, const char* const* running, uint32_t n,
                                int64_t epoch, int64_t* freed, np_error* err) {
    return Guard(err, [&] {
      std::vector<std::string> ids;
      for (uint32_t i = 0; i < n; ++i) ids.push_back(Str(running[i]));
      *freed = L(self).ResolveQuarantineFor(Str(node), ids, epoch);
    });
  };
  v.settle_completion_on_terminal_lease = [](void* self, const char* id, int64_t epoch, int32_t outcome,
                                             uint32_t* settled, np_error* err) {
    return Guard(err, [&] { *settled = L(self).SettleCompletionOnTerminalLease(Str(id), epoch, outcome) ? 1 : 0; });
  };
  v.compute_barrier_in_force = [](void* self, np_barrier_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const BarrierRow& b : L(self).ComputeBarrierInForce()) PutBarrier(out, b);
    });
  };
  v.request_compute_barrier = [](void* self, const char* actor, np_barrier_sink out, np_error* err) {
    return Guard(err, [&] { PutBarrier(out, L(self).RequestComputeBarrier(Str(actor))); });
  };
  v.drop_compute_barrier = [](void* self, const char* id, np_error* err) {
    return Guard(err, [&] { L(self).DropComputeBarrier(Str(id)); });
  };
  v.admission_generation = [](void* self, int64_t* generation, uint32_t* sealed, np_error* err) {
    return Guard(err, [&] {
      auto [g, s] = L(self).AdmissionGeneration();
      *generation = g;
      *sealed = s ? 1 : 0;
    });
  };
  v.set_admission = [](void* self, uint32_t sealed, int64_t expected, const char* reason, const char* actor,
                       int64_t* generation, np_error* err) {
    return Guard(err, [&] { *generation = L(self).SetAdmission(sealed != 0, expected, Str(reason), Str(actor)); });
  };
  v.quiescence = [](void* self, uint32_t* sealed, int64_t* generation, np_lease_sink out, np_error* err) {
    return Guard(err, [&] {
      Quiescence q = L(self).GetQuiescence();
      *sealed = q.sealed ? 1 : 0;
      *generation = q.generation;
      for (const LeaseRow& r : q.outstanding) PutLease(out, r);
    });
  };
  v.node_fence_of = [](void* self, const char* node, np_node_fence_v1* fence, uint32_t* found, np_error* err) {
    return Guard(err, [&] {
      std::vector<FenceRow> f = L(self).NodeFenceOf(Str(node));
      *found = f.empty() ? 0 : 1;
      if (!f.empty()) {
        fence->epoch = f[0].epoch;
        fence->dispatch = f[0].dispatch;
        fence->wire_version = static_cast<int32_t>(f[0].wire_version);
        fence->live = static_cast<uint32_t>(f[0].live);
      }
    });
  };
  v.record_barrier_observation = [](void* self, const np_barrier_observation_v1* o, np_error* err) {
    return Guard(err, [&] {
      L(self).RecordBarrierObservation({Str(o->node), Str(o->barrier_id), o->fence_epoch, o->fence_dispatch,
                                        o->empty != 0});
    });
  };
  v.invalidate_barrier_run = [](void* self, const char* node, np_error* err) {
    return Guard(err, [&] { L(self).InvalidateBarrierRun(Str(node)); });
  };
  v.invalidate_every_barrier_run = [](void* self, np_error* err) {
    return Guard(err, [&] { L(self).InvalidateEveryBarrierRun(); });
  };
  v.compute_clear = [](void* self, uint32_t* clear, np_error* err) {
    return Guard(err, [&] { *clear = L(self).ComputeClear() ? 1 : 0; });
  };
  v.create_join_token = [](void* self, const char* hash, int64_t uses, int64_t expires, const char* note,
                           np_error* err) {
    return Guard(err, [&] { L(self).CreateJoinToken(Str(hash), uses, expires, Str(note)); });
  };
  v.list_join_tokens = [](void* self, np_join_token_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const TokenRow& t : L(self).ListJoinTokens()) {
        np_join_token_v1 j{sizeof j, t.token_sha256.c_str(), t.note.c_str(), t.uses_remaining, t.created_at,
                           t.expires_at};
        Put(out, &j);
      }
    });
  };
  v.revoke_join_token = [](void* self, const char* hash, np_error* err) {
    return Guard(err, [&] { L(self).RevokeJoinToken(Str(hash)); });
  };
  v.request_enrollment_with_token = [](void* self, const char* name, const char* fp, const char* csr,
                                       const char* token, np_enrollment_sink out, np_error* err) {
    return Guard(err, [&] {
      PutEnrollment(out, L(self).RequestEnrollmentWithToken(Str(name), Str(fp), Str(csr), Str(token)));
    });
  };
  v.lookup_enrollment = [](void* self, const char* name, np_enrollment_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const EnrollmentRow& e : L(self).LookupEnrollment(Str(name))) PutEnrollment(out, e);
    });
  };
  v.list_enrollments = [](void* self, int32_t state, np_enrollment_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const EnrollmentRow& e : L(self).ListEnrollments(state)) PutEnrollment(out, e);
    });
  };
  v.decide_enrollment = [](void* self, const char* name, const char* fp, int32_t state, const char* cert,
                           np_error* err) {
    return Guard(err, [&] { L(self).DecideEnrollment(Str(name), Str(fp), state, Str(cert)); });
  };
  v.record_issued_cert = [](void* self, const np_issued_cert_v1* c, np_error* err) {
    return Guard(err, [&] { L(self).RecordIssuedCert({Str(c->serial), Str(c->node), Str(c->source), c->not_after_ns}); });
  };
  v.record_renewed_cert = [](void* self, const np_issued_cert_v1* c, const char* parent, int64_t parent_at,
                             np_error* err) {
    return Guard(err, [&] {
      L(self).RecordRenewedCert({Str(c->serial), Str(c->node), Str(c->source), c->not_after_ns}, Str(parent),
                                parent_at);
    });
  };
  v.cert_revoked_for = [](void* self, const char* node, const char* serial, int64_t issued_at, uint32_t* revoked,
                          np_error* err) {
    return Guard(err, [&] { *revoked = L(self).CertRevokedFor(Str(node), Str(serial), issued_at) ? 1 : 0; });
  };
  v.revoke_cert = [](void* self, const char* serial, const char* node, const char* reason, np_error* err) {
    return Guard(err, [&] { L(self).RevokeCert(Str(serial), Str(node), Str(reason)); });
  };
  v.revoke_node = [](void* self, const char* node, const char* reason, np_string_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const std::string& serial : L(self).RevokeNode(Str(node), Str(reason))) PutString(out, serial);
    });
  };
  v.list_certs = [](void* self, const char* node, np_cert_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const CertRow& c : L(self).ListCerts(Str(node))) {
        np_issued_cert_v1 i{sizeof i, c.serial.c_str(), c.node.c_str(), c.source.c_str(), c.not_after, c.issued_at,
                            static_cast<uint32_t>(c.revoked)};
        Put(out, &i);
      }
    });
  };
  v.reap = [](void* self, int64_t* reaped, np_error* err) { return Guard(err, [&] { *reaped = L(self).Reap(); }); };
  v.force_release = [](void* self, const char* id, np_error* err) {
    return Guard(err, [&] { L(self).ForceRelease(Str(id)); });
  };
  v.list_leases = [](void* self, const char* node, np_lease_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const LeaseRow& r : L(self).ListLeases(Str(node))) PutLease(out, r);
    });
  };
  v.list_nodes = [](void* self, np_node_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const NodeRow& r : L(self).ListNodes()) {
        np_node_v1 n{};
        n.struct_size = sizeof n;
        n.name = r.name.c_str();
        n.provider = r.provider.c_str();
        n.site = r.site.c_str();
        n.incarnation = r.incarnation.c_str();
        n.epoch = r.epoch;
        n.total_vcpu = r.total_vcpu;
        n.total_memory = r.total_memory;
        n.last_seen_at_ns = r.last_seen_at;
        n.dispatch_generation = r.dispatch_generation;
        n.wire_version = static_cast<int32_t>(r.wire_version);
        n.live = static_cast<uint32_t>(r.live);
        n.drained = static_cast<uint32_t>(r.drained);
        n.withdrawn = static_cast<uint32_t>(r.withdrawn);
        Put(out, &n);
      }
    });
  };
  v.job_for_lease = [](void* self, const char* id, np_job_sink out, np_error* err) {
    return Guard(err, [&] {
      std::vector<JobRow> jobs = L(self).JobForLease(Str(id));
      if (jobs.empty()) Fail(NP_NOT_FOUND, "lease " + Str(id) + " has no job history");
      PutJob(out, jobs.front());
    });
  };
  v.job_for_request = [](void* self, int64_t request_id, np_job_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const JobRow& j : L(self).JobForRequest(request_id)) PutJob(out, j);
    });
  };
  v.recent_jobs = [](void* self, int64_t since_ns, uint32_t limit, np_job_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const JobRow& j : L(self).RecentJobs(since_ns, limit)) PutJob(out, j);
    });
  };
  v.record_forge_job = [](void* self, const np_forge_job_v1* job, np_error* err) {
    return Guard(err, [&] { L(self).RecordForgeJob(ForgeJobFrom(job)); });
  };
  v.list_forge_jobs = [](void* self, const char* tier, int64_t since_ns, uint32_t limit, np_forge_job_sink out,
                         np_error* err) {
    return Guard(err, [&] {
      for (const ForgeJobRow& j : L(self).ListForgeJobs(Str(tier), since_ns, limit)) PutForgeJob(out, j);
    });
  };
  v.unsettled_forge_jobs = [](void* self, const char* tier, uint32_t limit, np_forge_job_sink out, np_error* err) {
    return Guard(err, [&] {
      for (const ForgeJobRow& j : L(self).UnsettledForgeJobs(Str(tier), limit)) PutForgeJob(out, j);
    });
  };
  v.campaign = [](void* self, const char* replica, const char* address, int64_t term_ns, np_leadership_sink out,
                  np_error* err) {
    return Guard(err, [&] {
      const LeadershipRow r = L(self).Campaign(Str(replica), Str(address), term_ns);
      np_leadership_v1 l{sizeof l, r.active ? 1u : 0u, r.generation, r.term_left_ns, r.holder.c_str(),
                         r.address.c_str()};
      Put(out, &l);
    });
  };
  v.resign = [](void* self, np_error* err) { return Guard(err, [&] { L(self).Resign(); }); };
  // Nothing in a SqlLedger belongs to a thread: the writer session is behind
  // a mutex (L1), readers are checked out of a pool (L2), so any number of
  // the host's threads may call at once, and under load more writes share a
  // group commit (L8) than the host's pool of four would bring.
  v.call_model = [](void*) -> uint32_t { return NP_CALLS_ANY_THREAD; };
  v.escrow_for_launch = [](void* self, const char* tier, int64_t run, int64_t req, np_lease_sink out,
                           int64_t* generation, np_error* err) {
    return Guard(err, [&] {
      for (const LeaseRow& r : L(self).EscrowForLaunch(Str(tier), run, req, generation)) PutLease(out, r);
    });
  };
  return v;
}

}  // namespace nodeplane::ledger
