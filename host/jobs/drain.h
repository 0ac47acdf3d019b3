// Draining the deployment: admission is sealed so nothing new is placed, a
// compute barrier is requested, and the drain waits until the ledger says
// the fleet has proved it runs nothing (R20, R21: the Plane's barrier loop
// asks the nodes; the ledger's predicate decides, never this code).
//
// Blocks until clear, the timeout, or `stop`; the barrier stays requested
// when it returns early, so a second drain picks up where this one stopped.
#pragma once

#include <functional>
#include <stop_token>
#include <string>

#include "plane/plane.h"
#include "ports/ledger.h"

namespace nodeplane::jobs {

struct DrainRequest {
  std::string actor;       // recorded with the seal and the barrier
  int64_t timeout_ns = 0;  // 0: until clear or stopped
};

// The barrier's id once the fleet is clear; Unavailable when the timeout
// passed or `stop` came first. `say` (may be empty) hears the progress.
Result<std::string> Drain(ports::Ledger& ledger, const plane::Plane& plane, const DrainRequest& req,
                          const std::function<void(const std::string&)>& say, std::stop_token stop);

}  // namespace nodeplane::jobs
