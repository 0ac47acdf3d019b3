#include "config/config_checks.h"

#include <algorithm>
#include <regex>
#include <set>

#include "config/address.h"

namespace nodeplane::config {
namespace {

template <typename V>
const V& Lookup(const std::map<std::string, V>& m, const std::string& k) {
  static const V kAbsent{};
  auto it = m.find(k);
  return it != m.end() ? it->second : kAbsent;
}

// The node wire, the bootstrap and the metrics listeners: parseable,
// authenticated unless loopback-only, and each with an address of its own.
void CheckListeners(const Config& cfg, const ConfigSources& src, Diagnostics& diag) {
  // The wire listener: an address, and TLS unless it is loopback (LoopbackOnly).
  SourceLocation listen_at = src.wire_listen.present ? src.wire_listen.where : src.root;
  Result<ListenAddress> wire = ParseListenAddress(cfg.wire.listen);
  if (!wire.ok()) {
    diag.Add(listen_at, "wire.listen", wire.status().message());
  } else if (!cfg.wire.tls && !LoopbackOnly(cfg.wire.listen)) {
    diag.Add(listen_at, "wire.listen",
             "\"" + cfg.wire.listen +
                 "\" is not a loopback address, and without [wire.tls] the node wire has no "
                 "authentication; add [wire.tls] or listen on 127.0.0.1");
  } else if (cfg.wire.tls && cfg.wire.tls->cert_file.empty() && cfg.wire.tls->server_names.empty() &&
             IsWildcardHost(wire->host)) {
    diag.Add(src.tls, "wire.tls.server_names",
             "the wire listens on every interface (\"" + cfg.wire.listen +
                 "\"), so the server certificate's names cannot be derived; set server_names");
  }
  if (cfg.wire.command_timeout < cfg.wire.poll_window) {
    diag.Add(src.root, "wire.command_timeout",
             "must be at least the poll window (" + FormatDuration(cfg.wire.poll_window) +
                 "), or a command could time out before a polling node can pick it up");
  }

  if (cfg.bootstrap) {
    SourceLocation at = src.bootstrap_listen.present ? src.bootstrap_listen.where : src.bootstrap;
    if (!cfg.wire.tls) {
      diag.Add(src.bootstrap, "bootstrap",
               "enrollment needs TLS; add [wire.tls] (the bootstrap listener serves the same "
               "deployment CA) or remove [bootstrap]");
    }
    if (src.bootstrap_listen.present) {
      Result<ListenAddress> b = ParseListenAddress(cfg.bootstrap->listen);
      if (!b.ok()) {
        diag.Add(at, "bootstrap.listen", b.status().message());
      } else if (wire.ok() && b->port != 0 && b->port == wire->port &&
                 (b->host == wire->host || IsWildcardHost(b->host) || IsWildcardHost(wire->host))) {
        diag.Add(at, "bootstrap.listen",
                 "must not share an address with wire.listen; the bootstrap listener needs its own "
                 "connection budget");
      }
    }
  }

  if (!cfg.metrics.listen.empty()) {
    const SourceLocation at = src.metrics_listen.where;
    Result<ListenAddress> m = ParseListenAddress(cfg.metrics.listen);
    auto shares = [&](const Result<ListenAddress>& other) {
      return other.ok() && m->port != 0 && m->port == other->port &&
             (m->host == other->host || IsWildcardHost(m->host) || IsWildcardHost(other->host));
    };
    if (!m.ok()) {
      diag.Add(at, "metrics.listen", m.status().message());
    } else if (shares(wire) || (cfg.bootstrap && shares(ParseListenAddress(cfg.bootstrap->listen)))) {
      diag.Add(at, "metrics.listen",
               "must not share an address with the node wire or the bootstrap listener; scrapes get a "
               "connection budget of their own, so a scraper can never slow the fleet");
    } else if (!LoopbackOnly(cfg.metrics.listen)) {
      const bool client_certs = cfg.metrics.tls && !cfg.metrics.tls->client_ca.empty();
      if (!client_certs && cfg.metrics.bearer_token_file.empty()) {
        diag.Add(at, "metrics.listen",
                 "\"" + cfg.metrics.listen +
                     "\" is not a loopback address, and the metrics and dashboard show the fleet's nodes, leases and "
                     "GitHub jobs to whoever can connect; say who may read: [metrics.tls] client_ca (client "
                     "certificates) or [metrics] bearer_token_file (Authorization: Bearer)");
      } else if (!cfg.metrics.tls && !cfg.metrics.insecure) {
        diag.Add(at, "metrics.listen",
                 "\"" + cfg.metrics.listen +
                     "\" is not a loopback address: add [metrics.tls], or insecure = true to send the bearer token "
                     "in plain HTTP on purpose");
      }
    }
    if (cfg.metrics.tls && cfg.metrics.tls->client_ca == "deployment" && !cfg.wire.tls) {
      diag.Add(src.metrics_tls, "metrics.tls.client_ca", "\"deployment\" is the deployment CA, which needs [wire.tls]");
    }
    if (cfg.metrics.tls && cfg.metrics.tls->cert_file.empty() && !cfg.wire.tls) {
      diag.Add(src.metrics_tls, "metrics.tls",
               "without cert_file and key_file the metrics listener uses the wire's server certificate, "
               "which needs [wire.tls]");
    }
  } else if (cfg.metrics.tls || cfg.metrics.insecure) {
    diag.Add(src.metrics, "metrics.listen", "is required for [metrics]: set the address to serve on");
  }
}

// A reap interval longer than the TTL would let an expired lease hold
// capacity for more than a TTL.
void CheckLeases(const Config& cfg, const ConfigSources& src, Diagnostics& diag) {
  if (cfg.leases.reap_interval > cfg.leases.ttl) {
    diag.Add(src.leases, "leases.reap_interval",
             "must not exceed leases.ttl (" + FormatDuration(cfg.leases.ttl) +
                 "), or expired leases would hold capacity for more than a TTL");
  }
}

// Exactly one ledger, at most one cache policy.
void CheckPlugins(const Config& cfg, const ConfigSources& src, Diagnostics& diag) {
  std::vector<const PluginInstance*> ledgers, caches;
  for (const PluginInstance& p : cfg.plugins) {
    if (p.Provides(Interface::kLedger)) ledgers.push_back(&p);
    if (p.Provides(Interface::kCachePolicy)) caches.push_back(&p);
  }
  if (ledgers.empty()) {
    diag.Add(src.root, "plugins",
             "no plugin instance provides \"ledger\"; add [plugins.ledger] with "
             "library = \"ledger-sqlite\" and provides = [\"ledger\"]");
  }
  for (size_t i = 1; i < ledgers.size(); ++i) {
    diag.Add(ledgers[i]->where, "plugins." + ledgers[i]->name + ".provides",
             "a second ledger; \"" + ledgers[0]->name + "\" already provides \"ledger\"");
  }
  for (size_t i = 1; i < caches.size(); ++i) {
    diag.Add(caches[i]->where, "plugins." + caches[i]->name + ".provides",
             "a second cache policy; \"" + caches[0]->name + "\" already provides \"cache_policy\"");
  }
}

// Each target names its own JIT instance, and optionally the job source
// reading its queues with the same credentials.
void CheckTargets(const Config& cfg, const ConfigSources& src, Diagnostics& diag) {
  auto provider = [&](const Located<std::string>& at, Interface wanted) {
    auto it = std::find_if(cfg.plugins.begin(), cfg.plugins.end(),
                           [&](const PluginInstance& p) { return p.name == at.value; });
    if (it == cfg.plugins.end()) {
      diag.Add(at.where, at.key, "no plugin instance named \"" + at.value + "\" (declare [plugins." + at.value + "])");
      return false;
    }
    if (!it->Provides(wanted)) {
      diag.Add(at.where, at.key,
               "plugin instance \"" + at.value + "\" does not provide \"" + InterfaceName(wanted) + "\"");
      return false;
    }
    return true;
  };
  std::map<std::string, std::string> jit_owner;
  for (const TargetConfig& t : cfg.targets) {
    if (const Located<std::string>& at = Lookup(src.target_jit, t.name); at.present && provider(at, Interface::kJit)) {
      if (auto [owner, fresh] = jit_owner.emplace(t.jit, t.name); !fresh) {
        diag.Add(at.where, at.key,
                 "plugin instance \"" + t.jit + "\" already serves target \"" + owner->second +
                     "\"; each target needs its own instance with its own credentials");
      }
    }
    if (const Located<std::string>& at = Lookup(src.target_jobs, t.name); at.present) provider(at, Interface::kJobs);
  }
}

// Declared sites and targets, scale sets that can be read, and what the
// providers need.
void CheckTiers(const Config& cfg, const ConfigSources& src, Diagnostics& diag) {
  std::set<std::string> site_names;
  for (const SiteConfig& s : cfg.sites) site_names.insert(s.name);
  std::set<std::string> target_names;
  for (const TargetConfig& t : cfg.targets) target_names.insert(t.name);
  for (const TierConfig& t : cfg.tiers) {
    std::string path = JoinPath("tiers", t.label);
    if (auto it = src.tier_site.find(t.label); it != src.tier_site.end()) {
      const Located<std::string>& at = it->second;
      if (site_names.count(t.site) == 0) {
        std::string msg = "site \"" + t.site + "\" is not declared";
        if (site_names.empty()) {
          msg += "; this deployment declares no sites (add [sites." + (IsValidName(t.site) ? t.site : std::string("NAME")) + "])";
        } else {
          msg += " (sites are matched byte-exactly; declared:";
          for (const std::string& s : site_names) msg += " \"" + s + "\"";
          msg += ")";
        }
        diag.Add(at.where, at.key, msg);
      }
    }
    if (auto it = src.tier_target.find(t.label); it != src.tier_target.end() && target_names.count(t.target) == 0) {
      diag.Add(it->second.where, it->second.key, "target \"" + t.target + "\" is not declared under [targets]");
    }
    if (!t.runner_group.empty() && t.target.empty()) {
      diag.Add(Lookup(src.tier, t.label), path + ".runner_group", "a runner group needs a target to live in; set target");
    }
    if (auto it = src.tier_scale_set.find(t.label); it != src.tier_scale_set.end()) {
      static const std::regex kScaleSetName("^[A-Za-z0-9._-]{1,100}$");
      auto target = std::find_if(cfg.targets.begin(), cfg.targets.end(),
                                 [&](const TargetConfig& c) { return c.name == t.target; });
      if (!std::regex_match(t.scale_set, kScaleSetName)) {
        diag.Add(it->second.where, it->second.key, "a scale set name is 1 to 100 letters, digits, '.', '_' or '-'");
      } else if (t.target.empty()) {
        diag.Add(it->second.where, it->second.key, "a scale set belongs to a target; set target");
      } else if (target != cfg.targets.end() && target->jobs.empty()) {
        diag.Add(it->second.where, it->second.key,
                 "target \"" + t.target + "\" has no job source to read the scale set's queue; set [targets." +
                     t.target + "] jobs = \"INSTANCE\"");
      }
      for (const TierConfig& other : cfg.tiers) {
        if (&other != &t && other.target == t.target && other.scale_set == t.scale_set && other.label < t.label) {
          diag.Add(it->second.where, it->second.key,
                   "tier \"" + other.label + "\" already takes scale set \"" + t.scale_set + "\"'s jobs");
        }
      }
    }
    bool process = std::find(t.providers.begin(), t.providers.end(), Provider::kProcess) != t.providers.end();
    if (process && t.command.empty()) {
      diag.Add(Lookup(src.tier, t.label), path + ".command",
               "the \"process\" provider runs the tier's command; set command = [\"/path/to/program\", ...]");
    }
    if (auto it = src.tier_idle.find(t.label); it != src.tier_idle.end() && t.scale_set.empty()) {
      diag.Add(it->second.where, it->second.key,
               "only a tier that takes jobs from a scale set keeps idle runners; set scale_set");
    }
    if (t.max_concurrent > 0 && t.min_idle > t.max_concurrent) {
      diag.Add(Lookup(src.tier, t.label), path + ".min_idle",
               "keeps " + std::to_string(t.min_idle) + " idle runners but max_concurrent is " +
                   std::to_string(t.max_concurrent));
    }
    if (t.max_concurrent > 0 && t.reserved > t.max_concurrent) {
      diag.Add(Lookup(src.tier, t.label), path + ".reserved",
               "reserves " + std::to_string(t.reserved) + " but max_concurrent is " +
                   std::to_string(t.max_concurrent));
    }
  }
}

// [ha]: replicas share one ledger that several processes can open, nodes
// reach each replica at the address it advertises, and a leadership term
// outlasts a poll of the database.
void CheckHa(const Config& cfg, const ConfigSources& src, Diagnostics& diag) {
  if (!cfg.ha) return;
  if (src.ha_advertise.present) {
    Result<ListenAddress> at = ParseListenAddress(cfg.ha->advertise);
    if (!at.ok()) {
      diag.Add(src.ha_advertise.where, src.ha_advertise.key, at.status().message());
    } else if (IsWildcardHost(at->host) || at->port == 0) {
      diag.Add(src.ha_advertise.where, src.ha_advertise.key,
               "\"" + cfg.ha->advertise + "\" is where nodes are sent to reach this replica; name a host and port");
    }
  }
  for (const PluginInstance& p : cfg.plugins) {
    if (p.Provides(Interface::kLedger) && p.library.find("sqlite") != std::string::npos) {
      diag.Add(src.ha, "ha",
               "plugin instance \"" + p.name + "\" keeps the ledger in SQLite, which one process opens; "
               "replicas need a shared ledger (ledger-postgres), or remove [ha]");
    }
  }
}

}  // namespace

void CrossCheck(const Config& cfg, const ConfigSources& sources, Diagnostics& diag) {
  CheckListeners(cfg, sources, diag);
  CheckLeases(cfg, sources, diag);
  CheckPlugins(cfg, sources, diag);
  CheckTargets(cfg, sources, diag);
  CheckTiers(cfg, sources, diag);
  CheckHa(cfg, sources, diag);
}

}  // namespace nodeplane::config
