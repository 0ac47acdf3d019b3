#include "jit_github.h"

#include <boost/json.hpp>

#include "plugin_error.h"

namespace nodeplane::plugins::github {
namespace {

namespace json = boost::json;

std::string PercentEncode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

json::object ParseObject(const HttpReply& r, const std::string& where) {
  json::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (ec || !v.is_object()) Fail(NP_UNAVAILABLE, where + ": GitHub answered " + std::to_string(r.status) + " with a body that is not a JSON object");
  return std::move(v.as_object());
}

const json::value& Field(const json::object& o, const char* key, const std::string& where) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) Fail(NP_UNAVAILABLE, where + ": GitHub's answer lacks \"" + key + "\"");
  return *v;
}

int64_t IdOf(const json::object& o, const std::string& where) {
  const json::value& v = Field(o, "id", where);
  if (!v.is_int64() || v.as_int64() <= 0) Fail(NP_UNAVAILABLE, where + ": GitHub's answer has a bad \"id\"");
  return v.as_int64();
}

bool SameName(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

}  // namespace

JitGithub::JitGithub(const GithubConfig& config, const np_host_v1* host) : api_(config, host) {}

RunnerGroup JitGithub::Describe(const std::string& group) {
  {
    std::lock_guard lock(mu_);
    auto it = groups_.find(group);
    if (it != groups_.end() && api_.NowNs() < it->second.until_ns) return it->second.group;
  }
  RunnerGroup found = ListGroups(group);
  std::lock_guard lock(mu_);
  groups_[group] = Cached{found, api_.NowNs() + api_.config().describe_ttl_ns};
  return found;
}

RunnerGroup JitGithub::ListGroups(const std::string& group) {
  const GithubConfig& c = api_.config();
  if (c.scope == Scope::kRepo) {
    // Repository runners all live in the Default group, whose id is 1.
    if (!group.empty() && !SameName(group, "Default")) {
      Fail(NP_INVALID, Where() + ": a repository has only the \"Default\" runner group, not \"" + group + "\"");
    }
    return RunnerGroup{1, "Default", {}};
  }
  const std::string where = Where() + ": listing runner groups";
  for (int page = 1; page <= kMaxPages; ++page) {
    HttpReply r = api_.Call("GET", c.ScopePath() + "/actions/runner-groups?per_page=" + std::to_string(kPerPage) +
                                       "&page=" + std::to_string(page));
    if (r.status == 404) {
      Fail(NP_INVALID, Where() + ": GitHub does not know it, or the App cannot see it (HTTP 404 listing runner groups)");
    }
    if (r.status == 403) {
      Fail(NP_INVALID, Where() + ": the App lacks the \"Self-hosted runners\" permission (HTTP 403 listing runner groups)");
    }
    if (r.status != 200) Fail(NP_UNAVAILABLE, where + " answered HTTP " + std::to_string(r.status));
    json::object o = ParseObject(r, where);
    const json::value& groups = Field(o, "runner_groups", where);
    if (!groups.is_array()) Fail(NP_UNAVAILABLE, where + ": \"runner_groups\" is not an array");
    for (const json::value& g : groups.as_array()) {
      if (!g.is_object()) continue;
      const json::object& go = g.as_object();
      const json::value* name = go.if_contains("name");
      const json::value* dflt = go.if_contains("default");
      if (name == nullptr || !name->is_string()) continue;
      const bool match = group.empty() ? (dflt != nullptr && dflt->is_bool() && dflt->as_bool())
                                       : SameName(std::string(name->as_string()), group);
      if (match) return RunnerGroup{IdOf(go, where), std::string(name->as_string()), {}};
    }
    if (groups.as_array().size() < static_cast<size_t>(kPerPage)) break;
  }
  Fail(NP_NOT_FOUND, Where() + " has no runner group " +
                         (group.empty() ? std::string("marked default") : "named \"" + group + "\""));
}

Minted JitGithub::Generate(const JitRequest& request, int* status) {
  const GithubConfig& c = api_.config();
  json::object body;
  body["name"] = request.runner_name;
  body["runner_group_id"] = request.group_id;
  json::array labels;
  for (const std::string& l : request.labels) labels.emplace_back(l);
  if (labels.empty()) labels.emplace_back("self-hosted");  // GitHub requires at least one
  body["labels"] = std::move(labels);
  if (!request.work_folder.empty()) body["work_folder"] = request.work_folder;
  HttpReply r = api_.Call("POST", c.ScopePath() + "/actions/runners/generate-jitconfig", json::serialize(body));
  *status = r.status;
  const std::string where = Where() + ": generate-jitconfig for runner " + request.runner_name;
  if (r.status == 201 || r.status == 200) {
    json::object o = ParseObject(r, where);
    const json::value& config = Field(o, "encoded_jit_config", where);
    const json::value& runner = Field(o, "runner", where);
    if (!config.is_string() || config.as_string().empty() || !runner.is_object()) {
      Fail(NP_UNAVAILABLE, where + ": GitHub's answer lacks the runner or its config");
    }
    Minted m{IdOf(runner.as_object(), where), request.runner_name, std::string(config.as_string())};
    if (const json::value* n = runner.as_object().if_contains("name"); n != nullptr && n->is_string()) {
      m.runner_name = std::string(n->as_string());
    }
    return m;
  }
  if (r.status == 409) return {};
  const std::string detail = Detail(r);
  if (r.status == 404) {
    // The group may have been deleted: the caller describes it afresh.
    std::lock_guard lock(mu_);
    for (auto it = groups_.begin(); it != groups_.end();) {
      it = it->second.group.id == request.group_id ? groups_.erase(it) : std::next(it);
    }
    Fail(NP_NOT_FOUND, where + ": the target or runner group " + std::to_string(request.group_id) + " was not found" +
                           detail);
  }
  if (r.status == 403) Fail(NP_INVALID, where + ": the App lacks the permission to register runners" + detail);
  if (r.status == 422) Fail(NP_INVALID, where + ": GitHub refused the request" + detail);
  Fail(NP_UNAVAILABLE, where + ": unexpected answer" + detail);
}

