// The Plane's private state, shared by its .cpp files.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "plane/plane.h"

namespace nodeplane::plane {

struct Plane::Pending {
  Command cmd;
  std::string node;
  std::string expected_provider;     // a launch is refused if the node's provider changed
  std::string expected_incarnation;  // a bound destroy goes to this process only
  bool delivered = false;
  std::string taken_by;
  uint64_t owner_seq = 0;            // the owner record a taken launch made, undone by a give-back
  int64_t queued_at = 0;             // clock ns, for the dispatch latency
  std::optional<CommandResult> result;
};

struct Plane::NodeState {
  std::string name, incarnation, provider, site;
  std::vector<std::string> guest_os;  // claim; empty: any
  int64_t last_seen = 0;
  int64_t ledger_epoch = 0;
  int32_t wire_version = 0;
  std::deque<std::shared_ptr<Pending>> queue;
  std::map<std::string, std::shared_ptr<Pending>> in_flight;
  std::deque<std::shared_ptr<PollTicket>> waiters;
  bool inventory_known = false;
  std::set<std::string> inventory;
  int registering = 0;
};

// 32 lowercase hex characters from 16 random bytes: never sequential, so a
// node talking to a restarted plane cannot match a stale result.
std::string NewCommandId();

}  // namespace nodeplane::plane
