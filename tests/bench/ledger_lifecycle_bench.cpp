// ledger-lifecycle-bench: full lease lifecycles per second through the plugin
// ABI, against the same SQL statements run directly through SOCI on the same
// kind of file.
//
//   ledger-lifecycle-bench --plugin PATH/ledger-sqlite.so [--iterations N] [--only abi|inline|direct]
//                          [--threads N]
//   ledger-lifecycle-bench --plugin PATH/ledger-postgres.so --config '{"dsn": "...", "schema": "{run}"}'
//
// --config is the plugin instance's config; "{run}" in it becomes the run's
// name (abi, inline, direct), so each run has its own file or schema. With
// ledger-postgres the direct run goes through libpq itself (PQexecParams, the
// same statements, each operation a transaction holding the same advisory
// lock), which is the floor any PostgreSQL client can reach.
//
// One lifecycle is six write transactions: escrow, bind, advance to
// assigned, advance to launching, heartbeat, release. The direct run issues
// the statements the SQL ledger issues for each (the reads that check fences
// and placement included), each operation in its own BEGIN IMMEDIATE. A third
// run calls the vtable on the caller's thread, separating the ABI and the
// store's C++ from the adapter (which hops to the instance's thread pool
// unless the plugin's call_model says NP_CALLS_ANY_THREAD, as the shipped
// SQL ledgers do).
//
// --threads N runs the adapter's lifecycles from N threads at once (the
// host's callers: wire workers, the admin socket, the reaper), which is
// where group commit (plugins/ledger-sql/group_commit.h) shares commits.
#include <libpq-fe.h>
#include <soci/soci.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_library.h"
#include "sql_ledger_internal.h"

namespace {

using namespace nodeplane;
using Clock = std::chrono::steady_clock;
constexpr int64_t kGiB = 1LL << 30;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "ledger-lifecycle-bench: %s\n", what.c_str());
  return 1;
}

// The instance config for one run: "{run}" replaced by its name.
std::string g_config = R"({"path": "{run}.db"})";
std::string ConfigFor(const std::string& run) {
  std::string c = g_config;
  for (size_t at; (at = c.find("{run}")) != std::string::npos;) c.replace(at, 5, run);
  return c;
}

// Through the ABI: the host's adapter over the plugin.
int RunAbi(const std::string& plugin, const std::string& dir, int iterations, int threads, double& per_second,
           bool& on_caller_thread) {
  Logger log(LogLevel::kError);
  loader::HostServices host(log, dir);
  auto lib = loader::PluginLibrary::Open(plugin, "", host.c());
  if (!lib.ok()) return Fail(lib.status().ToString());
  auto ledger = loader::LedgerAdapter::Create(*lib, "bench", ConfigFor("abi"), host.c(), false);
  if (!ledger.ok()) return Fail(ledger.status().ToString());
  on_caller_thread = (*ledger)->calls_on_caller_thread();
  ports::Catalog cat;
  cat.lease_ttl_ns = 90'000'000'000;
  cat.tiers.push_back({"small", 1, kGiB, {"docker"}, "linux", "", "", 0, 0});
  if (Status s = (*ledger)->SetCatalog(cat); !s.ok()) return Fail(s.ToString());
  ports::NodeRegistration reg{"n1", "docker", "", std::string(32, 'a'), "", 1'000'000, 1'000'000 * kGiB, 1};
  if (auto e = (*ledger)->RegisterNode(reg); !e.ok()) return Fail(e.status().ToString());
  auto& l = **ledger;
  std::atomic<bool> failed{false};
  auto lifecycles = [&](int n) {
    for (int i = 0; i < n && !failed; ++i) {
      auto leases = l.Escrow("small", 1);
      if (!leases.ok() || leases->size() != 1) {
        failed = true;
        return (void)Fail("escrow failed");
      }
      const std::string& id = leases->front().id;
      Status s = l.Bind(id, 0, "n1", "");
      if (s.ok()) s = l.Advance(id, 0, ports::Phase::kAssigned, "");
      if (s.ok()) s = l.Advance(id, 0, ports::Phase::kLaunching, "");
      if (s.ok()) s = l.Heartbeat(id, 0);
      if (s.ok()) s = l.Release(id, 0, ports::Phase::kDone);
      if (!s.ok()) {
        failed = true;
        return (void)Fail(s.ToString());
      }
    }
  };
  auto start = Clock::now();
  {
    std::vector<std::jthread> callers;
    for (int t = 0; t < threads; ++t) callers.emplace_back(lifecycles, iterations / threads);
  }
  if (failed) return 1;
  per_second = (iterations / threads) * threads / Seconds(start);
  return 0;
}

