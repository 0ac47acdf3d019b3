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
    case NP_WITHDRAWAL_STALE:
    case NP_ENROLLMENT_CONFLICT: return Code::kConflict;
    default: return Code::kInternal;
  }
}

Status PluginError::ToStatus(np_code rc, const std::string& who) const {
  if (rc == NP_OK) return Status::Ok();
  std::string msg = who + ": " + (buf_[0] != '\0' ? std::string(buf_) : std::string("failed with code ") + std::to_string(rc));
  Status s = Status(CodeOf(rc), std::move(msg)).WithDetail(rc);
  if (rc == NP_UNAVAILABLE) s = std::move(s).WithRetryAfter(err_.retry_after_ns);
  return s;
}

}  // namespace nodeplane::loader
