// nodeplaned: the control plane's host process.
//
// It loads and validates the config, prepares the state directory, serves
// the node wire, and stops gracefully on SIGTERM or SIGINT.
#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/log.h"
#include "config/config_loader.h"
#include "loader/host_services.h"
#include "loader/plugin_check.h"
#include "nodeplaned/daemon.h"
#include "nodeplaned/memory_trim.h"
#include "version.h"

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
  // Help first, wherever it is asked; a flag's value is a value.
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h" || a == "help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (a == "--config" || a == "--state-dir" || a == "--plugin-dir") ++i;
  }
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

  auto daemon = nodeplane::Daemon::Start(cfg, log);
  if (!daemon.ok()) {
    log.Error("host.start_failed", {{"error", daemon.status().message()}});
    return 1;
  }
  int sig = 0;
  // While it waits for a stop signal, the main thread looks every ten
  // seconds whether a storm left memory to hand back (memory_trim.h). With
  // jemalloc, glibc's arenas hold nothing, and jemalloc hands pages back by
  // itself as they stay unused (its decay).
  const timespec period{10, 0};
#if defined(__GLIBC__) && !defined(NODEPLANE_WITH_JEMALLOC)
  nodeplane::TrimPolicy trim;
#endif
  while ((sig = sigtimedwait(&stop_signals, nullptr, &period)) < 0) {
#if defined(__GLIBC__) && !defined(NODEPLANE_WITH_JEMALLOC)
    if (trim.ShouldTrim(mallinfo2().fordblks)) malloc_trim(0);
#endif
  }
  log.Info("host.stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  (*daemon)->Stop();
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
