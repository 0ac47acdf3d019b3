// The operator's launch: one job for a tier, named by its request id.
//
// Idempotent per request id (L1): a request an open lease serves, or one
// whose lease ended within kRequestMemoryNs, is answered with that lease and
// nothing new is escrowed, so a client that retries after losing its answer
// never runs a job twice. Two launches of one request at once get one lease
// (L2): the ledger's assignment lets one win; the other keeps nothing and
// answers the winner's. A clean failure releases the lease (LaunchAssigned,
// R43); custody keeps it.
//
// The escrow, the assignment and the node's dispatch fence (R37) are one
// ledger write (Ledger::EscrowForLaunch) when the plugin offers it, so a
// launch waits on one commit, not three in a row; otherwise escrow and
// assign are made in turn and the Runner advances the fence.
//
// Blocks on the ledger and on the fleet until a node takes the launch or
// `stop`. Thread-safe as its ports are.
#pragma once

#include <functional>
#include <stop_token>
#include <string>

#include "common/lease_events.h"
#include "common/units.h"
#include "plane/plane.h"
#include "ports/ledger.h"

namespace nodeplane::jobs {

inline constexpr int64_t kRequestMemoryNs = kDayNs;

struct LaunchRequest {
  std::string tier;
  int64_t request_id = 0;  // > 0
  int64_t run_id = 0;      // 0: the request id
  std::string source;      // who asks, as the job's repository names it ("nodeplanectl")
};

struct Launched {
  std::string lease, node;
  // "launched" or "custody" for a new lease; for an existing one, its phase
  // now, or how it ended.
  std::string phase;
  bool existing = false;  // an earlier launch of the request made it (L1)
  bool ended = false;     // an existing lease that has ended: nothing left to follow
};

// `say` (may be empty) hears each step, for a person; `events` may be null.
Result<Launched> LaunchForRequest(ports::Ledger& ledger, plane::Runner& runner, LeaseEvents* events,
                                  const LaunchRequest& req, int64_t now_ns,
                                  const std::function<void(const std::string&)>& say, std::stop_token stop);

}  // namespace nodeplane::jobs
