#include "ports/ledger.h"

#include "nodeplane/np_ledger_v1.h"

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

const char* EnrollmentStateName(EnrollmentState s) {
  switch (s) {
    case EnrollmentState::kPending: return "pending";
    case EnrollmentState::kApproved: return "approved";
    case EnrollmentState::kDenied: return "denied";
  }
  return "unknown";
}

bool Launched(Phase p) {
  return p == Phase::kLaunching || p == Phase::kOnline || p == Phase::kBusy || p == Phase::kCustody ||
         p == Phase::kTeardown;
}

std::optional<std::string> NormalizeSerial(const std::string& raw) {
  char out[NP_SERIAL_MAX_DIGITS + 1];
  if (np_serial_normalize(raw.c_str(), out, sizeof out) != NP_OK) return std::nullopt;
  return std::string(out);
}

std::vector<std::string> ProvidersOf(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) out.emplace_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace nodeplane::ports
