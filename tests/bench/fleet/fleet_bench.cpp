// fleet-bench: one modest machine running the control plane for a large
// fleet, measured. Starts nodeplaned (SQLite ledger, mTLS wire on loopback)
// and N simulated nodes in this process (sim_fleet.h), each with its own
// certificate, then prints:
//   - the connections held and the control plane's RSS and CPU while idle;
//   - dispatch latency: a launch through the admin API until its node holds
//     the command, p50/p99/max;
//   - the time for every node to register again after a SIGKILL and start;
//   - the throughput of a trivial route (GET /healthz over mTLS) next to
//     nginx answering a static 204 over TLS 1.3, same generator, same run.
//
// usage: fleet-bench [--nodes N] [--launches N] [--idle-seconds S]
//                    [--load-seconds S] [--load-connections N] [--job-ms MS]
//                    [--nginx PATH] [--nodeplaned PATH] [--plugin-dir DIR]
// tests/bench/fleet-bench.sh raises the descriptor limit, installs nginx and
// runs it; docs/performance.md has the figures.
#include <sys/resource.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/units.h"
#include "control_plane.h"
#include "free_port.h"
#include "http_load.h"
#include "pki/authority.h"
#include "sim_fleet.h"

namespace nodeplane::bench {
namespace {

using namespace std::chrono_literals;

struct Args {
  int nodes = 10000;
  int launches = 1000;  // p99 is then the tenth worst, not the second
  // Longer than the poll window (50 s), so that every node's poll comes back
  // and is re-armed, and reconciles when due, inside the idle measurement.
  int idle_seconds = 60;
  int load_seconds = 10;
  int load_connections = 64;
  int job_ms = 4000;
  std::string nginx;
  std::string nodeplaned = NODEPLANED_PATH;
  std::string plugin_dir = PLUGIN_DIR;
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// This process's CPU time (user and system), every thread.
double SelfCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// nginx answering a static 204 over TLS 1.3 with `cert`, as a child whose
// notice-level log on stderr says when its workers (and so its listening
// socket) are up.
std::unique_ptr<testing::Child> StartNginx(const std::string& nginx, const std::string& dir, uint16_t port,
                                           const std::string& cert, const std::string& key) {
  std::filesystem::create_directories(dir + "/tmp");
  Write(dir + "/server.pem", cert);
  Write(dir + "/server.key", key);
  Write(dir + "/nginx.conf", "worker_processes auto;\ndaemon off;\npid " + dir +
                                 "/nginx.pid;\nerror_log stderr notice;\nevents { worker_connections 4096; }\n"
                                 "http {\n  access_log off;\n  keepalive_requests 10000000;\n"
                                 "  client_body_temp_path " + dir + "/tmp;\n  proxy_temp_path " + dir +
                                 "/tmp;\n  fastcgi_temp_path " + dir + "/tmp;\n  uwsgi_temp_path " + dir +
                                 "/tmp;\n  scgi_temp_path " + dir + "/tmp;\n  server {\n    listen 127.0.0.1:" +
                                 std::to_string(port) + " ssl;\n    ssl_protocols TLSv1.3;\n    ssl_certificate " +
                                 dir + "/server.pem;\n    ssl_certificate_key " + dir +
                                 "/server.key;\n    location / { return 204; }\n  }\n}\n");
  auto child = std::make_unique<testing::Child>(
      std::vector<std::string>{nginx, "-p", dir, "-c", dir + "/nginx.conf", "-e", "stderr"}, dir + "/nginx.log");
  if (!child->AwaitLine("start worker process", std::chrono::seconds(10))) return nullptr;
  return child;
}

int Run(const Args& a) {
  // Each side holds a descriptor per node, and nodeplaned inherits this
  // limit: raised to 65536 where permitted (root), else to the hard limit.
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  rlimit wanted{std::max<rlim_t>(nofile.rlim_max, 65536), std::max<rlim_t>(nofile.rlim_max, 65536)};
  if (::setrlimit(RLIMIT_NOFILE, &wanted) != 0) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  if (nofile.rlim_cur < static_cast<rlim_t>(a.nodes + 2000)) {
    std::fprintf(stderr, "fleet-bench: the descriptor limit %llu is too low for %d nodes (ulimit -Hn)\n",
                 static_cast<unsigned long long>(nofile.rlim_cur), a.nodes);
    return 1;
  }
  // The work dir (the ledger's file with it) under $TMPDIR, /tmp by default:
  // a tmpfs there takes the disk's fsync out of the figures.
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/fleet-bench-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl.data());
  const std::string state = dir + "/state";
  std::filesystem::create_directories(state);
  const uint16_t port = testing::FreeLoopbackPort();

