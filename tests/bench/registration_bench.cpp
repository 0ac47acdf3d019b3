// registration-bench: what a restart storm's registrations cost the Plane and
// the ledger, without TLS or HTTP: every node of a fleet registers again, with
// its inventory, after the control plane forgot them (as nodeplaned does at
// start), from as many threads as the node wire has workers (8).
//
//   registration-bench --plugin PATH/ledger-sqlite.so [--nodes N] [--busy N] [--threads N]
//
// --busy N leases are running before the restart, placed by the ledger (four
// to a node), and the inventories name them. Prints the storm's wall time and the process's CPU per registration;
// the fleet benchmark's storm (fleet-bench) is this plus the handshakes. It
// also prints how long placing the busy leases took, one at a time, and how
// long finding a running request's holder takes afterwards (what a destroy
// asks first).
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_library.h"
#include "plane/plane.h"

namespace {

using namespace nodeplane;
using Clock = std::chrono::steady_clock;
constexpr int64_t kGiB = 1LL << 30;

int Fail(const std::string& what) {
  std::fprintf(stderr, "registration-bench: %s\n", what.c_str());
  return 1;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

constexpr std::string_view kNodePrefix = "node-";
std::string Name(int i) { return std::string(kNodePrefix) + std::to_string(i); }

protocol::RegisterRequest Request(int i, const std::vector<std::string>& running) {
  protocol::RegisterRequest q;
  q.min_version = protocol::kMinProtocol;
  q.version = protocol::kMaxProtocol;
  q.node = Name(i);
  q.provider = "process";
  q.deployment = "bench";
  q.incarnation = Name(i) + "-incarnation";
  q.vcpu = 4;
  q.memory = 8 * kGiB;
  q.inventory_known = true;
  q.instances = running;
  return q;
}

std::unique_ptr<plane::Plane> MakePlane(loader::LedgerAdapter& ledger, Logger& log) {
  plane::PlaneOptions o;
  o.deployment = "bench";
  o.tiers.push_back(plane::Tier{protocol::TierShape{"small", 1, kGiB, "linux", "", {"/bin/true"}, "", {}, false},
                                {"process"}});
  o.registrar = &ledger;
  o.leases = &ledger;
  o.barrier = &ledger;
  o.log = &log;
  return std::make_unique<plane::Plane>(o);
}

}  // namespace

int main(int argc, char** argv) {
  std::string plugin;
  int nodes = 5000, busy = 0, threads = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--plugin") plugin = argv[i + 1];
    else if (flag == "--nodes") nodes = std::stoi(argv[i + 1]);
    else if (flag == "--busy") busy = std::stoi(argv[i + 1]);
    else if (flag == "--threads") threads = std::stoi(argv[i + 1]);
    else return Fail("unknown flag " + flag);
  }
  if (plugin.empty() || nodes <= 0 || busy < 0 || threads <= 0) {
    return Fail("usage: registration-bench --plugin PATH/ledger-sqlite.so [--nodes N] [--busy N] [--threads N]");
  }
  const std::string dir = std::filesystem::temp_directory_path() / ("registration-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  Logger log(LogLevel::kError);
  loader::HostServices host(log, dir);
  auto lib = loader::PluginLibrary::Open(plugin, "", host.c());
  if (!lib.ok()) return Fail(lib.status().ToString());
  auto ledger = loader::LedgerAdapter::Create(*lib, "bench", R"({"path": "ledger.db"})", host.c(), false);
  if (!ledger.ok()) return Fail(ledger.status().ToString());
  ports::Catalog cat;
  cat.lease_ttl_ns = 90'000'000'000;
  cat.tiers.push_back({"small", 1, kGiB, {"process"}, "linux", "", "", 0, 0});
  if (Status s = (*ledger)->SetCatalog(cat); !s.ok()) return Fail(s.ToString());

  // The fleet before the restart: every node registered, `busy` leases
  // running where the ledger placed them.
  auto first = MakePlane(**ledger, log);
  std::vector<std::vector<std::string>> running(nodes);
  for (int i = 0; i < nodes; ++i) {
    if (auto r = first->CompleteRegistration(Request(i, {})); !r.ok()) return Fail(r.status().ToString());
  }
  const auto placing = Clock::now();
  for (int i = 0; i < busy; ++i) {
    auto leases = (*ledger)->Escrow("small", 1);
    if (!leases.ok() || leases->size() != 1) return Fail("escrow failed");
    const ports::Lease& l = leases->front();
    Status s = (*ledger)->Bind(l.id, 0, l.target_node, l.target_node + "-incarnation");
    if (s.ok()) s = (*ledger)->Assign(l.id, 0, 1, i + 1);  // request ids 1..busy
    if (s.ok()) s = (*ledger)->Advance(l.id, 0, ports::Phase::kLaunching, "");
    if (!s.ok()) return Fail(s.ToString());
    running[std::stoi(l.target_node.substr(kNodePrefix.size()))].push_back(l.id);
  }
  if (busy > 0) {
    // Each escrow reads every open lease to place the next (EscrowIn), so
    // this grows with the fleet's running work.
    const double placed = std::chrono::duration<double>(Clock::now() - placing).count();
    std::printf("before the restart: %d leases escrowed, bound and launching in %.1f s (%.2f ms each)\n", busy, placed,
                placed / busy * 1e3);
  }
  first.reset();

  // The restart: a Plane that remembers nothing, the ledger's fleet forgotten.
  if (Status s = (*ledger)->ForgetEveryNode(); !s.ok()) return Fail(s.ToString());
  auto plane = MakePlane(**ledger, log);
  std::atomic<int> next{0}, failed{0};
  const double cpu0 = CpuSeconds();
  const auto start = Clock::now();
  {
    std::vector<std::jthread> callers;
    for (int t = 0; t < threads; ++t) {
      callers.emplace_back([&] {
        for (int i; (i = next++) < nodes;) {
          if (!plane->CompleteRegistration(Request(i, running[i])).ok()) ++failed;
        }
      });
    }
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = CpuSeconds() - cpu0;
  if (failed > 0) return Fail(std::to_string(failed.load()) + " registrations failed");
  std::printf("registration storm: %d nodes (%d leases running), %d threads: %.2f s, %.0f registrations/s; "
              "CPU %.1f us each\n",
              nodes, busy, threads, wall, nodes / wall, cpu / nodes * 1e6);

  // What each destroy of a finished job asks first: who holds its request
  // (the registrations adopted a record for every running lease).
  if (busy > 0) {
    const auto asking = Clock::now();
    int found = 0;
    for (int r = 1; r <= busy; ++r) found += plane->OwnerOfRequest(r).has_value() ? 1 : 0;
    const double asked = std::chrono::duration<double>(Clock::now() - asking).count();
    std::printf("owner of a request: %d of %d found, %.2f us a lookup\n", found, busy, asked / busy * 1e6);
  }
  plane.reset();
  ledger->reset();
  std::filesystem::remove_all(dir);
  return 0;
}
