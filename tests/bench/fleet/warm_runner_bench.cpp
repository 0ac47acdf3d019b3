// warm-runner-bench: how long a GitHub job waits for a runner when the tier
// keeps runners waiting (min_idle) against when it launches one per job, in
// one run, side by side. Starts the GitHub fake (tests/github/fake_github.mjs
// with its Actions service), nodeplaned with one scale-set tier on the SQLite
// ledger, and one real nodeplane-node whose process provider runs the fake
// runner (tests/github/fake_runner.py), which takes one job and reports it
// finished. Jobs are queued one at a time (each when the previous finished
// and, with min_idle, when the runners waiting are back to min_idle, so each
// finds a warm runner), and for each round it prints p50 and p99 of:
//   - the whole queue time: queued at GitHub until a runner took the job
//     (GitHub's runnerAssignTime, as the fake records it);
//   - the control plane's share of launches: message received until the node
//     answered that the runner is up (nodeplane_jobs_plane_seconds). With a
//     warm runner a job waits for none of it: the launch replaces the runner
//     taken, after the job started.
//
// usage: warm-runner-bench [--jobs N] [--min-idle K] [--nodeplaned PATH]
//                          [--node PATH] [--plugin-dir DIR] [--fake PATH]
//                          [--runner PATH]
// docs/performance.md has the figures.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "control_plane.h"
#include "free_port.h"