  // The deployment CA, written where nodeplaned looks for it, and a
  // certificate per node signed by it.
  auto ca = pki::Authority::Create("bench", WallNowNs());
  if (!ca.ok()) return std::fprintf(stderr, "fleet-bench: %s\n", ca.status().ToString().c_str()), 1;
  Write(state + "/ca.pem", ca->cert_pem());
  (void)pki::WritePrivateFile(state + "/ca.key", ca->key_pem());
  Write(dir + "/nodeplane.toml", "deployment = \"bench\"\nstate_dir = \"" + state +
                                     "\"\n[log]\nlevel = \"info\"\n[wire]\nlisten = \"127.0.0.1:" +
                                     std::to_string(port) +
                                     "\"\nmax_connections = 40000\n[wire.tls]\nserver_names = [\"127.0.0.1\"]\n"
                                     "[leases]\nttl = \"9s\"\nreap_interval = \"3s\"\n[tiers.job]\nvcpu = 1\nmemory = \"1GiB\"\n"
                                     "providers = [\"process\"]\ncommand = [\"/bin/true\"]\n[plugins.ledger]\n"
                                     "library = \"ledger-sqlite\"\nprovides = [\"ledger\"]\n");
  std::printf("fleet-bench: %d nodes, %s, work dir %s\n", a.nodes, a.nodeplaned.c_str(), dir.c_str());

  FleetOptions fo;
  fo.port = port;
  fo.ca_pem = ca->cert_pem();
  fo.deployment = "bench";
  fo.job_duration = std::chrono::milliseconds(a.job_ms);
  auto fleet = std::make_unique<SimFleet>(fo);
  auto t = Clock::now();
  // Issued on every core: this is set-up, not a figure.
  std::vector<std::pair<std::string, std::string>> certs(static_cast<size_t>(a.nodes));
  {
    std::vector<std::jthread> workers;
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned w = 0; w < n; ++w) {
      workers.emplace_back([&, w] {
        for (size_t i = w; i < certs.size(); i += n) {
          auto issued = ca->IssueNode("sim-" + std::to_string(i), WallNowNs());
          if (issued.ok()) certs[i] = {issued->first, issued->second.private_pem};
        }
      });
    }
  }
  for (size_t i = 0; i < certs.size(); ++i) {
    if (certs[i].first.empty()) return std::fprintf(stderr, "fleet-bench: issuing a certificate failed\n"), 1;
    fleet->AddNode("sim-" + std::to_string(i), certs[i].first, certs[i].second);
  }
  const std::string load_cert = certs[0].first, load_key = certs[0].second;
  std::printf("certificates: %d issued in %.1f s\n", a.nodes, Seconds(Clock::now() - t));

  ControlPlane cp(a.nodeplaned, a.plugin_dir, dir + "/nodeplane.toml", state, dir + "/nodeplaned.log");
  if (!cp.Start()) return std::fprintf(stderr, "fleet-bench: nodeplaned did not start; see %s/nodeplaned.log\n", dir.c_str()), 1;
  const int64_t rss_empty = cp.RssBytes();

