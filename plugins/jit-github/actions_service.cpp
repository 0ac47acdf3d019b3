#include "actions_service.h"

#include <openssl/evp.h>

#include <boost/json.hpp>
#include <cstdio>

#include "plugin_error.h"
#include "plugin_time.h"

namespace nodeplane::plugins::github {
namespace json = boost::json;
namespace {

// The admin token is replaced this long before its exp.
constexpr int64_t kAdminMargin = 60 * kSecondNs;
constexpr const char* kApiVersion = "api-version=6.0-preview";

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// GitHub's bodies may begin with a UTF-8 byte order mark.
std::string_view Unmarked(std::string_view body) {
  return body.substr(0, 3) == "\xEF\xBB\xBF" ? body.substr(3) : body;
}

// A body as JSON; null when it is not JSON.
json::value Parsed(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(Unmarked(body), ec);
  return ec ? json::value() : v;
}

std::string Str(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : "";
}

int64_t Int(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->as_uint64());
  return 0;
}

int64_t Time(const json::object& o, const char* key) {
  const int64_t t = ParseTimestamp(Str(o, key));
  return t > 0 ? t : 0;  // absent, malformed, or .NET's 0001-01-01
}

QueueStatistics StatisticsOf(const json::value* v) {
  QueueStatistics s;
  if (v == nullptr || !v->is_object()) return s;
  const json::object& o = v->as_object();
  s.available = Int(o, "totalAvailableJobs");
  s.acquired = Int(o, "totalAcquiredJobs");
  s.assigned = Int(o, "totalAssignedJobs");
  s.running = Int(o, "totalRunningJobs");
  s.registered = Int(o, "totalRegisteredRunners");
  s.busy = Int(o, "totalBusyRunners");
  s.idle = Int(o, "totalIdleRunners");
  return s;
}

// The `exp` of a JWT, read without verifying it; 0 when unreadable.
int64_t JwtExpiry(const std::string& jwt) {
  const size_t a = jwt.find('.'), b = jwt.find('.', a + 1);
  if (a == std::string::npos || b == std::string::npos) return 0;
  std::string part = jwt.substr(a + 1, b - a - 1);
  for (char& c : part) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (part.size() % 4 != 0) part.push_back('=');
  std::string raw(part.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                                reinterpret_cast<const unsigned char*>(part.data()), static_cast<int>(part.size()));
  if (n <= 0) return 0;
  raw.resize(static_cast<size_t>(n));
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  const json::value o_json = Parsed(raw);
  const json::object* o = o_json.if_object();
  return o != nullptr ? Int(*o, "exp") * kSecondNs : 0;
}

std::string Origin(const ApiBase& b) { return (b.tls ? "https://" : "http://") + b.host + ":" + std::to_string(b.port); }

// The URL GitHub's runners know the target by: https://github.com/acme for
// api.github.com, https://HOST/acme for a GHES at https://HOST/api/v3.
std::string WebUrl(const GithubConfig& c) {
  std::string host = c.api.host;
  if (host.rfind("api.", 0) == 0) host = host.substr(4);
  const bool default_port = c.api.port == (c.api.tls ? 443 : 80);
  std::string url = (c.api.tls ? "https://" : "http://") + host + (default_port ? "" : ":" + std::to_string(c.api.port));
  return url + (c.scope == Scope::kEnterprise ? "/enterprises/" : "/") + c.owner;
}

}  // namespace