// Through the C vtable on the caller's own thread: the ABI without the
// adapter's thread-pool hop (which the host makes so a blocking plugin call
// never runs on an I/O thread).
int RunAbiInline(const std::string& plugin, const std::string& dir, int iterations, double& per_second) {
  Logger log(LogLevel::kError);
  loader::HostServices host(log, dir);
  auto lib = loader::PluginLibrary::Open(plugin, "", host.c());
  if (!lib.ok()) return Fail(lib.status().ToString());
  auto desc = (*lib)->Find(NP_LEDGER_INTERFACE, NP_LEDGER_MAJOR);
  if (!desc.ok()) return Fail(desc.status().ToString());
  auto vt = loader::CopyVtable<np_ledger_v1>(**desc, plugin, {});
  if (!vt.ok()) return Fail(vt.status().ToString());
  const std::string config = ConfigFor("inline");
  char msg[512] = {};
  np_error err{sizeof(np_error), NP_OK, 0, sizeof msg, msg, 0};
  void* self = nullptr;
  if (vt->create(host.c(), config.data(), config.size(), 0, &self, &err) != NP_OK) return Fail(msg);
  const char* providers[] = {"docker"};
  np_tier_v1 tier{sizeof(np_tier_v1), "small", 1, kGiB, providers, 1, "linux", "", "", 0, 0};
  const np_tier_v1* tiers[] = {&tier};
  np_catalog_v1 cat{sizeof(np_catalog_v1), 90'000'000'000, 0, 0, NP_PLACEMENT_PACK, tiers, 1, nullptr, 0};
  np_node_registration_v1 reg{sizeof reg, "n1", "docker", "", "", 1'000'000, 1'000'000 * kGiB, 1, ""};
  int64_t epoch = 0;
  if (vt->set_catalog(self, &cat, &err) != NP_OK || vt->register_node(self, &reg, &epoch, &err) != NP_OK) {
    return Fail(msg);
  }
  std::string id;
  np_lease_sink sink{sizeof(np_lease_sink), &id, [](void* ctx, const np_lease_v1* l) -> int32_t {
                       *static_cast<std::string*>(ctx) = l->id;
                       return 0;
                     }};
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    bool ok = vt->escrow(self, "small", 1, sink, &err) == NP_OK &&
              vt->bind(self, id.c_str(), 0, "n1", "", &err) == NP_OK &&
              vt->advance(self, id.c_str(), 0, NP_PHASE_ASSIGNED, "", &err) == NP_OK &&
              vt->advance(self, id.c_str(), 0, NP_PHASE_LAUNCHING, "", &err) == NP_OK &&
              vt->heartbeat(self, id.c_str(), 0, &err) == NP_OK &&
              vt->release(self, id.c_str(), 0, NP_PHASE_DONE, &err) == NP_OK;
    if (!ok) return Fail(msg);
  }
  per_second = iterations / Seconds(start);
  vt->destroy(self);
  return 0;
}

