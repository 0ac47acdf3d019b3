#include "wire/jit_targets.h"

#include "plane/errors.h"

namespace nodeplane::wire {

JitTargets::JitTargets(std::map<std::string, TierTarget> tiers, std::map<std::string, ports::JitSource*> sources)
    : tiers_(std::move(tiers)), sources_(std::move(sources)) {}

Result<JitTargets::Resolved> JitTargets::Resolve(const std::string& tier) const {
  auto t = tiers_.find(tier);
  if (t == tiers_.end()) return plane::Refused("tier \"" + tier + "\" is not in the catalogue");
  if (t->second.target.empty()) {
    return plane::Refused("tier \"" + tier + "\" has no target, so no runner registration is minted for it");
  }
  auto src = sources_.find(t->second.target);
  if (src == sources_.end()) {
    // Never minted through some other owner's App (WithTargetJIT): refused.
    return plane::Refused("tier \"" + tier + "\" belongs to target \"" + t->second.target +
                          "\", which has no JIT source here");
  }
  return Resolved{&t->second, src->second};
}

Result<ports::RunnerSet> JitTargets::RunnerSetFor(const Resolved& r, bool fresh) {
  const std::string key = r.tier->target + '\0' + r.tier->runner_group;
  {
    std::lock_guard lock(mu_);
    if (fresh) sets_.erase(key);
    if (auto it = sets_.find(key); it != sets_.end()) return it->second;
  }
  auto set = r.source->Describe(r.tier->runner_group);
  if (!set.ok()) return set.status();
  std::lock_guard lock(mu_);
  sets_[key] = *set;
  return *set;
}

}  // namespace nodeplane::wire
