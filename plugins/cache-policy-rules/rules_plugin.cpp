// cache-policy-rules: the Actions cache kill switch answered from ordered
// TOML rules (cache_rules.h).
//
// Config ([plugins.NAME.config]):
//   rules_file  the rules; relative paths are under the state directory
#include "cache_rules.h"
#include "nodeplane/np_cache_policy_v1.h"
#include "plugin_config.h"
#include "plugin_entry.h"
#include "plugin_error.h"

namespace nodeplane::plugins {
namespace {

constexpr const char* kName = "cache-policy-rules";

np_code Create(const np_host_v1* host, const char* json, uint64_t len, uint32_t flags, void** instance,
               np_error* err) {
  return GuardedCall(kName, err, [&] {
    PluginConfig cfg(json, len, kName);
    std::string path = cfg.String("rules_file", "", true);
    cfg.Finish();
    if (flags & NP_CREATE_VALIDATE_ONLY) {  // the config's shape only: no file is opened
      *instance = nullptr;
      return;
    }
    if (path.front() != '/' && host->state_dir != nullptr) path = std::string(host->state_dir) + "/" + path;
    *instance = new CacheRules(host, path);
  });
}

void Destroy(void* self) { delete static_cast<CacheRules*>(self); }

np_code Allowed(void* self, const char* owner, const char* repository, uint32_t* allowed, np_error* err) {
  return GuardedCall(kName, err, [&] {
    const bool yes =
        static_cast<CacheRules*>(self)->Allowed(owner != nullptr ? owner : "", repository != nullptr ? repository : "");
    *allowed = yes ? 1 : 0;
  });
}

np_code Describe(void* self, np_string_sink out, np_error* err) {
  return GuardedCall(kName, err, [&] {
    const std::string line = static_cast<CacheRules*>(self)->Describe();
    if (out.put(out.ctx, line.c_str()) != 0) Fail(NP_INTERNAL, std::string(kName) + ": the host's sink refused the line");
  });
}

const np_cache_policy_v1 kVtable = {sizeof(np_cache_policy_v1), &Create, &Destroy, &Allowed, &Describe};

const np_interface_desc kInterfaces[] = {
    {sizeof(np_interface_desc), NP_CACHE_POLICY_INTERFACE, NP_CACHE_POLICY_MAJOR, "toml-rules", &kVtable,
     sizeof kVtable},
};

const np_plugin_desc kPlugin = {sizeof(np_plugin_desc), kName, NODEPLANE_PLUGIN_VERSION, 1, kInterfaces};

}  // namespace
}  // namespace nodeplane::plugins

extern "C" NP_EXPORT np_code np_plugin_entry(np_negotiation* n, np_error* err) {
  return nodeplane::plugins::ChooseAbi(n, err, nodeplane::plugins::kPlugin);
}
