// nodeplaned: the control plane's host process.
//
// It loads and validates the config, prepares the state directory, serves
// the node wire, and stops gracefully on SIGTERM or SIGINT.
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/log.h"
#include "config/address.h"
#include "config/config_loader.h"
#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_check.h"
#include "loader/plugin_library.h"
#include "nodeplaned/catalog.h"
#include "nodeplaned/plane_config.h"
#include "nodeplaned/reaper.h"
#include "nodeplaned/tls_setup.h"
#include "version.h"
#include "wire/bootstrap_wire.h"
#include "wire/http_server.h"
#include "wire/node_wire.h"

namespace {

using nodeplane::Logger;
using nodeplane::Status;

constexpr const char* kUsage =
    "usage: nodeplaned --config FILE [--state-dir DIR] [--plugin-dir DIR]\n"
    "       nodeplaned --check-config --config FILE [--plugin-dir DIR]\n"
    "       nodeplaned --version\n"
    "\n"
    "  --config FILE      the deployment's TOML config\n"
    "  --check-config     validate the config and exit (0 when valid)\n"
    "  --state-dir DIR    use DIR instead of the config's state_dir\n"
    "  --plugin-dir DIR   look plugins up in DIR instead of the config's plugin_dir\n"
    "  --version          print the version and the plugin ABI range offered\n";

struct Args {
  std::string config;
  std::string state_dir;
  std::string plugin_dir;
  bool check = false;
  bool version = false;
};

bool ParseArgs(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "nodeplaned: %s needs a value\n", argv[i]);
        return false;
      }
      out = argv[++i];
      return true;
    };
    if (a == "--config") {
      if (!value(args.config)) return false;
    } else if (a == "--state-dir") {
      if (!value(args.state_dir)) return false;
    } else if (a == "--plugin-dir") {
      if (!value(args.plugin_dir)) return false;
    } else if (a == "--check-config") {
      args.check = true;
    } else if (a == "--version") {
      args.version = true;
    } else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "nodeplaned: unknown argument \"%s\"\n%s", argv[i], kUsage);
      return false;
    }
  }
  if (!args.version && args.config.empty()) {
    std::fprintf(stderr, "nodeplaned: --config FILE is required\n%s", kUsage);
    return false;
  }
  return true;
}

