#include "common/status.h"

namespace nodeplane {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalid: return "invalid";
    case Code::kNotFound: return "not_found";
    case Code::kConflict: return "conflict";
    case Code::kFenced: return "fenced";
    case Code::kUnavailable: return "unavailable";
    case Code::kRefused: return "refused";
    case Code::kInternal: return "internal";
  }
  return "internal";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace nodeplane
