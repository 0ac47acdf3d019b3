// Where the SQLite and PostgreSQL stores differ. Everything else (the schema,
// every statement) is the same text on both engines, but for the triggers of
// one migration (schema.h, Migration::postgresql_sql).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <soci/soci.h>

namespace nodeplane::ledger {

struct Dialect {
  std::string name;             // "sqlite", "postgresql"
  std::string soci_backend;     // "sqlite3", "postgresql"
  // Opens a write transaction that excludes every other writer of the same
  // ledger, in this process or another.
  std::string begin_write;      // "BEGIN IMMEDIATE" / "BEGIN"
  std::string write_lock;       // "" / "SELECT pg_advisory_xact_lock(...)"
  // Opens a read-only transaction that sees one snapshot.
  std::string begin_read;       // "BEGIN" / "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
  // Statements run once on every new session, one statement each.
  std::vector<std::string> writer_setup;
  std::vector<std::string> reader_setup;
  // Run on every session once it is connected, again after a reconnect,
  // before its setup statements (PostgreSQL routes libpq's notices to the
  // host's log); empty when the engine needs nothing.
  std::function<void(soci::session&)> on_connect;
  // Whether the session's connection is known to be lost, asked without a
  // round trip (libpq's status after a failed statement); empty when a
  // connection cannot be lost (SQLite).
  std::function<bool(soci::session&)> connection_lost;
  // The store's own clock, UTC nanoseconds, as a SQL expression: terms of
  // leadership are measured by it so replicas need not agree on the time.
  std::string clock_ns;
  // Housekeeping run on a session of its own after writes (checkpointer.h):
  // SQLite's "PRAGMA wal_checkpoint(PASSIVE)"; "" when the engine needs none.
  std::string checkpoint;
  // Resets a compiled statement so it can be bound and run again; set for an
  // engine whose statements are worth keeping compiled per session (SQLite:
  // query.h, Q2), null to run every statement as a one-time query.
  void (*reset_statement)(soci::statement&) = nullptr;
};

}  // namespace nodeplane::ledger
