// One field list per message, read by both directions of the codec.
//
// Each message has `template <class V> void Describe(V& v, M& m)`. The codec
// runs it with an encoder (which reads the members and writes JSON) or a
// decoder (which reads JSON into the members), so a field cannot be written
// under one name and read under another, or sent and never read. A visitor
// offers:
//
//   v.Message(name, sender)   the name errors carry, and who sends it:
//                             Sender::kNode bodies are decoded strictly (an
//                             unknown field is a version mismatch and is
//                             refused); Sender::kPlane answers leniently (a
//                             newer control plane may add fields, and the
//                             negotiated version says what a node may rely on).
//                             A nested message is named "parent.key" and takes
//                             its parent's strictness.
//   v.Field(key, member[, Omit::kEmpty])
//                             strings, bools, non-negative integers (an int32_t
//                             member refuses anything above INT32_MAX), string
//                             arrays, and optional<nested message>. Absent
//                             reads as the default; Omit::kEmpty is Go's
//                             omitempty (a default value is not written), and
//                             an empty optional is never written.
//   v.Enum(key, member, names)
//                             written by name; required, and anything but one
//                             of `names` is refused naming them all.
//   v.CommaList(key, member)  a comma-joined string member sent as an array.
//   v.Check(holds, problem)   a rule on the decoded message, after its fields;
//                             a decoder refuses with "<name>: <problem>".
//
// Invariants:
//   F1. Every member a peer needs is in the list; members that never leave the
//       process (a lease's heartbeat_at_ns, holder_incarnation, ...) are not.
//   F2. Omit::kEmpty only where absent and default mean the same thing, so a
//       round trip is the identity (tests/unit/protocol_codec_test.cpp).
//   F3. A Check only narrows what the fields already accept; it never reads
//       the JSON.
#pragma once

#include <span>

#include "protocol/messages.h"

