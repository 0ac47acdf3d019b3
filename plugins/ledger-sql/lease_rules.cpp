#include "lease_rules.h"

#include <array>

namespace nodeplane::ledger {
namespace {

constexpr std::array<const char*, 11> kNames = {"",       "capacity", "assigned", "launching",  "online", "busy",
                                                "custody", "teardown", "quarantine", "done",     "failed"};

}  // namespace

const char* PhaseName(int32_t phase) {
  return phase >= 1 && phase <= 10 ? kNames[static_cast<size_t>(phase)] : "";
}

std::optional<int32_t> PhaseFromName(std::string_view name) {
  for (int32_t p = 1; p <= 10; ++p) {
    if (name == kNames[static_cast<size_t>(p)]) return p;
  }
  return std::nullopt;
}

bool IsTerminal(int32_t phase) { return phase == NP_PHASE_DONE || phase == NP_PHASE_FAILED; }

bool RequiresPlacement(int32_t phase) {
  return phase == NP_PHASE_LAUNCHING || phase == NP_PHASE_ONLINE || phase == NP_PHASE_BUSY;
}

bool HadCompute(int32_t phase) { return phase >= NP_PHASE_LAUNCHING && phase <= NP_PHASE_TEARDOWN; }

bool CanTransition(int32_t from, int32_t to) {
  if (IsTerminal(from) || from == to) return false;
  if (IsTerminal(to)) return from >= NP_PHASE_CAPACITY && from <= NP_PHASE_QUARANTINE;
  switch (from) {
    case NP_PHASE_CAPACITY: return to == NP_PHASE_ASSIGNED;
    case NP_PHASE_ASSIGNED: return to == NP_PHASE_LAUNCHING;
    case NP_PHASE_LAUNCHING: return to == NP_PHASE_ONLINE || to == NP_PHASE_CUSTODY || to == NP_PHASE_TEARDOWN || to == NP_PHASE_QUARANTINE;
    case NP_PHASE_ONLINE: return to == NP_PHASE_BUSY || to == NP_PHASE_CUSTODY || to == NP_PHASE_TEARDOWN || to == NP_PHASE_QUARANTINE;
    case NP_PHASE_BUSY: return to == NP_PHASE_CUSTODY || to == NP_PHASE_TEARDOWN || to == NP_PHASE_QUARANTINE;
    case NP_PHASE_CUSTODY: return to == NP_PHASE_TEARDOWN || to == NP_PHASE_QUARANTINE;
    case NP_PHASE_TEARDOWN: return to == NP_PHASE_QUARANTINE;
    default: return false;
  }
}

bool RunsOnHost(std::string_view provider) {
  return provider == "process" || provider == "container" || provider == "docker" || provider == "firecracker" ||
         provider == "tart";
}

std::string EncodeProviders(const std::vector<std::string>& providers) {
  std::string out;
  for (const std::string& p : providers) {
    if (!out.empty()) out += ',';
    out += p;
  }
  return out;
}

std::vector<std::string> DecodeProviders(std::string_view encoded) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= encoded.size()) {
    size_t comma = encoded.find(',', start);
    std::string_view part = encoded.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (part.empty()) return {};  // malformed: fail closed
    out.emplace_back(part);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool IsReservedReason(std::string_view reason) { return reason.substr(0, 10) == "nodeplane:"; }

bool ValidImageCache(std::string_view t) { return t == "warm" || t == "cold" || t == "pulled"; }

bool ValidActionsCache(std::string_view t) { return t == "intercepted" || t == "bypassed" || t == "disabled"; }

}  // namespace nodeplane::ledger
