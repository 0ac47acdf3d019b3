// What must hold across tables of the config, checked once every table was
// read (config_schema.h), against the typed Config: a listener's address
// against the others', a tier's site, target and scale set against their
// declarations, a target's instances against the plugins. Each problem
// points at where the value that breaks the rule was written
// (ConfigSources), and every problem is reported (toml_reader.h note 2).
#pragma once

#include "config/config_schema.h"

namespace nodeplane::config {

void CrossCheck(const Config& cfg, const ConfigSources& sources, Diagnostics& diag);

}  // namespace nodeplane::config
