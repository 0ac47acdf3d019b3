// The JIT source for one GitHub target: runner groups, JIT registrations,
// and the runners they create, over the REST API (github_api.h).
//
//   Describe(group)  the runner group by exact name ("" is the target's
//                    default group), from the paginated group list; cached
//                    for describe_ttl_seconds and forgotten when a mint
//                    finds its group gone. A repository has only its
//                    Default group (id 1).
//   Mint(request)    POST .../actions/runners/generate-jitconfig with the
//                    lease's runner name, the group, the tier's labels and
//                    the work folder. A 409 (the name is taken) means an
//                    earlier attempt for this very lease reached GitHub but
//                    its answer was lost: that runner never received its
//                    config, so it is removed and the mint made once more,
//                    unless it is busy, which is a conflict.
//   Remove(id, name) the runner named `name`: found by exact name through the
//                    paginated list (id 0), or read by id and removed only
//                    if GitHub names it `name` (a conflict otherwise), so an
//                    id can never remove another runner; already gone is
//                    success.
//   Find(name)       the runner by exact name: present, busy, id.
//
// Misconfiguration (an unknown organisation, a missing group, a permission
// the App lacks) is NP_INVALID or NP_NOT_FOUND with a message naming the
// target; outages and rate limits are NP_UNAVAILABLE (github_api.h).
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "github_api.h"

namespace nodeplane::plugins::github {

struct RunnerGroup {
  int64_t id = 0;
  std::string name;
  std::vector<std::string> labels;  // REST runner groups carry none
};

struct JitRequest {
  int64_t group_id = 0;
  std::string runner_name;
  std::vector<std::string> labels;
  std::string work_folder;
};

struct Minted {
  int64_t runner_id = 0;
  std::string runner_name;
  std::string encoded_jit_config;  // SECRET
};

struct RunnerFound {
  bool present = false;
  bool busy = false;
  int64_t id = 0;
};

class JitGithub {
 public:
  JitGithub(const GithubConfig& config, const np_host_v1* host);

  RunnerGroup Describe(const std::string& group);
  Minted Mint(const JitRequest& request);
  void Remove(int64_t runner_id, const std::string& runner_name);
  RunnerFound Find(const std::string& runner_name);

 private:
  RunnerGroup ListGroups(const std::string& group);
  Minted Generate(const JitRequest& request, int* status);
  void Delete(int64_t runner_id, const std::string& runner_name);  // by id, no question asked
  std::string Where() const { return "jit-github: " + api_.config().Target(); }

  GithubApi api_;
  struct Cached {
    RunnerGroup group;
    int64_t until_ns = 0;
  };
  std::mutex mu_;
  std::map<std::string, Cached> groups_;  // by requested name
};

}  // namespace nodeplane::plugins::github