QueueMessage DecodeQueueMessage(const std::string& body) {
  QueueMessage m;
  boost::system::error_code ec;
  json::value v = json::parse(Unmarked(body), ec);
  if (ec || !v.is_object()) {
    m.decode_error = "the message is not a JSON object";
    return m;
  }
  const json::object& o = v.as_object();
  m.id = Int(o, "messageId");
  m.statistics = StatisticsOf(o.if_contains("statistics"));
  if (m.id <= 0) {
    m.decode_error = "the message has no messageId";
    return m;
  }
  if (Str(o, "messageType") != "RunnerScaleSetJobMessages") {
    m.decode_error = "unknown messageType \"" + Str(o, "messageType").substr(0, 60) + "\"";
    return m;
  }
  const json::value* text = o.if_contains("body");
  if (text == nullptr || !text->is_string()) {
    m.decode_error = "the message body is not a string";
    return m;
  }
  json::value entries = json::parse(Unmarked(std::string_view(text->as_string())), ec);
  if (ec || !entries.is_array()) {
    m.decode_error = "the message body is not a JSON array";
    return m;
  }
  for (const json::value& e : entries.as_array()) {
    if (!e.is_object()) continue;
    const json::object& j = e.as_object();
    const std::string type = Str(j, "messageType");
    JobEntry job;
    if (type == "JobAvailable") job.kind = JobEntry::kAvailable;
    else if (type == "JobAssigned") job.kind = JobEntry::kAssigned;
    else if (type == "JobStarted") job.kind = JobEntry::kStarted;
    else if (type == "JobCompleted") job.kind = JobEntry::kCompleted;
    else continue;  // entry types added later are not ours to act on
    job.runner_request_id = Int(j, "runnerRequestId");
    job.workflow_run_id = Int(j, "workflowRunId");
    job.runner_id = Int(j, "runnerId");
    job.job_id = Str(j, "jobId");
    job.owner = Str(j, "ownerName");
    job.repository = Str(j, "repositoryName");
    job.workflow_ref = Str(j, "jobWorkflowRef");
    job.display_name = Str(j, "jobDisplayName");
    job.event_name = Str(j, "eventName");
    job.runner_name = Str(j, "runnerName");
    job.result = Str(j, "result");
    job.queued_at_ns = Time(j, "queueTime");
    job.assigned_at_ns = Time(j, "scaleSetAssignTime");
    job.finished_at_ns = Time(j, "finishTime");
    m.jobs.push_back(std::move(job));
  }
  return m;
}

struct ActionsService::Session {
  uint64_t handle = 0;
  int64_t scale_set_id = 0;
  std::mutex mu;  // the token and queue URL, and refreshing them
  std::string id;
  ApiBase queue;       // the queue's URL (prefix is its path)
  std::string token;   // SECRET: the queue token
  std::mutex pool_mu;  // held briefly: Cancel never waits for a request
  std::shared_ptr<HttpsPool> pool;
  int64_t pool_timeout_ns = 0;
  bool cancelled = false;  // guarded by pool_mu
};

ActionsService::ActionsService(const GithubConfig& config, const np_host_v1* host) : api_(config, host) {}

ActionsService::~ActionsService() = default;

void ActionsService::Refused(const std::string& what, const HttpReply& r) const {
  const std::string msg = GithubMessage(std::string(Unmarked(r.body)));
  Fail(NP_INVALID, Where() + ": " + what + " (HTTP " + std::to_string(r.status) + (msg.empty() ? "" : ": " + msg) + ")");
}

HttpsPool& ActionsService::PoolFor(const ApiBase& base) {
  // with mu_ held
  auto& pool = pools_[Origin(base)];
  if (!pool) {
    ApiBase origin = base;
    origin.prefix.clear();
    pool = std::make_unique<HttpsPool>(origin, api_.config().ca_file, api_.config().allow_tls12, api_.config().timeout_ns);
  }
  return *pool;
}

ActionsService::Service ActionsService::Admin(const std::string& stale) {
  std::lock_guard lock(mu_);
  if (!service_.token.empty() && service_.token != stale && api_.NowNs() < service_.expires_ns - kAdminMargin) {
    return service_;
  }
  const GithubConfig& c = api_.config();
  HttpReply reg = api_.Call("POST", c.ScopePath() + "/actions/runners/registration-token");
  if (reg.status != 201 && reg.status != 200) {
    Refused("a runner registration token was refused (the App needs Administration or Self-hosted runners: write)", reg);
  }
  const json::value r_json = Parsed(reg.body);
  const json::object* r = r_json.if_object();
  std::string registration = r != nullptr ? Str(*r, "token") : "";  // SECRET
  if (registration.empty()) Fail(NP_UNAVAILABLE, Where() + ": the registration token answer has no token");
  const std::string body = json::serialize(json::object{{"url", WebUrl(c)}, {"runner_event", "register"}});
  HttpReply svc = api_.CallAs("POST", "/actions/runner-registration", body, "RemoteAuth " + registration);
  OPENSSL_cleanse(registration.data(), registration.size());
  if (svc.status < 200 || svc.status > 299) Refused("the Actions service registration was refused", svc);
  const json::value s_json = Parsed(svc.body);
  const json::object* s = s_json.if_object();
  const std::string url = s != nullptr ? Str(*s, "url") : "";
  std::string token = s != nullptr ? Str(*s, "token") : "";
  if (url.empty() || token.empty()) Fail(NP_UNAVAILABLE, Where() + ": the Actions service registration lacks url or token");
  try {
    service_.base = ParseApiBase("jit-github", "(the Actions service URL)", url);
  } catch (const PluginError& e) {
    Fail(NP_UNAVAILABLE, Where() + ": GitHub named an Actions service that cannot be used: " + e.what());
  }
  const int64_t exp = JwtExpiry(token);
  service_.token = std::move(token);
  service_.expires_ns = exp > 0 ? exp : api_.NowNs() + 10 * kMinuteNs;
  api_.Log(NP_LOG_INFO, "github.actions_service", {{"service", Origin(service_.base)},
                                                   {"expires_in_seconds", std::to_string((service_.expires_ns - api_.NowNs()) / kSecondNs)}});
  return service_;
}

