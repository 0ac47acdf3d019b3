#include "loader/host_services.h"

#include <chrono>
#include <string>
#include <vector>

#include "common/units.h"

namespace nodeplane::loader {

HostServices::HostServices(Logger& log, std::string state_dir, WallClock wall_clock)
    : log_(log), state_dir_(std::move(state_dir)), wall_clock_(std::move(wall_clock)), host_{} {
  host_.struct_size = sizeof(np_host_v1);
  host_.ctx = this;
  host_.log = &HostServices::Log;
  host_.wall_clock_ns = &HostServices::Wall;
  host_.monotonic_ns = &HostServices::Monotonic;
  host_.state_dir = state_dir_.c_str();
}

void HostServices::Log(void* ctx, int32_t level, const char* event, const char* const* keys,
                       const char* const* values, uint32_t n_fields) {
  auto* self = static_cast<HostServices*>(ctx);
  LogLevel lvl = level <= NP_LOG_DEBUG  ? LogLevel::kDebug
                 : level == NP_LOG_INFO ? LogLevel::kInfo
                 : level == NP_LOG_WARN ? LogLevel::kWarn
                                        : LogLevel::kError;
  if (!self->log_.Enabled(lvl)) return;
  // A plugin's fields, prefixed so they can never impersonate the host's.
  std::vector<std::string> names;
  names.reserve(n_fields);
  for (uint32_t i = 0; i < n_fields; ++i) names.push_back(std::string("plugin.") + (keys[i] ? keys[i] : ""));
  std::vector<LogField> fields;
  fields.reserve(n_fields);
  for (uint32_t i = 0; i < n_fields; ++i) fields.emplace_back(names[i], values[i] ? values[i] : "");
  std::string name = std::string("plugin.") + (event ? event : "event");
  self->log_.LogSpan(lvl, name, fields.data(), fields.size());
}

int64_t HostServices::Wall(void* ctx) {
  auto* self = static_cast<HostServices*>(ctx);
  if (self->wall_clock_) return self->wall_clock_();
  return WallNowNs();
}

int64_t HostServices::Monotonic(void*) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace nodeplane::loader
