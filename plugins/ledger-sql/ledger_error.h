// The SQL ledger reports verdicts as the project's plugins do
// (plugins/common/plugin_error.h).
#pragma once

#include "plugin_error.h"

namespace nodeplane::ledger {

using LedgerError = plugins::PluginError;
using plugins::Fail;

}  // namespace nodeplane::ledger
