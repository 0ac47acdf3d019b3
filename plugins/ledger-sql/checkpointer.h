// Keeps the engine's housekeeping off the writer's path (sql_ledger.h L7).
//
// SQLite in WAL mode copies the log back into the database every so many
// pages, and by default the commit that crosses the mark does it while it
// holds the write lock: a few milliseconds to tens of milliseconds that every
// queued write then waits for. The Checkpointer runs the dialect's checkpoint
// statement on a session of its own instead, after every `every` commits and
// at least once a second while commits are pending; a passive checkpoint never
// waits for the writer nor makes it wait.
//
// A checkpoint that fails (the database busy, or away) is tried again at the
// next occasion; the log only grows meanwhile, up to the writer's own
// fallback mark.
//
// Thread-safe: Committed() may be called from any thread and never blocks on
// a checkpoint. Destruction stops the thread and joins it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include <soci/soci.h>

#include "dialect.h"
#include "session.h"

namespace nodeplane::ledger {

class Checkpointer {
 public:
  // Opens its session now (throws soci_error if it cannot).
  Checkpointer(const Dialect& dialect, const std::string& connection, uint64_t every);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // A write transaction committed.
  void Committed();

 private:
  void Run(std::stop_token stop);

  const std::string statement_;
  const uint64_t every_;
  std::unique_ptr<Session> session_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  uint64_t pending_ = 0;
  std::jthread thread_;  // last: started once everything it uses exists
};

}  // namespace nodeplane::ledger