HttpReply ActionsService::Send(HttpsPool& pool, const ApiBase& base, const std::string& method,
                               const std::string& path, const std::string& body, const Headers& headers) {
  return api_.Retrying(pool, method + " " + Origin(base) + path.substr(0, path.find('?')), method, path, body, headers);
}

HttpReply ActionsService::Call(const std::string& method, const std::string& path, const std::string& body,
                               const std::string& bearer) {
  std::string stale;
  for (int attempt = 0;; ++attempt) {
    Service svc = Admin(stale);
    HttpsPool* pool;
    {
      std::lock_guard lock(mu_);
      pool = &PoolFor(svc.base);
    }
    const std::string target =
        svc.base.prefix + "/_apis/" + path + (path.find('?') == std::string::npos ? "?" : "&") + kApiVersion;
    Headers headers{{"Accept", "application/json"},
                    {"User-Agent", "nodeplane-jit-github/" NODEPLANE_PLUGIN_VERSION},
                    {"Authorization", "Bearer " + (bearer.empty() ? svc.token : bearer)}};
    HttpReply r = Send(*pool, svc.base, method, target, body, headers);
    if (r.status != 401 || !bearer.empty() || attempt == 1) return r;
    stale = svc.token;  // the admin token was refused: a fresh one, once
  }
}

std::shared_ptr<ActionsService::Session> ActionsService::Find(uint64_t session) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) Fail(NP_INVALID, Where() + ": no open session " + std::to_string(session));
  return it->second;
}

int64_t ActionsService::GroupId(const std::string& runner_group) {
  const std::string name = runner_group.empty() ? "Default" : runner_group;
  HttpReply r = Call("GET", "runtime/runnergroups/?groupName=" + UrlEncode(name));
  if (r.status != 200) Refused("looking up runner group \"" + name + "\" failed", r);
  const json::value o_json = Parsed(r.body);
  const json::object* o = o_json.if_object();
  const json::value* value = o != nullptr ? o->if_contains("value") : nullptr;
  if (value == nullptr || !value->is_array() || value->as_array().empty() || !value->as_array()[0].is_object()) {
    Fail(NP_NOT_FOUND, Where() + ": runner group \"" + name + "\" does not exist");
  }
  return Int(value->as_array()[0].as_object(), "id");
}

namespace {

ScaleSet ScaleSetOf(const json::object& o) {
  ScaleSet s;
  s.id = Int(o, "id");
  s.name = Str(o, "name");
  s.runner_group_id = Int(o, "runnerGroupId");
  if (const json::value* labels = o.if_contains("labels"); labels != nullptr && labels->is_array()) {
    for (const json::value& l : labels->as_array()) {
      if (l.is_object()) s.labels.push_back(Str(l.as_object(), "name"));
    }
  }
  return s;
}

json::array LabelsJson(const std::vector<std::string>& labels) {
  json::array out;
  for (const std::string& l : labels) out.push_back(json::object{{"name", l}, {"type", "System"}});
  return out;
}

}  // namespace

