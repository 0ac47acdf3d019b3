#include "plane/clock.h"

#include <chrono>

#include "common/units.h"

namespace nodeplane::plane {

int64_t SystemClock::Now() const { return WallNowNs(); }

void SystemClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, int64_t deadline,
                            const std::function<bool()>& done) const {
  while (!done()) {
    int64_t left = deadline - Now();
    if (left <= 0) return;
    cv.wait_for(lock, std::chrono::nanoseconds(left));
  }
}

void FakeClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, int64_t deadline,
                          const std::function<bool()>& done) const {
  while (!done() && Now() < deadline) cv.wait_for(lock, std::chrono::milliseconds(1));
}

}  // namespace nodeplane::plane
