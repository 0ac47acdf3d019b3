// What keeps a job away from the node (issue 48, review D2). A workflow is
// hostile code; the job a provider starts must never reach the node's key,
// the agent's process or another lease's files and credentials. So each
// lease gets:
//
//  1. A uid of its own, from a range no account uses (--job-uids), with a
//     private group of the same number and no supplementary groups. A
//     shared job user would let one job read a sibling's /proc/<pid>/environ
//     (its JIT config) and signal it; distinct uids cannot.
//  2. A claim on that uid held for the lease's life: an flock on
//     /run/nodeplane-node/job-uids/<uid>, so two agents on one host never
//     hand out the same uid, and a uid still running a process (a crashed
//     agent's leftover) is never handed out.
//  3. A work directory, <work-root>/<lease>, 0700 and owned by the lease's
//     uid, inside a root-owned 0711 work root: created before the job
//     starts, removed after every process of the uid has been killed (so
//     nothing can race the removal with a symlink).
//  4. A clean environment from an allow-list (never the agent's): PATH,
//     HOME, LANG, the variables the operator names (--job-env), the lease's
//     own, and the JIT config as ACTIONS_RUNNER_INPUT_JITCONFIG, which
//     GitHub's runner reads and removes (actions/runner CommandSettings.cs).
//
// The agent refuses to start when a job uid could read its state directory
// (Open). Without root, or with --job-uids none, jobs run as the agent's own
// user: 3 and 4 still hold, 1 and 2 cannot, and the agent says so.
//
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace nodeplane::node {

struct UidRange {
  uid_t first = 0, last = 0;
};

// "FIRST-LAST" or "none" (nullopt).
Result<std::optional<UidRange>> ParseUidRange(const std::string& text);

struct SandboxOptions {
  std::optional<UidRange> uids;         // nullopt: jobs run as the agent
  std::string work_root;                // holds each lease's work directory
  std::vector<std::string> pass_env;    // names copied from the agent's environment
  std::string claims_dir = "/run/nodeplane-node/job-uids";
};

// Who a lease's job runs as and where.
struct JobIdentity {
  std::optional<uid_t> uid;  // nullopt: the agent's own user
  std::string work_dir;
};

class JobSandbox {
 public:
  // Checks the state directory cannot be read by a job uid (it is made 0700
  // when the agent created it) and prepares the work root.
  static Result<std::unique_ptr<JobSandbox>> Open(SandboxOptions options, const std::string& state_dir);
  ~JobSandbox();

  bool isolated() const { return o_.uids.has_value(); }
  // Claims a uid for `lease` (the one it had when `uid` is given: a lease
  // adopted after a restart) and creates its work directory.
  Result<JobIdentity> Enter(const std::string& lease, std::optional<uid_t> uid = std::nullopt);
  // Kills every process of the lease's uid, removes its work directory and
  // frees the uid. Idempotent.
  void Leave(const std::string& lease);
  // Leases whose work directories a previous agent left (their uid is read
  // from the directory's owner); each is left with Leave after Enter(lease, uid).
  std::vector<std::pair<std::string, std::optional<uid_t>>> Leftovers() const;
  // The job's environment: PATH, HOME (its work directory), LANG and
  // LeaseVariables. `jit_config` is SECRET.
  std::vector<std::string> Environment(const JobIdentity& who, const std::string& lease, int64_t request_id,
                                       const std::string& jit_config) const;

 private:
  explicit JobSandbox(SandboxOptions options) : o_(std::move(options)) {}
  // Claims the lowest free uid (or `wanted`) for `lease`, in claims_.
  Result<uid_t> Claim(const std::string& lease, std::optional<uid_t> wanted);
  // At start: no job uid can read the state directory, and one can reach
  // the work root.
  Status CheckReach(const std::string& state_dir);

  SandboxOptions o_;
  std::mutex mu_;
  std::map<std::string, std::pair<uid_t, int>> claims_;  // lease -> (uid, fd holding its flock)
};

// The variables every job gets, whatever runs it: the operator's `pass_env`
// names (from the agent's environment), the lease's own, and the JIT config
// (SECRET, "" for none) as GitHub's runner reads it.
std::vector<std::string> LeaseVariables(const std::vector<std::string>& pass_env, const std::string& lease,
                                        int64_t request_id, const std::string& jit_config);

// Takes `uid`, its private group of the same number and no supplementary
// groups, for good. Async-signal-safe: for a child between fork and exec.
bool BecomeUid(uid_t uid);
// Sends SIGKILL to every process running as `uid` until none is left
// (a forked child takes the uid to do it). Used for a lease's uid only.
void KillAllOf(uid_t uid);
// Whether any process runs as `uid` (its /proc entry is owned by it).
bool AnyProcessOf(uid_t uid);

}  // namespace nodeplane::node