  // 1. Connect: every node registered and long-polling.
  t = Clock::now();
  fleet->BeginRound();
  fleet->Start();
  const bool all =
      fleet->AwaitState([&] { return fleet->RegisteredThisRound() == a.nodes && fleet->parked() == a.nodes; }, 300s);
  std::printf("connect: %d of %d registered and long-polling in %.1f s (client failures %lld)\n",
              fleet->RegisteredThisRound(), a.nodes, Seconds(Clock::now() - t),
              static_cast<long long>(fleet->failures()));
  if (!all) return 1;

  // 2. Idle: nothing but parked polls, re-armed every poll window, for
  // idle_seconds; a node that loses its poll ends the window early, since
  // the fleet is then no longer idle and the figure would not be one.
  const std::string accepted = "nodeplane_connections_accepted_total{listener=\"wire\"}";
  const double cpu0 = cp.CpuSeconds(), accepted0 = cp.Metric(accepted);
  const int64_t failures0 = fleet->failures();
  t = Clock::now();
  if (fleet->AwaitState([&] { return fleet->failures() > failures0; }, std::chrono::seconds(a.idle_seconds))) {
    return std::fprintf(stderr, "fleet-bench: a node lost its poll while the fleet was idle\n"), 1;
  }
  const double idle_seconds = Seconds(Clock::now() - t);
  const double idle_cpu = (cp.CpuSeconds() - cpu0) / idle_seconds;
  std::printf("idle (%d s): %d connections held (server: %.0f open, %.0f polls parked, %.0f nodes), RSS %.0f MiB "
              "(%.0f MiB before the fleet), CPU %.2f%% of one core, %.1f connections accepted a second\n",
              a.idle_seconds, fleet->connected(), cp.Metric("nodeplane_connections"),
              cp.Metric("nodeplane_polls_parked"), cp.Metric("nodeplane_plane_nodes"), cp.RssBytes() / 1048576.0,
              rss_empty / 1048576.0, idle_cpu * 100, (cp.Metric(accepted) - accepted0) / idle_seconds);

  // 3. Dispatch latency, one launch at a time; each job holds its lease for
  // job_ms, heartbeating at TTL/3.
  std::vector<double> latency;
  int refused = 0;
  const double dispatch_cpu0 = cp.CpuSeconds(), self_cpu0 = SelfCpuSeconds();
  const auto dispatch_start = Clock::now();
  for (int i = 1; i <= a.launches; ++i) {
    const auto start = Clock::now();
    const std::string answer =
        cp.Admin(R"({"cmd":"launch","args":{"tier":"job","request_id":)" + std::to_string(i) + "}}");
    auto got = fleet->AwaitLaunch(i, 10s);
    if (answer.find("\"ok\":true") == std::string::npos || !got) {
      if (++refused <= 3) std::fprintf(stderr, "launch %d: %s\n", i, answer.c_str());
      continue;
    }
    latency.push_back(std::chrono::duration<double, std::milli>(*got - start).count());
  }
  const double dispatch_seconds = Seconds(Clock::now() - dispatch_start);
  std::printf("dispatch (%zu launches, %d refused, %d connections): p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max "
              "%.2f ms\n",
              latency.size(), refused, fleet->connected(), Percentile(latency, 0.5), Percentile(latency, 0.9),
              Percentile(latency, 0.99), latency.empty() ? 0 : *std::max_element(latency.begin(), latency.end()));
  std::printf("dispatch load: %.0f launches/s; CPU nodeplaned %.0f%%, generator %.0f%% (of one core; 2 cores in all)\n",
              a.launches / dispatch_seconds, (cp.CpuSeconds() - dispatch_cpu0) / dispatch_seconds * 100,
              (SelfCpuSeconds() - self_cpu0) / dispatch_seconds * 100);
  fleet->AwaitState([&] { return fleet->held() == 0; }, std::chrono::milliseconds(a.job_ms) + 30s);

