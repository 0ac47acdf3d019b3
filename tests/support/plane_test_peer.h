// The tests' view into a Plane: the state they synchronise on (a queued
// command, a parked poll, an owner record) and the two conveniences a test
// needs that production has no use for (an in-process registration, a
// blocking poll), built only from the entry points the wire calls, so a
// test takes the production path. Production code never includes this.
//
// Thread-safe as the Plane is: every read takes the Plane's lock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plane/plane.h"

namespace nodeplane::plane {

class PlaneTestPeer {
 public:
  explicit PlaneTestPeer(Plane& plane) : p_(plane) {}

  // ArrivingForRegistration, then CompleteRegistration: the wire's order.
  Result<RegisterResponse> Register(const RegisterRequest& req);
  // PollAsync, waited on; `stop` cancels the ticket as a client that went
  // away does. The context ending is "nothing to do".
  Result<std::optional<Command>> Poll(const std::string& node, const std::string& incarnation,
                                      std::stop_token stop = {});

  size_t Queued(const std::string& node) const;    // commands waiting for a poll
  size_t Waiters(const std::string& node) const;   // polls parked
  size_t InFlight(const std::string& node) const;  // commands taken, unanswered
  bool Reconciled(const std::string& node) const;  // inventory_known
  std::string CurrentIncarnation(const std::string& node) const;
  bool Owns(const std::string& lease_id, const std::string& node, const std::string& incarnation) const;
  size_t Owners() const;
  std::vector<std::string> BarrierTargets() const;  // sorted (R22)

  Result<std::string> Pick(const ports::Lease& lease);
  Status AskNode(const std::string& node, const std::string& barrier_id);
  void SetPollWindow(int64_t ns);
  // Drops the node as a restart would, without telling the ledger.
  void Forget(const std::string& node);

 private:
  Plane& p_;
};

}  // namespace nodeplane::plane
