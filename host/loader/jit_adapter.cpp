#include "loader/jit_adapter.h"

#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "loader/plugin_call.h"

namespace nodeplane::loader {
Result<std::unique_ptr<JitAdapter>> JitAdapter::Create(std::shared_ptr<const PluginLibrary> library,
                                                       const std::string& instance, const std::string& config_json,
                                                       const np_host_v1* host, bool validate_only) {
  const std::string who = "plugin instance \"" + instance + "\" (" + library->path() + ")";
  auto desc = library->Find(NP_JIT_INTERFACE, NP_JIT_MAJOR);
  if (!desc.ok()) return desc.status();
  auto vt = CopyVtable<np_jit_v1>(**desc, library->path(),
                                  {{offsetof(np_jit_v1, create), "create"},
                                   {offsetof(np_jit_v1, destroy), "destroy"},
                                   {offsetof(np_jit_v1, describe), "describe"},
                                   {offsetof(np_jit_v1, jit_config), "jit_config"},
                                   {offsetof(np_jit_v1, remove_runner), "remove_runner"},
                                   {offsetof(np_jit_v1, recover_runner), "recover_runner"}});
  if (!vt.ok()) return vt.status();
  auto self = CreateInstance(*vt, host, config_json, validate_only, who);
  if (!self.ok()) return self.status();
  if (validate_only) return std::unique_ptr<JitAdapter>();
  return std::unique_ptr<JitAdapter>(new JitAdapter(std::move(library), who, *vt, *self));
}

JitAdapter::JitAdapter(std::shared_ptr<const PluginLibrary> library, std::string who, np_jit_v1 vt, void* self)
    : library_(std::move(library)), who_(std::move(who)), vt_(vt), self_(self) {}

JitAdapter::~JitAdapter() { vt_.destroy(self_); }

Result<ports::RunnerSet> JitAdapter::Describe(const std::string& group) {
  return pool_.Run([&]() -> Result<ports::RunnerSet> {
    PluginError err;
    std::optional<ports::RunnerSet> found;
    np_jit_set_sink sink{sizeof(np_jit_set_sink), &found, [](void* ctx, const np_jit_set_v1* in) -> int32_t {
                           np_jit_set_v1 set = CopyRecord(in);
                           ports::RunnerSet out{set.id, TextOf(set.name), {}};
                           for (uint32_t i = 0; i < set.n_labels; ++i) out.labels.push_back(TextOf(set.labels[i]));
                           *static_cast<std::optional<ports::RunnerSet>*>(ctx) = std::move(out);
                           return 0;
                         }};
    np_code rc = vt_.describe(self_, group.c_str(), sink, err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    if (!found) return Status::Internal(who_ + ": describe succeeded without putting the runner group");
    return *found;
  });
}

Result<ports::JitRegistration> JitAdapter::MintJitConfig(const ports::JitRequest& request) {
  return pool_.Run([&]() -> Result<ports::JitRegistration> {
    std::vector<const char*> labels;
    for (const std::string& l : request.labels) labels.push_back(l.c_str());
    np_jit_request_v1 req{sizeof(np_jit_request_v1), request.set_id, request.runner_name.c_str(),
                          labels.data(), static_cast<uint32_t>(labels.size()), request.work_folder.c_str()};
    PluginError err;
    std::optional<ports::JitRegistration> minted;
    np_jit_registration_sink sink{
        sizeof(np_jit_registration_sink), &minted, [](void* ctx, const np_jit_registration_v1* in) -> int32_t {
          np_jit_registration_v1 r = CopyRecord(in);
          *static_cast<std::optional<ports::JitRegistration>*>(ctx) =
              ports::JitRegistration{r.runner_id, TextOf(r.runner_name), TextOf(r.encoded_jit_config)};
          return 0;
        }};
    np_code rc = vt_.jit_config(self_, &req, sink, err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    if (!minted || minted->encoded_config.empty()) {
      return Status::Internal(who_ + ": jit_config succeeded without putting a registration");
    }
    return *minted;
  });
}

Status JitAdapter::RemoveRunner(int64_t runner_id, const std::string& runner_name) {
  return pool_.Run([&]() -> Status {
    PluginError err;
    np_code rc = vt_.remove_runner(self_, runner_id, runner_name.c_str(), err.c());
    return err.ToStatus(rc, who_);
  });
}

Result<ports::RunnerState> JitAdapter::RecoverRunner(const std::string& runner_name) {
  return pool_.Run([&]() -> Result<ports::RunnerState> {
    PluginError err;
    np_runner_state_v1 state{sizeof(np_runner_state_v1), 0, 0, 0};
    np_code rc = vt_.recover_runner(self_, runner_name.c_str(), &state, err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    return ports::RunnerState{state.runner_id, state.present != 0, state.busy != 0};
  });
}

}  // namespace nodeplane::loader
