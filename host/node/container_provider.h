// The "container" provider: a lease's runner is one container, np-<lease>,
// made through Docker's Engine API (engine_client.h) from the tier's image
// and command, labelled nodeplane.deployment / nodeplane.node /
// nodeplane.lease, with the tier's capacity enforced by the engine: NanoCpus
// = vcpu, Memory = MemorySwap = memory (swap equal to memory, or podman
// never OOM-kills: containers/podman#13145), PidsLimit, and the tier's
// network mode. Nothing of the node is mounted; the JIT config reaches the
// runner only in its environment, over the root-only socket, and the
// container is deleted as soon as its exit is recorded (inspect would show
// it).
//
// Destroy: stop?t=<grace> (SIGTERM, then SIGKILL), with
// RUNNER_MANUALLY_TRAP_SIG=1 so GitHub's run.sh passes SIGTERM on to its
// listener. Exits: the engine's event stream (a thread), with a list by
// label every few seconds as the safety net; the exit code (and an OOM
// kill) is read by inspect, the log appended to <state>/jobs/<lease>.log,
// then the container removed.
//
// After the agent restarts, its containers are found by label and adopted
// (Recover): a container outlives the agent, unlike a child process.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "node/engine_client.h"
#include "node/provider.h"

namespace nodeplane::node {

struct ContainerOptions {
  std::string socket = "/run/podman/podman.sock";  // or /var/run/docker.sock
  std::string node, deployment;
  std::string state_dir;
  std::vector<std::string> pass_env;  // --job-env
};

class ContainerProvider : public Provider {
 public:
  explicit ContainerProvider(ContainerOptions options);
  ~ContainerProvider() override;

  Recovered Recover() override;
  Status Start(const LaunchSpec& spec) override;
  Status Stop(const std::string& lease, std::chrono::milliseconds grace) override;
  std::vector<Exit> Reap() override;
  std::vector<std::string> Running() const override;

 private:
  EngineClient Engine() const;
  std::string Name(const std::string& lease) const { return "np-" + lease; }
  // The labels' filter for GET /containers/json and /events, URL-encoded.
  std::string LabelFilter(const std::string& extra) const;
  // Our containers: lease -> its state ("running", "exited", ...).
  Result<std::map<std::string, std::string>> List() const;
  // Reads the exit (code, detail), keeps the log, deletes the container.
  Exit Finish(const std::string& lease);
  void WatchEvents(std::stop_token stop);

  ContainerOptions o_;
  std::string jobs_dir_;
  mutable std::mutex mu_;
  std::set<std::string> running_;  // leases with a container not yet reaped
  std::set<std::string> died_;     // leases the event stream saw die
  std::chrono::steady_clock::time_point listed_at_{};
  std::string api_version_;        // negotiated by Recover
  std::condition_variable_any wake_;
  std::jthread events_;
};

}  // namespace nodeplane::node
