// A mutex the thread-safety analysis can see (common/thread_annotations.h),
// and its scoped lock. The lock hands condition variables and the Plane's
// Clock the std::unique_lock they wait with; a wait releases and retakes the
// mutex inside the standard library, where the analysis does not look, and
// returns with it held, as the analysis assumes.
#pragma once

#include <mutex>

#include "common/thread_annotations.h"

namespace nodeplane {

class NP_CAPABILITY("mutex") Mutex {
 public:
  void Lock() NP_ACQUIRE() { mu_.lock(); }
  void Unlock() NP_RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction, except between an Unlock()
// and the next Lock() (for work that must run with the mutex free).
class NP_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) NP_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() NP_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() NP_RELEASE() { lock_.unlock(); }
  void Lock() NP_ACQUIRE() { lock_.lock(); }
  // For std::condition_variable::wait and Clock::WaitUntil only.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace nodeplane
