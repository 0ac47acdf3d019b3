// The reference node's agent: registers with its capacity and what it runs,
// long-polls for commands and executes them with the process provider,
// binds and heartbeats its leases every TTL/3, reports results, renews its
// certificate before it expires, registers again (adopting what it still
// runs) when the control plane forgot it, and on a stop request withdraws
// first, then drains what it holds before returning.
//
// Threads: Run() polls on the calling thread, and between polls tells the
// control plane what it runs about once a lease TTL (on the poll's
// connection, which is never idle long enough to be closed: an idle node
// holds one connection and makes no new ones); a second thread heartbeats,
// notices exited jobs and renews. Each keeps its own HTTP client.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/log.h"
#include "node/provider.h"
#include "protocol/messages.h"
#include "wire/http_client.h"

namespace nodeplane::node {

struct ServerAddress {
  std::string host;
  uint16_t port = 0;
  bool operator==(const ServerAddress&) const = default;
};

struct NodeOptions {
  std::string name;
  // The control plane's replicas, tried in turn: a transport failure moves
  // on to the next, and a standby's answer to the active one it names.
  std::vector<ServerAddress> servers;
  bool tls = false;          // certificate files in state_dir: node.crt, node.key, ca.crt
  std::string server_name;   // the name the server's certificate must carry; "" : server_host
  std::string state_dir;
  std::string deployment;    // plain wire only; over TLS the certificate says it
  std::string provider = "process";
  std::string site;
  int64_t vcpu = 1;
  int64_t memory = 1LL << 30;
  // Finished jobs' logs (<state>/jobs/*.log) older than this are removed,
  // at start and hourly.
  std::chrono::hours keep_job_logs{24 * 7};
  Logger* log = nullptr;
};

// Why Run() returned; main() turns it into an exit code.
enum class Outcome { kStopped, kSuperseded, kRefused, kFailed };

class NodeAgent {
 public:
  // `provider` runs the leases' runners (its kind is options.provider).
  NodeAgent(NodeOptions options, std::unique_ptr<Provider> provider);
  // Until `stop` is requested and the drain is done, or the control plane
  // refuses this node for good.
  Outcome Run(std::stop_token stop);

 private:
  struct Job {
    int64_t epoch = 0;
    int64_t request_id = 0;
    // Set when the control plane destroys the job: its outcome is the
    // completion's, never the exit code of a job stopped on purpose.
    std::optional<bool> verdict;
    // Between SIGTERM and SIGKILL when it is stopped: the tier's stop_grace.
    std::chrono::milliseconds grace = kDefaultGrace;
  };
  static constexpr std::chrono::milliseconds kDefaultGrace{10'000};
  // Stops the lease's runner with its tier's grace.
  void StopRunner(const std::string& lease);

  wire::ClientOptions ClientFor() const;
  std::string StateFile(const char* name) const;  // a file of the state directory, "" when unreadable
  Result<wire::ClientResponse> Call(wire::HttpClient& c, const std::string& method, const std::string& path,
                                    const std::string& body = "");
  // The replica this agent talks to now, and the move after `from` failed.
  ServerAddress Server() const;
  void FailOver(const ServerAddress& from, const std::string& active_hint);
  Status Register(wire::HttpClient& c);
  // Takes back the leases of runners this agent did not start (a provider's
  // adopted ones, after a restart): their epochs, from the ledger.
  void HoldAdopted(wire::HttpClient& c);
  void Execute(wire::HttpClient& c, const protocol::Command& cmd);
  protocol::CommandResult Launch(wire::HttpClient& c, const protocol::Command& cmd);
  void Reconcile(wire::HttpClient& c);
  // Stops what runs here that the ledger no longer counts as launched here
  // (R44); false when the ledger could not say.
  bool Sweep(wire::HttpClient& c);
  void EndLease(wire::HttpClient& c, const std::string& lease, int64_t epoch, bool ok, const std::string& reason);
  void Maintain(std::stop_token stop, std::stop_token agent_stop);
  // Whether the lease's runner left GitHub (the ledger marked it
  // deregistered), asked by heartbeating it.
  bool Deregistered(wire::HttpClient& c, const std::string& lease, int64_t epoch);
  void RenewIfDue(wire::HttpClient& c);
  // Removes finished jobs' logs older than keep_job_logs.
  void PruneJobLogs();
  void ReloadTlsIfRenewed(wire::HttpClient& c, uint64_t& seen);
  std::string Path(const std::string& rest) const { return "/v1/nodes/" + o_.name + rest; }

  NodeOptions o_;
  Logger& log_;
  const std::string incarnation_;
  std::unique_ptr<Provider> provider_;
  std::mutex mu_;
  std::map<std::string, Job> jobs_;  // lease -> what the node holds
  // Leases to end whose release has not reached the ledger (a job that
  // exited, or a launch that started nothing, while the plane was away):
  // lease -> (its outcome was a success, the reason otherwise). Maintain
  // asks again until the ledger answers, so no lease is held for compute
  // that is gone.
  std::map<std::string, std::pair<bool, std::string>> unreleased_;
  mutable std::mutex servers_mu_;
  size_t server_ = 0;  // index into o_.servers, under servers_mu_
  std::atomic<int64_t> ttl_seconds_{90};
  std::atomic<int64_t> poll_seconds_{0};  // the plane's poll window, once registered
  std::atomic<bool> registered_{false};
  std::atomic<bool> withdrawn_{false};
  std::atomic<bool> superseded_{false};
  std::atomic<uint64_t> tls_generation_{0};  // bumped by a renewal
};

}  // namespace nodeplane::node
