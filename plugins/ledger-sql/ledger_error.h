// The SQL ledger reports verdicts as the project's plugins do
// (plugins/common/plugin_error.h); what is its own is that the store's
// failures arrive as soci_error (a lost connection, a locked file, a full
// disk) and are an outage, never a verdict.
#pragma once

#include <soci/soci.h>

#include <string>

#include "plugin_error.h"

namespace nodeplane::ledger {

using LedgerError = plugins::PluginError;
using plugins::Fail;

// GuardedCall for the ledger's vtable and creates: a soci_error becomes
// NP_UNAVAILABLE (retryable) with `failed` before the store's own words,
// which name the host and the reason, never a password.
template <typename Body>
np_code LedgerCall(const char* plugin, np_error* err, const char* failed, Body&& body) {
  return plugins::GuardedCall(plugin, err, [&] {
    try {
      body();
    } catch (const soci::soci_error& e) {
      Fail(NP_UNAVAILABLE, std::string(failed) + e.get_error_message());
    }
  });
}

}  // namespace nodeplane::ledger
