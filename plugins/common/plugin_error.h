// How the project's plugins report a failure internally: thrown inside the
// plugin only and turned into an np_code at its vtable; nothing C++ crosses
// the ABI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "nodeplane/np_plugin.h"

namespace nodeplane::plugins {

class PluginError : public std::runtime_error {
 public:
  PluginError(np_code code, const std::string& message, int64_t retry_after_ns = 0)
      : std::runtime_error(message), code_(code), retry_after_ns_(retry_after_ns) {}
  np_code code() const { return code_; }
  // With NP_UNAVAILABLE: when trying again makes sense (0: no hint).
  int64_t retry_after_ns() const { return retry_after_ns_; }

 private:
  np_code code_;
  int64_t retry_after_ns_;
};

[[noreturn]] inline void Fail(np_code code, const std::string& message) { throw PluginError(code, message); }

// Fills `err` from `e` at a vtable boundary: an outage is retryable and
// carries its hint; every other code is a verdict.
inline np_code ReportError(np_error* err, const PluginError& e) {
  np_code rc = np_error_set(err, e.code(), e.code() == NP_UNAVAILABLE ? 1 : 0, e.what());
  if (err != nullptr && err->struct_size >= offsetof(np_error, retry_after_ns) + sizeof(int64_t)) {
    err->retry_after_ns = e.retry_after_ns();
  }
  return rc;
}

// Runs a vtable function's body: a PluginError becomes its np_code, any
// other exception NP_INTERNAL prefixed with the plugin's name. Nothing C++
// leaves the plugin.
template <typename Body>
np_code GuardedCall(const char* plugin, np_error* err, Body&& body) {
  try {
    body();
    return NP_OK;
  } catch (const PluginError& e) {
    return ReportError(err, e);
  } catch (const std::exception& e) {
    return np_error_set(err, NP_INTERNAL, 0, (std::string(plugin) + ": " + e.what()).c_str());
  }
}

}  // namespace nodeplane::plugins