  // 4. Restart: SIGKILL and start again; every node reconnects with its
  // backoff, is told it is unknown, and registers.
  cp.Kill();
  fleet->BeginRound();
  const int64_t storm_failures0 = fleet->open_failures();
  const double storm_self_cpu0 = SelfCpuSeconds();
  t = Clock::now();
  if (!cp.Start()) return std::fprintf(stderr, "fleet-bench: nodeplaned did not restart\n"), 1;
  const double up = Seconds(Clock::now() - t);
  const bool back = fleet->AwaitState([&] { return fleet->RegisteredThisRound() == a.nodes; }, 300s);
  // The storm's CPU on both sides: with the generator on the same cores, the
  // sum over the cores is the bound (docs/performance.md).
  std::printf("restart: nodeplaned serving after %.2f s; %d of %d nodes registered again %.1f s after the restart "
              "(connects or handshakes failed %lld; CPU nodeplaned %.1f s, generator %.1f s)\n",
              up, fleet->RegisteredThisRound(), a.nodes, Seconds(Clock::now() - t),
              static_cast<long long>(fleet->open_failures() - storm_failures0), cp.CpuSeconds(),
              SelfCpuSeconds() - storm_self_cpu0);
  if (!back) return 1;
  fleet->AwaitState([&] { return fleet->parked() == a.nodes; }, 60s);
  std::printf("after restart: RSS %.0f MiB\n", cp.RssBytes() / 1048576.0);
  fleet.reset();  // closes every node's connection

  // 5. Throughput of a trivial route, then nginx's static 204, same generator.
  const auto duration = std::chrono::seconds(a.load_seconds);
  LoadTls tls{ca->cert_pem(), load_cert, load_key};
  const double cpu1 = cp.CpuSeconds();
  LoadResult ours = Hammer("127.0.0.1", port, tls, "/healthz", 200, a.load_connections, duration);
  std::printf("throughput GET /healthz over mTLS 1.3 (%d connections, %d s): nodeplaned %.0f req/s (%lld failed; "
              "it used %.0f%% of one core)\n",
              a.load_connections, a.load_seconds, ours.per_second(), static_cast<long long>(ours.failed),
              (cp.CpuSeconds() - cpu1) / ours.seconds * 100);
  if (!a.nginx.empty()) {
    const uint16_t nginx_port = testing::FreeLoopbackPort();
    auto server = ca->IssueServer({"127.0.0.1"}, WallNowNs());
    auto nginx = StartNginx(a.nginx, dir + "/nginx", nginx_port, server->first, server->second.private_pem);
    if (!nginx) return std::fprintf(stderr, "fleet-bench: nginx did not start; see %s/nginx/nginx.log\n", dir.c_str()), 1;
    LoadResult theirs = Hammer("127.0.0.1", nginx_port, LoadTls{ca->cert_pem(), "", ""}, "/", 204,
                               a.load_connections, duration);
    std::printf("throughput nginx static 204 over TLS 1.3 (same generator): %.0f req/s (%lld failed); "
                "nodeplaned/nginx = %.2f\n",
                theirs.per_second(), static_cast<long long>(theirs.failed),
                theirs.per_second() > 0 ? ours.per_second() / theirs.per_second() : 0);
  }
  cp.Kill();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace nodeplane::bench

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as soon as it is measured
  nodeplane::bench::Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--nodes") a.nodes = std::stoi(v);
    else if (k == "--launches") a.launches = std::stoi(v);
    else if (k == "--idle-seconds") a.idle_seconds = std::stoi(v);
    else if (k == "--load-seconds") a.load_seconds = std::stoi(v);
    else if (k == "--load-connections") a.load_connections = std::stoi(v);
    else if (k == "--job-ms") a.job_ms = std::stoi(v);
    else if (k == "--nginx") a.nginx = v;
    else if (k == "--nodeplaned") a.nodeplaned = v;
    else if (k == "--plugin-dir") a.plugin_dir = v;
    else {
      std::fprintf(stderr, "fleet-bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  return nodeplane::bench::Run(a);
}
