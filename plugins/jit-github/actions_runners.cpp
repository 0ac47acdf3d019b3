// ActionsService::ListRunners: the runners of a scale set's runner group, as
// GitHub's REST API lists them, for the host's ghost check (np_jobs_v1.h,
// list_runners). GitHub's own scale-set clients never list runners (they
// look one up by name or id on the Actions service); the REST routes are
// GitHub's documented ones:
//   GET /orgs/{org}/actions/runner-groups/{id}/runners
//   GET /enterprises/{enterprise}/actions/runner-groups/{id}/runners
//   GET /repos/{owner}/{repo}/actions/runners  (a repository has no groups)
// each answering {"total_count": N, "runners": [{"id", "name", "status":
// "online"|"offline", "busy", ...}]}, 100 per page at most.
#include "actions_service.h"
#include "github_json.h"
#include "plugin_error.h"

namespace nodeplane::plugins::github {
namespace json = boost::json;
std::vector<ListedRunner> ActionsService::ListRunners(int64_t runner_group_id) {
  const GithubConfig& c = api_.config();
  const std::string path = c.scope == Scope::kRepo ? c.ScopePath() + "/actions/runners"
                                                   : c.ScopePath() + "/actions/runner-groups/" +
                                                         std::to_string(runner_group_id) + "/runners";
  const std::string what = "listing the runners of runner group " + std::to_string(runner_group_id);
  std::vector<ListedRunner> out;
  for (int page = 1; page <= kMaxPages; ++page) {
    HttpReply r = api_.Call("GET", path + "?per_page=" + std::to_string(kPerPage) + "&page=" + std::to_string(page));
    if (r.status == 403 || r.status == 404) Refused(what + " was refused (the App needs Self-hosted runners: read)", r);
    if (r.status != 200) Fail(NP_UNAVAILABLE, Where() + ": " + what + " answered HTTP " + std::to_string(r.status));
    const json::value o = gjson::Parse(r.body);
    const json::array* runners = o.is_object() ? gjson::Array(o.as_object(), "runners") : nullptr;
    if (runners == nullptr) Fail(NP_UNAVAILABLE, Where() + ": " + what + " answered no runner list");
    for (const json::value& v : *runners) {
      if (!v.is_object()) continue;
      const json::object& ro = v.as_object();
      const json::value* busy = gjson::Member(ro, "busy");
      out.push_back(ListedRunner{gjson::Int(ro, "id"), gjson::Str(ro, "name"), gjson::Str(ro, "status") == "online",
                                 busy != nullptr && busy->is_bool() && busy->as_bool()});
    }
    if (runners->size() < static_cast<size_t>(kPerPage)) return out;
  }
  Fail(NP_UNAVAILABLE, Where() + ": " + what + " holds more than " + std::to_string(kPerPage * kMaxPages) + " runners");
}

}  // namespace nodeplane::plugins::github
