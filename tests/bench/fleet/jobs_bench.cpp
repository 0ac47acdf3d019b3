// jobs-bench: a burst of GitHub jobs through the job intake, measured.
// Starts the GitHub fake (tests/github/fake_github.mjs, with its Actions
// service), nodeplaned with one scale-set tier on the SQLite ledger, and N
// simulated nodes (sim_fleet.h) that take every launch at once; queues J
// jobs at the fake (as JobAssigned, as GitHub.com sends them), all at once or
// at --rate jobs a second, and prints:
//   - the control plane's share of each job's queue time, p50/p99 (message
//     received -> the node answered that the runner is up), from
//     nodeplaned's own histogram (nodeplane_jobs_plane_seconds);
//   - how long until every job had a runner launched, and so jobs/s.
// The simulated nodes mint no JIT config (a real node's is one GitHub call,
// bounded by GitHub's ~180 registrations a minute per App, not by us).
//
// usage: jobs-bench [--nodes N] [--jobs J] [--rate R (0: all at once)]
//                   [--nodeplaned PATH] [--plugin-dir DIR]
//                   [--fake PATH-to-fake_github.mjs]
// docs/performance.md has the figures.
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/units.h"
#include "control_plane.h"
#include "free_port.h"
#include "pki/authority.h"
#include "sim_fleet.h"

namespace nodeplane::bench {
namespace {

using namespace std::chrono_literals;

struct Args {
  int nodes = 100;
  int jobs = 1000;
  int rate = 0;  // jobs queued a second; 0: all at once
  std::string nodeplaned = NODEPLANED_PATH;
  std::string plugin_dir = PLUGIN_DIR;
  std::string fake = FAKE_GITHUB_PATH;
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

int Run(const Args& a) {
  // The work dir (the ledger's file with it) under $TMPDIR, /tmp by default:
  // a tmpfs there takes the disk's fsync out of the figures.
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/jobs-bench-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl.data());
  const std::string state = dir + "/state";
  std::filesystem::create_directories(state);
  const uint16_t port = testing::FreeLoopbackPort();