namespace nodeplane::bench {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Args {
  int jobs = 30;
  int min_idle = 2;
  std::string nodeplaned = NODEPLANED_PATH;
  std::string node = NODE_PATH;
  std::string plugin_dir = PLUGIN_DIR;
  std::string fake = FAKE_GITHUB_PATH;
  std::string runner = FAKE_RUNNER_PATH;
};

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string Curl(const std::string& args) {
  std::string out;
  FILE* p = ::popen(("curl -fsS " + args).c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

struct Round {
  std::vector<double> waits_ms;
  double plane_p50 = -1, plane_p99 = -1;
};

// One round with `min_idle` runners kept waiting; false when it could not run.
bool RunRound(const Args& a, int min_idle, Round& r) {
  std::string tmpl = std::string("/tmp/warm-runner-bench-XXXXXX");
  const std::string dir = ::mkdtemp(tmpl.data());
  ::chmod(dir.c_str(), 0711);  // the node's jobs run under uids of their own: they reach its work root by name
  const std::string state = dir + "/state";
  std::filesystem::create_directories(state);
  const uint16_t port = testing::FreeLoopbackPort();
  if (std::system(("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out " + dir +
                   "/app.pem 2>/dev/null && chmod 600 " + dir + "/app.pem && openssl pkey -in " + dir +
                   "/app.pem -pubout -out " + dir + "/app.pub").c_str()) != 0) {
    return false;
  }
  // GitHub's hold, against the control plane's bound, in their ratio (88:120).
  Write(dir + "/fake.json", R"({"apps":[{"app_id":11,"client_id":"Iv1.aaa","public_key_file":")" + dir +
                                R"(/app.pub","installations":[{"id":101,"account":"acme"}]}],"poll_hold_ms":1467})");
  testing::Child fake({"node", a.fake, dir + "/fake.json"}, dir + "/fake.log");
  auto listening = fake.AwaitLine("listening ", 20s);
  if (!listening) return std::fprintf(stderr, "warm-runner-bench: the GitHub fake did not start\n"), false;
  const std::string gh = "http://127.0.0.1:" + listening->substr(listening->find(' ') + 1);
  Write(dir + "/nodeplane.toml",
        "deployment = \"bench\"\nstate_dir = \"" + state + "\"\n[log]\nlevel = \"info\"\n[wire]\nlisten = \"127.0.0.1:" +
            std::to_string(port) + "\"\n[tiers.large]\nvcpu = 1\nmemory = \"256MiB\"\nproviders = [\"process\"]\n"
            "command = [\"env\", \"FAKE_RUNNER_WAIT_S=300\", \"python3\", \"" + a.runner + "\"]\n"
            "target = \"acme\"\nscale_set = \"np-large\"\nmax_concurrent = 4\nmin_idle = " + std::to_string(min_idle) +
            "\nidle_timeout = \"1h\"\n[targets.acme]\njit = \"github\"\njobs = \"github\"\npoll_timeout = \"2s\"\n"
            "[plugins.ledger]\nlibrary = \"ledger-sqlite\"\nprovides = [\"ledger\"]\n[plugins.github]\n"
            "library = \"jit-github\"\nprovides = [\"jit\", \"jobs\"]\n[plugins.github.config]\napi_url = \"" + gh +
            "/api/v3\"\norganization = \"acme\"\napp_id = 11\nprivate_key_file = \"" + dir + "/app.pem\"\n");
  ControlPlane cp(a.nodeplaned, a.plugin_dir, dir + "/nodeplane.toml", state, dir + "/nodeplaned.log");
  if (!cp.Start()) return std::fprintf(stderr, "warm-runner-bench: nodeplaned did not start (%s)\n", dir.c_str()), false;
  testing::Child node({a.node, "run", "--server", "127.0.0.1:" + std::to_string(port), "--name", "n1", "--state-dir",
                       dir + "/n1", "--deployment", "bench", "--vcpu", "4", "--memory", "4GiB"},
                      dir + "/node.log");
  // Each wait parks on the fake until its state holds (POST /_fake/actions/await).
  auto await_fake = [&](const std::string& condition) {
    return Curl("-o /dev/null -w '%{http_code}' -m 60 -X POST -H 'content-type: application/json' -d '" + condition +
                "' " + gh + "/_fake/actions/await") == "204";
  };
  if (!await_fake(R"({"event":"session"})")) {
    return std::fprintf(stderr, "warm-runner-bench: no message session (%s)\n", dir.c_str()), false;
  }
  for (int i = 0; i < a.jobs; ++i) {
    if (!await_fake(R"({"event":"waiting","count":)" + std::to_string(min_idle) + "}")) {
      return std::fprintf(stderr, "warm-runner-bench: the idle runners never came back (%s)\n", dir.c_str()), false;
    }
    Curl("-o /dev/null -X POST -H 'content-type: application/json' -d '{\"scale_set\":\"np-large\"}' " + gh +
         "/_fake/actions/queue");
    const std::string job_id = "job-" + std::to_string(i + 1);
    if (!await_fake(R"({"event":"done","job_id":")" + job_id + "\"}")) {
      return std::fprintf(stderr, "warm-runner-bench: %s never ran (%s)\n", job_id.c_str(), dir.c_str()), false;
    }
    boost::json::object job;
    const boost::json::value jobs = boost::json::parse(Curl(gh + "/_fake/actions/jobs"));
    for (const auto& j : jobs.as_array()) {
      if (j.at("jobId").as_string() == job_id) job = j.as_object();
    }
    r.waits_ms.push_back(job.at("runnerAssigned").to_number<double>() - job.at("queued").to_number<double>());
  }
  const std::string metrics = cp.MetricsText();
  r.plane_p50 = HistogramQuantile(metrics, "nodeplane_jobs_plane_seconds", 0.5) * 1000;
  r.plane_p99 = HistogramQuantile(metrics, "nodeplane_jobs_plane_seconds", 0.99) * 1000;
  ::kill(node.pid(), SIGTERM);
  cp.Kill();
  std::filesystem::remove_all(dir);
  return true;
}

int Run(const Args& a) {
  std::printf("warm-runner-bench: %d jobs one at a time, each round on a fresh control plane and node\n", a.jobs);
  for (int min_idle : {0, a.min_idle}) {
    Round r;
    if (!RunRound(a, min_idle, r)) return 1;
    std::printf("min_idle %d: queued -> a runner took it: p50 %.0f ms, p99 %.0f ms; "
                "the control plane's share of each launch: p50 %.1f ms, p99 %.1f ms%s\n",
                min_idle, Quantile(r.waits_ms, 0.5), Quantile(r.waits_ms, 0.99), r.plane_p50, r.plane_p99,
                min_idle > 0 ? " (after the job started: a warm runner waited for it)" : "");
  }
  return 0;
}

}  // namespace
}  // namespace nodeplane::bench

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  nodeplane::bench::Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--jobs") a.jobs = std::stoi(v);
    else if (k == "--min-idle") a.min_idle = std::stoi(v);
    else if (k == "--nodeplaned") a.nodeplaned = v;
    else if (k == "--node") a.node = v;
    else if (k == "--plugin-dir") a.plugin_dir = v;
    else if (k == "--fake") a.fake = v;
    else if (k == "--runner") a.runner = v;
    else {
      std::fprintf(stderr, "warm-runner-bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  return nodeplane::bench::Run(a);
}
