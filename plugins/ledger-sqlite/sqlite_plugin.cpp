// ledger-sqlite: the embedded default ledger. One file, WAL, synchronous=FULL,
// one serialized writer (BEGIN IMMEDIATE), read-only reader sessions, and
// WAL checkpoints on a session of their own.
//
// Config ([plugins.NAME.config]):
//   path     the database file; relative paths are under the state directory
//            (default "ledger.db"). Created 0600.
//   readers  reader sessions, 1..64 (default 4)
#include <fcntl.h>
#include <unistd.h>

#include <sqlite3.h>

#include <cerrno>
#include <cstring>

#include "ledger_error.h"
#include "ledger_vtable.h"
#include "plugin_config.h"
#include "plugin_entry.h"
#include "plugin_time.h"
#include "replica_lock.h"
#include "sql_ledger.h"
#include "statement_reset.h"

namespace nodeplane::ledger {
namespace {

using plugins::PluginConfig;

constexpr const char* kName = "ledger-sqlite";

Dialect SqliteDialect() {
  Dialect d;
  d.name = "sqlite";
  d.soci_backend = "sqlite3";
  d.begin_write = "BEGIN IMMEDIATE";
  d.begin_read = "BEGIN";
  // julianday() counts days from noon, 24 November 4714 BC; 2440587.5 is the Unix epoch.
  d.clock_ns = "CAST((julianday('now') - 2440587.5) * 86400000000000.0 AS INTEGER)";
  // Checkpoints run beside the writer (checkpointer.h); the writer's own,
  // inside a commit, is only the fallback should those fall far behind.
  d.writer_setup = {"PRAGMA busy_timeout = 5000", "PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL",
                    "PRAGMA foreign_keys = ON", "PRAGMA wal_autocheckpoint = 4000"};
  d.reader_setup = {"PRAGMA busy_timeout = 5000", "PRAGMA query_only = ON"};
  d.checkpoint = "PRAGMA wal_checkpoint(PASSIVE)";
  d.reset_statement = &ResetSqliteStatement;  // statements are kept compiled per session (query.h, Q2)
  return d;
}

// The pragmas are read back: WAL silently degrading (a network filesystem)
// or a weaker synchronous setting must fail the open, not the data.
void VerifyPragmas(const std::string& path) {
  soci::session s("sqlite3", "db=" + path);
  std::string mode;
  long long sync = 0;
  s << "PRAGMA journal_mode", soci::into(mode);
  if (mode != "wal") Fail(NP_UNAVAILABLE, std::string(kName) + ": " + path + " is not in WAL mode (" + mode + ")");
  s << "PRAGMA synchronous = FULL";
  s << "PRAGMA synchronous", soci::into(sync);
  if (sync != 2) Fail(NP_UNAVAILABLE, std::string(kName) + ": " + path + " refused synchronous=FULL");
}

np_code Create(const np_host_v1* host, const char* json, uint64_t len, uint32_t flags, void** instance,
               np_error* err) {
  return LedgerCall(kName, err, "ledger-sqlite: the database failed: ", [&] {
    PluginConfig cfg(json, len, kName);
    std::string path = cfg.String("path", "ledger.db");
    int64_t readers = cfg.Integer("readers", 4, 1, 64);
    int64_t grace = cfg.Seconds("barrier_grace_seconds", kBarrierGraceNs / plugins::kSecondNs, 0, 86400);
    int64_t quarantine = cfg.Seconds("quarantine_grace_seconds", kQuarantineGraceNs / plugins::kSecondNs, 0, 86400);
    cfg.Finish();
    if (path.front() != '/') {
      if (host->state_dir == nullptr || host->state_dir[0] == '\0') {
        Fail(NP_INVALID, std::string(kName) + ": a relative path needs the host's state directory");
      }
      path = std::string(host->state_dir) + "/" + path;
    }
    if (flags & NP_CREATE_VALIDATE_ONLY) {
      *instance = nullptr;
      return;
    }
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      Fail(NP_UNAVAILABLE, std::string(kName) + ": cannot open " + path + ": " + std::strerror(errno));
    }
    ::close(fd);
    SqlLedger::Options o;
    o.guard = LockForThisProcess(path);  // before the schema is touched
    o.dialect = SqliteDialect();
    o.connection = "db=" + path;
    o.readers = static_cast<unsigned>(readers);
    o.barrier_grace_ns = grace;
    o.quarantine_grace_ns = quarantine;
    auto ledger = std::make_unique<SqlLedger>(host, std::move(o));
    VerifyPragmas(path);
    *instance = ledger.release();
  });
}

const np_ledger_v1 kVtable = MakeLedgerVtable(&Create);

const np_interface_desc kInterfaces[] = {
    {sizeof(np_interface_desc), NP_LEDGER_INTERFACE, NP_LEDGER_MAJOR, "sqlite", &kVtable, sizeof kVtable},
};

const np_plugin_desc kPlugin = {sizeof(np_plugin_desc), kName, NODEPLANE_PLUGIN_VERSION, 1, kInterfaces};

}  // namespace
}  // namespace nodeplane::ledger

extern "C" NP_EXPORT np_code np_plugin_entry(np_negotiation* n, np_error* err) {
  // Every session is used by one thread at a time (sql_ledger.h L1, L2), so
  // SQLite's per-call connection mutex is pure cost: an escrow reads the
  // whole fleet, several API calls per node. Multi-thread mode drops it. It
  // is process-wide and can only be chosen before SQLite initialises; if
  // something in the process got there first, SQLite stays serialized, which
  // is as correct and a little slower. Memory statistics go too: nothing
  // reads them, and they take one process-wide mutex on every allocation,
  // which sessions on different threads then queue for (a registration storm
  // made a futex call of it every few allocations).
  static const int configured =
      sqlite3_config(SQLITE_CONFIG_MULTITHREAD) | sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)configured;
  return nodeplane::plugins::ChooseAbi(n, err, nodeplane::ledger::kPlugin);
}
