// One process per SQLite ledger: a SQLite file is one control plane's, and
// a second nodeplaned started on it (a copy of the config on the same
// machine, an [ha] attempt without PostgreSQL) must refuse to start rather
// than share the fleet's leases with the first.
//
// The lock is a POSIX record lock on "<database>-replica.lock", which the
// kernel drops when the process ends, however it ends. Record locks belong
// to the process, and closing any descriptor of the file drops them, so the
// process keeps one descriptor per file, shared by every instance that has
// the file open (the conformance suite opens two instances on one file to
// stand for two threads of the host).
#pragma once

#include <memory>
#include <string>

namespace nodeplane::ledger {

// Holds the lock while any copy of the pointer lives. Throws LedgerError
// (NP_CONFLICT) naming the other process when one holds it.
std::shared_ptr<const void> LockForThisProcess(const std::string& database);

}  // namespace nodeplane::ledger
