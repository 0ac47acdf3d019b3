// Which GitHub App mints a tier's runner registrations, and the runner group
// it registers them in: the tier's target picks the JIT source
// (WithTargetJIT; never some other owner's App), and each target's runner
// group is resolved once and then cached.
//
// Thread-safe: the routes of the node wire call it from its workers.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "ports/jit.h"

namespace nodeplane::wire {

// What the JIT routes need to know of a tier: its target picks the JIT
// source, its group and labels shape the registration.
struct TierTarget {
  std::string target;  // "" : no registration is minted for this tier
  std::string runner_group;
  std::vector<std::string> labels;
  bool scale_set = false;  // its runners register with the tier's scale set (scale_set_jit)
};

class JitTargets {
 public:
  // Both maps are copied; the sources are borrowed and must outlive this.
  JitTargets(std::map<std::string, TierTarget> tiers, std::map<std::string, ports::JitSource*> sources);

  struct Resolved {
    const TierTarget* tier;
    ports::JitSource* source;
  };
  // The tier's target and its source, or a refusal naming why none mints
  // for it (plane::kRefused: not in the catalogue, no target, a target with
  // no source here).
  Result<Resolved> Resolve(const std::string& tier) const;

  // The tier's runner group at its target; `fresh` drops a cached answer
  // first (a recreated group must not wedge the tier). Blocks on the source.
  Result<ports::RunnerSet> RunnerSetFor(const Resolved& r, bool fresh);

 private:
  const std::map<std::string, TierTarget> tiers_;            // by tier label
  const std::map<std::string, ports::JitSource*> sources_;  // by target
  std::mutex mu_;
  std::map<std::string, ports::RunnerSet> sets_;  // "target\0group" -> set
};

}  // namespace nodeplane::wire
