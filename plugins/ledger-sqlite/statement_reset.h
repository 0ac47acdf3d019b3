// Resets a compiled SQLite statement behind a SOCI statement, so the ledger
// can keep it and run it again (query.h, Q2-Q3). Its own file because SOCI's
// SQLite header wraps <sqlite3.h> in a namespace of its own, which cannot
// share a translation unit with the plain header the plugin uses elsewhere.
#pragma once

#include <soci/soci.h>

namespace nodeplane::ledger {

void ResetSqliteStatement(soci::statement& st);

}  // namespace nodeplane::ledger
