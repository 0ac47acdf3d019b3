// The control plane's process, assembled: the plugins, the ledger's
// catalogue, the Plane with its watch and barrier threads, the reaper, the
// node wire, the bootstrap listener when configured, and the admin socket.
//
// Start() brings everything up in dependency order and Stop() (or the
// destructor) takes it down in reverse; main() only parses arguments and
// waits for a signal, so tests run the same assembly in process.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "admin/admin_api.h"
#include "admin/admin_socket.h"
#include "common/log.h"
#include "config/config.h"
#include "jobs/job_intake.h"
#include "common/lease_events.h"
#include "loader/host_services.h"
#include "loader/plugin_set.h"
#include "observe/history.h"
#include "observe/observe_handler.h"
#include "nodeplaned/leadership_loop.h"
#include "nodeplaned/reaper.h"
#include "nodeplaned/tls_setup.h"
#include "plane/plane.h"
#include "wire/bootstrap_wire.h"
#include "wire/http_server.h"
#include "wire/node_wire.h"
#include "wire/standby_wire.h"

namespace nodeplane {

class Daemon {
 public:
  // What a replica of [ha] does when it loses the leadership
  // (leadership_loop.h H3): the process exits with kExitDemoted.
  using OnDemoted = std::function<void(const std::string& why)>;
  static constexpr int kExitDemoted = 75;  // EX_TEMPFAIL: the supervisor starts it again

  // `log` is borrowed and must outlive the Daemon. An error says what could
  // not start and why; nothing is left running. `on_demoted` replaces the
  // exit (tests).
  static Result<std::unique_ptr<Daemon>> Start(const config::Config& cfg, Logger& log, OnDemoted on_demoted = {});
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Ends every wait on a node, closes the listeners, then joins the threads;
  // bounded by the ledger calls in flight, never by a command timeout.
  // Idempotent.
  void Stop();

  const config::Config& config() const { return cfg_; }
  plane::Plane& plane() { return *plane_; }
  ports::Ledger& ledger() { return *plugins_.ledger; }
  const loader::PluginSet& plugins() const { return plugins_; }
  // False on a standby replica, until it takes over.
  bool active() const { return admin_ready_.load() != nullptr; }
  // Null without [wire.tls].
  const pki::Authority* authority() const { return tls_ ? &tls_->authority : nullptr; }
  uint16_t wire_port() const { return wire_->port(); }
  uint16_t bootstrap_port() const { return bootstrap_ ? bootstrap_->port() : 0; }
  // 0 without [metrics] listen.
  uint16_t metrics_port() const { return metrics_ ? metrics_->port() : 0; }
  // The Prometheus text the metrics listener and the admin API's "metrics"
  // command answer.
  std::string Metrics();
  // The dashboard's JSON: the fleet, open leases, pending enrollments and
  // the last day's jobs (observe_handler.h).
  std::string Overview();

 private:
  Daemon(config::Config cfg, Logger& log, OnDemoted on_demoted);
  Status Open();
  Status Activate(std::optional<wire::ActiveReplica> leading);
  Status StartWire();
  Status StartAdmin();
  Status OpenMetrics();
  Result<wire::TlsOptions> MetricsTls() const;
  Result<observe::Access> MetricsAccess() const;
  // Records one sample of the fleet for the dashboard's last hour.
  void SampleHistory(Histogram::Snapshot& dispatch_before);

  config::Config cfg_;
  Logger& log_;
  loader::HostServices host_;
  loader::PluginSet plugins_;
  std::optional<WireTls> tls_;
  LeaseEvents lease_events_;
  observe::History history_;  // an hour of samples, every metrics.sample_interval
  std::unique_ptr<plane::Plane> plane_;
  std::jthread watch_, barrier_, sampler_;
  std::unique_ptr<Reaper> reaper_;
  std::unique_ptr<jobs::JobIntake> intake_;  // null: no tier takes jobs from a scale set
  std::unique_ptr<wire::NodeWire> routes_;
  std::unique_ptr<wire::StandbyWire> standby_routes_;  // [ha] only
  std::unique_ptr<wire::HandlerSwitch> wire_front_;    // the standby's routes, then routes_
  std::unique_ptr<wire::HttpServer> wire_;
  std::unique_ptr<wire::BootstrapWire> bootstrap_routes_;
  std::unique_ptr<wire::HttpServer> bootstrap_;
  std::unique_ptr<observe::ObserveHandler> metrics_routes_;
  std::unique_ptr<wire::HttpServer> metrics_;
  std::unique_ptr<admin::AdminApi> admin_api_;
  std::atomic<admin::AdminApi*> admin_ready_{nullptr};  // admin_api_ once it serves
  std::unique_ptr<admin::AdminSocket> admin_;
  OnDemoted on_demoted_;
  std::unique_ptr<LeadershipLoop> leadership_;  // [ha] only
  std::jthread activator_;                      // a takeover in progress
};

}  // namespace nodeplane
