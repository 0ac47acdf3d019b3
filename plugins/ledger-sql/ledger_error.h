// How the SQL ledger reports a verdict internally. It is thrown inside the
// plugin only and turned into an np_code at the vtable (ledger_vtable.cpp);
// nothing C++ crosses the ABI.
#pragma once

#include <stdexcept>
#include <string>

#include "nodeplane/np_plugin.h"

namespace nodeplane::ledger {

class LedgerError : public std::runtime_error {
 public:
  LedgerError(np_code code, const std::string& message) : std::runtime_error(message), code_(code) {}
  np_code code() const { return code_; }

 private:
  np_code code_;
};

[[noreturn]] inline void Fail(np_code code, const std::string& message) { throw LedgerError(code, message); }

}  // namespace nodeplane::ledger
