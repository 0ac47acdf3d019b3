// ledger-postgres: the ledger on PostgreSQL, for deployments that outgrow
// one machine or want a managed, replicated database. The SQL is the SQLite
// store's (plugins/ledger-sql); what differs is the Dialect below.
//
// Config ([plugins.NAME.config]):
//   dsn            libpq connection string without the password, e.g.
//                  "host=db.internal dbname=nodeplane user=nodeplane sslmode=verify-full"
//   password_file  a file holding the password (not readable by others), or
//   password_env   the name of an environment variable holding it; or neither
//                  (peer/trust authentication, a .pgpass file)
//   schema         the schema the ledger lives in, created if absent (default
//                  "nodeplane"); several deployments may share one database
//   pool           reader sessions, 1..64 (default 4); one writer besides
//   barrier_grace_seconds, quarantine_grace_seconds   as for ledger-sqlite
//
// Writes: every write transaction first takes a transaction-scoped advisory
// lock keyed by the schema, so two control planes on one database serialize
// their writes and can never escrow the same capacity twice. Reads: each is
// one REPEATABLE READ snapshot, so a quiescence or barrier answer is read
// from a single point in time. A lost connection makes that call
// NP_UNAVAILABLE (retryable) and is re-established by the next one.
// The password never appears in a log line or an error message.

#include <libpq-fe.h>
#include <soci/postgresql/soci-postgresql.h>

#include <cstdlib>
#include <cstring>

#include "ledger_error.h"
#include "ledger_vtable.h"
#include "plugin_config.h"
#include "plugin_entry.h"
#include "plugin_time.h"
#include "secret_file.h"
#include "session.h"
#include "sql_ledger.h"

namespace nodeplane::ledger {
namespace {

using plugins::PluginConfig;

constexpr const char* kName = "ledger-postgres";

// A stable 63-bit key for the schema's advisory lock (FNV-1a).
int64_t LockKey(const std::string& schema) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : "nodeplane.ledger:" + schema) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return static_cast<int64_t>(h >> 1);
}

// libpq hands every notice and warning the server sends (a schema that
// already exists, "terminating connection due to immediate shutdown" when the
// server stops) to a notice processor, whose default prints it on stderr,
// outside the host's log format. This one logs it as the event
// plugin.postgres.notice: a WARNING (or worse) at warn, anything else at debug.
void LogNotice(void* ctx, const char* message) {
  const auto* host = static_cast<const np_host_v1*>(ctx);
  std::string text = message != nullptr ? message : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const size_t colon = text.find(':');
  const std::string severity = colon == std::string::npos ? "" : text.substr(0, colon);
  std::string said = colon == std::string::npos ? text : text.substr(colon + 1);
  said.erase(0, said.find_first_not_of(' '));
  const bool warning = severity == "WARNING" || severity == "ERROR" || severity == "FATAL" || severity == "PANIC";
  const char* keys[] = {"severity", "message"};
  const char* values[] = {severity.c_str(), said.c_str()};
  host->log(host->ctx, warning ? NP_LOG_WARN : NP_LOG_DEBUG, "postgres.notice", keys, values, 2);
}

Dialect PostgresDialect(const std::string& schema, const np_host_v1* host) {
  Dialect d;
  d.name = "postgresql";
  d.soci_backend = "postgresql";
  d.begin_write = "BEGIN ISOLATION LEVEL READ COMMITTED";
  d.write_lock = "SELECT pg_advisory_xact_lock(" + std::to_string(LockKey(schema)) + ")";
  d.begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
  // clock_timestamp(), not now(): the time of the statement, not of the transaction's start.
  d.clock_ns = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS BIGINT)";
  d.on_connect = [host](soci::session& s) {
    auto* backend = static_cast<soci::postgresql_session_backend*>(s.get_backend());
    PQsetNoticeProcessor(backend->conn_, &LogNotice, const_cast<np_host_v1*>(host));
  };
  // A reconnect that failed leaves the session without a backend.
  d.connection_lost = [](soci::session& s) {
    auto* backend = static_cast<soci::postgresql_session_backend*>(s.get_backend());
    return backend == nullptr || PQstatus(backend->conn_) != CONNECTION_OK;
  };
  // A writer stopped inside a transaction (a replica SIGSTOPped, a paused
  // VM) keeps the advisory lock while its connection stays open, and every
  // other writer, a replica taking over included, would wait for it forever.
  // The server ends such a transaction after 5 s idle; the ledger's own write
  // transactions run their statements back to back, never pausing that long.
  d.writer_setup = {"SET search_path TO " + schema, "SET synchronous_commit TO on",
                    "SET idle_in_transaction_session_timeout = '5s'"};
  d.reader_setup = {"SET search_path TO " + schema};
  return d;
}

