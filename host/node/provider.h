// How the reference node runs a lease's compute: a provider starts one
// runner per lease, stops it, reports its exit, and says what it runs. The
// agent (node_agent.h) owns the lease's protocol; a provider knows nothing of
// the wire. Two providers: "process" (process_provider.h) and "container"
// (container_provider.h).
//
// Every provider keeps a job from the node (job_sandbox.h): never the
// agent's environment, user, files or credentials.
//
// Implementations are thread-safe: the agent calls Start/Stop from its poll
// thread and Reap/Running from its maintenance thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/messages.h"

namespace nodeplane::node {

struct LaunchSpec {
  std::string lease;
  int64_t request_id = 0;
  protocol::TierShape tier;
  std::string jit_config;  // SECRET: "" when the tier has no target
};

struct Exit {
  std::string lease;
  int code = 0;        // exit status, or 128 + signal
  std::string detail;  // why, in words, when the provider knows more than the code
};

// What a previous agent process left behind, found at start.
struct Recovered {
  std::vector<std::string> stopped;  // could not be supervised, so stopped (their leases end)
  std::vector<std::string> adopted;  // still running and supervised again (their leases go on)
  // Unavailable when what runs could not be read (an engine that is down):
  // the agent asks again, and never registers an inventory it does not know.
  Status status;
};

class Provider {
 public:
  virtual ~Provider() = default;
  // Called before anything else, again until its status is Ok.
  virtual Recovered Recover() = 0;
  // Starts the lease's runner; Ok when it already runs (a redelivered
  // launch). Invalid: it cannot start as asked (nothing started; the tier's
  // fault, named). Unavailable: the machinery is down; nothing started.
  virtual Status Start(const LaunchSpec& spec) = 0;
  // Stops the lease's runner: SIGTERM, then SIGKILL after `grace`; Ok when
  // nothing runs for it.
  virtual Status Stop(const std::string& lease, std::chrono::milliseconds grace) = 0;
  // Runners that have exited since the last call (each reported once).
  virtual std::vector<Exit> Reap() = 0;
  virtual std::vector<std::string> Running() const = 0;
};

}  // namespace nodeplane::node
