// The lease state machine and the predicates every store must compute the
// same way (billet-ledger.md §3.1). Pure functions: no SQL, no clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nodeplane/np_ledger_v1.h"
#include "plugin_time.h"

namespace nodeplane::ledger {

// Phases are stored as their names, so a person reading the database with
// sqlite3 or psql sees what a lease is doing.
const char* PhaseName(int32_t phase);
std::optional<int32_t> PhaseFromName(std::string_view name);

// done and failed: capacity released, no successor.
bool IsTerminal(int32_t phase);
// launching, online, busy: entering one needs a bound node and re-checks placement.
bool RequiresPlacement(int32_t phase);
// launching .. teardown: compute may exist, so expiry quarantines instead of failing.
bool HadCompute(int32_t phase);
// The edges of the state machine (a same-phase move is not an edge).
bool CanTransition(int32_t from, int32_t to);

// Providers whose compute runs on the registered host itself; a remote
// provider (ec2) needs a shape catalogue, which v1 of the store does not keep,
// so it is never placed.
bool RunsOnHost(std::string_view provider);

// The comma list stored with a lease; empty or malformed decodes to nothing,
// which fails closed (NP_NOT_PLACEABLE).
std::string EncodeProviders(const std::vector<std::string>& providers);
std::vector<std::string> DecodeProviders(std::string_view encoded);

// Reasons only the ledger itself may write.
inline constexpr const char* kReasonInventoryAbsence = "nodeplane:provisional:inventory-absence";
inline constexpr const char* kReasonForceReleased = "nodeplane:force-released";
bool IsReservedReason(std::string_view reason);

// Cache observation vocabularies (np_cache_observation_v1).
bool ValidImageCache(std::string_view token);
bool ValidActionsCache(std::string_view token);

// How long a quarantined lease must have been expired before an inventory
// that lacks it may free it.
inline constexpr int64_t kQuarantineGraceNs = 5 * plugins::kMinuteNs;
// How long a node must stay observed empty before a compute barrier counts it proved.
inline constexpr int64_t kBarrierGraceNs = 5 * plugins::kMinuteNs;
// The default macOS guest licence limit of an undeclared host.
inline constexpr uint32_t kDefaultMacOSVMLimit = 2;

}  // namespace nodeplane::ledger
