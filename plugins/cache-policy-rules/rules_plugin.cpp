// cache-policy-rules: the Actions cache kill switch answered from ordered
// TOML rules (cache_rules.h).
//
// Config ([plugins.NAME.config]):
//   rules_file  the rules; relative paths are under the state directory
#include "cache_rules.h"
#include "nodeplane/np_cache_policy_v1.h"
#include "plugin_config.h"
#include "plugin_error.h"

namespace nodeplane::plugins {
namespace {

constexpr const char* kName = "cache-policy-rules";

np_code Create(const np_host_v1* host, const char* json, uint64_t len, uint32_t flags, void** instance,
               np_error* err) {
  try {
    PluginConfig cfg(json, len, kName);
    std::string path = cfg.String("rules_file", "", true);
    cfg.Finish();
    if (flags & NP_CREATE_VALIDATE_ONLY) {  // the config's shape only: no file is opened
      *instance = nullptr;
      return NP_OK;
    }
    if (path.front() != '/' && host->state_dir != nullptr) path = std::string(host->state_dir) + "/" + path;
    *instance = new CacheRules(host, path);
    return NP_OK;
  } catch (const PluginError& e) {
    return np_error_set(err, e.code(), 0, e.what());  // PluginConfig names the plugin; the host names the instance
  } catch (const std::exception& e) {
    return np_error_set(err, NP_INTERNAL, 0, (std::string(kName) + ": " + e.what()).c_str());
  }
}

void Destroy(void* self) { delete static_cast<CacheRules*>(self); }

np_code Allowed(void* self, const char* owner, const char* repository, uint32_t* allowed, np_error* err) {
  (void)err;
  *allowed = static_cast<CacheRules*>(self)->Allowed(owner != nullptr ? owner : "",
                                                     repository != nullptr ? repository : "")
                 ? 1
                 : 0;
  return NP_OK;
}

np_code Describe(void* self, np_string_sink out, np_error* err) {
  (void)err;
  const std::string line = static_cast<CacheRules*>(self)->Describe();
  out.put(out.ctx, line.c_str());
  return NP_OK;
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
  if (n->host_abi_min > NP_ABI_VERSION || n->host_abi_max < NP_ABI_VERSION) {
    return np_error_set(err, NP_UNSUPPORTED, 0, "cache-policy-rules is built for plugin ABI 1");
  }
  n->chosen_abi = NP_ABI_VERSION;
  n->plugin = &nodeplane::plugins::kPlugin;
  return NP_OK;
}
