// Every ledger statement with bound values or rows to fetch is built here.
//
// Design notes:
//   Q1. On PostgreSQL a statement is a one-time query. SOCI's
//       `session.prepare << sql` makes a server-side prepared statement,
//       three round trips for a statement run once (PQprepare,
//       PQexecPrepared, and DEALLOCATE when the statement object is
//       destroyed); a one-time query is one (PQexecParams), what a libpq
//       caller issues.
//   Q2. On SQLite compiling a statement is most of what running it costs
//       (sqlite3_prepare_v2 was 15% of the control plane's samples while
//       dispatching at 10,000 nodes: docs/performance.md), so each session
//       keeps the statements it compiled, by their text, and binds new
//       values to them on their next use (Dialect::reset_statement says
//       whether an engine does this).
//   Q3. A kept statement is reset when its use ends, even by an exception,
//       so it never holds a read snapshot or a lock past that use: a WAL
//       checkpoint is never kept waiting by an idle statement.
//   Q4. A statement in use is not handed out again: a second use of the same
//       text while the first is open runs as a one-time query.
//   Q5. A session that reconnects forgets its statements, which belonged to
//       the old connection (session.h, EnsureConnected).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include <soci/soci.h>

#include "session.h"

namespace nodeplane::ledger {

// Exchanges `exchanges` (soci::into, soci::use; uses bind by position, in
// order) with `st`.
template <typename... E>
void Exchange(soci::statement& st, E&&... exchanges) {
  (st.exchange(std::forward<E>(exchanges)), ...);
}

// One use of a statement: the session's kept statement of `sql` (Q2), or a
// one-time query (Q1, Q4). Give its elements to the constructor, which binds
// them; or, when they are exchanged one by one, construct it kUnbound,
// exchange them with *q, then Bind(). Then execute.
class Query {
 public:
  struct Unbound {};
  static constexpr Unbound kUnbound{};

  Query(Unbound, Session& s, const std::string& sql) : session_(s), kept_(s.Checkout(sql)) {
    if (kept_ == nullptr) {
      one_time_.emplace(s);
      sql_ = sql;
    }
  }
  // Exchanges `exchanges` (soci::into, soci::use; uses bind by position, in
  // order), none or many, and binds.
  template <typename... E>
  Query(Session& s, const std::string& sql, E&&... exchanges) : Query(kUnbound, s, sql) {
    Exchange(**this, std::forward<E>(exchanges)...);
    Bind();
  }
  ~Query() {
    if (kept_ != nullptr) session_.Return(*kept_);  // Q3
  }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  // Once every element is exchanged.
  void Bind() {
    if (one_time_) {
      one_time_->alloc();
      one_time_->prepare(sql_, soci::details::st_one_time_query);
    }
    (**this).define_and_bind();
  }

  soci::statement& operator*() { return kept_ != nullptr ? *kept_->st : *one_time_; }
  soci::statement* operator->() { return &**this; }

 private:
  Session& session_;
  Session::KeptStatement* kept_;
  std::optional<soci::statement> one_time_;
  std::string sql_;  // a one-time query's, prepared by Bind()
};

}  // namespace nodeplane::ledger
