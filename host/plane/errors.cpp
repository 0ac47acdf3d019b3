#include "plane/errors.h"

namespace nodeplane::plane {

Status NoNode(std::string m) { return Status(Code::kUnavailable, std::move(m)).WithDetail(kNoNode); }
Status Refused(std::string m) { return Status(Code::kRefused, std::move(m)).WithDetail(kRefused); }
Status Superseded(std::string m) { return Status(Code::kConflict, std::move(m)).WithDetail(kSuperseded); }
Status Unregistered(std::string m) { return Status(Code::kNotFound, std::move(m)).WithDetail(kUnregistered); }
Status NotEntitled(std::string m) { return Status(Code::kRefused, std::move(m)).WithDetail(kNotEntitled); }
Status TakeCustody() {
  return Status(Code::kConflict, "this launch's lease is now the node's to hold").WithDetail(kTakeCustody);
}
Status Custody(std::string m) { return Status(Code::kConflict, std::move(m)).WithDetail(kCustody); }
Status HolderUnavailable(std::string m) {
  return Status(Code::kUnavailable, std::move(m)).WithDetail(kHolderUnavailable);
}

}  // namespace nodeplane::plane
