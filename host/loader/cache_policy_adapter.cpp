#include "loader/cache_policy_adapter.h"

#include <cstddef>

#include "loader/plugin_call.h"

namespace nodeplane::loader {

Result<std::unique_ptr<CachePolicyAdapter>> CachePolicyAdapter::Create(std::shared_ptr<const PluginLibrary> library,
                                                                       const std::string& instance,
                                                                       const std::string& config_json,
                                                                       const np_host_v1* host, bool validate_only) {
  const std::string who = "plugin instance \"" + instance + "\" (" + library->path() + ")";
  auto desc = library->Find(NP_CACHE_POLICY_INTERFACE, NP_CACHE_POLICY_MAJOR);
  if (!desc.ok()) return desc.status();
  auto vt = CopyVtable<np_cache_policy_v1>(**desc, library->path(),
                                           {{offsetof(np_cache_policy_v1, create), "create"},
                                            {offsetof(np_cache_policy_v1, destroy), "destroy"},
                                            {offsetof(np_cache_policy_v1, actions_cache_allowed),
                                             "actions_cache_allowed"}});
  if (!vt.ok()) return vt.status();
  auto self = CreateInstance(*vt, host, config_json, validate_only, who);
  if (!self.ok()) return self.status();
  if (validate_only) return std::unique_ptr<CachePolicyAdapter>();
  return std::unique_ptr<CachePolicyAdapter>(new CachePolicyAdapter(std::move(library), who, *vt, *self));
}

CachePolicyAdapter::CachePolicyAdapter(std::shared_ptr<const PluginLibrary> library, std::string who,
                                       np_cache_policy_v1 vt, void* self)
    : library_(std::move(library)), who_(std::move(who)), vt_(vt), self_(self) {}

CachePolicyAdapter::~CachePolicyAdapter() { vt_.destroy(self_); }

Result<bool> CachePolicyAdapter::ActionsCacheAllowed(const std::string& owner, const std::string& repository) {
  return pool_.Run([&]() -> Result<bool> {
    PluginError err;
    uint32_t allowed = 0;
    np_code rc = vt_.actions_cache_allowed(self_, owner.c_str(), repository.c_str(), &allowed, err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    return allowed != 0;
  });
}

}  // namespace nodeplane::loader

namespace nodeplane::loader {

Result<std::string> CachePolicyAdapter::Describe() {
  if (vt_.describe == nullptr) return Status::Invalid(who_ + " does not describe itself (built before describe)");
  return pool_.Run([&]() -> Result<std::string> {
    PluginError err;
    std::string line;
    np_string_sink sink{sizeof(np_string_sink), &line, [](void* ctx, const char* v) -> int32_t {
                          *static_cast<std::string*>(ctx) = v != nullptr ? v : "";
                          return 0;
                        }};
    np_code rc = vt_.describe(self_, sink, err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    return line;
  });
}

}  // namespace nodeplane::loader
