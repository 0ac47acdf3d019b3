// The whole of np_plugin_entry for the project's plugins, which are built
// for one ABI version, NP_ABI_VERSION:
//
//   extern "C" NP_EXPORT np_code np_plugin_entry(np_negotiation* n, np_error* err) {
//     return nodeplane::plugins::ChooseAbi(n, err, kPlugin);
//   }
#pragma once

#include <string>

#include "nodeplane/np_plugin.h"

namespace nodeplane::plugins {

// Picks NP_ABI_VERSION when the host offers it and answers with `plugin`
// (static storage); otherwise NP_UNSUPPORTED naming the version it knows.
inline np_code ChooseAbi(np_negotiation* n, np_error* err, const np_plugin_desc& plugin) {
  if (n->host_abi_min > NP_ABI_VERSION || n->host_abi_max < NP_ABI_VERSION) {
    const std::string why = std::string(plugin.name) + " is built for plugin ABI " + std::to_string(NP_ABI_VERSION) +
                            "; this host offers " + std::to_string(n->host_abi_min) + "-" +
                            std::to_string(n->host_abi_max);
    return np_error_set(err, NP_UNSUPPORTED, 0, why.c_str());
  }
  n->chosen_abi = NP_ABI_VERSION;
  n->plugin = &plugin;
  return NP_OK;
}

}  // namespace nodeplane::plugins
