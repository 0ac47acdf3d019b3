#include "checkpointer.h"

#include <chrono>

#include "session.h"

namespace nodeplane::ledger {

Checkpointer::Checkpointer(const Dialect& dialect, const std::string& connection, uint64_t every)
    : statement_(dialect.checkpoint),
      every_(every),
      session_(OpenSession(dialect, connection, dialect.writer_setup)),
      thread_([this](std::stop_token stop) { Run(stop); }) {}

Checkpointer::~Checkpointer() {
  thread_.request_stop();
  cv_.notify_all();
}

void Checkpointer::Committed() {
  std::lock_guard lock(mu_);
  if (++pending_ == every_) cv_.notify_all();
}

void Checkpointer::Run(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    cv_.wait_for(lock, stop, std::chrono::seconds(1), [&] { return pending_ >= every_; });
    if (stop.stop_requested()) return;
    if (pending_ == 0) continue;
    pending_ = 0;
    lock.unlock();
    try {
      *session_ << statement_;
    } catch (const std::exception&) {
      // Busy or away: the next occasion tries again (see the header).
    }
    lock.lock();
  }
}

}  // namespace nodeplane::ledger
