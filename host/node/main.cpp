// nodeplane-node: the reference node.
//
//   nodeplane-node enroll --bootstrap HOST:PORT --ca-fingerprint FP --join-token TOKEN --name NAME --state-dir DIR
//   nodeplane-node run --server HOST:PORT[,HOST:PORT...] --name NAME --state-dir DIR [--tls] [--server-name NAME]
//                      [--deployment NAME] [--vcpu N] [--memory SIZE] [--site SITE]
//
// Exit codes: 0 stopped (after SIGTERM, drained); 1 refused for good (a
// revoked certificate, a denied enrollment, a refused registration); 2 bad
// arguments; 3 superseded by another process under the same name.
#include <signal.h>

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "common/units.h"
#include "config/address.h"
#include "node/enroll.h"
#include "node/node_agent.h"

namespace {

constexpr const char* kUsage =
    "usage: nodeplane-node enroll --bootstrap HOST:PORT --ca-fingerprint FP --join-token TOKEN --name NAME "
    "--state-dir DIR\n"
    "       nodeplane-node run --server HOST:PORT[,HOST:PORT...] --name NAME --state-dir DIR [--tls]\n"
    "                          [--server-name NAME]\n"
    "                          [--deployment NAME] [--vcpu N] [--memory SIZE] [--site SITE]\n";

int Usage(const std::string& why) {
  std::fprintf(stderr, "nodeplane-node: %s\n%s", why.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Asking for help is never an error, wherever it is asked (but a flag's
  // value is a value: --name help names a node).
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h" || a == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a.rfind("--", 0) == 0 && a != "--tls") ++i;
  }
  if (argc < 2) return Usage("no command given");
  const std::string cmd = argv[1];
  std::map<std::string, std::string> flags;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--tls") {
      flags[a] = "1";
    } else if (a.rfind("--", 0) == 0 && i + 1 < argc) {
      flags[a] = argv[++i];
    } else {
      return Usage("unexpected argument \"" + a + "\"");
    }
  }
  auto flag = [&](const char* name) { return flags.count(name) ? flags[name] : std::string(); };
  for (const char* required : {"--name", "--state-dir"}) {
    if (flag(required).empty()) return Usage(std::string(required) + " is required");
  }

  // SIGTERM and SIGINT become a stop request, seen by every thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::stop_source stop;
  std::thread([&signals, stop]() mutable {
    int sig = 0;
    sigwait(&signals, &sig);
    stop.request_stop();
  }).detach();

  nodeplane::Logger log(nodeplane::LogLevel::kInfo, nodeplane::LogFormat::kLogfmt);
  if (cmd == "enroll") {
    auto at = nodeplane::config::ParseListenAddress(flag("--bootstrap"));
    if (!at.ok()) return Usage("--bootstrap: " + at.status().message());
    if (flag("--ca-fingerprint").empty() || flag("--join-token").empty()) {
      return Usage("enroll needs --ca-fingerprint and --join-token");
    }
    nodeplane::node::EnrollOptions o{flag("--name"), at->host, at->port, flag("--ca-fingerprint"),
                                     flag("--join-token"), flag("--state-dir"), &log};
    nodeplane::Status s = nodeplane::node::Enroll(o, stop.get_token());
    if (!s.ok()) {
      log.Error("enroll.failed", {{"error", s.message()}});
      return s.code() == nodeplane::Code::kRefused ? 1 : 3;
    }
    return 0;
  }
  if (cmd != "run") return Usage("unknown command \"" + cmd + "\"");
  nodeplane::node::NodeOptions o;
  // --server HOST:PORT[,HOST:PORT...]: the control plane's replicas.
  const std::string servers = flag("--server");
  for (size_t start = 0; start <= servers.size();) {
    const size_t comma = std::min(servers.find(',', start), servers.size());
    auto at = nodeplane::config::ParseListenAddress(servers.substr(start, comma - start));
    if (!at.ok()) return Usage("--server: " + at.status().message());
    o.servers.push_back({at->host, at->port});
    start = comma + 1;
  }
  o.name = flag("--name");
  o.tls = !flag("--tls").empty();
  o.server_name = flag("--server-name");
  o.state_dir = flag("--state-dir");
  o.deployment = flag("--deployment").empty() ? "local" : flag("--deployment");
  o.site = flag("--site");
  o.log = &log;
  if (!flag("--vcpu").empty()) o.vcpu = std::stoll(flag("--vcpu"));
  if (!flag("--memory").empty()) {
    auto m = nodeplane::ParseByteSize(flag("--memory"));
    if (!m.ok()) return Usage("--memory: " + m.status().message());
    o.memory = static_cast<int64_t>(*m);
  }
  nodeplane::node::NodeAgent agent(o);
  switch (agent.Run(stop.get_token())) {
    case nodeplane::node::Outcome::kStopped: return 0;
    case nodeplane::node::Outcome::kRefused: return 1;
    case nodeplane::node::Outcome::kSuperseded: return 3;
    case nodeplane::node::Outcome::kFailed: return 1;
  }
  return 1;
}
