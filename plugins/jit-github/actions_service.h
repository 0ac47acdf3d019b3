// The runner scale-set protocol of GitHub's Actions service, for one target:
// what the job source interface (np_jobs_v1.h) asks of jit-github.
//
// Bootstrap. A registration token from the REST API (with the App's
// installation token, github_api.h), then POST {api}/actions/runner-
// registration with "RemoteAuth <registration token>" answers the Actions
// service's URL and an admin token. The admin token is a JWT; it is replaced
// a minute before its `exp` (read, not verified: it is GitHub's to check),
// and at once when the service answers 401.
//
// Scale sets (under {service}/_apis/runtime/, api-version=6.0-preview):
// runnergroups/?groupName= resolves the runner group; runnerscalesets?
// runnerGroupId=&name= finds the scale set, POST runnerscalesets creates it
// (200), PATCH updates its labels. Sessions: POST .../sessions (200; 409 is
// another holder), PATCH refreshes the queue token, DELETE ends it. The
// queue: GET {messageQueueUrl}?lastMessageId= with the queue token and
// X-ScaleSetMaxCapacity (200 a message, 202 none, 401 refresh once); DELETE
// {messageQueueUrl}/{id} acknowledges (204). acquirejobs takes the queue
// token and a bare array of request ids. generatejitconfig mints a runner.
//
// A message's body is a JSON string holding the array of job entries; an
// envelope or body that cannot be read is reported as undecodable with its
// id (when the id itself can be read), never thrown away.
//
// Each session's long polls run on a connection pool of their own, so
// Cancel can abort one without touching anything else.
//
// Thread-safe. No token or JIT config appears in a log or a message.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "github_api.h"
#include "jit_github.h"

namespace nodeplane::plugins::github {

struct ScaleSet {
  int64_t id = 0;
  std::string name;
  int64_t runner_group_id = 0;
  std::vector<std::string> labels;
};

struct QueueStatistics {
  int64_t available = 0, acquired = 0, assigned = 0, running = 0, registered = 0, busy = 0, idle = 0;
};

struct JobEntry {
  enum Kind { kAvailable = 1, kAssigned = 2, kStarted = 3, kCompleted = 4 } kind = kAssigned;
  int64_t runner_request_id = 0, workflow_run_id = 0, runner_id = 0;
  std::string job_id, owner, repository, workflow_ref, display_name, event_name, runner_name, result;
  int64_t queued_at_ns = 0, assigned_at_ns = 0, finished_at_ns = 0;
};

struct QueueMessage {
  int64_t id = 0;
  QueueStatistics statistics;
  std::vector<JobEntry> jobs;
  std::string decode_error;  // non-empty: undecodable, and jobs is empty
};

// Decodes a 200 answer of the message queue (exposed for tests).
QueueMessage DecodeQueueMessage(const std::string& body);

class ActionsService {
 public:
  ActionsService(const GithubConfig& config, const np_host_v1* host);
  ~ActionsService();

  ScaleSet Ensure(const std::string& name, const std::string& runner_group, const std::vector<std::string>& labels);
  // Throws PluginError(NP_CONFLICT, retryable) when another holder has the
  // scale set's session.
  uint64_t Open(int64_t scale_set_id, const std::string& owner, QueueStatistics* statistics);
  std::optional<QueueMessage> Next(uint64_t session, int64_t last_message_id, int64_t max_capacity,
                                   int64_t timeout_ns);
  void Acknowledge(uint64_t session, int64_t message_id);
  std::vector<int64_t> Acquire(uint64_t session, const std::vector<int64_t>& request_ids);
  Minted Jit(int64_t scale_set_id, const std::string& runner_name, const std::string& work_folder);
  void Close(uint64_t session);
  void Cancel(uint64_t session);
  // What GitHub's REST API last said of the App's rate limit.
  GithubApi::RateLimit rate_limit() const { return api_.rate_limit(); }

 private:
  struct Session;
  struct Service {
    ApiBase base;
    std::string token;  // SECRET
    int64_t expires_ns = 0;
  };
  // The service's URL and a live admin token; `stale` is one just refused.
  Service Admin(const std::string& stale);
  // An admin call to {service}/_apis/runtime/... with the api-version.
  HttpReply Call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& bearer = "");
  HttpReply Send(HttpsPool& pool, const ApiBase& base, const std::string& method, const std::string& path,
                 const std::string& body, const Headers& headers);
  HttpsPool& PoolFor(const ApiBase& base);
  std::shared_ptr<Session> Find(uint64_t session);
  // A session call with its queue token: refreshed once on a 401.
  HttpReply SessionCall(Session& s, const std::string& method, const std::string& path, const std::string& body,
                        const Headers& extra, bool queue);
  void Refresh(Session& s);
  int64_t GroupId(const std::string& runner_group);
  [[noreturn]] void Refused(const std::string& what, const HttpReply& r) const;
  std::string Where() const { return "jit-github: " + api_.config().Target(); }

  GithubApi api_;
  std::mutex mu_;
  Service service_;  // guarded by mu_
  std::map<std::string, std::unique_ptr<HttpsPool>> pools_;  // by origin; guarded by mu_
  std::map<uint64_t, std::shared_ptr<Session>> sessions_;    // guarded by mu_
  uint64_t next_session_ = 1;
};

}  // namespace nodeplane::plugins::github
