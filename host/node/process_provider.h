// The "process" provider: a lease's compute is a child process running the
// tier's command in a process group of its own, with the lease (and, when
// the tier has a target, the JIT runner config) in its environment. It is
// destroyed by signalling the group: SIGTERM, then SIGKILL after a grace.
//
// Each child's pid is kept in <state>/jobs/<lease>.pid, so a node process
// that starts after another died can find and stop what that one left
// running (it cannot supervise children it did not fork). Output goes to
// <state>/jobs/<lease>.log.
//
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace nodeplane::node {

struct Exit {
  std::string lease;
  int code = 0;  // exit status, or 128 + signal
};

class ProcessProvider {
 public:
  explicit ProcessProvider(std::string state_dir);

  // Stops whatever a previous node process left running; returns the leases.
  std::vector<std::string> StopLeftovers();
  // Starts `argv` for `lease`. `jit_config` (SECRET) goes only into the
  // child's environment, as NODEPLANE_JIT_CONFIG.
  Status Start(const std::string& lease, const std::vector<std::string>& argv, int64_t request_id,
               const std::string& jit_config);
  // Stops the lease's process group; Ok when nothing runs for it.
  Status Stop(const std::string& lease, std::chrono::milliseconds grace = std::chrono::seconds(10));
  // Children that have exited since the last call.
  std::vector<Exit> Reap();
  std::vector<std::string> Running() const;

 private:
  std::string PidFile(const std::string& lease) const;

  std::string jobs_dir_;
  mutable std::mutex mu_;
  std::map<std::string, pid_t> running_;  // lease -> pid (= process group)
};

}  // namespace nodeplane::node
