// The job source port: which jobs a forge has queued for a pool of runners
// (a GitHub runner scale set) and what became of them, read from the
// forge's message queue. One per target, like the JIT source; the host picks
// it from the tier. The conversation and its rules are np_jobs_v1.h's.
//
// Implemented by a plugin adapter (loader/jobs_adapter.h) or a test fake.
// Thread-safe; every call but Cancel may block on the network, and at most
// one NextMessage per session runs at a time.
//
// SECRETS: ScaleSetJit's registration is a runner credential (ports/jit.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/units.h"
#include "ports/jit.h"

namespace nodeplane::ports {

struct ScaleSet {
  int64_t id = 0;
  std::string name;
  int64_t runner_group_id = 0;
  std::vector<std::string> labels;
};

struct QueueStatistics {
  int64_t available = 0, acquired = 0, assigned = 0, running = 0;
  int64_t registered_runners = 0, busy_runners = 0, idle_runners = 0;
};

enum class JobEvent { kAvailable = 1, kAssigned = 2, kStarted = 3, kCompleted = 4 };

// One entry of a message. runner_request_id is 0 when the forge assigned
// the job directly (GitHub.com): job_id identifies it then.
struct QueuedJob {
  JobEvent kind = JobEvent::kAssigned;
  int64_t runner_request_id = 0, workflow_run_id = 0, runner_id = 0;
  std::string job_id, owner, repository, workflow_ref, display_name, event_name;
  std::vector<std::string> request_labels;  // the job's runs-on
  std::string runner_name, result;          // started, completed
  // The forge's times: queued, assigned to the scale set, given to a
  // runner, finished; 0 when it did not say.
  int64_t queued_at_ns = 0, assigned_at_ns = 0, runner_assigned_at_ns = 0, finished_at_ns = 0;
};

// A runner the forge has registered (ListRunners).
struct ForgeRunner {
  int64_t id = 0;
  std::string name;
  bool online = false, busy = false;
};

struct QueueMessage {
  int64_t id = 0;
  QueueStatistics statistics;
  std::vector<QueuedJob> jobs;
  std::string decode_error;  // non-empty: undecodable, jobs empty
};

class JobSource {
 public:
  virtual ~JobSource() = default;
  // Finds the scale set by name in the runner group, or creates it with `labels`; an absent group is NotFound.
  virtual Result<ScaleSet> EnsureScaleSet(const std::string& name, const std::string& runner_group,
                                          const std::vector<std::string>& labels) = 0;
  // Conflict (retryable) while another holder has the scale set's session.
  virtual Result<uint64_t> OpenSession(int64_t scale_set_id, const std::string& owner, QueueStatistics* statistics) = 0;
  // No message within `timeout` is an empty optional.
  virtual Result<std::optional<QueueMessage>> NextMessage(uint64_t session, int64_t last_message_id,
                                                          int64_t max_capacity, Nanos timeout) = 0;
  // Deletes the message from the queue; until then it is delivered again.
  virtual Status Acknowledge(uint64_t session, int64_t message_id) = 0;
  // Asks for offered jobs (JobAvailable); the request ids the forge granted, which may be fewer.
  virtual Result<std::vector<int64_t>> Acquire(uint64_t session, const std::vector<int64_t>& request_ids) = 0;
  // Registers an ephemeral runner of the scale set; its config is SECRET.
  virtual Result<JitRegistration> ScaleSetJit(int64_t scale_set_id, const std::string& runner_name,
                                              const std::string& work_folder) = 0;
  // Removes the scale set's runner named exactly `runner_name` (runner_id,
  // when not 0, must be its id) so no job is given to it; Ok when gone.
  // Conflict when it runs a job or is another scale set's; Refused
  // (Verdict::kUnsupported) from a source that cannot remove runners.
  virtual Status RemoveRunner(int64_t scale_set_id, const std::string& runner_name, int64_t runner_id) = 0;
  // Every runner the forge has in the scale set's runner group (other scale
  // sets' of the group among them: RemoveRunner checks before it removes);
  // Refused (Verdict::kUnsupported) from a source that cannot list them.
  virtual Result<std::vector<ForgeRunner>> ListRunners(int64_t scale_set_id, int64_t runner_group_id) = 0;
  // Ends the session at the forge, so a successor need not wait for it to expire.
  virtual Status CloseSession(uint64_t session) = 0;
  // From any thread, without blocking: a NextMessage in progress on the
  // session ends promptly (Unavailable).
  virtual void Cancel(uint64_t session) = 0;
  // Without blocking: the forge API's rate limit as its latest answer
  // stated it; empty when none has, or the source cannot say.
  struct RateLimit {
    int64_t remaining = 0, reset_at_ns = 0;
  };
  virtual std::optional<RateLimit> RateLimitLeft() = 0;
};

}  // namespace nodeplane::ports
