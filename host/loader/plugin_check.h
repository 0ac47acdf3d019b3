// Checking a configured plugin instance without starting it: the library
// loads, negotiates, provides every interface the config says it does, and
// accepts its config (create with NP_CREATE_VALIDATE_ONLY, which touches no
// file or network). This is what `nodeplaned --check-config` runs.
#pragma once

#include <string>

#include "common/status.h"
#include "config/config.h"
#include "nodeplane/np_plugin.h"

namespace nodeplane::loader {

// The interface name and major a config word stands for.
const char* AbiInterfaceName(config::Interface i);
uint32_t AbiInterfaceMajor(config::Interface i);

Status CheckPluginInstance(const config::PluginInstance& instance, const std::string& plugin_dir,
                           const np_host_v1* host);

}  // namespace nodeplane::loader
