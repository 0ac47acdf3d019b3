// How the project's plugins report a failure: thrown inside the plugin only
// and turned into an np_code by GuardedCall at its vtable; nothing C++
// crosses the ABI.
//
// G1. Every vtable function and every create runs its body in GuardedCall.
//     No plugin writes its own catch ladder: one place decides what each
//     exception means at the line.
// G2. Only NP_UNAVAILABLE is retryable, and it carries the retry_after_ns the
//     thrower knew (a Retry-After header, a session's expiry). Every other
//     code is a verdict: the same call fails the same way.
// G3. An exception that is not a PluginError is a defect of the plugin:
//     NP_INTERNAL, its text prefixed with the plugin's name. An outage a
//     library signals by its own exception type (SOCI's soci_error) is turned
//     into PluginError(NP_UNAVAILABLE) by a wrapper of that plugin family
//     before it reaches here (ledger-sql/ledger_error.h).
// G4. np_error is written only as far as the host's struct_size reaches, so
//     a host built before retry_after_ns existed is never overrun.
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

// Fills `err` from `e` (G2, G4).
inline np_code ReportError(np_error* err, const PluginError& e) {
  const bool outage = e.code() == NP_UNAVAILABLE;
  np_code rc = np_error_set(err, e.code(), outage ? 1 : 0, e.what());
  if (err != nullptr && err->struct_size >= offsetof(np_error, retry_after_ns) + sizeof(int64_t)) {
    err->retry_after_ns = outage ? e.retry_after_ns() : 0;
  }
  return rc;
}

// Runs a vtable function's body (G1-G3). Returns NP_OK when it returns.
template <typename Body>
np_code GuardedCall(const char* plugin, np_error* err, Body&& body) {
  try {
    body();
    return NP_OK;
  } catch (const PluginError& e) {
    return ReportError(err, e);
  } catch (const std::exception& e) {
    return np_error_set(err, NP_INTERNAL, 0, (std::string(plugin) + ": " + e.what()).c_str());
  } catch (...) {
    return np_error_set(err, NP_INTERNAL, 0, (std::string(plugin) + ": an unknown exception").c_str());
  }
}

}  // namespace nodeplane::plugins
