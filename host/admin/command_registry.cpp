#include "admin/command_registry.h"

namespace nodeplane::admin {
namespace {

constexpr std::string_view kOperatorReason = "revoked by an operator";

std::vector<CommandSpec> Build() {
  using enum ArgType;
  return {
      {"status", "deployment, version, registered nodes, CA fingerprint, admission", {}},

      // The deployment CA (commands_ca.cpp).
      {"ca.init", "create the CA files in state_dir if absent", {}},
      {"ca.show", "the CA fingerprint and trust bundle", {}},
      {"ca.issue", "offline issue: node.crt, node.key (0600), ca.crt into DIR",
       {Word("node", "NODE", kName), Flag("out", "--out", kString, "DIR").Required().Local()}, Output::kBundle},
      {"ca.rotate", "start a CA rotation (in force from the next start)", {}},
      {"ca.retire", "end it: the previous CA is deleted", {}},

      // Who may join (commands_access.cpp).
      {"tokens.create", "a join token, printed once; only its hash is stored",
       {Flag("uses", "--uses", kInt, "N").Default("1").Between(1),
        Flag("ttl_seconds", "--ttl", kSeconds, "DURATION").Default("3600").Between(1),
        Flag("note", "--note", kString, "TEXT")},
       Output::kOneTimeSecret},
      {"tokens.list", "join tokens by id, uses left and expiry", {}},
      {"tokens.revoke", "revoke a join token by its id (6 or more characters of it)", {Word("id", "ID")}},
      {"enrollments.list", "enrollment requests with their key fingerprints",
       {Flag("state", "--state", kString, "STATE").Default("pending").OneOf("pending|approved|denied|all")}},
      {"enrollments.approve", "sign NODE's pending request if FP is exactly its fingerprint",
       {Word("node", "NODE", kName), Flag("fingerprint", "--fingerprint", kString, "FP").Required()}},
      {"enrollments.deny", "refuse NODE's request, freeing the name for another key",
       {Word("node", "NODE", kName), Flag("fingerprint", "--fingerprint", kString, "FP").Required()}},

      // The fleet (commands_fleet.cpp).
      {"nodes.list", "nodes: provider, site, capacity, incarnation, last seen, state", {}},
      {"nodes.revoke", "revoke every certificate of NODE and evict it",
       {Word("node", "NODE", kName), Flag("reason", "--reason", kString, "TEXT").Default(kOperatorReason)}},
      {"certs.list", "issued certificates", {Flag("node", "--node", kName, "NODE")}},
      {"certs.revoke", "revoke a certificate by serial, in any spelling openssl prints",
       {Word("serial", "SERIAL"), Flag("node", "--node", kName, "NODE"),
        Flag("reason", "--reason", kString, "TEXT").Default(kOperatorReason),
        Flag("force", "--force", kSwitch)}},
      {"upgrade", "send the upgrade command to one node",
       {Word("node", "NODE", kName), Flag("version", "--version", kString, "V").Required(),
        Flag("manifest_sha256", "--manifest-sha256", kString, "HEX"),
        Flag("rollout_id", "--rollout-id", kString, "ID"), Flag("generation", "--generation", kInt, "N").Between(0)}},

      // Leases and jobs (commands_leases.cpp).
      {"leases.list", "open leases", {Flag("node", "--node", kName, "NODE")}, Output::kShow,
       {"providers", "requested_vcpu", "requested_memory", "instance_type", "target_node", "guest_os",
        "chosen_provider", "force_release"}},
      {"leases.show", "one lease, open or ended", {Word("lease", "LEASE")}},
      {"leases.release", "ask the holder to give the lease back", {Word("lease", "LEASE")}},
      {"tiers.resume", "launch again for a tier paused because GitHub refused its runner as outdated",
       {Word("tier", "TIER")}},
      {"jobs.list", "GitHub jobs: state, why they wait, where they ran",
       {Flag("tier", "--tier", kString, "TIER"), Flag("since_seconds", "--since", kSeconds, "DURATION").Default("86400").Between(1),
        Flag("limit", "--limit", kInt, "N").Default("50").Between(1, 1000)},
       Output::kShow,
       {"reason", "link", "workflow", "ref", "workflow_ref", "event", "runs_on", "run_id", "request_id", "runner_id", "runner", "lease",
        "result", "requeues", "settled", "queued_at_ns", "assigned_at_ns", "runner_assigned_at_ns", "completed_at_ns",
        "received_at_ns", "acquired_at_ns", "started_at_ns", "settled_at_ns"}},
      {"jobs.show", "one GitHub job (by its id or its runner's lease): every fact, and its run's link",
       {Word("job", "JOB")}},
      {"launch", "escrow a lease for TIER and launch it; idempotent per request id",
       {Flag("tier", "--tier", kString, "TIER").Required(), Flag("request_id", "--request-id", kInt, "N").Required().Between(1),
        Flag("run_id", "--run-id", kInt, "N").Between(1), Flag("wait", "--wait", kSwitch)}},
      {"destroy", "destroy what runs for a request",
       {Flag("request_id", "--request-id", kInt, "N").Required().Between(1)}},

      // Admission (commands_leases.cpp).
      {"drain", "seal admission and wait until the fleet proves it runs nothing",
       {Flag("timeout_seconds", "--timeout", kSeconds, "DURATION").Between(1)}},
      {"admission.open", "unseal admission after a drain", {Flag("reason", "--reason", kString, "TEXT").Default("opened")}},

      {"metrics", "the Prometheus text", {}, Output::kText},
  };
}

}  // namespace

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec> kCommands = Build();
  return kCommands;
}

const CommandSpec* FindCommand(std::string_view name) {
  for (const CommandSpec& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const ArgSpec* FindArg(const CommandSpec& spec, std::string_view key) {
  for (const ArgSpec& a : spec.args) {
    if (a.key == key) return &a;
  }
  return nullptr;
}

}  // namespace nodeplane::admin
