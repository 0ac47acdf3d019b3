// A cache-policy plugin instance behind the ports::CachePolicy port.
#pragma once

#include <memory>
#include <string>

#include "common/call_pool.h"
#include "loader/plugin_library.h"
#include "nodeplane/np_cache_policy_v1.h"
#include "ports/cache_policy.h"

namespace nodeplane::loader {

class CachePolicyAdapter : public ports::CachePolicy {
 public:
  // Creates the instance named `instance` from `library`'s cache-policy
  // interface. With validate_only the plugin only checks `config_json` and
  // the result is null.
  static Result<std::unique_ptr<CachePolicyAdapter>> Create(std::shared_ptr<const PluginLibrary> library,
                                                            const std::string& instance,
                                                            const std::string& config_json,
                                                            const np_host_v1* host, bool validate_only);
  ~CachePolicyAdapter() override;

  Result<bool> ActionsCacheAllowed(const std::string& owner, const std::string& repository) override;
  // What policy is in force; Invalid ("does not describe itself") when the
  // plugin predates the optional describe slot.
  Result<std::string> Describe();
  // How long calls take, queueing on the instance's pool included.
  const Histogram& call_latency() const { return pool_.latency(); }

 private:
  CachePolicyAdapter(std::shared_ptr<const PluginLibrary> library, std::string who, np_cache_policy_v1 vt,
                     void* self);

  std::shared_ptr<const PluginLibrary> library_;
  std::string who_;
  np_cache_policy_v1 vt_;
  void* self_;
  CallPool pool_{2};
};

}  // namespace nodeplane::loader
