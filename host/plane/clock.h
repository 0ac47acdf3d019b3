// The Plane's clock. Production uses the system clock; tests use a fake one
// they advance by hand (the seed's WithClock), so expiry, poll windows and
// command timeouts are observable without waiting them out.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace nodeplane::plane {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds since the Unix epoch.
  virtual int64_t Now() const = 0;
  // Waits on `cv` (with `lock` held) until `done()` or Now() >= deadline.
  virtual void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, int64_t deadline,
                         const std::function<bool()>& done) const = 0;
};

class SystemClock : public Clock {
 public:
  int64_t Now() const override;
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, int64_t deadline,
                 const std::function<bool()>& done) const override;
};

// A clock that moves only when told. Waiters re-check it every millisecond
// of real time, so an Advance() is noticed without any wake-up plumbing.
class FakeClock : public Clock {
 public:
  explicit FakeClock(int64_t start) : now_(start) {}
  int64_t Now() const override { return now_.load(); }
  void Advance(int64_t ns) { now_ += ns; }
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, int64_t deadline,
                 const std::function<bool()>& done) const override;

 private:
  std::atomic<int64_t> now_;
};

}  // namespace nodeplane::plane
