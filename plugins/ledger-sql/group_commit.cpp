#include "group_commit.h"

#include "session.h"

namespace nodeplane::ledger {
namespace {

// One failure reaches several callers, rethrown on their threads at once,
// and soci_error builds its message lazily (a shared one raced, ASan found;
// a copy still shares its message buffer): each caller gets a new error
// made from the message alone.
std::exception_ptr OwnCopy(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const soci::soci_error& x) {
    return std::make_exception_ptr(soci::soci_error(x.get_error_message()));
  } catch (...) {
    return std::current_exception();
  }
}

}  // namespace

GroupCommit::GroupCommit(const Dialect& dialect, Session& writer, std::mutex& session_mu,
                         std::function<void()> on_commit, std::function<void()> on_rollback)
    : dialect_(dialect),
      writer_(writer),
      session_mu_(session_mu),
      on_commit_(std::move(on_commit)),
      on_rollback_(std::move(on_rollback)) {}

void GroupCommit::Run(const Job& job) {
  Entry entry{&job, nullptr};
  std::unique_lock lock(mu_);
  queued_.push_back(&entry);
  cv_.wait(lock, [&] { return entry.done || !leading_; });
  if (!entry.done) {
    leading_ = true;
    std::vector<Entry*> batch;
    batch.swap(queued_);
    lock.unlock();
    RunBatch(batch);
    lock.lock();
    for (Entry* e : batch) e->done = true;
    leading_ = false;
    cv_.notify_all();
  }
  if (entry.error) std::rethrow_exception(entry.error);
}

size_t GroupCommit::queued() const {
  std::lock_guard lock(mu_);
  return queued_.size();
}

void GroupCommit::RunBatch(const std::vector<Entry*>& batch) {
  std::lock_guard lock(session_mu_);
  Session& s = writer_;
  // The transaction failed as a whole (G3): whoever had not failed on their
  // own gets why, and nothing of the batch stays.
  auto fail_batch = [&](std::exception_ptr why) {
    for (Entry* e : batch) {
      if (!e->error) e->error = OwnCopy(why);
    }
    try {
      s << "ROLLBACK";
    } catch (...) {
    }
    on_rollback_();
  };
  try {
    Begin(s, dialect_, dialect_.writer_setup, dialect_.begin_write);
    if (!dialect_.write_lock.empty()) s << dialect_.write_lock;
  } catch (...) {
    return fail_batch(std::current_exception());
  }
  if (batch.size() == 1) {  // alone: its own transaction, no savepoint
    Entry& e = *batch.front();
    try {
      (*e.job)(s);
    } catch (...) {
      e.error = std::current_exception();
      return fail_batch(e.error);
    }
  } else {
    for (Entry* e : batch) {
      try {
        s << "SAVEPOINT np_write";
      } catch (...) {
        return fail_batch(std::current_exception());
      }
      try {
        (*e->job)(s);
        s << "RELEASE SAVEPOINT np_write";
      } catch (...) {
        e->error = std::current_exception();
        try {
          s << "ROLLBACK TO SAVEPOINT np_write";
          s << "RELEASE SAVEPOINT np_write";
        } catch (...) {  // the engine abandoned the whole transaction
          return fail_batch(std::current_exception());
        }
      }
    }
  }
  try {
    s << "COMMIT";
  } catch (...) {
    return fail_batch(std::current_exception());
  }
  on_commit_();
}

}  // namespace nodeplane::ledger
