// The runner scale-set protocol of GitHub's Actions service, for one target:
// what the job source interface (np_jobs_v1.h) asks of jit-github. Each call
// is made as GitHub's own clients (actions/scaleset, actions-runner-
// controller) make it; docs/jit-github.md gives, per call, what is sent,
// how each answer is handled, and the source it was established from.
//
// Bootstrap. A registration token from the REST API (with the App's
// installation token, github_api.h), then POST {api}/actions/runner-
// registration with "RemoteAuth <registration token>" answers the Actions
// service's URL and an admin token. A fresh registration token is not always
// accepted at once: 401 and 403 there are retried (1, 2, 4, 8 s), as GitHub's
// clients do. The admin token is a JWT; it is replaced a minute before its
// `exp` (read, not verified: it is GitHub's to check), and at once when the
// service answers 401.
//
// Scale sets (under {service}/_apis/runtime/, api-version=6.0-preview): the
// default runner group is id 1 (no lookup); a named one is runnergroups/?
// groupName= and must match exactly once. runnerscalesets?runnerGroupId=&
// name= finds the scale set, POST runnerscalesets creates it (200), PATCH
// updates its labels when they differ as a set; the labels reported are the
// ones GitHub's answer kept (GHES without custom labels keeps the name only).
//
// Sessions: POST .../sessions (200; 409 another holder; 404 the scale set is
// gone), PATCH refreshes the queue token, DELETE ends it. A session GitHub
// dropped (SessionGone) is NP_NOT_FOUND on every route, so the host opens a
// new one. The queue: GET {messageQueueUrl} with its own query kept and
// lastMessageId added, the queue token and X-ScaleSetMaxCapacity (200 a
// message, 202 none, 401 refresh once); a poll GitHub still holds at the
// host's bound is no message, never an outage. DELETE {messageQueueUrl
// path}/{id}?{query} acknowledges (204). acquirejobs takes the queue token and
// a bare array of request ids. generatejitconfig mints a runner; a 409
// AgentExistsException frees the name only when GitHub says that runner is
// this scale set's. Runners leave by DELETE distributedtask/pools/0/agents/
// {id}, the id found by exact name and checked against the scale set.
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

#include <boost/json/fwd.hpp>
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

// A runner as GitHub's REST API lists it (ListRunners).
struct ListedRunner {
  int64_t id = 0;
  std::string name;
  bool online = false, busy = false;
};

struct QueueStatistics {
  int64_t available = 0, acquired = 0, assigned = 0, running = 0, registered = 0, busy = 0, idle = 0;
};

struct JobEntry {
  enum Kind { kAvailable = 1, kAssigned = 2, kStarted = 3, kCompleted = 4 } kind = kAssigned;
  int64_t runner_request_id = 0, workflow_run_id = 0, runner_id = 0;
  std::string job_id, owner, repository, workflow_ref, display_name, event_name, runner_name, result;
  std::vector<std::string> request_labels;  // the job's runs-on
  int64_t queued_at_ns = 0, assigned_at_ns = 0, runner_assigned_at_ns = 0, finished_at_ns = 0;
};

struct QueueMessage {
  int64_t id = 0;
  QueueStatistics statistics;
  std::vector<JobEntry> jobs;
  std::string decode_error;  // non-empty: undecodable, and jobs is empty
};

// Decodes a 200 answer of the message queue (actions_messages.cpp).
QueueMessage DecodeQueueMessage(const std::string& body);
QueueStatistics StatisticsOf(const boost::json::value* statistics);

// The URL GitHub's runners know the target by, as GitHub's clients derive it
// from the API (actions/scaleset config.go): api.github.com, api.*.ghe.com
// and api.github.localhost drop the "api." host; any other host is a GHES
// whose API is under /api/v3 on the host itself.
std::string RunnerConfigUrl(const GithubConfig& c);

// Whether an answer on a session route says GitHub no longer knows the
// session: 404 (RunnerAdminException, "doesn't exist"), or 400/403 with an
// exception naming an expired, missing or invalid session (ARC #4285:
// RunnerScaleSetSessionExpiredException).
bool SessionGone(const HttpReply& r);

class ActionsService {
 public:
  ActionsService(const GithubConfig& config, const np_host_v1* host);
  ~ActionsService();

  ScaleSet Ensure(const std::string& name, const std::string& runner_group, const std::vector<std::string>& labels);
  // Throws PluginError(NP_CONFLICT, retryable) when another holder has the
  // scale set's session, NP_NOT_FOUND when GitHub no longer has the scale set.
  uint64_t Open(int64_t scale_set_id, const std::string& owner, QueueStatistics* statistics);
  std::optional<QueueMessage> Next(uint64_t session, int64_t last_message_id, int64_t max_capacity,
                                   int64_t timeout_ns);
  void Acknowledge(uint64_t session, int64_t message_id);
  std::vector<int64_t> Acquire(uint64_t session, const std::vector<int64_t>& request_ids);
  Minted Jit(int64_t scale_set_id, const std::string& runner_name, const std::string& work_folder);
  // Removes the scale set's runner named exactly `runner_name` (its id, when
  // not 0, is checked against the name): gone already is success; a runner
  // running a job, or one of another scale set, is NP_CONFLICT.
  void RemoveRunner(int64_t scale_set_id, const std::string& runner_name, int64_t runner_id);
  // Every runner of the runner group (of the repository, for a repository
  // target), every page (actions_runners.cpp).
  std::vector<ListedRunner> ListRunners(int64_t runner_group_id);
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
  std::string RegistrationToken();  // SECRET
  HttpReply RemoteAuth(const std::string& registration);
  // An admin call to {service}/_apis/runtime/... with the api-version.
  HttpReply Call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& bearer = "");
  HttpsPool& PoolFor(const ApiBase& base);
  std::shared_ptr<Session> Find(uint64_t session);
  // A call on the session's message queue with its queue token (refreshed
  // once on a 401): `path` follows the queue URL's path, and the URL's own
  // query (and `query`) follow it. A poll (poll_timeout_ns > 0) runs on the
  // session's cancellable pool with that deadline, GitHub holding it past
  // the deadline answering status 0.
  HttpReply QueueCall(Session& s, const std::string& method, const std::string& path, const std::string& query,
                      const Headers& extra, int64_t poll_timeout_ns);
  void Refresh(Session& s);
  // The session's poll pool for `timeout_ns`, made again when the queue's
  // origin or the timeout changed.
  std::shared_ptr<HttpsPool> PollPool(Session& s, int64_t timeout_ns);
  int64_t GroupId(const std::string& runner_group);
  // The scale set's agent named `runner_name` ({id, runnerScaleSetId}), if any.
  std::optional<std::pair<int64_t, int64_t>> Agent(const std::string& runner_name);
  [[noreturn]] void Refused(const std::string& what, const HttpReply& r) const;
  std::string Where() const { return "jit-github: " + api_.config().Target(); }

  GithubApi api_;
  std::mutex mu_;    // the admin token and the pools; held through a bootstrap
  Service service_;  // guarded by mu_
  std::map<std::string, std::unique_ptr<HttpsPool>> pools_;  // by origin; guarded by mu_
  std::mutex sessions_mu_;  // never held across a request: Cancel must not wait
  std::map<uint64_t, std::shared_ptr<Session>> sessions_;  // guarded by sessions_mu_
  uint64_t next_session_ = 1;                             // guarded by sessions_mu_
};

}  // namespace nodeplane::plugins::github
