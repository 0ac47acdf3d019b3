// Opening and re-opening a session of the dialect's backend, always with its
// setup statements run on it (the writer's, a reader's, the checkpointer's),
// and opening a transaction on it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <soci/soci.h>

#include "dialect.h"

namespace nodeplane::ledger {

// A session of the ledger: SOCI's, with the statements it keeps compiled
// when its dialect keeps them (query.h, Q2). The statements are members, so
// they are finalized before the connection closes.
class Session : public soci::session {
 public:
  struct KeptStatement {
    std::unique_ptr<soci::statement> st;  // null until compiled
    bool in_use = false;
  };

  using soci::session::session;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The kept statement for `sql`, compiled on first use, marked in use; null
  // when this session keeps none or that statement is in use already (Q4).
  KeptStatement* Checkout(const std::string& sql);
  // Ends a use of a statement from Checkout: resets it and releases its
  // bindings (Q3). Never throws; a statement that cannot be reset is
  // dropped, to be compiled again on its next use.
  void Return(KeptStatement& k) noexcept;
  // Connects again, dropping every kept statement (Q5).
  void Reconnect() {
    kept_.clear();
    reconnect();
    ++connection_;
  }
  // Which connection of this session is open: 0, then one more at each
  // Reconnect. What was read on one may not hold on the next, which can be
  // to another server (a failover).
  uint64_t connection() const { return connection_; }
  void KeepStatements(void (*reset)(soci::statement&)) { reset_ = reset; }

 private:
  void (*reset_)(soci::statement&) = nullptr;
  uint64_t connection_ = 0;
  std::unordered_map<std::string, KeptStatement> kept_;  // nodes never move: Query holds them
};

// A new session on `connection` with `setup` run; throws soci_error.
inline std::unique_ptr<Session> OpenSession(const Dialect& d, const std::string& connection,
                                            const std::vector<std::string>& setup) {
  auto s = std::make_unique<Session>(d.soci_backend, connection);
  if (d.reset_statement) s->KeepStatements(d.reset_statement);
  if (d.on_connect) d.on_connect(*s);
  for (const std::string& stmt : setup) *s << stmt;
  return s;
}

// A session whose connection is known lost is established again, with
// `setup`, before its next transaction; if the database is still away this
// throws, which the caller reports as unavailable.
inline void EnsureConnected(Session& s, const Dialect& d, const std::vector<std::string>& setup) {
  if (!d.connection_lost || !d.connection_lost(s)) return;
  s.Reconnect();
  if (d.on_connect) d.on_connect(s);
  for (const std::string& stmt : setup) s << stmt;
}

// Opens a transaction with `begin`. A connection that the BEGIN itself finds
// lost (the database restarted since the session was last used) is
// established again and the BEGIN issued once more: nothing had run on it.
// This is the only check on an idle connection; asking the server before
// every transaction (SOCI's is_connected) would cost a round trip each time.
inline void Begin(Session& s, const Dialect& d, const std::vector<std::string>& setup,
                  const std::string& begin) {
  EnsureConnected(s, d, setup);
  try {
    s << begin;
    return;
  } catch (const soci::soci_error&) {
    if (!d.connection_lost || !d.connection_lost(s)) throw;
  }
  EnsureConnected(s, d, setup);
  s << begin;
}

}  // namespace nodeplane::ledger