// Directly through SOCI: the same statements, no ABI, no pool, no C++ ledger.
int RunDirect(const std::string& plugin, const std::string& dir, int iterations, double& per_second) {
  {
    // Create the schema the same way (through the plugin), then close it.
    Logger log(LogLevel::kError);
    loader::HostServices host(log, dir);
    auto lib = loader::PluginLibrary::Open(plugin, "", host.c());
    if (!lib.ok()) return Fail(lib.status().ToString());
    auto ledger = loader::LedgerAdapter::Create(*lib, "bench", ConfigFor("direct"), host.c(), false);
    if (!ledger.ok()) return Fail(ledger.status().ToString());
    ports::NodeRegistration reg{"n1", "docker", "", std::string(32, 'a'), "", 1'000'000, 1'000'000 * kGiB, 1};
    if (auto e = (*ledger)->RegisterNode(reg); !e.ok()) return Fail(e.status().ToString());
  }
  // The ledger's own session type, keeping no statement: every statement is
  // compiled for its one use, as plain SOCI does.
  ledger::Session s("sqlite3", "db=" + dir + "/direct.db");
  s << "PRAGMA busy_timeout = 5000";
  s << "PRAGMA journal_mode = WAL";
  s << "PRAGMA synchronous = FULL";
  auto tx = [&](auto&& body) {
    s << "BEGIN IMMEDIATE";
    body();
    s << "COMMIT";
  };
  long long now = 1, exp = 2, generation = 0, charges = 0;
  std::string id, mode, provider, host;
  // What the ledger's fence check reads: the whole lease row, by the same statement.
  auto load = [&] { ledger::SelectLeases(s, "WHERE id = :id", id); };
  // The counters escrow keeps its copies by (sql_ledger.h L6, L10).
  auto counters = [&] {
    s << "SELECT generation, charges FROM fleet WHERE id = 1", soci::into(generation), soci::into(charges);
  };
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%032x", i);
    id = buf;
    tx([&] {  // escrow: the fleet and what open leases hold are the ledger's copies while its counters stand
      s << "SELECT mode FROM admission WHERE id = 1", soci::into(mode);
      counters();
      s << "INSERT INTO leases (id, tier, node, target_node, phase, epoch, vcpu, memory, requested_vcpu, "
           "requested_memory, created_at, heartbeat_at, expires_at, guest_os, providers, site, macos_slot) "
           "VALUES (:id, 'small', '', 'n1', 'capacity', 0, 1, 1073741824, 1, 1073741824, :c, :h, :e, 'linux', "
           "'docker', '', 0)",
          soci::use(id), soci::use(now), soci::use(now), soci::use(exp);
    });
    tx([&] {  // bind
      load();
      s << "SELECT provider FROM nodes WHERE name = 'n1'", soci::into(provider);
      s << "SELECT provider, incarnation FROM nodes WHERE name = 'n1'", soci::into(provider), soci::into(host);
      s << "UPDATE leases SET node = 'n1', chosen_provider = 'docker', holder_incarnation = '' WHERE id = :id AND "
           "epoch = 0",
          soci::use(id);
      s << "UPDATE job_history SET node = 'n1' WHERE lease_id = :id", soci::use(id);
    });
    for (const char* to : {"assigned", "launching"}) {
      tx([&] {  // advance
        load();
        if (std::strcmp(to, "launching") == 0) s << "SELECT provider FROM nodes WHERE name = 'n1'", soci::into(provider);
        std::string p = to;
        s << "UPDATE leases SET phase = :p, heartbeat_at = :n, expires_at = :e, held_at = held_at WHERE id = :id "
             "AND epoch = 0",
            soci::use(p), soci::use(now), soci::use(exp), soci::use(id);
      });
    }
    tx([&] {  // heartbeat
      load();
      s << "UPDATE leases SET heartbeat_at = :n, expires_at = :e WHERE id = :id AND epoch = 0", soci::use(now),
          soci::use(exp), soci::use(id);
    });
    tx([&] {  // release
      load();
      s << "UPDATE leases SET phase = 'done' WHERE id = :id AND epoch = 0", soci::use(id);
      counters();
      s << "INSERT INTO job_history (lease_id, tier, node, run_id, request_id, conclusion, queued_at, finished_at, "
           "failure_reason) VALUES (:id, 'small', 'n1', 0, 0, 'done', :q, :f, '') ON CONFLICT (lease_id) DO UPDATE "
           "SET conclusion = excluded.conclusion",
          soci::use(id), soci::use(now), soci::use(now);
    });
  }
  per_second = iterations / Seconds(start);
  return 0;
}