ScaleSet ActionsService::Ensure(const std::string& name, const std::string& runner_group,
                                const std::vector<std::string>& labels) {
  const std::string what = "scale set \"" + name + "\"";
  const int64_t group = GroupId(runner_group);
  HttpReply r = Call("GET", "runtime/runnerscalesets?runnerGroupId=" + std::to_string(group) + "&name=" + UrlEncode(name));
  if (r.status != 200) Refused("looking up " + what + " failed", r);
  const json::value o_json = Parsed(r.body);
  const json::object* o = o_json.if_object();
  const json::value* value = o != nullptr ? o->if_contains("value") : nullptr;
  const bool found = value != nullptr && value->is_array() && !value->as_array().empty();
  if (found && value->as_array().size() > 1) Fail(NP_INVALID, Where() + ": more than one " + what + " in the group");
  const std::vector<std::string> wanted = labels.empty() ? std::vector<std::string>{name} : labels;
  if (found && value->as_array()[0].is_object()) {
    ScaleSet s = ScaleSetOf(value->as_array()[0].as_object());
    if (s.labels == wanted) return s;
    HttpReply u = Call("PATCH", "runtime/runnerscalesets/" + std::to_string(s.id),
                       json::serialize(json::object{{"labels", LabelsJson(wanted)}}));
    if (u.status != 200) Refused("updating the labels of " + what + " failed", u);
    api_.Log(NP_LOG_INFO, "github.scale_set_updated", {{"scale_set", name}, {"id", std::to_string(s.id)}});
    s.labels = wanted;
    return s;
  }
  json::object create{{"name", name},
                      {"runnerGroupId", group},
                      {"labels", LabelsJson(wanted)},
                      {"RunnerSetting", json::object{{"disableUpdate", true}}}};
  HttpReply c = Call("POST", "runtime/runnerscalesets", json::serialize(create));
  if (c.status != 200 && c.status != 201) Refused("creating " + what + " failed", c);
  const json::value made_json = Parsed(c.body);
  const json::object* made = made_json.if_object();
  if (made == nullptr || Int(*made, "id") <= 0) Fail(NP_UNAVAILABLE, Where() + ": creating " + what + " answered no id");
  ScaleSet s = ScaleSetOf(*made);
  api_.Log(NP_LOG_INFO, "github.scale_set_created", {{"scale_set", name}, {"id", std::to_string(s.id)}});
  return s;
}

namespace {

// A session object's fields into `s` (with s.mu held).
void TakeSession(const json::object& o, std::string& id, ApiBase& queue, std::string& token, const std::string& where) {
  id = Str(o, "sessionId");
  std::string url = Str(o, "messageQueueUrl");
  token = Str(o, "messageQueueAccessToken");
  if (id.empty() || url.empty() || token.empty()) Fail(NP_UNAVAILABLE, where + ": the session answer lacks its queue");
  url = url.substr(0, url.find('?'));
  try {
    queue = ParseApiBase("jit-github", "(the message queue URL)", url);
  } catch (const PluginError& e) {
    Fail(NP_UNAVAILABLE, where + ": GitHub named a message queue that cannot be used: " + e.what());
  }
}

}  // namespace

uint64_t ActionsService::Open(int64_t scale_set_id, const std::string& owner, QueueStatistics* statistics) {
  HttpReply r = Call("POST", "runtime/runnerscalesets/" + std::to_string(scale_set_id) + "/sessions",
                     json::serialize(json::object{{"ownerName", owner}}));
  if (r.status == 409) {
    throw PluginError(NP_CONFLICT, Where() + ": scale set " + std::to_string(scale_set_id) +
                                       " already has an active session (another process, or one not yet expired)");
  }
  if (r.status == 404) Fail(NP_NOT_FOUND, Where() + ": scale set " + std::to_string(scale_set_id) + " does not exist");
  if (r.status != 200 && r.status != 201) Refused("opening a message session failed", r);
  const json::value o_json = Parsed(r.body);
  const json::object* o = o_json.if_object();
  if (o == nullptr) Fail(NP_UNAVAILABLE, Where() + ": the session answer is not JSON");
  auto s = std::make_shared<Session>();
  s->scale_set_id = scale_set_id;
  TakeSession(*o, s->id, s->queue, s->token, Where());
  if (statistics != nullptr) *statistics = StatisticsOf(o->if_contains("statistics"));
  std::lock_guard lock(mu_);
  s->handle = next_session_++;
  sessions_[s->handle] = s;
  api_.Log(NP_LOG_INFO, "github.session_opened", {{"scale_set_id", std::to_string(scale_set_id)}, {"owner", owner}});
  return s->handle;
}

