// jit-github: the JIT source interface ("nodeplane.jit" 1) over GitHub's
// REST API, and the job source interface ("nodeplane.jobs" 1, jobs_vtable.h)
// over the runner scale-set protocol, one instance per target. The work is
// in jit_github.h and actions_service.h; this file is the C ABI around the
// JIT source: config, the vtable, and errors to np_error.
//
// Config ([plugins.NAME.config]); docs/jit-github.md has the whole story:
//   api_url              https://api.github.com (default) or https://HOST/api/v3
//   organization | repository ("owner/name") | enterprise    the target
//   app_id | client_id   the GitHub App (organization and repository targets)
//   installation_id      optional; looked up from the target when absent
//   private_key_file     the App's PEM key, mode 0600
//   token_file           enterprise targets only: a token, mode 0600
//   ca_file              optional CA bundle for a GHES with a private CA
//   timeout_seconds (10), max_attempts (3), describe_ttl_seconds (300),
//   tls_min_version ("1.2", as GitHub's own clients; "1.3" to insist on it)
#include <openssl/crypto.h>

#include <string>
#include <vector>

#include "jit_github.h"
#include "jobs_vtable.h"
#include "nodeplane/np_jit_v1.h"
#include "plugin_config.h"
#include "plugin_entry.h"
#include "plugin_error.h"

namespace nodeplane::plugins::github {
namespace {

constexpr const char* kName = "jit-github";

JitGithub& Self(void* self) { return *static_cast<JitGithub*>(self); }

template <typename Body>
np_code Guard(np_error* err, Body&& body) {
  return GuardedCall(kName, err, std::forward<Body>(body));
}

np_code Create(const np_host_v1* host, const char* json, uint64_t len, uint32_t flags, void** instance,
               np_error* err) {
  return Guard(err, [&] {
    GithubConfig c = ReadInstanceConfig(json, len, host->state_dir);
    *instance = nullptr;
    // Validate-only checks the config's shape; the key is read on a real start.
    if ((flags & NP_CREATE_VALIDATE_ONLY) == 0) *instance = new JitGithub(c, host);
  });
}

void Destroy(void* self) { delete static_cast<JitGithub*>(self); }

np_code Describe(void* self, const char* group, np_jit_set_sink out, np_error* err) {
  return Guard(err, [&] {
    RunnerGroup g = Self(self).Describe(group != nullptr ? group : "");
    std::vector<const char*> labels;
    for (const std::string& l : g.labels) labels.push_back(l.c_str());
    np_jit_set_v1 set{sizeof(np_jit_set_v1), g.id, g.name.c_str(), labels.data(), static_cast<uint32_t>(labels.size())};
    if (out.put(out.ctx, &set) != 0) Fail(NP_INTERNAL, std::string(kName) + ": the host's sink refused the group");
  });
}

np_code JitConfig(void* self, const np_jit_request_v1* request, np_jit_registration_sink out, np_error* err) {
  return Guard(err, [&] {
    JitRequest req;
    req.group_id = request->set_id;
    req.runner_name = request->runner_name != nullptr ? request->runner_name : "";
    for (uint32_t i = 0; i < request->n_labels; ++i) req.labels.emplace_back(request->labels[i]);
    req.work_folder = request->work_folder != nullptr ? request->work_folder : "";
    if (req.runner_name.empty()) Fail(NP_INVALID, std::string(kName) + ": a JIT request needs a runner name");
    Minted m = Self(self).Mint(req);
    np_jit_registration_v1 reg{sizeof(np_jit_registration_v1), m.runner_id, m.runner_name.c_str(),
                               m.encoded_jit_config.c_str()};
    const int32_t refused = out.put(out.ctx, &reg);
    OPENSSL_cleanse(m.encoded_jit_config.data(), m.encoded_jit_config.size());
    if (refused != 0) Fail(NP_INTERNAL, std::string(kName) + ": the host's sink refused the registration");
  });
}

np_code RemoveRunner(void* self, int64_t runner_id, const char* runner_name, np_error* err) {
  return Guard(err, [&] { Self(self).Remove(runner_id, runner_name != nullptr ? runner_name : ""); });
}

np_code RecoverRunner(void* self, const char* runner_name, np_runner_state_v1* state, np_error* err) {
  return Guard(err, [&] {
    RunnerFound f = Self(self).Find(runner_name != nullptr ? runner_name : "");
    state->runner_id = f.id;
    state->present = f.present ? 1 : 0;
    state->busy = f.busy ? 1 : 0;
  });
}

const np_jit_v1 kVtable = {sizeof(np_jit_v1), &Create, &Destroy, &Describe, &JitConfig, &RemoveRunner, &RecoverRunner};

const np_interface_desc kInterfaces[] = {
    {sizeof(np_interface_desc), NP_JIT_INTERFACE, NP_JIT_MAJOR, "github-rest", &kVtable, sizeof kVtable},
    {sizeof(np_interface_desc), NP_JOBS_INTERFACE, NP_JOBS_MAJOR, "github-scale-sets", &kJobsVtable, sizeof kJobsVtable},
};

const np_plugin_desc kPlugin = {sizeof(np_plugin_desc), kName, NODEPLANE_PLUGIN_VERSION, 2, kInterfaces};

}  // namespace
}  // namespace nodeplane::plugins::github

extern "C" NP_EXPORT np_code np_plugin_entry(np_negotiation* n, np_error* err) {
  return nodeplane::plugins::ChooseAbi(n, err, nodeplane::plugins::github::kPlugin);
}
