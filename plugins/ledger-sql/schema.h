// The ledger's schema: versioned, append-only migrations, each with a
// checksum of its text recorded when applied.
//
// Invariants:
//   M1. A migration, once released, is never edited: an applied migration
//       whose checksum differs from the binary's is refused.
//   M2. A ledger with a version this binary does not know was written by a
//       newer nodeplane and is refused (NP_SCHEMA_TOO_NEW), never migrated.
//   M3. Each migration applies in its own write transaction, with its row in
//       schema_migrations; a crash leaves the ledger at a whole version.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "dialect.h"
#include "session.h"

namespace nodeplane::ledger {

struct Migration {
  int64_t version;
  const char* name;
  const char* sql;  // statements separated by ";\n"
  // PostgreSQL's text where the engines spell it differently (a trigger
  // calls a function there); null when `sql` serves both.
  const char* postgresql_sql = nullptr;

  const char* SqlFor(const Dialect& d) const {
    return postgresql_sql != nullptr && d.name == "postgresql" ? postgresql_sql : sql;
  }
};

const std::vector<Migration>& Migrations();
// FNV-1a 64 of a migration's text, as 16 lowercase hex digits.
std::string MigrationChecksum(const char* sql);

// Brings the ledger to the newest schema, or throws LedgerError.
void Migrate(Session& s, const Dialect& d, int64_t now_ns);

}  // namespace nodeplane::ledger
