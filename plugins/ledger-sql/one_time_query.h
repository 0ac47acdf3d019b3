// Every ledger statement with bound values or rows to fetch is built here.
//
// Why not SOCI's `session.prepare << sql`: that makes a server-side prepared
// statement, which on PostgreSQL costs three round trips for a statement the
// ledger runs once (PQprepare, PQexecPrepared, and DEALLOCATE when the
// statement object is destroyed). A one-time query is one round trip
// (PQexecParams), what a libpq caller issues. On SQLite the two are the same
// (sqlite3_prepare_v2, step, finalize).
#pragma once

#include <string>
#include <utility>

#include <soci/soci.h>

namespace nodeplane::ledger {

// Exchanges `exchanges` (soci::into, soci::use; uses bind by position, in
// order) with `st`.
template <typename... E>
void Exchange(soci::statement& st, E&&... exchanges) {
  (st.exchange(std::forward<E>(exchanges)), ...);
}

// Makes `st`, whose into and use elements are already exchanged, ready for
// execute() as a one-time query of `sql`.
inline void PrepareOneTime(soci::statement& st, const std::string& sql) {
  st.alloc();
  st.prepare(sql, soci::details::st_one_time_query);
  st.define_and_bind();
}

// A one-time query of `sql` with `exchanges` (soci::into, soci::use; uses
// bind by position, in order), ready for execute().
template <typename... E>
soci::statement OneTimeQuery(soci::session& s, const std::string& sql, E&&... exchanges) {
  soci::statement st(s);
  Exchange(st, std::forward<E>(exchanges)...);
  PrepareOneTime(st, sql);
  return st;
}

}  // namespace nodeplane::ledger
