// Opening and re-opening a session of the dialect's backend, always with its
// setup statements run on it (the writer's, a reader's, the checkpointer's).
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

// A session whose connection was lost (a database restart) is established
// again, with `setup`, before its next transaction; if the database is
// still away this throws, which the caller reports as unavailable.
inline void EnsureConnected(soci::session& s, const Dialect& d, const std::vector<std::string>& setup) {
  if (s.is_connected()) return;
  s.reconnect();
  if (d.on_connect) d.on_connect(s);
  for (const std::string& stmt : setup) s << stmt;
}

}  // namespace nodeplane::ledger
