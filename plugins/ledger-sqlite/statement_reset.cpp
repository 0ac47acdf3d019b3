#include "statement_reset.h"

#include <soci/sqlite3/soci-sqlite3.h>

namespace nodeplane::ledger {

void ResetSqliteStatement(soci::statement& st) {
  auto* backend = static_cast<soci::sqlite3_statement_backend*>(st.get_backend());
  if (backend != nullptr && backend->stmt_ != nullptr) sqlite_api::sqlite3_reset(backend->stmt_);
}

}  // namespace nodeplane::ledger
