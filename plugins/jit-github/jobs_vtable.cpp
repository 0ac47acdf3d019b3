#include "jobs_vtable.h"

#include <openssl/crypto.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "actions_service.h"
#include "plugin_config.h"
#include "plugin_error.h"

namespace nodeplane::plugins::github {
namespace {

constexpr const char* kName = "jit-github";

ActionsService& Self(void* self) { return *static_cast<ActionsService*>(self); }

template <typename Body>
np_code Guard(np_error* err, Body&& body) {
  return GuardedCall(kName, err, std::forward<Body>(body));
}

std::string Text(const char* s) { return s != nullptr ? s : ""; }

void Sunk(int32_t refused, const char* what) {
  if (refused != 0) Fail(NP_INTERNAL, std::string(kName) + ": the host's sink refused the " + what);
}

np_jobs_statistics_v1 Statistics(const QueueStatistics& s) {
  return {sizeof(np_jobs_statistics_v1), s.available, s.acquired, s.assigned, s.running, s.registered, s.busy, s.idle};
}

// Copies what fits of the host's statistics struct, so an older host's
// smaller struct is never overrun.
void Fill(np_jobs_statistics_v1* out, const QueueStatistics& s) {
  if (out == nullptr) return;
  const np_jobs_statistics_v1 full = Statistics(s);
  const uint32_t size = out->struct_size < sizeof full ? out->struct_size : sizeof full;
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(uint32_t), reinterpret_cast<const char*>(&full) + sizeof(uint32_t),
              size > sizeof(uint32_t) ? size - sizeof(uint32_t) : 0);
}

np_code Create(const np_host_v1* host, const char* json, uint64_t len, uint32_t flags, void** instance,
               np_error* err) {
  return Guard(err, [&] {
    GithubConfig c = ReadInstanceConfig(json, len, host->state_dir);
    *instance = nullptr;
    if ((flags & NP_CREATE_VALIDATE_ONLY) == 0) *instance = new ActionsService(c, host);
  });
}

void Destroy(void* self) { delete static_cast<ActionsService*>(self); }

np_code EnsureScaleSet(void* self, const char* name, const char* runner_group, const char* const* labels,
                       uint32_t n_labels, np_jobs_scale_set_sink out, np_error* err) {
  return Guard(err, [&] {
    if (Text(name).empty()) Fail(NP_INVALID, std::string(kName) + ": a scale set needs a name");
    std::vector<std::string> wanted;
    for (uint32_t i = 0; i < n_labels; ++i) wanted.emplace_back(Text(labels[i]));
    ScaleSet s = Self(self).Ensure(name, Text(runner_group), wanted);
    std::vector<const char*> names;
    for (const std::string& l : s.labels) names.push_back(l.c_str());
    np_jobs_scale_set_v1 set{sizeof(np_jobs_scale_set_v1), s.id, s.name.c_str(), s.runner_group_id, names.data(),
                             static_cast<uint32_t>(names.size())};
    Sunk(out.put(out.ctx, &set), "scale set");
  });
}

np_code OpenSession(void* self, int64_t scale_set_id, const char* owner_name, uint64_t* session,
                    np_jobs_statistics_v1* statistics, np_error* err) {
  const np_code rc = Guard(err, [&] {
    QueueStatistics stats;
    *session = Self(self).Open(scale_set_id, Text(owner_name), &stats);
    Fill(statistics, stats);
  });
  // Another holder's session ends by itself: the same call succeeds later.
  if (rc == NP_CONFLICT && err != nullptr) err->retryable = 1;
  return rc;
}

np_code NextMessage(void* self, uint64_t session, int64_t last_message_id, int64_t max_capacity, int64_t timeout_ns,
                    np_jobs_message_sink out, np_error* err) {
  return Guard(err, [&] {
    std::optional<QueueMessage> m = Self(self).Next(session, last_message_id, max_capacity, timeout_ns);
    if (!m) return;
    std::vector<std::vector<const char*>> labels;  // borrowed by each entry until put returns
    labels.reserve(m->jobs.size());
    std::vector<np_jobs_job_v1> jobs;
    for (const JobEntry& j : m->jobs) {
      std::vector<const char*>& names = labels.emplace_back();
      for (const std::string& l : j.request_labels) names.push_back(l.c_str());
      jobs.push_back({sizeof(np_jobs_job_v1), static_cast<uint32_t>(j.kind), j.runner_request_id, j.job_id.c_str(),
                      j.workflow_run_id, j.owner.c_str(), j.repository.c_str(), j.workflow_ref.c_str(),
                      j.display_name.c_str(), j.event_name.c_str(), j.queued_at_ns, j.assigned_at_ns,
                      j.finished_at_ns, j.runner_id, j.runner_name.c_str(), j.result.c_str(),
                      names.empty() ? nullptr : names.data(), static_cast<uint32_t>(names.size()),
                      j.runner_assigned_at_ns});
    }
    const np_jobs_statistics_v1 stats = Statistics(m->statistics);
    np_jobs_message_v1 msg{sizeof(np_jobs_message_v1), m->id, &stats, jobs.data(),
                           static_cast<uint32_t>(jobs.size()), m->decode_error.empty() ? 0u : 1u,
                           m->decode_error.c_str()};
    Sunk(out.put(out.ctx, &msg), "message");
  });
}

np_code Acknowledge(void* self, uint64_t session, int64_t message_id, np_error* err) {
  return Guard(err, [&] { Self(self).Acknowledge(session, message_id); });
}

np_code Acquire(void* self, uint64_t session, const int64_t* request_ids, uint32_t n_request_ids,
                np_jobs_id_sink granted, np_error* err) {
  return Guard(err, [&] {
    std::vector<int64_t> ids(request_ids, request_ids + n_request_ids);
    for (int64_t id : Self(self).Acquire(session, ids)) Sunk(granted.put(granted.ctx, id), "acquired id");
  });
}

np_code JitConfig(void* self, int64_t scale_set_id, const char* runner_name, const char* work_folder,
                  np_jit_registration_sink out, np_error* err) {
  return Guard(err, [&] {
    if (Text(runner_name).empty()) Fail(NP_INVALID, std::string(kName) + ": a JIT request needs a runner name");
    Minted m = Self(self).Jit(scale_set_id, runner_name, Text(work_folder));
    np_jit_registration_v1 reg{sizeof(np_jit_registration_v1), m.runner_id, m.runner_name.c_str(),
                               m.encoded_jit_config.c_str()};
    const int32_t refused = out.put(out.ctx, &reg);
    OPENSSL_cleanse(m.encoded_jit_config.data(), m.encoded_jit_config.size());
    Sunk(refused, "registration");
  });
}

np_code CloseSession(void* self, uint64_t session, np_error* err) {
  return Guard(err, [&] { Self(self).Close(session); });
}

void Cancel(void* self, uint64_t session) { Self(self).Cancel(session); }

np_code RemoveRunner(void* self, int64_t scale_set_id, const char* runner_name, int64_t runner_id, np_error* err) {
  return Guard(err, [&] {
    if (Text(runner_name).empty()) Fail(NP_INVALID, std::string(kName) + ": removing a runner needs its name");
    Self(self).RemoveRunner(scale_set_id, runner_name, runner_id);
  });
}

np_code RateLimit(void* self, int64_t* remaining, int64_t* reset_at_ns, np_error* err) {
  return Guard(err, [&] {
    const GithubApi::RateLimit r = Self(self).rate_limit();
    *remaining = r.remaining;
    *reset_at_ns = r.reset_at_ns;
  });
}

np_code ListRunners(void* self, int64_t /*scale_set_id*/, int64_t runner_group_id, np_jobs_runner_sink out,
                    np_error* err) {
  return Guard(err, [&] {
    for (const ListedRunner& r : Self(self).ListRunners(runner_group_id)) {
      np_jobs_runner_v1 put{sizeof(np_jobs_runner_v1), r.id, r.name.c_str(), r.online ? 1u : 0u, r.busy ? 1u : 0u};
      Sunk(out.put(out.ctx, &put), "runner");
    }
  });
}

}  // namespace

const np_jobs_v1 kJobsVtable = {sizeof(np_jobs_v1), &Create,     &Destroy,     &EnsureScaleSet, &OpenSession,
                                &NextMessage,       &Acknowledge, &Acquire,    &JitConfig,      &CloseSession,
                                &Cancel,            &RateLimit,   &RemoveRunner,   &ListRunners};

}  // namespace nodeplane::plugins::github