// Directly through libpq, on the schema the plugin created for the run.
int RunDirectPostgres(const std::string& plugin, const std::string& dir, const std::string& dsn,
                      const std::string& schema, int iterations, double& per_second) {
  {
    Logger log(LogLevel::kError);
    loader::HostServices host(log, dir);
    auto lib = loader::PluginLibrary::Open(plugin, "", host.c());
    if (!lib.ok()) return Fail(lib.status().ToString());
    auto ledger = loader::LedgerAdapter::Create(*lib, "bench", ConfigFor("direct"), host.c(), false);
    if (!ledger.ok()) return Fail(ledger.status().ToString());
    ports::NodeRegistration reg{"n1", "docker", "", std::string(32, 'a'), "", 1'000'000, 1'000'000 * kGiB, 1};
    if (auto e = (*ledger)->RegisterNode(reg); !e.ok()) return Fail(e.status().ToString());
  }
  PGconn* c = PQconnectdb(dsn.c_str());
  if (PQstatus(c) != CONNECTION_OK) return Fail(std::string("libpq: ") + PQerrorMessage(c));
  bool ok = true;
  auto exec = [&](const std::string& sql, std::vector<std::string> params = {}) {
    std::vector<const char*> values;
    for (const auto& v : params) values.push_back(v.c_str());
    PGresult* r = PQexecParams(c, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                               nullptr, 0);
    const auto st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      std::fprintf(stderr, "libpq: %s: %s", sql.c_str(), PQerrorMessage(c));
      ok = false;
    }
    PQclear(r);
  };
  exec("SET search_path TO " + schema);
  const std::string lock = "SELECT pg_advisory_xact_lock(42)";
  auto tx = [&](auto&& body) {
    exec("BEGIN ISOLATION LEVEL READ COMMITTED");
    exec(lock);
    body();
    exec("COMMIT");
  };
  const std::string now = "1", exp = "2";
  const std::string load = "SELECT * FROM leases WHERE id = $1";
  const std::string counters = "SELECT generation, charges FROM fleet WHERE id = 1";  // sql_ledger.h L6, L10
  auto start = Clock::now();
  for (int i = 0; i < iterations && ok; ++i) {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%032x", i);
    const std::string id = buf;
    tx([&] {  // escrow: the fleet and what open leases hold are the ledger's copies while its counters stand
      exec("SELECT mode FROM admission WHERE id = 1");
      exec(counters);
      exec("INSERT INTO leases (id, tier, node, target_node, phase, epoch, vcpu, memory, requested_vcpu, "
           "requested_memory, created_at, heartbeat_at, expires_at, guest_os, providers, site, macos_slot) "
           "VALUES ($1, 'small', '', 'n1', 'capacity', 0, 1, 1073741824, 1, 1073741824, $2, $2, $3, 'linux', "
           "'docker', '', 0)",
           {id, now, exp});
    });
    tx([&] {  // bind
      exec(load, {id});
      exec("SELECT provider FROM nodes WHERE name = 'n1'");
      exec("SELECT provider, incarnation FROM nodes WHERE name = 'n1'");
      exec("UPDATE leases SET node = 'n1', chosen_provider = 'docker', holder_incarnation = '' WHERE id = $1 AND "
           "epoch = 0",
           {id});
      exec("UPDATE job_history SET node = 'n1' WHERE lease_id = $1", {id});
    });
    for (const char* to : {"assigned", "launching"}) {
      tx([&] {  // advance
        exec(load, {id});
        if (std::strcmp(to, "launching") == 0) exec("SELECT provider FROM nodes WHERE name = 'n1'");
        exec("UPDATE leases SET phase = $1, heartbeat_at = $2, expires_at = $3 WHERE id = $4 AND epoch = 0",
             {to, now, exp, id});
      });
    }
    tx([&] {  // heartbeat
      exec(load, {id});
      exec("UPDATE leases SET heartbeat_at = $1, expires_at = $2 WHERE id = $3 AND epoch = 0", {now, exp, id});
    });
    tx([&] {  // release
      exec(load, {id});
      exec("UPDATE leases SET phase = 'done' WHERE id = $1 AND epoch = 0", {id});
      exec(counters);
      exec("INSERT INTO job_history (lease_id, tier, node, run_id, request_id, conclusion, queued_at, finished_at, "
           "failure_reason) VALUES ($1, 'small', 'n1', 0, 0, 'done', $2, $2, '') ON CONFLICT (lease_id) DO UPDATE "
           "SET conclusion = excluded.conclusion",
           {id, now});
    });
  }
  per_second = iterations / Seconds(start);
  PQfinish(c);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string plugin, only;
  int iterations = 2000, threads = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--plugin") == 0 && i + 1 < argc) plugin = std::filesystem::absolute(argv[++i]);
    else if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) iterations = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) g_config = argv[++i];
    else return Fail(std::string("unknown argument ") + argv[i]);
  }
  if (plugin.empty() || iterations <= 0) return Fail("usage: ledger-lifecycle-bench --plugin PATH [--iterations N]");
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/np-bench-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return Fail("cannot make a temporary directory");
  double abi = 0, inline_abi = 0, direct = 0;
  bool abi_on_caller_thread = false;
  if (only.empty() || only == "abi") {
    if (int rc = RunAbi(plugin, tmpl, iterations, threads, abi, abi_on_caller_thread); rc != 0) return rc;
  }
  if (only.empty() || only == "inline") {
    if (int rc = RunAbiInline(plugin, tmpl, iterations, inline_abi); rc != 0) return rc;
  }
  const bool postgres = plugin.find("postgres") != std::string::npos;
  if (only.empty() || only == "direct") {
    int rc = 0;
    if (postgres) {
      // The dsn and schema the plugin was given, for libpq.
      auto field = [&](const char* key) {
        std::string c = ConfigFor("direct");
        size_t at = c.find(std::string("\"") + key + "\"");
        if (at == std::string::npos) return std::string();
        size_t open = c.find('"', c.find(':', at) + 1), close = c.find('"', open + 1);
        return c.substr(open + 1, close - open - 1);
      };
      rc = RunDirectPostgres(plugin, tmpl, field("dsn"), field("schema"), iterations, direct);
    } else {
      rc = RunDirect(plugin, tmpl, iterations, direct);
    }
    if (rc != 0) return rc;
  }
  std::filesystem::remove_all(tmpl);
  std::printf("lease lifecycles (escrow, bind, advance x2, heartbeat, release), %d each, %s\n", iterations,
              postgres ? "PostgreSQL" : "SQLite WAL synchronous=FULL");
  std::printf("  host adapter -> ABI (%s), %d caller thread%s: %8.1f lifecycles/s\n",
              abi_on_caller_thread ? "call_model: any thread" : "per-instance thread pool", threads,
              threads == 1 ? "" : "s", abi);
  std::printf("  ABI vtable on the caller's thread:             %8.1f lifecycles/s\n", inline_abi);
  std::printf("  the same SQL directly through %s:          %8.1f lifecycles/s\n", postgres ? "libpq" : "SOCI ", direct);
  if (direct > 0) {
    std::printf("  ratio adapter/direct: %.2f   ratio vtable/direct: %.2f\n", abi / direct, inline_abi / direct);
  }
  return 0;
}