Minted JitGithub::Mint(const JitRequest& request) {
  int status = 0;
  Minted m = Generate(request, &status);
  if (status != 409) return m;
  RunnerFound stale = Find(request.runner_name);
  if (stale.busy) {
    Fail(NP_CONFLICT, Where() + ": runner " + request.runner_name + " is already registered and running a job");
  }
  if (stale.present) {
    api_.Log(NP_LOG_WARN, "github.stale_runner_removed",
             {{"runner_name", request.runner_name}, {"runner_id", std::to_string(stale.id)}});
    Delete(stale.id, request.runner_name);  // found by its exact name just now
  }
  m = Generate(request, &status);
  if (status == 409) {
    Fail(NP_CONFLICT, Where() + ": GitHub still holds a runner named " + request.runner_name + " after removing it");
  }
  return m;
}

RunnerFound JitGithub::Find(const std::string& runner_name) {
  const GithubConfig& c = api_.config();
  const std::string where = Where() + ": listing runners named " + runner_name;
  for (int page = 1; page <= kMaxPages; ++page) {
    HttpReply r = api_.Call("GET", c.ScopePath() + "/actions/runners?name=" + PercentEncode(runner_name) +
                                       "&per_page=" + std::to_string(kPerPage) + "&page=" + std::to_string(page));
    if (r.status == 404 || r.status == 403) Fail(NP_INVALID, where + ":" + Detail(r));
    if (r.status != 200) Fail(NP_UNAVAILABLE, where + " answered HTTP " + std::to_string(r.status));
    json::object o = ParseObject(r, where);
    const json::value& runners = Field(o, "runners", where);
    if (!runners.is_array()) Fail(NP_UNAVAILABLE, where + ": \"runners\" is not an array");
    for (const json::value& v : runners.as_array()) {
      if (!v.is_object()) continue;
      const json::object& ro = v.as_object();
      const json::value* name = ro.if_contains("name");
      if (name == nullptr || !name->is_string() || name->as_string() != runner_name) continue;  // exact only
      const json::value* busy = ro.if_contains("busy");
      return RunnerFound{true, busy != nullptr && busy->is_bool() && busy->as_bool(), IdOf(ro, where)};
    }
    if (runners.as_array().size() < static_cast<size_t>(kPerPage)) break;
  }
  return RunnerFound{};
}

void JitGithub::Remove(int64_t runner_id, const std::string& runner_name) {
  if (runner_id == 0) {
    RunnerFound f = Find(runner_name);
    if (!f.present) return;  // already gone
    return Delete(f.id, runner_name);
  }
  // An id alone never says which runner it is: GitHub must name it
  // `runner_name`, or nothing is removed.
  const std::string where = Where() + ": reading runner " + std::to_string(runner_id);
  HttpReply r = api_.Call("GET", api_.config().ScopePath() + "/actions/runners/" + std::to_string(runner_id));
  if (r.status == 404) return;  // already gone
  if (r.status != 200) Fail(NP_UNAVAILABLE, where + " answered HTTP " + std::to_string(r.status));
  json::object o = ParseObject(r, where);
  const json::value* name = o.if_contains("name");
  const std::string named = name != nullptr && name->is_string() ? std::string(name->as_string()) : std::string();
  if (named != runner_name) {
    Fail(NP_CONFLICT, where + ": it is named \"" + named.substr(0, 100) + "\", not " + runner_name +
                          "; nothing was removed");
  }
  Delete(runner_id, runner_name);
}

void JitGithub::Delete(int64_t runner_id, const std::string& runner_name) {
  const std::string where = Where() + ": removing runner " + std::to_string(runner_id);
  HttpReply r = api_.Call("DELETE", api_.config().ScopePath() + "/actions/runners/" + std::to_string(runner_id));
  if (r.status == 204 || r.status == 404) {
    api_.Log(NP_LOG_INFO, "github.runner_removed", {{"runner_id", std::to_string(runner_id)},
                                                    {"runner_name", runner_name},
                                                    {"already_gone", r.status == 404 ? "true" : "false"}});
    return;
  }
  const std::string detail = Detail(r);
  if (r.status == 422) Fail(NP_CONFLICT, where + ": GitHub will not remove it now, it may be running a job" + detail);
  if (r.status == 403) Fail(NP_INVALID, where + ": the App lacks the permission to remove runners" + detail);
  Fail(NP_UNAVAILABLE, where + ": unexpected answer" + detail);
}

}  // namespace nodeplane::plugins::github
