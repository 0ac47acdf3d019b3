#include "loader/jobs_adapter.h"

#include <cstddef>
#include <optional>
#include <vector>

#include "loader/plugin_call.h"

namespace nodeplane::loader {
namespace {

ports::QueueStatistics StatisticsOf(const np_jobs_statistics_v1& in) {
  np_jobs_statistics_v1 s = CopyRecord(&in);
  return {s.total_available_jobs, s.total_acquired_jobs, s.total_assigned_jobs, s.total_running_jobs,
          s.total_registered_runners, s.total_busy_runners, s.total_idle_runners};
}

ports::QueuedJob JobOf(const np_jobs_job_v1* in) {
  np_jobs_job_v1 j = CopyRecord(in);
  ports::QueuedJob out;
  out.kind = j.kind >= NP_JOB_AVAILABLE && j.kind <= NP_JOB_COMPLETED ? static_cast<ports::JobEvent>(j.kind)
                                                                     : ports::JobEvent::kAssigned;
  out.runner_request_id = j.runner_request_id;
  out.workflow_run_id = j.workflow_run_id;
  out.runner_id = j.runner_id;
  out.job_id = TextOf(j.job_id);
  out.owner = TextOf(j.owner);
  out.repository = TextOf(j.repository);
  out.workflow_ref = TextOf(j.workflow_ref);
  out.display_name = TextOf(j.display_name);
  out.event_name = TextOf(j.event_name);
  out.runner_name = TextOf(j.runner_name);
  out.result = TextOf(j.result);
  out.queued_at_ns = j.queued_at_ns;
  out.assigned_at_ns = j.assigned_at_ns;
  out.finished_at_ns = j.finished_at_ns;
  out.runner_assigned_at_ns = j.runner_assigned_at_ns;  // 0 from a plugin built before it (CopyRecord)
  for (uint32_t i = 0; j.request_labels != nullptr && i < j.n_request_labels; ++i) {
    out.request_labels.push_back(TextOf(j.request_labels[i]));
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<JobsAdapter>> JobsAdapter::Create(std::shared_ptr<const PluginLibrary> library,
                                                         const std::string& instance, const std::string& config_json,
                                                         const np_host_v1* host, bool validate_only,
                                                         unsigned max_sessions) {
  const std::string who = "plugin instance \"" + instance + "\" (" + library->path() + ")";
  auto desc = library->Find(NP_JOBS_INTERFACE, NP_JOBS_MAJOR);
  if (!desc.ok()) return desc.status();
  auto vt = CopyVtable<np_jobs_v1>(**desc, library->path(),
                                   {{offsetof(np_jobs_v1, create), "create"},
                                    {offsetof(np_jobs_v1, destroy), "destroy"},
                                    {offsetof(np_jobs_v1, ensure_scale_set), "ensure_scale_set"},
                                    {offsetof(np_jobs_v1, open_session), "open_session"},
                                    {offsetof(np_jobs_v1, next_message), "next_message"},
                                    {offsetof(np_jobs_v1, acknowledge), "acknowledge"},
                                    {offsetof(np_jobs_v1, acquire), "acquire"},
                                    {offsetof(np_jobs_v1, jit_config), "jit_config"},
                                    {offsetof(np_jobs_v1, close_session), "close_session"},
                                    {offsetof(np_jobs_v1, cancel), "cancel"}});
  if (!vt.ok()) return vt.status();
  auto self = CreateInstance(*vt, host, config_json, validate_only, who);
  if (!self.ok()) return self.status();
  if (validate_only) return std::unique_ptr<JobsAdapter>();
  return std::unique_ptr<JobsAdapter>(new JobsAdapter(std::move(library), who, *vt, *self, max_sessions));
}

JobsAdapter::JobsAdapter(std::shared_ptr<const PluginLibrary> library, std::string who, np_jobs_v1 vt, void* self,
                         unsigned max_sessions)
    : library_(std::move(library)), who_(std::move(who)), vt_(vt), self_(self), polls_(max_sessions) {}

JobsAdapter::~JobsAdapter() { vt_.destroy(self_); }

Result<ports::ScaleSet> JobsAdapter::EnsureScaleSet(const std::string& name, const std::string& runner_group,
                                                    const std::vector<std::string>& labels) {
  return calls_.Run([&]() -> Result<ports::ScaleSet> {
    std::vector<const char*> wanted;
    for (const std::string& l : labels) wanted.push_back(l.c_str());
    PluginError err;
    std::optional<ports::ScaleSet> found;
    np_jobs_scale_set_sink sink{sizeof(np_jobs_scale_set_sink), &found,
                                [](void* ctx, const np_jobs_scale_set_v1* in) -> int32_t {
                                  np_jobs_scale_set_v1 s = CopyRecord(in);
                                  ports::ScaleSet out{s.id, TextOf(s.name), s.runner_group_id, {}};
                                  for (uint32_t i = 0; i < s.n_labels; ++i) out.labels.push_back(TextOf(s.labels[i]));
                                  *static_cast<std::optional<ports::ScaleSet>*>(ctx) = std::move(out);
                                  return 0;
                                }};
    np_code rc = vt_.ensure_scale_set(self_, name.c_str(), runner_group.c_str(), wanted.data(),
                                      static_cast<uint32_t>(wanted.size()), sink, err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    if (!found || found->id <= 0) return Status::Internal(who_ + ": ensure_scale_set succeeded without a scale set");
    return *found;
  });
}

Result<uint64_t> JobsAdapter::OpenSession(int64_t scale_set_id, const std::string& owner,
                                          ports::QueueStatistics* statistics) {
  return calls_.Run([&]() -> Result<uint64_t> {
    PluginError err;
    uint64_t session = 0;
    np_jobs_statistics_v1 stats{};
    stats.struct_size = sizeof stats;
    np_code rc = vt_.open_session(self_, scale_set_id, owner.c_str(), &session, &stats, err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    if (session == 0) return Status::Internal(who_ + ": open_session succeeded without a session");
    if (statistics != nullptr) *statistics = StatisticsOf(stats);
    return session;
  });
}

Result<std::optional<ports::QueueMessage>> JobsAdapter::NextMessage(uint64_t session, int64_t last_message_id,
                                                                    int64_t max_capacity, Nanos timeout) {
  return polls_.Run([&]() -> Result<std::optional<ports::QueueMessage>> {
    PluginError err;
    std::optional<ports::QueueMessage> got;
    np_jobs_message_sink sink{sizeof(np_jobs_message_sink), &got,
                              [](void* ctx, const np_jobs_message_v1* in) -> int32_t {
                                np_jobs_message_v1 m = CopyRecord(in);
                                ports::QueueMessage out;
                                out.id = m.message_id;
                                if (m.statistics == nullptr) return 1;
                                out.statistics = StatisticsOf(*m.statistics);
                                const uint32_t stride = m.n_jobs > 0 ? m.jobs[0].struct_size : 0;
                                if (m.n_jobs > 0 && stride < offsetof(np_jobs_job_v1, runner_request_id)) return 1;
                                for (uint32_t i = 0; i < m.n_jobs; ++i) {
                                  // Each entry is read by the size it declares.
                                  const auto* entry = reinterpret_cast<const np_jobs_job_v1*>(
                                      reinterpret_cast<const char*>(m.jobs) + static_cast<size_t>(i) * stride);
                                  out.jobs.push_back(JobOf(entry));
                                }
                                if (m.undecodable != 0) {
                                  out.jobs.clear();
                                  out.decode_error = TextOf(m.decode_error);
                                  if (out.decode_error.empty()) out.decode_error = "undecodable";
                                }
                                *static_cast<std::optional<ports::QueueMessage>*>(ctx) = std::move(out);
                                return 0;
                              }};
    np_code rc = vt_.next_message(self_, session, last_message_id, max_capacity, timeout.count(), sink, err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    return got;
  });
}

Status JobsAdapter::Acknowledge(uint64_t session, int64_t message_id) {
  return calls_.Run([&]() -> Status {
    PluginError err;
    return err.ToStatus(vt_.acknowledge(self_, session, message_id, err.c()), who_);
  });
}

Result<std::vector<int64_t>> JobsAdapter::Acquire(uint64_t session, const std::vector<int64_t>& request_ids) {
  return calls_.Run([&]() -> Result<std::vector<int64_t>> {
    PluginError err;
    std::vector<int64_t> granted;
    np_jobs_id_sink sink{sizeof(np_jobs_id_sink), &granted, [](void* ctx, int64_t id) -> int32_t {
                           static_cast<std::vector<int64_t>*>(ctx)->push_back(id);
                           return 0;
                         }};
    np_code rc = vt_.acquire(self_, session, request_ids.data(), static_cast<uint32_t>(request_ids.size()), sink,
                             err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    return granted;
  });
}

Result<ports::JitRegistration> JobsAdapter::ScaleSetJit(int64_t scale_set_id, const std::string& runner_name,
                                                        const std::string& work_folder) {
  return calls_.Run([&]() -> Result<ports::JitRegistration> {
    PluginError err;
    std::optional<ports::JitRegistration> minted;
    np_jit_registration_sink sink{
        sizeof(np_jit_registration_sink), &minted, [](void* ctx, const np_jit_registration_v1* in) -> int32_t {
          np_jit_registration_v1 r = CopyRecord(in);
          *static_cast<std::optional<ports::JitRegistration>*>(ctx) =
              ports::JitRegistration{r.runner_id, TextOf(r.runner_name), TextOf(r.encoded_jit_config)};
          return 0;
        }};
    np_code rc = vt_.jit_config(self_, scale_set_id, runner_name.c_str(), work_folder.c_str(), sink, err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    if (!minted || minted->encoded_config.empty()) {
      return Status::Internal(who_ + ": jit_config succeeded without putting a registration");
    }
    return *minted;
  });
}

Status JobsAdapter::RemoveRunner(int64_t scale_set_id, const std::string& runner_name, int64_t runner_id) {
  if (vt_.remove_runner == nullptr) {  // optional
    return ports::WithVerdict(Status::Refused(who_ + " cannot remove a scale set's runners (remove_runner)"),
                              ports::Verdict::kUnsupported);
  }
  return calls_.Run([&]() -> Status {
    PluginError err;
    return err.ToStatus(vt_.remove_runner(self_, scale_set_id, runner_name.c_str(), runner_id, err.c()), who_);
  });
}

Result<std::vector<ports::ForgeRunner>> JobsAdapter::ListRunners(int64_t scale_set_id, int64_t runner_group_id) {
  if (vt_.list_runners == nullptr) {  // optional
    return ports::WithVerdict(Status::Refused(who_ + " cannot list a scale set's runners (list_runners)"),
                              ports::Verdict::kUnsupported);
  }
  return calls_.Run([&]() -> Result<std::vector<ports::ForgeRunner>> {
    std::vector<ports::ForgeRunner> out;
    PluginError err;
    np_jobs_runner_sink sink{sizeof(np_jobs_runner_sink), &out, [](void* ctx, const np_jobs_runner_v1* in) -> int32_t {
                               np_jobs_runner_v1 r = CopyRecord(in);
                               static_cast<std::vector<ports::ForgeRunner>*>(ctx)->push_back(
                                   ports::ForgeRunner{r.id, TextOf(r.name), r.online != 0, r.busy != 0});
                               return 0;
                             }};
    np_code rc = vt_.list_runners(self_, scale_set_id, runner_group_id, sink, err.c());
    if (rc != NP_OK) return err.ToStatus(rc, who_);
    return out;
  });
}

Status JobsAdapter::CloseSession(uint64_t session) {
  return calls_.Run([&]() -> Status {
    PluginError err;
    return err.ToStatus(vt_.close_session(self_, session, err.c()), who_);
  });
}

void JobsAdapter::Cancel(uint64_t session) { vt_.cancel(self_, session); }

std::optional<ports::JobSource::RateLimit> JobsAdapter::RateLimitLeft() {
  if (vt_.rate_limit == nullptr) return std::nullopt;  // optional
  int64_t remaining = -1, reset_at = 0;
  PluginError err;  // never blocks: called here, not on a pool
  if (vt_.rate_limit(self_, &remaining, &reset_at, err.c()) != NP_OK || remaining < 0) return std::nullopt;
  return RateLimit{remaining, reset_at};
}

}  // namespace nodeplane::loader
