#include "loader/plugin_check.h"

#include <cstddef>

#include "loader/plugin_call.h"
#include "loader/plugin_library.h"
#include "nodeplane/plugin.h"

namespace nodeplane::loader {

const char* AbiInterfaceName(config::Interface i) {
  switch (i) {
    case config::Interface::kLedger: return NP_LEDGER_INTERFACE;
    case config::Interface::kJit: return NP_JIT_INTERFACE;
    case config::Interface::kRevocation: return NP_REVOCATION_INTERFACE;
    case config::Interface::kCachePolicy: return NP_CACHE_POLICY_INTERFACE;
    case config::Interface::kJobs: return NP_JOBS_INTERFACE;
  }
  return "";
}

uint32_t AbiInterfaceMajor(config::Interface i) {
  switch (i) {
    case config::Interface::kLedger: return NP_LEDGER_MAJOR;
    case config::Interface::kJit: return NP_JIT_MAJOR;
    case config::Interface::kRevocation: return NP_REVOCATION_MAJOR;
    case config::Interface::kCachePolicy: return NP_CACHE_POLICY_MAJOR;
    case config::Interface::kJobs: return NP_JOBS_MAJOR;
  }
  return 0;
}

Status CheckPluginInstance(const config::PluginInstance& instance, const std::string& plugin_dir,
                           const np_host_v1* host) {
  auto lib = PluginLibrary::Open(instance.library, plugin_dir, host);
  if (!lib.ok()) return lib.status();
  for (config::Interface i : instance.provides) {
    auto desc = (*lib)->Find(AbiInterfaceName(i), AbiInterfaceMajor(i));
    if (!desc.ok()) return desc.status();
    auto head = CopyVtable<np_vtable_head>(**desc, (*lib)->path(),
                                           {{offsetof(np_vtable_head, create), "create"},
                                            {offsetof(np_vtable_head, destroy), "destroy"}});
    if (!head.ok()) return head.status();
    auto created = CreateInstance(*head, host, instance.config_json, true, "plugin instance \"" + instance.name + "\"");
    if (!created.ok()) return created.status();
  }
  return Status::Ok();
}

}  // namespace nodeplane::loader