  // The GitHub fake, with App 11 installed on acme.
  if (std::system(("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out " + dir +
                   "/app.pem 2>/dev/null && chmod 600 " + dir + "/app.pem && openssl pkey -in " + dir +
                   "/app.pem -pubout -out " + dir + "/app.pub")
                      .c_str()) != 0) {
    return std::fprintf(stderr, "jobs-bench: openssl could not make the App's key\n"), 1;
  }
  Write(dir + "/fake.json", R"({"apps":[{"app_id":11,"client_id":"Iv1.aaa","public_key_file":")" + dir +
                                R"(/app.pub","installations":[{"id":101,"account":"acme"}]}],"poll_hold_ms":1000})");
  testing::Child fake({"node", a.fake, dir + "/fake.json"}, dir + "/fake.log");
  auto listening = fake.AwaitLine("listening ", 20s);
  if (!listening) return std::fprintf(stderr, "jobs-bench: the GitHub fake did not start (%s)\n", a.fake.c_str()), 1;
  const std::string gh = "http://127.0.0.1:" + listening->substr(listening->find(' ') + 1);

  auto ca = pki::Authority::Create("bench", WallNowNs());
  if (!ca.ok()) return std::fprintf(stderr, "jobs-bench: %s\n", ca.status().ToString().c_str()), 1;
  Write(state + "/ca.pem", ca->cert_pem());
  (void)pki::WritePrivateFile(state + "/ca.key", ca->key_pem());
  Write(dir + "/nodeplane.toml",
        "deployment = \"bench\"\nstate_dir = \"" + state + "\"\n[limits]\nplacement = \"spread\"\n[log]\nlevel = \"info\"\n[wire]\nlisten = \"127.0.0.1:" +
            std::to_string(port) + "\"\n[wire.tls]\nserver_names = [\"127.0.0.1\"]\n[leases]\nttl = \"60s\"\n"
            "[tiers.large]\nvcpu = 1\nmemory = \"256MiB\"\nproviders = [\"process\"]\ncommand = [\"/bin/true\"]\n"
            "target = \"acme\"\nrunner_group = \"builders\"\nscale_set = \"np-large\"\nmax_concurrent = " +
            std::to_string(a.jobs) + "\n[targets.acme]\njit = \"github\"\njobs = \"github\"\n[plugins.ledger]\n"
            "library = \"ledger-sqlite\"\nprovides = [\"ledger\"]\n[plugins.github]\nlibrary = \"jit-github\"\n"
            "provides = [\"jit\", \"jobs\"]\n[plugins.github.config]\napi_url = \"" + gh +
            "/api/v3\"\norganization = \"acme\"\napp_id = 11\nprivate_key_file = \"" + dir + "/app.pem\"\n");

  FleetOptions fo;
  fo.port = port;
  fo.ca_pem = ca->cert_pem();
  fo.deployment = "bench";
  fo.job_duration = 120s;  // every runner holds its lease to the end: the burst is all at once
  fo.vcpu = (a.jobs + a.nodes - 1) / a.nodes;
  auto fleet = std::make_unique<SimFleet>(fo);
  for (int i = 0; i < a.nodes; ++i) {
    auto issued = ca->IssueNode("sim-" + std::to_string(i), WallNowNs());
    if (!issued.ok()) return std::fprintf(stderr, "jobs-bench: issuing a certificate failed\n"), 1;
    fleet->AddNode("sim-" + std::to_string(i), issued->first, issued->second.private_pem);
  }
  std::printf("jobs-bench: %d jobs %s, %d nodes of %lld vCPUs, work dir %s\n", a.jobs,
              a.rate > 0 ? ("at " + std::to_string(a.rate) + " a second").c_str() : "at once", a.nodes,
              static_cast<long long>(fo.vcpu), dir.c_str());

  ControlPlane cp(a.nodeplaned, a.plugin_dir, dir + "/nodeplane.toml", state, dir + "/nodeplaned.log");
  if (!cp.Start()) return std::fprintf(stderr, "jobs-bench: nodeplaned did not start; see %s/nodeplaned.log\n", dir.c_str()), 1;
  fleet->BeginRound();
  fleet->Start();
  if (!fleet->AwaitState([&] { return fleet->RegisteredThisRound() == a.nodes && fleet->parked() == a.nodes; }, 120s)) {
    return std::fprintf(stderr, "jobs-bench: the fleet did not register\n"), 1;
  }
  // The session is open once the fake counts it.
  const auto session_deadline = Clock::now() + 60s;
  while (cp.Metric("nodeplane_jobs_sessions_open") < 1) {
    if (Clock::now() > session_deadline) return std::fprintf(stderr, "jobs-bench: no message session\n"), 1;
    std::this_thread::sleep_for(50ms);  // polled: no event to wait on across processes
  }

  const double cpu0 = cp.CpuSeconds();
  const auto start = Clock::now();
  auto queue = [&](int count) {
    return std::system(("curl -fsS -o /dev/null -X POST -H 'content-type: application/json' -d '{\"scale_set\":"
                        "\"np-large\",\"count\":" + std::to_string(count) + "}' " + gh + "/_fake/actions/queue")
                           .c_str()) == 0;
  };
  if (a.rate <= 0) {
    if (!queue(a.jobs)) return std::fprintf(stderr, "jobs-bench: the fake refused the queue\n"), 1;
  } else {
    // Ten batches a second, on a fixed schedule.
    const int batch = std::max(1, a.rate / 10);
    for (int queued = 0; queued < a.jobs; queued += batch) {
      if (!queue(std::min(batch, a.jobs - queued))) return std::fprintf(stderr, "jobs-bench: the fake refused the queue\n"), 1;
      std::this_thread::sleep_until(start + std::chrono::milliseconds(1000LL * (queued + batch) / a.rate));
    }
  }
  const bool all = fleet->AwaitState([&] { return fleet->held() >= a.jobs; }, 300s);
  const double took = Seconds(Clock::now() - start);
  const double cpu = cp.CpuSeconds() - cpu0;
  const std::string metrics = cp.MetricsText();
  std::printf("run: %d of %d runners launched and held in %.2f s: %.0f jobs/s; nodeplaned CPU %.0f%% of one core\n",
              fleet->held(), a.jobs, took, fleet->held() / took, cpu / took * 100);
  std::printf("control plane's share (message received -> runner up on its node): p50 %.1f ms, p99 %.1f ms\n",
              HistogramQuantile(metrics, "nodeplane_jobs_plane_seconds", 0.5) * 1000,
              HistogramQuantile(metrics, "nodeplane_jobs_plane_seconds", 0.99) * 1000);
  cp.Kill();
  fleet.reset();
  std::filesystem::remove_all(dir);
  return all ? 0 : 1;
}

}  // namespace
}  // namespace nodeplane::bench

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  nodeplane::bench::Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--nodes") a.nodes = std::stoi(v);
    else if (k == "--jobs") a.jobs = std::stoi(v);
    else if (k == "--rate") a.rate = std::stoi(v);
    else if (k == "--nodeplaned") a.nodeplaned = v;
    else if (k == "--plugin-dir") a.plugin_dir = v;
    else if (k == "--fake") a.fake = v;
    else {
      std::fprintf(stderr, "jobs-bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  return nodeplane::bench::Run(a);
}
