// Group commit for the one writer session (sql_ledger.h L8).
//
// Every write is a job. A thread that arrives while no batch is running
// leads: it takes every job queued so far (its own among them) and runs them
// in one transaction, in arrival order, each inside a savepoint of its own,
// then commits once. Jobs that arrive meanwhile wait for the next batch,
// which one of them leads. Under load a batch shares one commit (one
// fdatasync on SQLite) among many writes; alone, a job runs in a transaction
// of its own, with no savepoint, exactly as before.
//
// Invariants:
//   G1. Jobs run one after another on the writer session and see the effects
//       of the jobs before them in the batch: the serial order is the
//       arrival order, as if each had its own transaction.
//   G2. A job that throws leaves nothing behind: its savepoint is rolled
//       back, and the jobs around it are unaffected. Its exception is
//       rethrown to its own caller only.
//   G3. A job returns only after its batch committed (its write is durable)
//       or failed. When the transaction itself fails (BEGIN, a savepoint, or
//       COMMIT), every job of the batch that had not failed on its own gets
//       that failure: nothing of the batch was committed.
//   G4. A batch's transaction that rolls back calls `on_rollback`, so
//       anything kept in memory from inside it can be dropped (the fleet
//       copy, L6).
//
// Thread-safe: Run() may be called from any number of threads.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "dialect.h"
#include "session.h"

namespace nodeplane::ledger {

class GroupCommit {
 public:
  using Job = std::function<void(Session&)>;  // throws to refuse

  // `writer` and `session_mu` are borrowed: the session every batch runs on,
  // and the mutex that guards it against its other users (migrations).
  // `on_commit` runs after every commit, `on_rollback` after every
  // transaction that rolled back; both with `session_mu` held, and neither
  // may throw.
  GroupCommit(const Dialect& dialect, Session& writer, std::mutex& session_mu, std::function<void()> on_commit,
              std::function<void()> on_rollback);

  // Runs `job` in the next batch; returns once the batch ended, rethrowing
  // what the job threw or what failed the batch (G2, G3).
  void Run(const Job& job);
  // Jobs waiting for the next batch (a test hook).
  size_t queued() const;

 private:
  struct Entry {
    const Job* job;
    std::exception_ptr error;
    bool done = false;
  };
  void RunBatch(const std::vector<Entry*>& batch);

  const Dialect& dialect_;
  Session& writer_;
  std::mutex& session_mu_;
  std::function<void()> on_commit_;
  std::function<void()> on_rollback_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry*> queued_;  // guarded by mu_
  bool leading_ = false;        // guarded by mu_: a batch is running
};

}  // namespace nodeplane::ledger