Status PrepareStateDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Unavailable("cannot create state directory " + dir + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) {
    return Status::Unavailable("cannot set mode 0700 on state directory " + dir + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// Validates every plugin instance's config through its own plugin.
int CheckPlugins(const nodeplane::config::Config& cfg, Logger& log) {
  nodeplane::loader::HostServices host(log, cfg.state_dir);
  int problems = 0;
  for (const auto& p : cfg.plugins) {
    Status s = nodeplane::loader::CheckPluginInstance(p, cfg.plugin_dir, host.c());
    if (!s.ok()) {
      std::fprintf(stderr, "%s:%u:%u: plugins.%s: %s\n", cfg.file.c_str(), p.where.line, p.where.column,
                   p.name.c_str(), s.message().c_str());
      ++problems;
    }
  }
  return problems;
}

int Serve(const nodeplane::config::Config& cfg, Logger& log) {
  // Block the stop signals before any thread starts, so every thread inherits
  // the mask and only the sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  if (Status s = PrepareStateDir(cfg.state_dir); !s.ok()) {
    log.Error("host.state_dir_failed", {{"error", s.message()}});
    return 1;
  }

  nodeplane::loader::HostServices host(log, cfg.state_dir);
  const nodeplane::config::PluginInstance& ledger_cfg = cfg.LedgerPlugin();
  auto library = nodeplane::loader::PluginLibrary::Open(ledger_cfg.library, cfg.plugin_dir, host.c());
  if (!library.ok()) {
    log.Error("ledger.load_failed", {{"instance", ledger_cfg.name}, {"error", library.status().message()}});
    return 1;
  }
  auto ledger = nodeplane::loader::LedgerAdapter::Create(*library, ledger_cfg.name, ledger_cfg.config_json,
                                                          host.c(), false);
  if (!ledger.ok()) {
    log.Error("ledger.open_failed", {{"instance", ledger_cfg.name}, {"error", ledger.status().message()}});
    return 1;
  }
  if (Status s = (*ledger)->SetCatalog(nodeplane::CatalogFromConfig(cfg)); !s.ok()) {
    log.Error("ledger.catalog_refused", {{"error", s.message()}});
    return 1;
  }
  // A plane that has just started trusts no node until it registers again.
  if (Status s = (*ledger)->ForgetEveryNode(); !s.ok()) {
    log.Error("ledger.forget_nodes_failed", {{"error", s.message()}});
    return 1;
  }
  log.Info("ledger.opened", {{"instance", ledger_cfg.name}, {"plugin", (*library)->name()},
                             {"plugin_version", (*library)->version()}, {"path", (*library)->path()}});
  nodeplane::plane::PlaneOptions plane_options = nodeplane::PlaneOptionsFromConfig(cfg);
  plane_options.registrar = ledger->get();
  plane_options.leases = ledger->get();
  plane_options.barrier = ledger->get();
  plane_options.log = &log;
  nodeplane::plane::Plane plane(std::move(plane_options));
  std::jthread watch([&plane](std::stop_token stop) { plane.Watch(stop); });
  std::jthread barrier([&plane](std::stop_token stop) { plane.BarrierLoop(stop); });
  nodeplane::Reaper reaper([&ledger] { return (*ledger)->Reap(); }, plane.runner(), log, cfg.leases.reap_interval);

  std::optional<nodeplane::WireTls> tls;
  if (cfg.wire.tls) {
    auto prepared = nodeplane::PrepareWireTls(cfg, host.c()->wall_clock_ns(host.c()->ctx));
    if (!prepared.ok()) {
      log.Error("wire.tls_failed", {{"error", prepared.status().message()}});
      return 1;
    }
    tls = std::move(*prepared);
  }
  auto listen = nodeplane::config::ParseListenAddress(cfg.wire.listen);
  nodeplane::wire::NodeWire routes(cfg.deployment, &plane, ledger->get(), log);
  nodeplane::wire::ListenerOptions opts;
  opts.name = "wire";
  opts.host = listen->host;
  opts.port = listen->port;
  opts.max_connections = cfg.wire.max_connections;
  opts.header_timeout = cfg.wire.header_timeout;
  if (tls) opts.tls = tls->tls;
  nodeplane::wire::HttpServer wire(opts, routes, log);
  if (Status s = wire.Start(); !s.ok()) {
    log.Error("wire.listen_failed", {{"error", s.message()}});
    return 1;
  }
  // Machines without a certificate enroll on a listener of their own, with
  // its own connection budget (R04); validation guarantees TLS is configured.
  std::unique_ptr<nodeplane::wire::BootstrapWire> bootstrap_routes;
  std::unique_ptr<nodeplane::wire::HttpServer> bootstrap;
  if (cfg.bootstrap) {
    auto at = nodeplane::config::ParseListenAddress(cfg.bootstrap->listen);
    bootstrap_routes = std::make_unique<nodeplane::wire::BootstrapWire>(tls->authority, **ledger, log,
                                                                        cfg.bootstrap->max_enrollments_in_flight);
    nodeplane::wire::ListenerOptions b;
    b.name = "bootstrap";
    b.host = at->host;
    b.port = at->port;
    b.max_connections = cfg.bootstrap->max_connections;
    b.header_timeout = cfg.wire.header_timeout;
    b.body_limit = nodeplane::wire::BootstrapWire::kEnrollBodyLimit;
    b.tls = tls->tls;
    b.tls->require_client_cert = false;  // strangers are who this listener is for
    bootstrap = std::make_unique<nodeplane::wire::HttpServer>(b, *bootstrap_routes, log);
    if (Status s = bootstrap->Start(); !s.ok()) {
      log.Error("bootstrap.listen_failed", {{"error", s.message()}});
      return 1;
    }
    log.Info("bootstrap.listening", {{"address", at->host + ":" + std::to_string(bootstrap->port())},
                                     {"ca_fingerprint", tls->authority.fingerprint()}});
  }
  log.Info("host.started", {{"deployment", cfg.deployment},
                            {"version", NODEPLANE_VERSION},
                            {"state_dir", cfg.state_dir},
                            {"wire", listen->host + ":" + std::to_string(wire.port())},
                            {"tls", cfg.wire.tls.has_value()}});
  log.Info("host.healthy", {{"url", std::string(cfg.wire.tls ? "https://" : "http://") + listen->host + ":" +
                                        std::to_string(wire.port()) + "/healthz"}});

  int sig = 0;
  sigwait(&stop_signals, &sig);
  log.Info("host.stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  if (bootstrap) bootstrap->Stop();
  wire.Stop();
  log.Info("host.stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, args)) return 2;
  if (args.version) {
    std::printf("nodeplaned %s\nplugin ABI %d..%d\nplugin directory %s\n", NODEPLANE_VERSION,
                NODEPLANE_ABI_MIN, NODEPLANE_ABI_MAX, NODEPLANE_PLUGIN_DIR);
    return 0;
  }

  nodeplane::config::LoadResult loaded = nodeplane::config::LoadConfigFile(args.config);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) std::fprintf(stderr, "%s\n", e.ToString().c_str());
    std::fprintf(stderr, "nodeplaned: %zu problem%s in %s\n", loaded.errors.size(),
                 loaded.errors.size() == 1 ? "" : "s", args.config.c_str());
    return 1;
  }
  nodeplane::config::Config cfg = std::move(*loaded.config);
  if (!args.state_dir.empty()) cfg.state_dir = std::filesystem::absolute(args.state_dir).string();
  if (!args.plugin_dir.empty()) cfg.plugin_dir = std::filesystem::absolute(args.plugin_dir).string();
  if (cfg.plugin_dir.empty()) cfg.plugin_dir = NODEPLANE_PLUGIN_DIR;

  if (args.check) {
    Logger quiet(nodeplane::LogLevel::kError, cfg.log_format);
    if (int problems = CheckPlugins(cfg, quiet); problems > 0) {
      std::fprintf(stderr, "nodeplaned: %d plugin problem%s in %s\n", problems, problems == 1 ? "" : "s",
                   args.config.c_str());
      return 1;
    }
    std::printf("%s: ok (deployment \"%s\", %zu tier%s, %zu plugin instance%s)\n", args.config.c_str(),
                cfg.deployment.c_str(), cfg.tiers.size(), cfg.tiers.size() == 1 ? "" : "s",
                cfg.plugins.size(), cfg.plugins.size() == 1 ? "" : "s");
    return 0;
  }

  Logger log(cfg.log_level, cfg.log_format);
  return Serve(cfg, log);
}
