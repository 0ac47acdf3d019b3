// A JIT source plugin instance behind the ports::JitSource port. Calls run
// on the instance's own pool: they wait on GitHub.
#pragma once

#include <memory>
#include <string>

#include "common/call_pool.h"
#include "loader/plugin_library.h"
#include "nodeplane/np_jit_v1.h"
#include "ports/jit.h"

namespace nodeplane::loader {

class JitAdapter : public ports::JitSource {
 public:
  // Creates the instance named `instance` from `library`'s JIT interface.
  // With validate_only the plugin only checks `config_json` and the result
  // is null.
  static Result<std::unique_ptr<JitAdapter>> Create(std::shared_ptr<const PluginLibrary> library,
                                                    const std::string& instance, const std::string& config_json,
                                                    const np_host_v1* host, bool validate_only);
  ~JitAdapter() override;

  Result<ports::RunnerSet> Describe(const std::string& group) override;
  Result<ports::JitRegistration> MintJitConfig(const ports::JitRequest& request) override;
  Status RemoveRunner(int64_t runner_id, const std::string& runner_name) override;
  Result<ports::RunnerState> RecoverRunner(const std::string& runner_name) override;
  // How long calls take, queueing on the instance's pool included.
  const Histogram& call_latency() const { return pool_.latency(); }

 private:
  JitAdapter(std::shared_ptr<const PluginLibrary> library, std::string who, np_jit_v1 vt, void* self);

  std::shared_ptr<const PluginLibrary> library_;
  std::string who_;
  np_jit_v1 vt_;
  void* self_;
  CallPool pool_{4};
};

}  // namespace nodeplane::loader
