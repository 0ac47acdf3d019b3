#include "actions_service.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "github_json.h"
#include "plugin_error.h"
#include "plugin_time.h"

namespace nodeplane::plugins::github {
namespace json = boost::json;
using gjson::Int;
using gjson::Str;

namespace {

// The admin token is replaced this long before its exp.
constexpr int64_t kAdminMargin = 60 * kSecondNs;
constexpr const char* kApiVersion = "api-version=6.0-preview";
// RemoteAuth: tries, and the first wait, doubling (actions/scaleset
// client.go: 4 retries from 1 s; ARC: 5 from 1 s).
constexpr int kRemoteAuthAttempts = 5;
constexpr int64_t kRemoteAuthFirstWait = kSecondNs;
// GitHub's default runner group, which its clients never look up.
constexpr int64_t kDefaultRunnerGroup = 1;

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

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
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
  const json::value o = gjson::Parse(raw);
  return o.is_object() ? Int(o.as_object(), "exp") * kSecondNs : 0;
}

std::string Origin(const ApiBase& b) { return (b.tls ? "https://" : "http://") + b.host + ":" + std::to_string(b.port); }

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

ScaleSet ScaleSetOf(const json::object& o) {
  ScaleSet s;
  s.id = Int(o, "id");
  s.name = Str(o, "name");
  s.runner_group_id = Int(o, "runnerGroupId");
  if (const json::array* labels = gjson::Array(o, "labels")) {
    for (const json::value& l : *labels) {
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

// runs-on matches labels without regard to case or order.
std::set<std::string> LabelSet(const std::vector<std::string>& labels) {
  std::set<std::string> out;
  for (const std::string& l : labels) out.insert(Lower(l));
  return out;
}

}  // namespace

std::string RunnerConfigUrl(const GithubConfig& c) {
  const std::string host = Lower(c.api.host);
  const bool dotcom = host == "api.github.com" || host == "api.github.localhost" ||
                      (host.rfind("api.", 0) == 0 && EndsWith(host, ".ghe.com"));
  const std::string web = dotcom ? c.api.host.substr(4) : c.api.host;
  const bool default_port = c.api.port == (c.api.tls ? 443 : 80);
  const std::string url =
      (c.api.tls ? "https://" : "http://") + web + (default_port ? "" : ":" + std::to_string(c.api.port));
  return url + (c.scope == Scope::kEnterprise ? "/enterprises/" : "/") + c.owner;
}

bool SessionGone(const HttpReply& r) {
  if (r.status == 404) return true;
  if (r.status != 400 && r.status != 403) return false;
  const std::string type = GithubError(r).type;
  return type.find("SessionExpired") != std::string::npos || type.find("SessionNotFound") != std::string::npos ||
         type.find("SessionInvalid") != std::string::npos || type == "RunnerAdminException";
}

struct ActionsService::Session {
  uint64_t handle = 0;
  int64_t scale_set_id = 0;
  std::mutex mu;  // the token and queue URL, and refreshing them
  std::string id;
  ApiBase queue;        // the queue's URL without its query (prefix is its path)
  std::string query;    // the queue URL's own query, without '?'
  std::string token;    // SECRET: the queue token
  std::mutex pool_mu;   // held briefly: Cancel never waits for a request
  std::shared_ptr<HttpsPool> pool;
  std::string pool_origin;
  int64_t pool_timeout_ns = 0;
  bool cancelled = false;  // guarded by pool_mu
};

ActionsService::ActionsService(const GithubConfig& config, const np_host_v1* host) : api_(config, host) {}

ActionsService::~ActionsService() = default;

void ActionsService::Refused(const std::string& what, const HttpReply& r) const {
  Fail(NP_INVALID, Where() + ": " + what + Detail(r));
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

std::string ActionsService::RegistrationToken() {
  HttpReply reg = api_.Call("POST", api_.config().ScopePath() + "/actions/runners/registration-token");
  if (reg.status != 201 && reg.status != 200) {
    Refused("a runner registration token was refused (the App needs Administration or Self-hosted runners: write)", reg);
  }
  const json::value r = gjson::Parse(reg.body);
  std::string token = r.is_object() ? Str(r.as_object(), "token") : "";
  if (token.empty()) Fail(NP_UNAVAILABLE, Where() + ": the registration token answer has no token");
  return token;
}

// POST /actions/runner-registration, retrying 401 and 403: GitHub does not
// always accept a registration token the moment it is minted.
HttpReply ActionsService::RemoteAuth(const std::string& registration) {
  const std::string body =
      json::serialize(json::object{{"url", RunnerConfigUrl(api_.config())}, {"runner_event", "register"}});
  int64_t wait = kRemoteAuthFirstWait;
  for (int attempt = 1;; ++attempt) {
    HttpReply svc = api_.CallAs("POST", "/actions/runner-registration", body, "RemoteAuth " + registration);
    if ((svc.status != 401 && svc.status != 403) || attempt == kRemoteAuthAttempts) return svc;
    api_.Log(NP_LOG_WARN, "github.retry", {{"request", "POST /actions/runner-registration"},
                                           {"attempt", std::to_string(attempt + 1)},
                                           {"after", Detail(svc).substr(1)}});
    std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    wait *= 2;
  }
}

ActionsService::Service ActionsService::Admin(const std::string& stale) {
  std::lock_guard lock(mu_);
  if (!service_.token.empty() && service_.token != stale && api_.NowNs() < service_.expires_ns - kAdminMargin) {
    return service_;
  }
  std::string registration = RegistrationToken();  // SECRET
  HttpReply svc = RemoteAuth(registration);
  OPENSSL_cleanse(registration.data(), registration.size());
  if (svc.status < 200 || svc.status > 299) Refused("the Actions service registration was refused", svc);
  const json::value s = gjson::Parse(svc.body);
  const std::string url = s.is_object() ? Str(s.as_object(), "url") : "";
  std::string token = s.is_object() ? Str(s.as_object(), "token") : "";
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
    HttpReply r = api_.Retrying(*pool, method + " " + Origin(svc.base) + target.substr(0, target.find('?')), method,
                                target, body, headers);
    if (r.status != 401 || !bearer.empty() || attempt == 1) return r;
    stale = svc.token;  // the admin token was refused: a fresh one, once
  }
}

std::shared_ptr<ActionsService::Session> ActionsService::Find(uint64_t session) {
  std::lock_guard lock(sessions_mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) Fail(NP_INVALID, Where() + ": no open session " + std::to_string(session));
  return it->second;
}

int64_t ActionsService::GroupId(const std::string& runner_group) {
  if (runner_group.empty()) return kDefaultRunnerGroup;
  HttpReply r = Call("GET", "runtime/runnergroups/?groupName=" + UrlEncode(runner_group));
  if (r.status != 200) Refused("looking up runner group \"" + runner_group + "\" failed", r);
  const json::value o = gjson::Parse(r.body);
  const json::array* value = o.is_object() ? gjson::Array(o.as_object(), "value") : nullptr;
  const size_t n = value != nullptr ? value->size() : 0;
  if (n == 0) Fail(NP_NOT_FOUND, Where() + ": runner group \"" + runner_group + "\" does not exist");
  if (n > 1 || !(*value)[0].is_object()) {
    Fail(NP_INVALID, Where() + ": " + std::to_string(n) + " runner groups answer to \"" + runner_group + "\"");
  }
  return Int((*value)[0].as_object(), "id");
}

ScaleSet ActionsService::Ensure(const std::string& name, const std::string& runner_group,
                                const std::vector<std::string>& labels) {
  const std::string what = "scale set \"" + name + "\"";
  const std::vector<std::string> wanted = labels.empty() ? std::vector<std::string>{name} : labels;
  const int64_t group = GroupId(runner_group);
  HttpReply r = Call("GET", "runtime/runnerscalesets?runnerGroupId=" + std::to_string(group) + "&name=" + UrlEncode(name));
  if (r.status != 200) Refused("looking up " + what + " failed", r);
  const json::value o = gjson::Parse(r.body);
  const json::array* value = o.is_object() ? gjson::Array(o.as_object(), "value") : nullptr;
  if (value != nullptr && value->size() > 1) Fail(NP_INVALID, Where() + ": more than one " + what + " in the group");
  if (value != nullptr && value->size() == 1 && (*value)[0].is_object()) {
    ScaleSet s = ScaleSetOf((*value)[0].as_object());
    if (LabelSet(s.labels) == LabelSet(wanted)) return s;
    HttpReply u = Call("PATCH", "runtime/runnerscalesets/" + std::to_string(s.id),
                       json::serialize(json::object{{"labels", LabelsJson(wanted)}}));
    if (u.status != 200) Refused("updating the labels of " + what + " failed", u);
    const json::value updated = gjson::Parse(u.body);
    if (updated.is_object()) s.labels = ScaleSetOf(updated.as_object()).labels;  // what GitHub kept
    api_.Log(NP_LOG_INFO, "github.scale_set_updated", {{"scale_set", name}, {"id", std::to_string(s.id)}});
    return s;
  }
  json::object create{{"name", name},
                      {"runnerGroupId", group},
                      {"labels", LabelsJson(wanted)},
                      {"RunnerSetting", json::object{{"disableUpdate", true}}}};
  HttpReply c = Call("POST", "runtime/runnerscalesets", json::serialize(create));
  if (c.status != 200 && c.status != 201) Refused("creating " + what + " failed", c);
  const json::value made = gjson::Parse(c.body);
  if (!made.is_object() || Int(made.as_object(), "id") <= 0) Fail(NP_UNAVAILABLE, Where() + ": creating " + what + " answered no id");
  ScaleSet s = ScaleSetOf(made.as_object());
  api_.Log(NP_LOG_INFO, "github.scale_set_created", {{"scale_set", name}, {"id", std::to_string(s.id)}});
  return s;
}

namespace {

// A session object's fields into `s`'s members (with s.mu held).
void TakeSession(const json::object& o, std::string& id, ApiBase& queue, std::string& query, std::string& token,
                 const std::string& where) {
  id = Str(o, "sessionId");
  std::string url = Str(o, "messageQueueUrl");
  token = Str(o, "messageQueueAccessToken");
  if (id.empty() || url.empty() || token.empty()) Fail(NP_UNAVAILABLE, where + ": the session answer lacks its queue");
  const size_t q = url.find('?');
  query = q == std::string::npos ? "" : url.substr(q + 1);
  try {
    queue = ParseApiBase("jit-github", "(the message queue URL)", url.substr(0, q));
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
                                       " already has an active session (another process, or one not yet expired)" +
                                       Detail(r));
  }
  if (r.status == 404) {
    Fail(NP_NOT_FOUND, Where() + ": scale set " + std::to_string(scale_set_id) + " no longer exists" + Detail(r));
  }
  if (r.status != 200 && r.status != 201) Refused("opening a message session failed", r);
  const json::value o = gjson::Parse(r.body);
  if (!o.is_object()) Fail(NP_UNAVAILABLE, Where() + ": the session answer is not JSON");
  auto s = std::make_shared<Session>();
  s->scale_set_id = scale_set_id;
  TakeSession(o.as_object(), s->id, s->queue, s->query, s->token, Where());
  if (statistics != nullptr) *statistics = StatisticsOf(gjson::Member(o.as_object(), "statistics"));
  {
    std::lock_guard lock(sessions_mu_);
    s->handle = next_session_++;
    sessions_[s->handle] = s;
  }
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
  if (SessionGone(r)) Fail(NP_NOT_FOUND, Where() + ": the message session is gone; a new one is needed" + Detail(r));
  if (r.status != 200) Refused("refreshing the message session failed", r);
  const json::value o = gjson::Parse(r.body);
  if (!o.is_object()) Fail(NP_UNAVAILABLE, Where() + ": the session refresh is not JSON");
  std::lock_guard lock(s.mu);
  TakeSession(o.as_object(), s.id, s.queue, s.query, s.token, Where());
}

std::shared_ptr<HttpsPool> ActionsService::PollPool(Session& s, int64_t timeout_ns) {
  ApiBase origin;
  {
    std::lock_guard lock(s.mu);
    origin = s.queue;
  }
  origin.prefix.clear();
  std::lock_guard lock(s.pool_mu);
  if (s.cancelled) Fail(NP_UNAVAILABLE, Where() + ": the session's poll was cancelled");
  if (!s.pool || s.pool_timeout_ns != timeout_ns || s.pool_origin != Origin(origin)) {
    s.pool = std::make_shared<HttpsPool>(origin, api_.config().ca_file, api_.config().allow_tls12, timeout_ns);
    s.pool_timeout_ns = timeout_ns;
    s.pool_origin = Origin(origin);
  }
  return s.pool;
}

HttpReply ActionsService::QueueCall(Session& s, const std::string& method, const std::string& path,
                                    const std::string& query, const Headers& extra, int64_t poll_timeout_ns) {
  for (int attempt = 0;; ++attempt) {
    std::string token, target;
    ApiBase base;
    {
      std::lock_guard lock(s.mu);
      token = s.token;
      base = s.queue;
      const std::string q = s.query.empty() ? query : query.empty() ? s.query : s.query + "&" + query;
      target = base.prefix + path + (q.empty() ? "" : "?" + q);
    }
    Headers headers{{"Accept", std::string("application/json; ") + kApiVersion},
                    {"User-Agent", "nodeplane-jit-github/" NODEPLANE_PLUGIN_VERSION},
                    {"Authorization", "Bearer " + token}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    const std::string what = method + " " + Origin(base) + base.prefix + path;
    HttpReply r;
    if (poll_timeout_ns > 0) {
      // One attempt: the host polls again, and a cancelled poll must end now.
      r = api_.Retrying(*PollPool(s, poll_timeout_ns), what, method, target, "", headers, 1, true);
    } else {
      HttpsPool* pool;
      {
        std::lock_guard lock(mu_);
        pool = &PoolFor(base);
      }
      r = api_.Retrying(*pool, what, method, target, "", headers);
    }
    if (r.status != 401 || attempt == 1) return r;
    Refresh(s);  // the queue token expired
  }
}

std::optional<QueueMessage> ActionsService::Next(uint64_t session, int64_t last_message_id, int64_t max_capacity,
                                                 int64_t timeout_ns) {
  std::shared_ptr<Session> s = Find(session);
  const std::string last = last_message_id > 0 ? "lastMessageId=" + std::to_string(last_message_id) : "";
  HttpReply r = QueueCall(*s, "GET", "", last, {{"X-ScaleSetMaxCapacity", std::to_string(max_capacity)}},
                          std::max<int64_t>(timeout_ns, 1));
  if (r.status == 0 || r.status == 202 || r.status == 204) return std::nullopt;  // 0: held past our bound
  if (SessionGone(r)) Fail(NP_NOT_FOUND, Where() + ": the message session is gone; a new one is needed" + Detail(r));
  if (r.status != 200) Refused("polling the message queue failed", r);
  return DecodeQueueMessage(r.body);
}

void ActionsService::Acknowledge(uint64_t session, int64_t message_id) {
  std::shared_ptr<Session> s = Find(session);
  HttpReply r = QueueCall(*s, "DELETE", "/" + std::to_string(message_id), "", {}, 0);
  if (r.status == 204 || r.status == 200) return;
  if (SessionGone(r)) Fail(NP_NOT_FOUND, Where() + ": the message session is gone; a new one is needed" + Detail(r));
  Refused("acknowledging message " + std::to_string(message_id) + " failed", r);
}

std::vector<int64_t> ActionsService::Acquire(uint64_t session, const std::vector<int64_t>& request_ids) {
  std::shared_ptr<Session> s = Find(session);
  json::array ids;
  for (int64_t id : request_ids) ids.push_back(id);
  const std::string path = "runtime/runnerscalesets/" + std::to_string(s->scale_set_id) + "/acquirejobs";
  for (int attempt = 0;; ++attempt) {
    std::string token;
    {
      std::lock_guard lock(s->mu);
      token = s->token;
    }
    HttpReply r = Call("POST", path, json::serialize(ids), token);
    if (r.status == 401 && attempt == 0) {
      Refresh(*s);  // the queue token expired
      continue;
    }
    if (SessionGone(r)) Fail(NP_NOT_FOUND, Where() + ": the message session is gone; a new one is needed" + Detail(r));
    if (r.status != 200) Refused("acquiring jobs failed", r);
    const json::value o = gjson::Parse(r.body);
    const json::array* value = o.is_object() ? gjson::Array(o.as_object(), "value") : nullptr;
    if (value == nullptr) Fail(NP_UNAVAILABLE, Where() + ": the acquisition answer has no ids");
    std::vector<int64_t> granted;
    for (const json::value& v : *value) {
      if (v.is_int64()) granted.push_back(v.as_int64());
    }
    return granted;
  }
}

std::optional<std::pair<int64_t, int64_t>> ActionsService::Agent(const std::string& runner_name) {
  HttpReply found = Call("GET", "distributedtask/pools/0/agents?agentName=" + UrlEncode(runner_name));
  if (found.status != 200) Refused("looking up runner \"" + runner_name + "\" failed", found);
  const json::value o = gjson::Parse(found.body);
  const json::array* value = o.is_object() ? gjson::Array(o.as_object(), "value") : nullptr;
  if (value == nullptr || value->empty()) return std::nullopt;
  if (value->size() > 1 || !(*value)[0].is_object()) {
    Fail(NP_CONFLICT, Where() + ": " + std::to_string(value->size()) + " runners answer to the name \"" + runner_name +
                          "\"; none was removed");
  }
  const json::object& a = (*value)[0].as_object();
  return std::make_pair(Int(a, "id"), Int(a, "runnerScaleSetId"));
}

Minted ActionsService::Jit(int64_t scale_set_id, const std::string& runner_name, const std::string& work_folder) {
  const std::string path = "runtime/runnerscalesets/" + std::to_string(scale_set_id) + "/generatejitconfig";
  const std::string body = json::serialize(json::object{{"name", runner_name}, {"workFolder", work_folder.empty() ? "_work" : work_folder}});
  for (int attempt = 0;; ++attempt) {
    HttpReply r = Call("POST", path, body);
    if (r.status == 404) {
      Fail(NP_NOT_FOUND, Where() + ": scale set " + std::to_string(scale_set_id) + " does not exist" + Detail(r));
    }
    if (r.status == 409) {
      // The name is taken. When it is this scale set's runner, an earlier
      // mint for this very runner reached GitHub and its answer was lost:
      // that runner never got its config, so it is removed (ARC does the
      // same, and only then). Anything else is not ours to remove.
      if (attempt > 0 || GithubError(r).type.find("AgentExistsException") == std::string::npos) {
        Fail(NP_CONFLICT, Where() + ": minting runner \"" + runner_name + "\" conflicts" + Detail(r));
      }
      RemoveRunner(scale_set_id, runner_name, 0);
      continue;
    }
    if (r.status != 200 && r.status != 201) Refused("minting a JIT config for runner \"" + runner_name + "\" failed", r);
    const json::value o = gjson::Parse(r.body);
    const json::object* runner = o.is_object() ? gjson::Object(o.as_object(), "runner") : nullptr;
    Minted m;
    m.encoded_jit_config = o.is_object() ? Str(o.as_object(), "encodedJITConfig") : "";
    if (runner != nullptr) {
      m.runner_id = Int(*runner, "id");
      m.runner_name = Str(*runner, "name");
    }
    if (m.encoded_jit_config.empty() || m.runner_name != runner_name) {
      Fail(NP_UNAVAILABLE, Where() + ": the JIT config answer for runner \"" + runner_name + "\" is incomplete");
    }
    return m;
  }
}

void ActionsService::RemoveRunner(int64_t scale_set_id, const std::string& runner_name, int64_t runner_id) {
  const std::string what = "runner \"" + runner_name + "\"";
  auto agent = Agent(runner_name);
  if (!agent) return;  // gone already
  if (agent->second != scale_set_id) {
    Fail(NP_CONFLICT, Where() + ": " + what + " belongs to scale set " + std::to_string(agent->second) + ", not " +
                          std::to_string(scale_set_id) + "; it was not removed");
  }
  if (runner_id != 0 && runner_id != agent->first) {
    Fail(NP_CONFLICT, Where() + ": " + what + " has id " + std::to_string(agent->first) + ", not " +
                          std::to_string(runner_id) + "; it was not removed");
  }
  HttpReply gone = Call("DELETE", "distributedtask/pools/0/agents/" + std::to_string(agent->first));
  if (gone.status == 204 || gone.status == 200 || gone.status == 404) {
    api_.Log(NP_LOG_INFO, "github.runner_removed", {{"runner_id", std::to_string(agent->first)},
                                                    {"runner_name", runner_name},
                                                    {"already_gone", gone.status == 404 ? "true" : "false"}});
    return;
  }
  if (GithubError(gone).type.find("JobStillRunning") != std::string::npos) {
    Fail(NP_CONFLICT, Where() + ": " + what + " is running a job; it was not removed" + Detail(gone));
  }
  Refused("removing " + what + " failed", gone);
}

void ActionsService::Close(uint64_t session) {
  std::shared_ptr<Session> s = Find(session);
  {
    std::lock_guard lock(sessions_mu_);
    sessions_.erase(session);  // whatever the answer: the handle ends here
  }
  std::string id;
  {
    std::lock_guard lock(s->mu);
    id = s->id;
  }
  HttpReply r = Call("DELETE", "runtime/runnerscalesets/" + std::to_string(s->scale_set_id) + "/sessions/" + id);
  if (r.status != 204 && r.status != 200 && !SessionGone(r)) Refused("closing the message session failed", r);
  api_.Log(NP_LOG_INFO, "github.session_closed", {{"scale_set_id", std::to_string(s->scale_set_id)}});
}

void ActionsService::Cancel(uint64_t session) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard lock(sessions_mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    s = it->second;
  }
  std::lock_guard lock(s->pool_mu);
  s->cancelled = true;
  if (s->pool) s->pool->Abort();
}

}  // namespace nodeplane::plugins::github
