// Every plugin instance the config names, opened and created once: the
// ledger, the JIT sources (one per target), the revocation lists and the
// cache policy. A library that provides several interfaces is opened once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "config/config.h"
#include "loader/cache_policy_adapter.h"
#include "loader/jit_adapter.h"
#include "loader/jobs_adapter.h"
#include "loader/ledger_adapter.h"
#include "loader/revocation_adapter.h"

namespace nodeplane::loader {

struct PluginSet {
  std::unique_ptr<LedgerAdapter> ledger;
  std::map<std::string, std::unique_ptr<JitAdapter>> jit_instances;  // by instance name
  std::map<std::string, ports::JitSource*> jit_by_target;            // [targets.NAME] jit = "instance"
  std::map<std::string, std::unique_ptr<JobsAdapter>> jobs_instances;  // by instance name
  std::map<std::string, ports::JobSource*> jobs_by_target;             // [targets.NAME] jobs = "instance"
  std::vector<std::unique_ptr<RevocationAdapter>> revocation_lists;
  std::unique_ptr<CachePolicyAdapter> cache_policy;  // null: none configured

  std::vector<ports::RevocationList*> RevocationLists() const;
};

// How many long polls job source instance `instance` must park at once:
// one per tier whose target reads its queue through it, so no tier's poll
// ever waits behind another's (review D16), and never fewer than
// kMinParkedPolls.
inline constexpr unsigned kMinParkedPolls = 8;
unsigned ParkedPollsFor(const config::Config& cfg, const std::string& instance);

// Opens every instance of `cfg.plugins`. An error names the config file, the
// instance's line and the plugin's own words. `host` must outlive the set.
Result<PluginSet> OpenPlugins(const config::Config& cfg, const np_host_v1* host, Logger& log);

}  // namespace nodeplane::loader
