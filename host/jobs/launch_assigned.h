// Sending an escrowed, assigned lease to the fleet, as both the operator's
// `launch` and the job intake do it (R43): a failure that started nothing
// (no node took it, or the node's clean refusal) releases the lease failed
// with the reason; custody keeps it, because compute may exist.
#pragma once

#include <stop_token>

#include "common/lease_events.h"
#include "plane/plane.h"
#include "ports/ledger.h"

namespace nodeplane::jobs {

// `events` may be null; `fenced_node` as Runner::Launch.
Status LaunchAssigned(ports::LeaseStore& leases, plane::Runner& runner, LeaseEvents* events, ports::Lease& lease,
                      const protocol::Job& job, std::stop_token stop, const std::string& fenced_node = {});

}  // namespace nodeplane::jobs
