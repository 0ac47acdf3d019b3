// What the config is: every table and key nodeplaned reads, in one
// sequence of reads (toml_reader.h note 1), into the typed Config. Checks of
// one value live beside its read; checks across tables are config_checks.h.
#pragma once

#include <map>
#include <string>

#include "config/toml_reader.h"

namespace nodeplane::config {

// Where the values the cross-checks point at were written.
struct ConfigSources {
  SourceLocation root, tls, bootstrap, leases, metrics, metrics_tls, ha;
  Located<std::string> wire_listen, bootstrap_listen, metrics_listen, ha_advertise;
  std::map<std::string, SourceLocation> tier;  // by tier label
  std::map<std::string, Located<std::string>> tier_site, tier_target, tier_scale_set;  // by tier label
  std::map<std::string, Located<std::string>> tier_idle;  // a tier's first of min_idle, idle_timeout
  std::map<std::string, Located<std::string>> target_jit, target_jobs;                 // by target name
};

// Reads the document into `cfg`, reporting into `diag` and recording in
// `sources` where the cross-checked values were written.
void ReadConfig(const toml::table& root, Diagnostics& diag, Config& cfg, ConfigSources& sources);

}  // namespace nodeplane::config