// libpq quoting for a conninfo value.
std::string Quoted(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

std::string ReadPassword(const std::string& file) {
  std::string text = plugins::ReadSecretFile(kName, "password_file", file, /*allow_group=*/true);
  return text.substr(0, text.find('\n'));
}

bool ValidSchema(const std::string& s) {
  if (s.empty() || s.size() > 63 || !(std::islower(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_')) {
      return false;
    }
  }
  return true;
}

np_code Create(const np_host_v1* host, const char* json, uint64_t len, uint32_t flags, void** instance,
               np_error* err) {
  return LedgerCall(kName, err, "ledger-postgres: cannot reach the database: ", [&] {
    PluginConfig cfg(json, len, kName);
    const std::string dsn = cfg.String("dsn", "", true);
    const std::string password_file = cfg.String("password_file", "");
    const std::string password_env = cfg.String("password_env", "");
    const std::string schema = cfg.String("schema", "nodeplane");
    const int64_t pool = cfg.Integer("pool", 4, 1, 64);
    const int64_t grace = cfg.Seconds("barrier_grace_seconds", kBarrierGraceNs / plugins::kSecondNs, 0, 86400);
    const int64_t quarantine = cfg.Seconds("quarantine_grace_seconds", kQuarantineGraceNs / plugins::kSecondNs, 0, 86400);
    cfg.Finish();
    if (dsn.find("password") != std::string::npos) {
      Fail(NP_INVALID, std::string(kName) + ": dsn must not carry the password; use password_file or password_env");
    }
    if (!password_file.empty() && !password_env.empty()) {
      Fail(NP_INVALID, std::string(kName) + ": password_file and password_env are exclusive");
    }
    if (!ValidSchema(schema)) {
      Fail(NP_INVALID, std::string(kName) + ": schema must be 1 to 63 of [a-z0-9_], not starting with a digit");
    }
    if (flags & NP_CREATE_VALIDATE_ONLY) {  // the config's shape only: no file, no connection
      *instance = nullptr;
      return;
    }
    std::string password;
    if (!password_file.empty()) password = ReadPassword(password_file);
    if (!password_env.empty()) {
      const char* v = std::getenv(password_env.c_str());
      if (v == nullptr) Fail(NP_INVALID, std::string(kName) + ": the environment has no " + password_env);
      password = v;
    }
    const std::string connection = dsn + (password.empty() ? "" : " password=" + Quoted(password));
    SqlLedger::Options o;
    o.dialect = PostgresDialect(schema, host);
    // The schema first, on a session of its own, under the ledger's lock:
    // replicas starting at once race on IF NOT EXISTS otherwise.
    const std::string key = std::to_string(LockKey(schema));
    OpenSession(o.dialect, connection,
                {"SELECT pg_advisory_lock(" + key + ")", "CREATE SCHEMA IF NOT EXISTS " + schema,
                 "SELECT pg_advisory_unlock(" + key + ")"});
    o.connection = connection;
    o.readers = static_cast<unsigned>(pool);
    o.barrier_grace_ns = grace;
    o.quarantine_grace_ns = quarantine;
    *instance = new SqlLedger(host, std::move(o));
  });
}

const np_ledger_v1 kVtable = MakeLedgerVtable(&Create);

const np_interface_desc kInterfaces[] = {
    {sizeof(np_interface_desc), NP_LEDGER_INTERFACE, NP_LEDGER_MAJOR, "postgresql", &kVtable, sizeof kVtable},
};

const np_plugin_desc kPlugin = {sizeof(np_plugin_desc), kName, NODEPLANE_PLUGIN_VERSION, 1, kInterfaces};

}  // namespace
}  // namespace nodeplane::ledger

extern "C" NP_EXPORT np_code np_plugin_entry(np_negotiation* n, np_error* err) {
  return nodeplane::plugins::ChooseAbi(n, err, nodeplane::ledger::kPlugin);
}