void ActionsService::Refresh(Session& s) {
  std::string id;
  {
    std::lock_guard lock(s.mu);
    id = s.id;
  }
  HttpReply r = Call("PATCH", "runtime/runnerscalesets/" + std::to_string(s.scale_set_id) + "/sessions/" + id);
  if (r.status == 404) Fail(NP_NOT_FOUND, Where() + ": the message session expired; a new one is needed");
  if (r.status != 200) Refused("refreshing the message session failed", r);
  const json::value o_json = Parsed(r.body);
  const json::object* o = o_json.if_object();
  if (o == nullptr) Fail(NP_UNAVAILABLE, Where() + ": the session refresh is not JSON");
  std::lock_guard lock(s.mu);
  TakeSession(*o, s.id, s.queue, s.token, Where());
}

HttpReply ActionsService::SessionCall(Session& s, const std::string& method, const std::string& path,
                                      const std::string& body, const Headers& extra, bool queue) {
  for (int attempt = 0;; ++attempt) {
    std::string token;
    ApiBase base;
    {
      std::lock_guard lock(s.mu);
      token = s.token;
      base = s.queue;
    }
    HttpReply r;
    Headers headers{{"Accept", std::string("application/json; ") + kApiVersion},
                    {"User-Agent", "nodeplane-jit-github/" NODEPLANE_PLUGIN_VERSION},
                    {"Authorization", "Bearer " + token}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    if (queue) {
      std::shared_ptr<HttpsPool> pool;
      {
        std::lock_guard lock(s.pool_mu);
        if (s.cancelled) Fail(NP_UNAVAILABLE, Where() + ": the session's poll was cancelled");
        pool = s.pool;
      }
      // One attempt: the host polls again, and a cancelled poll must end now.
      r = api_.Retrying(*pool, method + " " + Origin(base) + base.prefix, method, base.prefix + path, body, headers, 1);
    } else {
      r = Call(method, path, body, token);
    }
    if (r.status != 401 || attempt == 1) return r;
    Refresh(s);  // the queue token expired
  }
}

std::optional<QueueMessage> ActionsService::Next(uint64_t session, int64_t last_message_id, int64_t max_capacity,
                                                 int64_t timeout_ns) {
  std::shared_ptr<Session> s = Find(session);
  {
    std::lock_guard lock(s->pool_mu);
    if (!s->pool || s->pool_timeout_ns != timeout_ns) {
      ApiBase origin;
      {
        std::lock_guard l(s->mu);
        origin = s->queue;
      }
      origin.prefix.clear();
      s->pool = std::make_shared<HttpsPool>(origin, api_.config().ca_file, api_.config().allow_tls12, timeout_ns);
      s->pool_timeout_ns = timeout_ns;
    }
  }
  const std::string query = last_message_id > 0 ? "?lastMessageId=" + std::to_string(last_message_id) : "";
  HttpReply r = SessionCall(*s, "GET", query, "", {{"X-ScaleSetMaxCapacity", std::to_string(max_capacity)}}, true);
  if (r.status == 202 || r.status == 204) return std::nullopt;
  if (r.status == 404) Fail(NP_NOT_FOUND, Where() + ": the message session is gone; a new one is needed");
  if (r.status != 200) Refused("polling the message queue failed", r);
  return DecodeQueueMessage(r.body);
}

void ActionsService::Acknowledge(uint64_t session, int64_t message_id) {
  std::shared_ptr<Session> s = Find(session);
  HttpReply r = SessionCall(*s, "DELETE", "/" + std::to_string(message_id), "", {}, true);
  if (r.status == 404) Fail(NP_NOT_FOUND, Where() + ": the message session is gone; a new one is needed");
  if (r.status != 204 && r.status != 200) Refused("acknowledging message " + std::to_string(message_id) + " failed", r);
}

std::vector<int64_t> ActionsService::Acquire(uint64_t session, const std::vector<int64_t>& request_ids) {
  std::shared_ptr<Session> s = Find(session);
  json::array ids;
  for (int64_t id : request_ids) ids.push_back(id);
  HttpReply r = SessionCall(*s, "POST", "runtime/runnerscalesets/" + std::to_string(s->scale_set_id) + "/acquirejobs",
                            json::serialize(ids), {}, false);
  if (r.status != 200) Refused("acquiring jobs failed", r);
  const json::value o_json = Parsed(r.body);
  const json::object* o = o_json.if_object();
  const json::value* value = o != nullptr ? o->if_contains("value") : nullptr;
  if (value == nullptr || !value->is_array()) Fail(NP_UNAVAILABLE, Where() + ": the acquisition answer has no ids");
  std::vector<int64_t> granted;
  for (const json::value& v : value->as_array()) {
    if (v.is_int64()) granted.push_back(v.as_int64());
  }
  return granted;
}

Minted ActionsService::Jit(int64_t scale_set_id, const std::string& runner_name, const std::string& work_folder) {
  const std::string path = "runtime/runnerscalesets/" + std::to_string(scale_set_id) + "/generatejitconfig";
  const std::string body = json::serialize(json::object{{"name", runner_name}, {"workFolder", work_folder.empty() ? "_work" : work_folder}});
  for (int attempt = 0;; ++attempt) {
    HttpReply r = Call("POST", path, body);
    if (r.status == 404) Fail(NP_NOT_FOUND, Where() + ": scale set " + std::to_string(scale_set_id) + " does not exist");
    if (r.status == 409 && attempt == 0) {
      // The name is taken: an earlier mint for this very runner reached
      // GitHub and its answer was lost. That runner never got its config,
      // so it is removed (GitHub refuses if it is running a job).
      HttpReply found = Call("GET", "distributedtask/pools/0/agents?agentName=" + UrlEncode(runner_name));
      const json::value found_json = found.status == 200 ? Parsed(found.body) : json::value();
      const json::object* o = found_json.if_object();
      const json::value* value = o != nullptr ? o->if_contains("value") : nullptr;
      if (value != nullptr && value->is_array() && !value->as_array().empty() && value->as_array()[0].is_object()) {
        const int64_t id = Int(value->as_array()[0].as_object(), "id");
        HttpReply gone = Call("DELETE", "distributedtask/pools/0/agents/" + std::to_string(id));
        if (gone.status != 204 && gone.status != 200 && gone.status != 404) {
          Fail(NP_CONFLICT, Where() + ": runner \"" + runner_name + "\" is registered and could not be removed (HTTP " +
                                std::to_string(gone.status) + ")");
        }
      }
      continue;
    }
    if (r.status != 200 && r.status != 201) Refused("minting a JIT config for runner \"" + runner_name + "\" failed", r);
    const json::value o_json = Parsed(r.body);
    const json::object* o = o_json.if_object();
    const json::value* runner = o != nullptr ? o->if_contains("runner") : nullptr;
    Minted m;
    m.encoded_jit_config = o != nullptr ? Str(*o, "encodedJITConfig") : "";
    if (runner != nullptr && runner->is_object()) {
      m.runner_id = Int(runner->as_object(), "id");
      m.runner_name = Str(runner->as_object(), "name");
    }
    if (m.encoded_jit_config.empty() || m.runner_name != runner_name) {
      Fail(NP_UNAVAILABLE, Where() + ": the JIT config answer for runner \"" + runner_name + "\" is incomplete");
    }
    return m;
  }
}

void ActionsService::Close(uint64_t session) {
  std::shared_ptr<Session> s = Find(session);
  {
    std::lock_guard lock(mu_);
    sessions_.erase(session);  // whatever the answer: the handle ends here
  }
  std::string id;
  {
    std::lock_guard lock(s->mu);
    id = s->id;
  }
  HttpReply r = Call("DELETE", "runtime/runnerscalesets/" + std::to_string(s->scale_set_id) + "/sessions/" + id);
  if (r.status != 204 && r.status != 200 && r.status != 404) Refused("closing the message session failed", r);
  api_.Log(NP_LOG_INFO, "github.session_closed", {{"scale_set_id", std::to_string(s->scale_set_id)}});
}

void ActionsService::Cancel(uint64_t session) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    s = it->second;
  }
  std::lock_guard lock(s->pool_mu);
  s->cancelled = true;
  if (s->pool) s->pool->Abort();
}

}  // namespace nodeplane::plugins::github
