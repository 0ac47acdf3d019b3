// The np_ledger_v1 vtable over SqlLedger, shared by the SQLite and PostgreSQL
// plugins. Each plugin supplies only `create` (its config and dialect); every
// other slot is here, and is where C++ stops: each one catches everything and
// answers an np_code.
#pragma once

#include "nodeplane/np_ledger_v1.h"

namespace nodeplane::ledger {

using CreateFn = np_code (*)(const np_host_v1* host, const char* config_json, uint64_t config_len, uint32_t flags,
                             void** instance, np_error* err);

np_ledger_v1 MakeLedgerVtable(CreateFn create);

}  // namespace nodeplane::ledger
