#include "ports/ledger.h"

namespace nodeplane::ports {

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kCapacity: return "capacity";
    case Phase::kAssigned: return "assigned";
    case Phase::kLaunching: return "launching";
    case Phase::kOnline: return "online";
    case Phase::kBusy: return "busy";
    case Phase::kCustody: return "custody";
    case Phase::kTeardown: return "teardown";
    case Phase::kQuarantine: return "quarantine";
    case Phase::kDone: return "done";
    case Phase::kFailed: return "failed";
  }
  return "unknown";
}

}  // namespace nodeplane::ports
