// The Plane's verdicts, as Status values with a detail code the wire maps to
// its error vocabulary. The seed's sentinels, one each.
#pragma once

#include <string>

#include "common/status.h"

namespace nodeplane::plane {

enum PlaneError : int32_t {
  // Nothing was sent and nothing started: the caller may release the lease (S01).
  kNoNode = 1001,
  // Understood and rejected on its merits; PERMANENT: the node stops (R01).
  kRefused = 1002,
  // The request came from a process that is no longer the registered one (R02).
  kSuperseded = 1003,
  // The node is not known here; it should register again (S03).
  kUnregistered = 1004,
  // The node holds no command that entitles it to that (S02).
  kNotEntitled = 1005,
  // A late launch result: the lease is now the node's to hold (R03).
  kTakeCustody = 1006,
  // Compute may exist; the lease is kept (the caller stops renewing it).
  kCustody = 1007,
  // The process holding the compute cannot be reached to confirm.
  kHolderUnavailable = 1008,
};

Status NoNode(std::string message);
Status Refused(std::string message);
Status Superseded(std::string message);
Status Unregistered(std::string message);
Status NotEntitled(std::string message);
Status TakeCustody();
Status Custody(std::string message);
Status HolderUnavailable(std::string message);

inline bool Is(const Status& s, PlaneError e) { return s.detail() == e; }

}  // namespace nodeplane::plane
