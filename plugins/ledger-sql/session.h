// Opening and re-opening a session of the dialect's backend, always with its
// setup statements run on it (the writer's, a reader's, the checkpointer's),
// and opening a transaction on it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "dialect.h"

namespace nodeplane::ledger {

// A new session on `connection` with `setup` run; throws soci_error.
inline std::unique_ptr<soci::session> OpenSession(const Dialect& d, const std::string& connection,
                                                  const std::vector<std::string>& setup) {
  auto s = std::make_unique<soci::session>(d.soci_backend, connection);
  if (d.on_connect) d.on_connect(*s);
  for (const std::string& stmt : setup) *s << stmt;
  return s;
}

// A session whose connection is known lost is established again, with
// `setup`, before its next transaction; if the database is still away this
// throws, which the caller reports as unavailable.
inline void EnsureConnected(soci::session& s, const Dialect& d, const std::vector<std::string>& setup) {
  if (!d.connection_lost || !d.connection_lost(s)) return;
  s.reconnect();
  if (d.on_connect) d.on_connect(s);
  for (const std::string& stmt : setup) s << stmt;
}

// Opens a transaction with `begin`. A connection that the BEGIN itself finds
// lost (the database restarted since the session was last used) is
// established again and the BEGIN issued once more: nothing had run on it.
// This is the only check on an idle connection; asking the server before
// every transaction (SOCI's is_connected) would cost a round trip each time.
inline void Begin(soci::session& s, const Dialect& d, const std::vector<std::string>& setup,
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
