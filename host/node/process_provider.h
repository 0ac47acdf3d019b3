// The "process" provider: a lease's runner is a child process running the
// tier's command in a process group of its own, inside the lease's sandbox
// (job_sandbox.h: its own uid, work directory and clean environment). It is
// destroyed by signalling the group (SIGTERM, then SIGKILL after a grace),
// then every process left under the lease's uid is killed and its work
// directory removed.
//
// Each child's pid is kept in <state>/jobs/<lease>.pid with its start time
// and the boot it started in, so an agent that starts after another died
// stops what that one left (it cannot supervise children it did not fork),
// and never signals a pid a reboot or the kernel has since given to
// something else (review D20). Output goes to <state>/jobs/<lease>.log.
//
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>

#include "node/job_sandbox.h"
#include "node/provider.h"

namespace nodeplane::node {

class ProcessProvider : public Provider {
 public:
  // `sandbox` outlives the provider.
  ProcessProvider(std::string state_dir, JobSandbox& sandbox);

  Recovered Recover() override;
  Status Start(const LaunchSpec& spec) override;
  Status Stop(const std::string& lease, std::chrono::milliseconds grace) override;
  std::vector<Exit> Reap() override;
  std::vector<std::string> Running() const override;

 private:
  std::string PidFile(const std::string& lease) const;
  // Stops the group a previous agent's pid file names, when it is still that process.
  void StopRecorded(const std::string& pid_file);

  std::string jobs_dir_;
  JobSandbox& sandbox_;
  mutable std::mutex mu_;
  std::map<std::string, pid_t> running_;  // lease -> pid (= process group)
};

}  // namespace nodeplane::node
