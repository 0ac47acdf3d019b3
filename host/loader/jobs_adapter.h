// A job source plugin instance behind the ports::JobSource port. Calls run
// on the instance's own pools: long polls on one, everything else on
// another, so a poll parked on the forge never delays a JIT mint or an
// acknowledgement.
#pragma once

#include <memory>
#include <string>

#include "common/call_pool.h"
#include "loader/plugin_library.h"
#include "nodeplane/np_jobs_v1.h"
#include "ports/jobs.h"

namespace nodeplane::loader {

class JobsAdapter : public ports::JobSource {
 public:
  // Creates the instance named `instance` from `library`'s job source
  // interface; `max_sessions` bounds the polls that can be parked at once
  // (OpenPlugins gives ParkedPollsFor: one per tier the instance serves).
  // With validate_only the plugin only checks `config_json` and the result
  // is null.
  static Result<std::unique_ptr<JobsAdapter>> Create(std::shared_ptr<const PluginLibrary> library,
                                                     const std::string& instance, const std::string& config_json,
                                                     const np_host_v1* host, bool validate_only,
                                                     unsigned max_sessions = 8);
  ~JobsAdapter() override;

  Result<ports::ScaleSet> EnsureScaleSet(const std::string& name, const std::string& runner_group,
                                         const std::vector<std::string>& labels) override;
  Result<uint64_t> OpenSession(int64_t scale_set_id, const std::string& owner,
                               ports::QueueStatistics* statistics) override;
  Result<std::optional<ports::QueueMessage>> NextMessage(uint64_t session, int64_t last_message_id,
                                                         int64_t max_capacity, Nanos timeout) override;
  Status Acknowledge(uint64_t session, int64_t message_id) override;
  Result<std::vector<int64_t>> Acquire(uint64_t session, const std::vector<int64_t>& request_ids) override;
  Result<ports::JitRegistration> ScaleSetJit(int64_t scale_set_id, const std::string& runner_name,
                                             const std::string& work_folder) override;
  Status RemoveRunner(int64_t scale_set_id, const std::string& runner_name, int64_t runner_id) override;
  Result<std::vector<ports::ForgeRunner>> ListRunners(int64_t scale_set_id, int64_t runner_group_id) override;
  Status CloseSession(uint64_t session) override;
  void Cancel(uint64_t session) override;
  std::optional<RateLimit> RateLimitLeft() override;
  const Histogram& call_latency() const { return calls_.latency(); }

 private:
  JobsAdapter(std::shared_ptr<const PluginLibrary> library, std::string who, np_jobs_v1 vt, void* self,
              unsigned max_sessions);

  std::shared_ptr<const PluginLibrary> library_;
  std::string who_;
  np_jobs_v1 vt_;
  void* self_;
  CallPool calls_{4};
  CallPool polls_;
};

}  // namespace nodeplane::loader
