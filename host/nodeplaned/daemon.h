// The control plane's process, assembled: the plugins, the ledger's
// catalogue, the Plane with its watch and barrier threads, the reaper, the
// node wire, the bootstrap listener when configured, and the admin socket.
//
// Start() brings everything up in dependency order and Stop() (or the
// destructor) takes it down in reverse; main() only parses arguments and
// waits for a signal, so tests run the same assembly in process.
#pragma once

#include <memory>
#include <optional>
#include <thread>

#include "admin/admin_api.h"
#include "admin/admin_socket.h"
#include "common/log.h"
#include "config/config.h"
#include "loader/host_services.h"
#include "loader/plugin_set.h"
#include "nodeplaned/reaper.h"
#include "nodeplaned/tls_setup.h"
#include "plane/plane.h"
#include "wire/bootstrap_wire.h"
#include "wire/http_server.h"
#include "wire/node_wire.h"

namespace nodeplane {

class Daemon {
 public:
  // `log` is borrowed and must outlive the Daemon. An error says what could
  // not start and why; nothing is left running.
  static Result<std::unique_ptr<Daemon>> Start(const config::Config& cfg, Logger& log);
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
  // Null without [wire.tls].
  const pki::Authority* authority() const { return tls_ ? &tls_->authority : nullptr; }
  uint16_t wire_port() const { return wire_->port(); }
  uint16_t bootstrap_port() const { return bootstrap_ ? bootstrap_->port() : 0; }
  // The Prometheus text the admin API's "metrics" command answers.
  std::string Metrics();

 private:
  Daemon(config::Config cfg, Logger& log);
  Status Open();

  config::Config cfg_;
  Logger& log_;
  loader::HostServices host_;
  loader::PluginSet plugins_;
  std::optional<WireTls> tls_;
  std::unique_ptr<plane::Plane> plane_;
  std::jthread watch_, barrier_;
  std::unique_ptr<Reaper> reaper_;
  std::unique_ptr<wire::NodeWire> routes_;
  std::unique_ptr<wire::HttpServer> wire_;
  std::unique_ptr<wire::BootstrapWire> bootstrap_routes_;
  std::unique_ptr<wire::HttpServer> bootstrap_;
  std::unique_ptr<admin::AdminApi> admin_api_;
  std::unique_ptr<admin::AdminSocket> admin_;
};

}  // namespace nodeplane
