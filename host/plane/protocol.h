// The node protocol's messages, as the Plane sees them: plain structs, no
// JSON (the wire's codec maps them to and from snake_case JSON).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ports/ledger.h"

namespace nodeplane::plane {

// Protocol versions this control plane speaks. A registration negotiates
// one inside both sides' ranges.
inline constexpr int32_t kMinProtocol = 1;
inline constexpr int32_t kMaxProtocol = 1;

// What a job source knows about the job a lease runs.
struct Job {
  int64_t request_id = 0;
  int64_t run_id = 0;
  std::string event, owner, repository, workflow_ref;
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
};

enum class CommandKind { kLaunch, kDestroy, kSweep, kTend, kInventory, kUpgrade };
const char* CommandKindName(CommandKind k);

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
};

struct CommandResult {
  std::string id;
  bool ok = false;
  std::string error;
  bool custody = false;                 // the node may hold compute; never release
  std::string barrier_id;               // inventory echo
  std::vector<std::string> instances;   // inventory
};

struct RegisterRequest {
  int32_t min_version = 0;  // 0: exactly `version`
  int32_t version = 0;
  std::string node, provider, site, deployment, incarnation, release;
  std::vector<std::string> guest_os;    // claim; empty: any
  int64_t vcpu = 0, memory = 0;
  std::vector<std::string> instances;
  bool inventory_known = false;
};

struct RegisterResponse {
  int32_t version = 0;  // negotiated
  int32_t min_version = kMinProtocol, max_version = kMaxProtocol;
  std::string deployment;
  int64_t lease_ttl_seconds = 0;
  int64_t poll_seconds = 0;
};

}  // namespace nodeplane::plane
