// The node's launch path through each provider, side by side in one run
// (issue 48): from the provider being asked to start a lease's runner to the
// job's first line of output, p50 / p99 over N launches (default 100), one
// at a time. The agent's wire steps before (bind, advance, the JIT mint) are
// the same for both providers and are not in these figures.
//
// process: the sandboxed child (a uid and work directory per lease, as
// root); its first line is in <state>/jobs/<lease>.log when the job writes
// a FIFO the benchmark waits on.
// container: a container from the test image through the Engine API on
// --engine-socket; its first line is read from the engine's followed log.
//
// usage: provider-launch-bench --engine-socket PATH [--launches N]
// (tests/bench/provider-launch-bench.sh starts an engine and runs it).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "node/container_provider.h"
#include "node/engine_client.h"
#include "node/job_sandbox.h"
#include "node/process_provider.h"

namespace node = nodeplane::node;
using Clock = std::chrono::steady_clock;

namespace {

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Launches `n` leases one at a time; `first_line` blocks until the lease's
// first line is out. Returns the milliseconds from Start to that line. Each
// runner is then stopped (which returns once it is gone) before the next.
std::vector<double> Launches(node::Provider& provider, node::LaunchSpec spec, int n,
                             const std::function<void(const std::string&)>& first_line) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    spec.lease = "bench" + std::to_string(getpid()) + "x" + std::to_string(i);
    const auto t0 = Clock::now();
    if (nodeplane::Status s = provider.Start(spec); !s.ok()) {
      std::fprintf(stderr, "provider-launch-bench: %s\n", s.message().c_str());
      std::exit(1);
    }
    first_line(spec.lease);
    ms.push_back(Ms(Clock::now() - t0));
    (void)provider.Stop(spec.lease, std::chrono::milliseconds(0));
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

void Print(const char* name, const std::vector<double>& ms) {
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))]; };
  std::printf("%-10s launches=%zu  start -> first line  p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms\n", name, ms.size(),
              at(0.50), at(0.99), ms.back());
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket;
  int n = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--engine-socket") socket = argv[i + 1];
    if (a == "--launches") n = std::max(1, std::atoi(argv[i + 1]));
  }
  if (socket.empty()) return std::fprintf(stderr, "usage: provider-launch-bench --engine-socket PATH [--launches N]\n"), 2;
  char tmpl[] = "/tmp/np-launch-bench-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  ::chmod(dir.c_str(), 0711);
  const std::string state = dir + "/state";

  node::SandboxOptions so;
  if (::geteuid() == 0) so.uids = node::UidRange{300000, 300999};
  so.work_root = dir + "/work";
  auto sandbox = node::JobSandbox::Open(so, state);
  if (!sandbox.ok()) return std::fprintf(stderr, "provider-launch-bench: %s\n", sandbox.status().message().c_str()), 1;
  node::ProcessProvider process(state, **sandbox);
  (void)process.Recover();
  node::LaunchSpec spec;
  spec.request_id = 1;
  // The job writes a FIFO right after its first line: opening it blocks the
  // benchmark until the line is in the job's log, with no polling.
  const std::string fifo = dir + "/first-line";
  if (::mkfifo(fifo.c_str(), 0666) != 0 || ::chmod(fifo.c_str(), 0666) != 0) {
    return std::fprintf(stderr, "provider-launch-bench: cannot make %s\n", fifo.c_str()), 1;
  }
  spec.tier.command = {"/bin/sh", "-c", "echo first line; echo > " + fifo + "; sleep 60"};
  const auto process_ms = Launches(process, spec, n, [&](const std::string& lease) {
    std::ifstream(fifo).get();  // returns once the job has written it
    if (Read(state + "/jobs/" + lease + ".log").find("first line") == std::string::npos) {
      std::fprintf(stderr, "provider-launch-bench: the job's log lacks its first line\n");
      std::exit(1);
    }
  });

  node::ContainerOptions co;
  co.socket = socket;
  co.node = "bench";
  co.deployment = "bench";
  co.state_dir = state;
  node::ContainerProvider container(co);
  (void)container.Recover();
  spec.tier.image = "localhost/nodeplane-test-job:1";
  spec.tier.network = "none";
  spec.tier.vcpu = 1;
  spec.tier.memory = 256LL << 20;
  spec.tier.command = {"/bin/sh", "-c", "echo first line; sleep 60"};
  const auto container_ms = Launches(container, spec, n, [&](const std::string& lease) {
    node::EngineClient engine(socket);
    std::stop_source done;
    (void)engine.Stream("/containers/np-" + lease + "/logs?follow=1&stdout=1&stderr=1", [&](const std::string& line) {
      if (line.find("first line") != std::string::npos) done.request_stop();
    }, done.get_token());
  });

  Print("process", process_ms);
  Print("container", container_ms);
  std::filesystem::remove_all(dir);
  return 0;
}
