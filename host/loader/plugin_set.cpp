#include "loader/plugin_set.h"

#include <algorithm>

namespace nodeplane::loader {

std::vector<ports::RevocationList*> PluginSet::RevocationLists() const {
  std::vector<ports::RevocationList*> out;
  for (const auto& r : revocation_lists) out.push_back(r.get());
  return out;
}

unsigned ParkedPollsFor(const config::Config& cfg, const std::string& instance) {
  unsigned tiers = 0;
  for (const config::TierConfig& t : cfg.tiers) {
    if (t.scale_set.empty()) continue;
    for (const config::TargetConfig& target : cfg.targets) {
      if (target.name == t.target && target.jobs == instance) ++tiers;
    }
  }
  return std::max(tiers, kMinParkedPolls);
}

Result<PluginSet> OpenPlugins(const config::Config& cfg, const np_host_v1* host, Logger& log) {
  PluginSet set;
  for (const config::PluginInstance& p : cfg.plugins) {
    auto where = [&](const Status& s) {
      return Status(s.code(), cfg.file + ":" + std::to_string(p.where.line) + ":" + std::to_string(p.where.column) +
                                  ": plugins." + p.name + ": " + s.message())
          .WithDetail(s.detail());
    };
    auto library = PluginLibrary::Open(p.library, cfg.plugin_dir, host);
    if (!library.ok()) return where(library.status());
    for (config::Interface i : p.provides) {
      Status s;
      switch (i) {
        case config::Interface::kLedger: {
          auto a = LedgerAdapter::Create(*library, p.name, p.config_json, host, false);
          if (a.ok()) set.ledger = std::move(*a);
          s = a.status();
          break;
        }
        case config::Interface::kJit: {
          auto a = JitAdapter::Create(*library, p.name, p.config_json, host, false);
          if (a.ok()) set.jit_instances[p.name] = std::move(*a);
          s = a.status();
          break;
        }
        case config::Interface::kJobs: {
          auto a = JobsAdapter::Create(*library, p.name, p.config_json, host, false, ParkedPollsFor(cfg, p.name));
          if (a.ok()) set.jobs_instances[p.name] = std::move(*a);
          s = a.status();
          break;
        }
        case config::Interface::kRevocation: {
          auto a = RevocationAdapter::Create(*library, p.name, p.config_json, host, false);
          if (a.ok()) set.revocation_lists.push_back(std::move(*a));
          s = a.status();
          break;
        }
        case config::Interface::kCachePolicy: {
          auto a = CachePolicyAdapter::Create(*library, p.name, p.config_json, host, false);
          if (a.ok()) set.cache_policy = std::move(*a);
          s = a.status();
          break;
        }
      }
      if (!s.ok()) return where(s);
      log.Info("plugin.opened", {{"instance", p.name}, {"interface", config::InterfaceName(i)},
                                 {"plugin", (*library)->name()}, {"plugin_version", (*library)->version()},
                                 {"path", (*library)->path()}});
    }
  }
  // Validation guarantees every target's instance exists and provides "jit".
  for (const config::TargetConfig& t : cfg.targets) {
    set.jit_by_target[t.name] = set.jit_instances.at(t.jit).get();
    if (!t.jobs.empty()) set.jobs_by_target[t.name] = set.jobs_instances.at(t.jobs).get();
  }
  return set;
}

}  // namespace nodeplane::loader
