// The operational node wire: the routing table, each route wrapped visibly
// in its guard, over the Plane and the ledger's LeaseStore.
//
// Guards (billet-wire.md §3.3):
//   forNode     any process holding the node's identity (results: reporting
//               is the handover itself)
//   forNewWork  the node's current process only (poll, bind, launched,
//               reconcile, withdraw): 409 superseded otherwise
//   forOwnLease the process that owns the lease, or the current process when
//               the ledger agrees the lease is placed on this node
//
// Identity: on the loopback wire (no TLS; LoopbackOnly) the node's name is
// the path's. Over TLS it is the verified client certificate's Common Name,
// and a path (or registration body) naming another node is refused (R08).
// The bootstrap, JIT, renewal and cache-policy routes, and revocation checks
// on every request, come with the rest of issue 5.
//
// Threading: Handle() runs on an I/O thread and never blocks: polls park in
// the Plane, and every ledger or plane call that may block runs on the
// wire's worker pool.
#pragma once

#include <memory>
#include <string>

#include "common/call_pool.h"
#include "common/log.h"
#include "plane/plane.h"
#include "ports/ledger.h"
#include "wire/http_server.h"

namespace nodeplane::wire {

class NodeWire : public HttpHandler {
 public:
  // Everything is borrowed and must outlive the NodeWire. Without a plane
  // (tests of the listener) it serves /healthz only.
  NodeWire(std::string deployment, plane::Plane* plane, ports::LeaseStore* leases, Logger& log,
           unsigned workers = 8);
  void Handle(HttpRequest request, Responder respond) override;

 private:
  struct Call;  // one request being answered
  void Route(const std::shared_ptr<Call>& c);

  // Guards
  bool Authenticated(const std::shared_ptr<Call>& c);
  bool ForNewWork(const std::shared_ptr<Call>& c);
  void ForOwnLease(const std::shared_ptr<Call>& c, std::function<void()> then);

  // Routes
  void Register(const std::shared_ptr<Call>& c);
  void Poll(const std::shared_ptr<Call>& c);
  void Result(const std::shared_ptr<Call>& c);
  void Withdraw(const std::shared_ptr<Call>& c);
  void Bind(const std::shared_ptr<Call>& c);
  void LeaseOp(const std::shared_ptr<Call>& c, const std::string& op);
  void Launched(const std::shared_ptr<Call>& c);
  void Reconcile(const std::shared_ptr<Call>& c);

  std::string deployment_;
  plane::Plane* plane_ = nullptr;
  ports::LeaseStore* leases_ = nullptr;
  Logger* log_ = nullptr;
  std::unique_ptr<CallPool> workers_;
};

// The HTTP status and error code a failure answers with (billet-wire.md §2).
struct WireError {
  int status;
  const char* code;
};
WireError MapStatus(const Status& s);

}  // namespace nodeplane::wire
