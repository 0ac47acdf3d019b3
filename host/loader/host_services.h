// The services the host lends every plugin (np_host_v1): logging into the
// host's Logger, and the clocks. Tests and the conformance suite swap the
// wall clock for a fake one, which is how a plugin's time-dependent rules
// (TTL, grace periods, revocation cut-offs) become testable.
//
// Lifetime: a HostServices must outlive every plugin instance created with
// it. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/log.h"
#include "nodeplane/np_plugin.h"

namespace nodeplane::loader {

class HostServices {
 public:
  using WallClock = std::function<int64_t()>;  // UTC nanoseconds

  // `log` is borrowed; `state_dir` is told to plugins for their relative
  // paths. An empty `wall_clock` means the system clock.
  HostServices(Logger& log, std::string state_dir, WallClock wall_clock = {});
  HostServices(const HostServices&) = delete;
  HostServices& operator=(const HostServices&) = delete;

  const np_host_v1* c() const { return &host_; }

 private:
  static void Log(void* ctx, int32_t level, const char* event, const char* const* keys,
                  const char* const* values, uint32_t n_fields);
  static int64_t Wall(void* ctx);
  static int64_t Monotonic(void* ctx);

  Logger& log_;
  std::string state_dir_;
  WallClock wall_clock_;
  np_host_v1 host_;
};

}  // namespace nodeplane::loader
