// Runs a test out of file descriptors: the limit is lowered to just above a
// descriptor the test holds, so the process has none left for a listener's
// accept, and put back when the guard goes (even on a failed ASSERT).
#pragma once

#include <sys/resource.h>

namespace nodeplane::testing {

class DescriptorLimit {
 public:
  DescriptorLimit() { ::getrlimit(RLIMIT_NOFILE, &saved_); }
  ~DescriptorLimit() { Restore(); }
  DescriptorLimit(const DescriptorLimit&) = delete;
  DescriptorLimit& operator=(const DescriptorLimit&) = delete;

  // No descriptor above `highest` can be opened; true if the limit took.
  bool ExhaustAbove(int highest) {
    rlimit tight{static_cast<rlim_t>(highest) + 1, saved_.rlim_max};
    return ::setrlimit(RLIMIT_NOFILE, &tight) == 0;
  }
  bool Restore() { return ::setrlimit(RLIMIT_NOFILE, &saved_) == 0; }

 private:
  rlimit saved_{};
};

}  // namespace nodeplane::testing
