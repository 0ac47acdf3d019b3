// The node protocol's messages: every body a node sends and every answer the
// control plane gives, as plain structs. No JSON here: protocol/codec.h maps
// each to and from snake_case JSON, reading the one field list per message
// in protocol/fields.h. Used by the control plane (the Plane, the wire, the
// admin API) and by the reference node alike, so neither links the other.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ports/ledger.h"

namespace nodeplane::protocol {

// Protocol versions this control plane speaks. A registration negotiates
// one inside both sides' ranges.
inline constexpr int32_t kMinProtocol = 1;
inline constexpr int32_t kMaxProtocol = 1;

// What a job source knows about the job a lease runs.
struct Job {
  int64_t request_id = 0;
  int64_t run_id = 0;
  std::string event, owner, repository, workflow_ref;
  bool operator==(const Job&) const = default;
};

// The tier's shape, shipped on every launch so a node never needs its own
// copy of the catalogue (R13).
struct TierShape {
  std::string label;
  int64_t vcpu = 0, memory = 0;
  std::string guest_os, image;
  std::vector<std::string> command;
  std::string runner_group;
  std::vector<std::string> labels;
  bool has_target = false;  // a JIT registration is minted for this tier
  // The container provider's (0 / "" from a plane before them: its defaults).
  std::string network{};
  int64_t pids_limit = 0;
  int64_t stop_grace_ms = 0;
  bool operator==(const TierShape&) const = default;
};

// A runner's name carries its lease: the JIT route reads the lease (and so
// the entitlement) from it, and a runner can always be found again by name
// without a journal, because the name is fixed before GitHub is asked.
inline constexpr std::string_view kRunnerNamePrefix = "np-";
inline std::string RunnerNameFor(const std::string& lease_id) { return std::string(kRunnerNamePrefix) + lease_id; }
// The lease a runner name was given for, or "" when nodeplane did not name it.
inline std::string LeaseOfRunnerName(std::string_view name) {
  if (name.size() <= kRunnerNamePrefix.size() || name.substr(0, kRunnerNamePrefix.size()) != kRunnerNamePrefix) return {};
  return std::string(name.substr(kRunnerNamePrefix.size()));
}

// Whether GitHub's JobCompleted result says the job succeeded. GitHub sends
// "succeeded", "failed", "canceled" (lower case, measured); compared without
// regard to case.
inline bool JobSucceeded(std::string_view result) {
  constexpr std::string_view kSucceeded = "succeeded";
  if (result.size() != kSucceeded.size()) return false;
  for (size_t i = 0; i < result.size(); ++i) {
    const char c = result[i] >= 'A' && result[i] <= 'Z' ? static_cast<char>(result[i] - 'A' + 'a') : result[i];
    if (c != kSucceeded[i]) return false;
  }
  return true;
}

struct UpgradeSpec {
  std::string version, manifest_sha256, rollout_id;
  int64_t generation = 0;
  bool operator==(const UpgradeSpec&) const = default;
};

enum class CommandKind { kLaunch, kDestroy, kSweep, kTend, kInventory, kUpgrade };
inline constexpr CommandKind kCommandKinds[] = {CommandKind::kLaunch,    CommandKind::kDestroy,
                                                CommandKind::kSweep,     CommandKind::kTend,
                                                CommandKind::kInventory, CommandKind::kUpgrade};
constexpr const char* CommandKindName(CommandKind k) {
  switch (k) {
    case CommandKind::kLaunch: return "launch";
    case CommandKind::kDestroy: return "destroy";
    case CommandKind::kSweep: return "sweep";
    case CommandKind::kTend: return "tend";
    case CommandKind::kInventory: return "inventory";
    case CommandKind::kUpgrade: return "upgrade";
  }
  return "unknown";
}

struct Command {
  std::string id;  // 32 lowercase hex, random
  CommandKind kind = CommandKind::kSweep;
  std::optional<ports::Lease> lease;  // launch
  std::optional<Job> job;             // launch
  std::optional<TierShape> tier;      // launch
  int64_t request_id = 0;             // destroy
  std::string job_result;             // destroy after a GitHub completion
  std::string barrier_id;             // inventory
  std::optional<UpgradeSpec> upgrade; // upgrade
  // The request a command concerns.
  int64_t RequestId() const { return job ? job->request_id : request_id; }
  bool operator==(const Command&) const = default;
};

struct CommandResult {
  std::string id;
  bool ok = false;
  std::string error;
  bool custody = false;                 // the node may hold compute; never release
  std::string barrier_id;               // inventory echo
  std::vector<std::string> instances;   // inventory
  bool operator==(const CommandResult&) const = default;
};

struct RegisterRequest {
  int32_t min_version = 0;  // 0: exactly `version`
  int32_t version = 0;
  std::string node, provider, site, deployment, incarnation, release;
  std::vector<std::string> guest_os;    // claim; empty: any
  int64_t vcpu = 0, memory = 0;
  std::vector<std::string> instances;
  bool inventory_known = false;
  bool operator==(const RegisterRequest&) const = default;
};

struct RegisterResponse {
  int32_t version = 0;  // negotiated
  int32_t min_version = kMinProtocol, max_version = kMaxProtocol;
  std::string deployment;
  int64_t lease_ttl_seconds = 0;
  int64_t poll_seconds = 0;
  bool operator==(const RegisterResponse&) const = default;
};

// ---- What a node sends on its lease routes ----

// bind and heartbeat.
struct EpochBody {
  int64_t epoch = 0;
  std::string node;  // bind's: ignored, the path (or certificate) decides
  bool operator==(const EpochBody&) const = default;
};
struct AdvanceBody {
  int64_t epoch = 0;
  ports::Phase phase = ports::Phase::kCapacity;  // never quarantine: that is the control plane's
  bool operator==(const AdvanceBody&) const = default;
};
struct ReleaseBody {
  int64_t epoch = 0;
  ports::Phase outcome = ports::Phase::kDone;  // done or failed
  bool operator==(const ReleaseBody&) const = default;
};
struct FailureBody {
  int64_t epoch = 0;
  std::string reason;
  bool operator==(const FailureBody&) const = default;
};
struct ReconcileBody {
  std::vector<std::string> instances;
  bool operator==(const ReconcileBody&) const = default;
};
// withdraw and runner_recover: {}.
struct EmptyBody {
  bool operator==(const EmptyBody&) const = default;
};

// ---- Certificates ----
struct EnrollBody {
  std::string node, csr_pem, join_token;  // join_token: SECRET
  bool operator==(const EnrollBody&) const = default;
};
struct RenewBody {
  std::string csr_pem;
  bool operator==(const RenewBody&) const = default;
};

// ---- JIT registrations and runner sets ----
struct DescribeBody {
  std::string tier;
  bool operator==(const DescribeBody&) const = default;
};
// The runner name carries the lease (RunnerNameFor).
struct JitBody {
  std::string runner_name, work_folder;
  bool operator==(const JitBody&) const = default;
};
struct RemoveRunnerBody {
  int64_t runner_id = 0;  // 0: by the lease's runner name
  bool operator==(const RemoveRunnerBody&) const = default;
};

// ---- The control plane's answers ----
struct ErrorReply {
  std::string code, message;
  // A standby's 503: where the active replica's node wire is ([ha]).
  std::string active;
  bool operator==(const ErrorReply&) const = default;
};
struct HealthReply {
  std::string status = "ok";  // "ok"; a standby replica says "standby"
  std::string deployment;
  // With [ha]: this replica's name, and the active one's name and address.
  std::string replica, active_replica, active_address;
  int64_t generation = 0;  // the leadership's generation, as this replica last saw it
  bool operator==(const HealthReply&) const = default;
};
struct LeaseReply {
  std::optional<ports::Lease> lease;
  bool operator==(const LeaseReply&) const = default;
};
struct LaunchedReply {
  std::vector<std::string> lease_ids;    // may have compute here
  std::vector<std::string> quarantined;  // expired while compute may exist: never an orphan
  bool operator==(const LaunchedReply&) const = default;
};
struct FreedReply {
  int64_t freed = 0;
  bool operator==(const FreedReply&) const = default;
};
struct CaReply {
  std::string ca_pem, fingerprint, deployment;
  bool operator==(const CaReply&) const = default;
};
struct EnrollReply {
  ports::EnrollmentState state = ports::EnrollmentState::kPending;
  std::string fingerprint;
  std::string cert_pem, ca_pem;  // approved only
  bool operator==(const EnrollReply&) const = default;
};
struct RenewReply {
  std::string cert_pem, ca_pem;
  bool operator==(const RenewReply&) const = default;
};
struct CachePolicyReply {
  bool allowed = false;
  bool operator==(const CachePolicyReply&) const = default;
};
// found=false answers with nothing else.
struct DescribeReply {
  bool found = false;
  int64_t id = 0;
  std::string name;
  std::vector<std::string> labels;
  bool operator==(const DescribeReply&) const = default;
};
struct JitReply {
  std::string config;  // SECRET: the runner's credential
  int64_t runner_id = 0;
  std::string runner_name;
  bool operator==(const JitReply&) const = default;
};
struct RecoverReply {
  std::string state;  // "busy" or "retired"
  bool operator==(const RecoverReply&) const = default;
};

}  // namespace nodeplane::protocol
