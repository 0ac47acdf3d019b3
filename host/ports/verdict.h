// The ports' verdicts: why a port call failed, finer than Status::code(), in
// the host's own words. A caller that branches on why (a stale epoch, a lease
// an operator asked back, a node that registered again) asks Is(status, v);
// the numbers are the host's, not the plugin ABI's: the loader maps a
// plugin's NP_* code onto them once (loader/plugin_call.h, VerdictOf), and
// in-memory fakes report them directly.
//
// Status::detail() holds the verdict; the Plane's own verdicts
// (plane/errors.h) are numbered from 1001, so the two never meet.
#pragma once

#include <cstdint>
#include <utility>

#include "common/status.h"

namespace nodeplane::ports {

enum class Verdict : int32_t {
  kNone = 0,
  kNotFound = 101,         // no such thing (a missing or ended lease)
  kConflict,               // collides with what is recorded
  kFenced,                 // a stale epoch: the caller no longer holds it
  kUnsupported,            // an optional operation this store does not offer
  kBadTransition,          // the lease's phase cannot move that way
  kNoCapacity,             // nothing fits
  kUnknownTier,            // the tier is not in the catalogue
  kWrongNode,              // the lease is placed on another node
  kWrongProvider,          // the node's provider does not serve the lease
  kWrongSite,              // the node is not in the lease's site
  kGuestOsNotAllowed,      // the node does not run the tier's guest OS
  kNotPlaced,              // the phase needs a node and the lease has none
  kNotPlaceable,           // the lease's provider list cannot be read
  kForceRelease,           // an operator asked the holder to give the lease up
  kWithdrawalStale,        // a withdrawal from a process no longer registered
  kAdmissionSealed,        // the deployment takes no new work
  kBadJoinToken,           // unknown, spent or expired: one verdict for all three
  kEnrollmentConflict,     // another key holds a pending or approved request
  kParentRevoked,          // a renewal whose parent was revoked meanwhile
  kSchemaTooNew,           // the store was written by a newer version
  kDeregistered,           // the lease's runner left the forge: stop its compute, release the lease
};

inline bool Is(const Status& s, Verdict v) { return s.detail() == static_cast<int32_t>(v); }
inline Status WithVerdict(Status s, Verdict v) { return std::move(s).WithDetail(static_cast<int32_t>(v)); }

}  // namespace nodeplane::ports