namespace nodeplane::protocol {

enum class Sender { kNode, kPlane };
enum class Omit { kNever, kEmpty };

template <class E>
struct Named {
  const char* name;
  E value;
};
// Every lease phase, quarantine included: a lease read back carries any.
std::span<const Named<ports::Phase>> PhaseNames();
std::span<const Named<CommandKind>> CommandKindNames();
std::span<const Named<ports::EnrollmentState>> EnrollmentStateNames();

// ---- Shared parts ----

template <class V>
void Describe(V& v, ports::Lease& m) {
  v.Message("lease", Sender::kPlane);
  v.Field("id", m.id);
  v.Field("tier", m.tier);
  v.Field("node", m.node);
  v.Field("target_node", m.target_node);
  v.Enum("phase", m.phase, PhaseNames());
  v.Field("epoch", m.epoch);
  v.Field("vcpu", m.vcpu);
  v.Field("memory", m.memory);
  v.Field("requested_vcpu", m.requested_vcpu);
  v.Field("requested_memory", m.requested_memory);
  v.Field("instance_type", m.instance_type);
  v.Field("run_id", m.run_id);
  v.Field("request_id", m.request_id);
  v.Field("guest_os", m.guest_os);
  v.CommaList("providers", m.providers);
  v.Field("chosen_provider", m.chosen_provider);
  v.Field("site", m.site);
  v.Field("failure_reason", m.failure_reason);
  v.Field("force_release", m.force_release);
  v.Field("expires_at_ns", m.expires_at_ns);
}

template <class V>
void Describe(V& v, Job& m) {
  v.Message("job", Sender::kPlane);
  v.Field("request_id", m.request_id);
  v.Field("run_id", m.run_id);
  v.Field("event", m.event);
  v.Field("owner", m.owner);
  v.Field("repository", m.repository);
  v.Field("workflow_ref", m.workflow_ref);
}

template <class V>
void Describe(V& v, TierShape& m) {
  v.Message("tier", Sender::kPlane);
  v.Field("label", m.label);
  v.Field("vcpu", m.vcpu);
  v.Field("memory", m.memory);
  v.Field("guest_os", m.guest_os);
  v.Field("image", m.image);
  v.Field("command", m.command);
  v.Field("runner_group", m.runner_group);
  v.Field("labels", m.labels);
  v.Field("has_target", m.has_target);
  v.Field("network", m.network, Omit::kEmpty);
  v.Field("pids_limit", m.pids_limit, Omit::kEmpty);
  v.Field("stop_grace_ms", m.stop_grace_ms, Omit::kEmpty);
}

template <class V>
void Describe(V& v, UpgradeSpec& m) {
  v.Message("upgrade", Sender::kPlane);
  v.Field("version", m.version);
  v.Field("manifest_sha256", m.manifest_sha256);
  v.Field("rollout_id", m.rollout_id);
  v.Field("generation", m.generation);
}

// ---- What a node sends ----

template <class V>
void Describe(V& v, RegisterRequest& m) {
  v.Message("register", Sender::kNode);
  v.Field("min_version", m.min_version);
  v.Field("version", m.version);
  v.Field("node", m.node);
  v.Field("provider", m.provider);
  v.Field("site", m.site, Omit::kEmpty);
  v.Field("deployment", m.deployment);
  v.Field("incarnation", m.incarnation);
  v.Field("release", m.release);
  v.Field("guest_os", m.guest_os, Omit::kEmpty);
  v.Field("vcpu", m.vcpu);
  v.Field("memory", m.memory);
  v.Field("instances", m.instances);
  v.Field("inventory_known", m.inventory_known);
}

template <class V>
void Describe(V& v, CommandResult& m) {
  v.Message("result", Sender::kNode);
  v.Field("id", m.id);
  v.Field("ok", m.ok);
  v.Field("error", m.error, Omit::kEmpty);
  v.Field("custody", m.custody, Omit::kEmpty);
  v.Field("barrier_id", m.barrier_id, Omit::kEmpty);
  v.Field("instances", m.instances, Omit::kEmpty);
  v.Check(!m.id.empty(), "field \"id\" names the command being answered");
}

// bind and heartbeat; the codec's caller names which.
template <class V>
void Describe(V& v, EpochBody& m) {
  v.Message("epoch", Sender::kNode);
  v.Field("epoch", m.epoch);
  v.Field("node", m.node, Omit::kEmpty);
}

template <class V>
void Describe(V& v, AdvanceBody& m) {
  v.Message("advance", Sender::kNode);
  v.Field("epoch", m.epoch);
  v.Enum("phase", m.phase, PhaseNames());
  v.Check(m.phase != ports::Phase::kQuarantine, "field \"phase\" must not be quarantine: only the control plane quarantines");
}

template <class V>
void Describe(V& v, ReleaseBody& m) {
  v.Message("release", Sender::kNode);
  v.Field("epoch", m.epoch);
  v.Enum("outcome", m.outcome, PhaseNames());
  v.Check(m.outcome == ports::Phase::kDone || m.outcome == ports::Phase::kFailed,
          "field \"outcome\" must be \"done\" or \"failed\"");
}

template <class V>
void Describe(V& v, FailureBody& m) {
  v.Message("failure", Sender::kNode);
  v.Field("epoch", m.epoch);
  v.Field("reason", m.reason);
}

template <class V>
void Describe(V& v, ReconcileBody& m) {
  v.Message("reconcile", Sender::kNode);
  v.Field("instances", m.instances);
}

// withdraw and runner_recover; the codec's caller names which.
template <class V>
void Describe(V& v, EmptyBody&) {
  v.Message("empty", Sender::kNode);
}

template <class V>
void Describe(V& v, EnrollBody& m) {
  v.Message("enroll", Sender::kNode);
  v.Field("node", m.node);
  v.Field("csr_pem", m.csr_pem);
  v.Field("join_token", m.join_token);
}

template <class V>
void Describe(V& v, RenewBody& m) {
  v.Message("renew", Sender::kNode);
  v.Field("csr_pem", m.csr_pem);
  v.Check(!m.csr_pem.empty(), "field \"csr_pem\" must name the new key's certificate request");
}

template <class V>
void Describe(V& v, DescribeBody& m) {
  v.Message("describe", Sender::kNode);
  v.Field("tier", m.tier);
  v.Check(!m.tier.empty(), "field \"tier\" must name a tier of the catalogue");
}

template <class V>
void Describe(V& v, JitBody& m) {
  v.Message("jit", Sender::kNode);
  v.Field("runner_name", m.runner_name);
  v.Field("work_folder", m.work_folder);
}

template <class V>
void Describe(V& v, RemoveRunnerBody& m) {
  v.Message("runner_remove", Sender::kNode);
  v.Field("runner_id", m.runner_id);
}

// ---- What the control plane answers ----

template <class V>
void Describe(V& v, RegisterResponse& m) {
  v.Message("register reply", Sender::kPlane);
  v.Field("version", m.version);
  v.Field("min_version", m.min_version);
  v.Field("max_version", m.max_version);
  v.Field("deployment", m.deployment);
  v.Field("lease_ttl_seconds", m.lease_ttl_seconds);
  v.Field("poll_seconds", m.poll_seconds);
}

template <class V>
void Describe(V& v, Command& m) {
  v.Message("command", Sender::kPlane);
  v.Field("id", m.id);
  v.Enum("kind", m.kind, CommandKindNames());
  v.Field("lease", m.lease);
  v.Field("job", m.job);
  v.Field("tier", m.tier);
  v.Field("request_id", m.request_id, Omit::kEmpty);
  v.Field("job_result", m.job_result, Omit::kEmpty);
  v.Field("barrier_id", m.barrier_id, Omit::kEmpty);
  v.Field("upgrade", m.upgrade);
  v.Check(m.kind != CommandKind::kLaunch || (m.lease && m.tier), "a launch without its lease or tier");
}

template <class V>
void Describe(V& v, ErrorReply& m) {
  v.Message("error", Sender::kPlane);
  v.Field("code", m.code);
  v.Field("message", m.message);
  v.Field("active", m.active, Omit::kEmpty);
}

template <class V>
void Describe(V& v, HealthReply& m) {
  v.Message("health", Sender::kPlane);
  v.Field("status", m.status);
  v.Field("deployment", m.deployment);
  v.Field("replica", m.replica, Omit::kEmpty);
  v.Field("active_replica", m.active_replica, Omit::kEmpty);
  v.Field("active_address", m.active_address, Omit::kEmpty);
  v.Field("generation", m.generation, Omit::kEmpty);
}

template <class V>
void Describe(V& v, LeaseReply& m) {
  v.Message("lease reply", Sender::kPlane);
  v.Field("lease", m.lease);
  v.Check(m.lease.has_value(), "no lease");
}

template <class V>
void Describe(V& v, LaunchedReply& m) {
  v.Message("launched reply", Sender::kPlane);
  v.Field("lease_ids", m.lease_ids);
  v.Field("quarantined", m.quarantined);
}

template <class V>
void Describe(V& v, FreedReply& m) {
  v.Message("freed reply", Sender::kPlane);
  v.Field("freed", m.freed);
}

template <class V>
void Describe(V& v, CaReply& m) {
  v.Message("ca reply", Sender::kPlane);
  v.Field("ca_pem", m.ca_pem);
  v.Field("fingerprint", m.fingerprint);
  v.Field("deployment", m.deployment);
}

template <class V>
void Describe(V& v, EnrollReply& m) {
  v.Message("enroll reply", Sender::kPlane);
  v.Enum("state", m.state, EnrollmentStateNames());
  v.Field("fingerprint", m.fingerprint);
  v.Field("cert_pem", m.cert_pem, Omit::kEmpty);
  v.Field("ca_pem", m.ca_pem, Omit::kEmpty);
  v.Check(m.state != ports::EnrollmentState::kApproved || (!m.cert_pem.empty() && !m.ca_pem.empty()),
          "approved without the certificate and the CA");
}

template <class V>
void Describe(V& v, RenewReply& m) {
  v.Message("renew reply", Sender::kPlane);
  v.Field("cert_pem", m.cert_pem);
  v.Field("ca_pem", m.ca_pem);
  v.Check(!m.cert_pem.empty() && !m.ca_pem.empty(), "no certificate");
}

template <class V>
void Describe(V& v, CachePolicyReply& m) {
  v.Message("cache policy reply", Sender::kPlane);
  v.Field("allowed", m.allowed);
}

template <class V>
void Describe(V& v, DescribeReply& m) {
  v.Message("describe reply", Sender::kPlane);
  v.Field("found", m.found);
  v.Field("id", m.id, Omit::kEmpty);
  v.Field("name", m.name, Omit::kEmpty);
  v.Field("labels", m.labels, Omit::kEmpty);
}

template <class V>
void Describe(V& v, JitReply& m) {
  v.Message("jit reply", Sender::kPlane);
  v.Field("config", m.config);
  v.Field("runner_id", m.runner_id);
  v.Field("runner_name", m.runner_name);
  v.Check(!m.config.empty(), "no config");
}

template <class V>
void Describe(V& v, RecoverReply& m) {
  v.Message("recover reply", Sender::kPlane);
  v.Field("state", m.state);
}

}  // namespace nodeplane::protocol
