#include "loader/plugin_call.h"

namespace nodeplane::loader {

Code CodeOf(np_code rc) {
  switch (rc) {
    case NP_OK: return Code::kOk;
    case NP_INVALID: return Code::kInvalid;
    case NP_NOT_FOUND: return Code::kNotFound;
    case NP_FENCED: return Code::kFenced;
    case NP_UNAVAILABLE: return Code::kUnavailable;
    case NP_REFUSED:
    case NP_SCHEMA_TOO_NEW:
    case NP_BAD_JOIN_TOKEN:
    case NP_PARENT_REVOKED:
    case NP_ADMISSION_SEALED: return Code::kRefused;
    case NP_CONFLICT:
    case NP_BAD_TRANSITION:
    case NP_NO_CAPACITY:
    case NP_UNKNOWN_TIER:
    case NP_WRONG_NODE:
    case NP_WRONG_PROVIDER:
    case NP_WRONG_SITE:
    case NP_GUEST_OS_NOT_ALLOWED:
    case NP_NOT_PLACED:
    case NP_NOT_PLACEABLE:
    case NP_FORCE_RELEASE:
    case NP_DEREGISTERED:
    case NP_WITHDRAWAL_STALE:
    case NP_ENROLLMENT_CONFLICT: return Code::kConflict;
    default: return Code::kInternal;
  }
}

ports::Verdict VerdictOf(np_code rc) {
  using ports::Verdict;
  switch (rc) {
    case NP_NOT_FOUND: return Verdict::kNotFound;
    case NP_CONFLICT: return Verdict::kConflict;
    case NP_FENCED: return Verdict::kFenced;
    case NP_UNSUPPORTED: return Verdict::kUnsupported;
    case NP_BAD_TRANSITION: return Verdict::kBadTransition;
    case NP_NO_CAPACITY: return Verdict::kNoCapacity;
    case NP_UNKNOWN_TIER: return Verdict::kUnknownTier;
    case NP_WRONG_NODE: return Verdict::kWrongNode;
    case NP_WRONG_PROVIDER: return Verdict::kWrongProvider;
    case NP_WRONG_SITE: return Verdict::kWrongSite;
    case NP_GUEST_OS_NOT_ALLOWED: return Verdict::kGuestOsNotAllowed;
    case NP_NOT_PLACED: return Verdict::kNotPlaced;
    case NP_NOT_PLACEABLE: return Verdict::kNotPlaceable;
    case NP_FORCE_RELEASE: return Verdict::kForceRelease;
    case NP_WITHDRAWAL_STALE: return Verdict::kWithdrawalStale;
    case NP_ADMISSION_SEALED: return Verdict::kAdmissionSealed;
    case NP_BAD_JOIN_TOKEN: return Verdict::kBadJoinToken;
    case NP_ENROLLMENT_CONFLICT: return Verdict::kEnrollmentConflict;
    case NP_PARENT_REVOKED: return Verdict::kParentRevoked;
    case NP_SCHEMA_TOO_NEW: return Verdict::kSchemaTooNew;
    case NP_DEREGISTERED: return Verdict::kDeregistered;
    default: return Verdict::kNone;
  }
}

Status PluginError::ToStatus(np_code rc, const std::string& who) const {
  if (rc == NP_OK) return Status::Ok();
  std::string msg = who + ": " + (buf_[0] != '\0' ? std::string(buf_) : std::string("failed with code ") + std::to_string(rc));
  Status s = ports::WithVerdict(Status(CodeOf(rc), std::move(msg)), VerdictOf(rc));
  if (rc == NP_UNAVAILABLE) s = std::move(s).WithRetryAfter(err_.retry_after_ns);
  return s;
}

}  // namespace nodeplane::loader
