// N simulated nodes in one process: each holds its own certificate and does
// on the wire what nodeplane-node does: TLS 1.3 with its client
// certificate, register, long-poll, reconcile between polls about once a TTL
// on the poll's connection, execute commands (a launch is bound, advanced to
// busy, answered, held while heartbeating at the node's beats, every TTL/3,
// on a second connection, and released), and after losing the control plane
// reconnect with the node's own backoff and register again when told it is
// unknown. Each node's reconcile and beat fall at a random point of their
// cycles, as in a fleet that has run for a while.
//
// One Asio io_context on one thread (a node's coroutines share its state
// without locks); each node is a coroutine. The observations are
// thread-safe and meant for the benchmark's main thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace nodeplane::bench {

using Clock = std::chrono::steady_clock;

struct FleetOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string ca_pem;                       // the deployment CA the server's certificate chains to
  std::string deployment;
  std::chrono::milliseconds job_duration{0};  // how long a launched job holds its lease
  int64_t vcpu = 4;                           // each node's capacity (8 GiB of memory besides)
};

class SimFleet {
 public:
  explicit SimFleet(FleetOptions options);
  ~SimFleet();

  // Before Start: one node, named by its certificate's CN.
  void AddNode(const std::string& name, const std::string& cert_pem, const std::string& key_pem);
  void Start();
  void Stop();

  size_t size() const;
  int parked() const;             // polls written and not yet answered
  int connected() const;          // TLS connections open (polls and heartbeats)
  int64_t registrations() const;  // successful registrations, all rounds
  int64_t failures() const;       // connects or requests that failed
  int64_t open_failures() const;  // of those, connects and TLS handshakes
  int held() const;               // launched leases still held (heartbeating)

  // Waits until `done()` holds, re-checking whenever a node's state changes
  // (a registration, a poll parked or answered or failed, a lease let go);
  // false if `limit` passed first.
  bool AwaitState(const std::function<bool()>& done, std::chrono::milliseconds limit);

  // A new round of registrations: RegisteredThisRound counts the nodes that
  // registered since this call (each once).
  void BeginRound();
  int RegisteredThisRound() const;

  // When the launch for `request_id` reached its node; waits up to `limit`.
  std::optional<Clock::time_point> AwaitLaunch(int64_t request_id, std::chrono::milliseconds limit);

  struct Conn;
  struct Node;
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nodeplane::bench
