// nodeplane-node: the reference node.
//
//   nodeplane-node enroll --bootstrap HOST:PORT --ca-fingerprint FP --join-token-file FILE --name NAME --state-dir DIR
//   nodeplane-node run --server HOST:PORT[,HOST:PORT...] --name NAME --state-dir DIR [--tls] [--server-name NAME]
//                      [--deployment NAME] [--vcpu N] [--memory SIZE] [--site SITE]
//                      [--job-uids FIRST-LAST|none] [--work-root DIR] [--job-env NAME[,NAME...]]
//                      [--provider process|container] [--engine-socket PATH] [--keep-job-logs DAYS]
//
// --provider container runs each job in a container through Docker's Engine
// API on --engine-socket (default /run/podman/podman.sock; dockerd's is
// /var/run/docker.sock). The process provider's jobs run sandboxed (node/job_sandbox.h): as root, each lease under a uid
// of its own from --job-uids (default 300000-300999), in <work-root>/<lease>
// (default work root: the state directory's path + "-work"), with a clean
// environment plus the --job-env variables.
//
// Exit codes: 0 stopped (after SIGTERM, drained); 1 refused for good (a
// revoked certificate, a denied enrollment, a refused registration); 2 bad
// arguments; 3 superseded by another process under the same name.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/units.h"
#include "config/address.h"
#include "node/enroll.h"
#include "node/container_provider.h"
#include "node/job_sandbox.h"
#include "common/file_text.h"
#include "node/node_agent.h"
#include "node/process_provider.h"

namespace {

constexpr const char* kUsage =
    "usage: nodeplane-node enroll --bootstrap HOST:PORT --ca-fingerprint FP --join-token-file FILE --name NAME "
    "--state-dir DIR\n"
    "       nodeplane-node run --server HOST:PORT[,HOST:PORT...] --name NAME --state-dir DIR [--tls]\n"
    "                          [--server-name NAME]\n"
    "                          [--deployment NAME] [--vcpu N] [--memory SIZE] [--site SITE]\n"
    "                          [--job-uids FIRST-LAST|none] [--work-root DIR] [--job-env NAME[,NAME...]]\n"
    "                          [--provider process|container] [--engine-socket PATH] [--keep-job-logs DAYS]\n";

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

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
    if (flag("--ca-fingerprint").empty() || (flag("--join-token-file").empty() == flag("--join-token").empty())) {
      return Usage("enroll needs --ca-fingerprint and one of --join-token-file or --join-token");
    }
    // The token is a secret: from a file, it never shows in the process
    // list (/proc/PID/cmdline is world-readable) or in a shell's history.
    std::string token = flag("--join-token");
    if (!token.empty()) {
      log.Warn("enroll.token_on_command_line",
               {{"why", "any user of this machine can read a command line; use --join-token-file"}});
    } else {
      auto read = nodeplane::ReadTextFile(flag("--join-token-file"));
      if (!read.ok()) return Usage("--join-token-file: " + read.status().message());
      token = *read;
      while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
      if (token.empty()) return Usage("--join-token-file: " + flag("--join-token-file") + " is empty");
    }
    nodeplane::node::EnrollOptions o{flag("--name"), at->host, at->port, flag("--ca-fingerprint"),
                                     token, flag("--state-dir"), &log};
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
  for (const std::string& server : SplitCommas(flag("--server"))) {
    auto at = nodeplane::config::ParseListenAddress(server);
    if (!at.ok()) return Usage("--server: " + at.status().message());
    o.servers.push_back({at->host, at->port});
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
  if (!flag("--keep-job-logs").empty()) {
    const int days = std::atoi(flag("--keep-job-logs").c_str());
    if (days < 1) return Usage("--keep-job-logs: expected a whole number of days, at least 1");
    o.keep_job_logs = std::chrono::hours(24 * days);
  }
  o.provider = flag("--provider").empty() ? "process" : flag("--provider");
  std::vector<std::string> pass_env;
  if (!flag("--job-env").empty()) pass_env = SplitCommas(flag("--job-env"));
  std::unique_ptr<nodeplane::node::JobSandbox> sandbox;  // outlives the agent's provider
  std::unique_ptr<nodeplane::node::Provider> provider;
  if (o.provider == "container") {
    nodeplane::node::ContainerOptions c;
    if (!flag("--engine-socket").empty()) c.socket = flag("--engine-socket");
    c.node = o.name;
    c.deployment = o.deployment;
    c.state_dir = o.state_dir;
    c.pass_env = pass_env;
    provider = std::make_unique<nodeplane::node::ContainerProvider>(c);
  } else if (o.provider == "process") {
    nodeplane::node::SandboxOptions sandbox_options;
    const std::string uids =
        flag("--job-uids").empty() ? (::geteuid() == 0 ? "300000-300999" : "none") : flag("--job-uids");
    auto range = nodeplane::node::ParseUidRange(uids);
    if (!range.ok()) return Usage(range.status().message());
    sandbox_options.uids = *range;
    sandbox_options.work_root = flag("--work-root").empty() ? o.state_dir + "-work" : flag("--work-root");
    sandbox_options.pass_env = pass_env;
    auto opened = nodeplane::node::JobSandbox::Open(sandbox_options, o.state_dir);
    if (!opened.ok()) {
      log.Error("node.sandbox_refused", {{"error", opened.status().message()}});
      return 2;
    }
    sandbox = std::move(*opened);
    if (!sandbox->isolated()) {
      log.Warn("node.jobs_not_isolated", {{"why", "jobs run as this agent's user (--job-uids none, or not root): "
                                                  "a job can read the node's key and its siblings' environments"}});
    }
    provider = std::make_unique<nodeplane::node::ProcessProvider>(o.state_dir, *sandbox);
  } else {
    return Usage("--provider \"" + o.provider + "\": expected process or container");
  }
  nodeplane::node::NodeAgent agent(o, std::move(provider));
  switch (agent.Run(stop.get_token())) {
    case nodeplane::node::Outcome::kStopped: return 0;
    case nodeplane::node::Outcome::kRefused: return 1;
    case nodeplane::node::Outcome::kSuperseded: return 3;
    case nodeplane::node::Outcome::kFailed: return 1;
  }
  return 1;
}
