// The operational node wire: the routing table, each route wrapped visibly
// in its guard, over the Plane and the ledger's LeaseStore.
//
// Guards (billet-wire.md §3.3):
//   forNode     any process holding the node's identity (results: reporting
//               is the handover itself)
//   forNewWork  the node's current process only (poll, bind, launched,
//               reconcile, withdraw): 409 superseded otherwise
//   forOwnLease the process that owns the lease, or the current process when
//               the ledger agrees the lease is placed on this node, or the
//               holder the ledger recorded for it; for an ended lease, any
//               process of the node its job was attributed to
// Every guard counts an admitted request as the node's sign of life (R31).
//
// Identity: on the loopback wire (no TLS; LoopbackOnly) the node's name is
// the path's. Over TLS it is the verified client certificate's Common Name,
// and a path (or registration body) naming another node is refused (R08).
// Then, on every request, the certificate must not be revoked: by serial or
// by the node's cut-off in the ledger, or by any revocation-list plugin
// (S11). A list that cannot answer refuses the request with 503: the check
// fails closed.
//
// Threading: Handle() runs on an I/O thread and never blocks: polls park in
// the Plane, and every ledger, plugin or plane call that may block runs on
// the wire's worker pool.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/call_pool.h"
#include "common/lease_events.h"
#include "common/log.h"
#include "common/metrics.h"
#include "pki/authority.h"
#include "plane/plane.h"
#include "ports/cache_policy.h"
#include "ports/jit.h"
#include "ports/ledger.h"
#include "ports/revocation.h"
#include "wire/http_server.h"

namespace nodeplane::wire {

// What the JIT routes need to know of a tier: its target picks the JIT
// source (WithTargetJIT), its group and labels shape the registration.
struct TierTarget {
  std::string target;  // "" : no registration is minted for this tier
  std::string runner_group;
  std::vector<std::string> labels;
  bool scale_set = false;  // its runners register with the tier's scale set (scale_set_jit)
};

// Everything is borrowed and must outlive the NodeWire. Only `deployment`
// and `log` are required: without a plane (tests of the listener) the wire
// serves /healthz only, and each optional port left null makes its routes
// answer 503 (or 501 for renewal without an authority).
struct NodeWireOptions {
  std::string deployment;
  Logger* log = nullptr;
  plane::Plane* plane = nullptr;
  ports::LeaseStore* leases = nullptr;
  // The ledger's revocations; required when the wire serves TLS.
  ports::Revocations* revocations = nullptr;
  std::vector<ports::RevocationList*> revocation_lists;  // plugins; any one revoking refuses
  const pki::Authority* authority = nullptr;             // renewal (WithRenewal)
  ports::CachePolicy* cache_policy = nullptr;            // WithCachePolicy
  std::map<std::string, ports::JitSource*> jit_sources;  // by target (WithTargetJIT)
  std::map<std::string, TierTarget> tiers;               // by tier label, from the catalogue
  // A runner of a scale-set tier: (tier, runner name, work folder) -> its
  // registration, from the job intake. Null: no tier has a scale set.
  std::function<Result<ports::JitRegistration>(const std::string&, const std::string&, const std::string&)>
      scale_set_jit;
  std::function<int64_t()> now_ns;                       // signing time; null: the wall clock
  LeaseEvents* lease_events = nullptr;                   // counts the releases nodes make; null: none
  unsigned workers = 8;
};

class NodeWire : public HttpHandler {
 public:
  explicit NodeWire(NodeWireOptions options);
  void Handle(HttpRequest request, Responder respond) override;
  // How long requests took to answer, by route and status (a parked poll's
  // includes its wait); each histogram's _count counts the requests.
  const HistogramFamily& request_latency() const { return *requests_; }

 private:
  struct Call;  // one request being answered
  using Step = std::function<void()>;
  void Route(const std::shared_ptr<Call>& c);
  void RouteNode(const std::shared_ptr<Call>& c);

  // Guards. ForNode runs `then` once the caller is proven to be the node
  // and its certificate is not revoked; the others build on it.
  void ForNode(const std::shared_ptr<Call>& c, Step then);
  void ForNewWork(const std::shared_ptr<Call>& c, Step then);
  void ForOwnLease(const std::shared_ptr<Call>& c, Step then);
  bool Authenticated(const std::shared_ptr<Call>& c);  // certificate CN = the claimed node
  bool NotRevoked(const std::shared_ptr<Call>& c);     // blocks: on a worker

  // Routes
  void Register(const std::shared_ptr<Call>& c);
  void Poll(const std::shared_ptr<Call>& c);
  void ReportResult(const std::shared_ptr<Call>& c);
  void Withdraw(const std::shared_ptr<Call>& c);
  void Bind(const std::shared_ptr<Call>& c);
  void LeaseOp(const std::shared_ptr<Call>& c, const std::string& op);
  void Launched(const std::shared_ptr<Call>& c);
  void Reconcile(const std::shared_ptr<Call>& c);
  void Renew(const std::shared_ptr<Call>& c);
  void CachePolicy(const std::shared_ptr<Call>& c);
  void Describe(const std::shared_ptr<Call>& c);
  void Jit(const std::shared_ptr<Call>& c);
  void RemoveRunner(const std::shared_ptr<Call>& c);
  void RecoverRunner(const std::shared_ptr<Call>& c);

  // The tier of a lease, open or ended.
  Result<std::string> TierOfLease(const std::string& lease_id);
  // The JIT source and tier facts for `tier`, or a refusal for the caller.
  Status TargetOf(const std::string& tier, const TierTarget** target, ports::JitSource** source) const;
  // The tier's runner group, resolved once per target and group and then
  // cached; `fresh` drops the cached answer first.
  Result<ports::RunnerSet> RunnerSetFor(const TierTarget& tier, ports::JitSource& source, bool fresh);

  NodeWireOptions o_;
  // Shared with every answer in flight, which may outlive the wire (a poll
  // the plane answers while it shuts down).
  std::shared_ptr<HistogramFamily> requests_ = std::make_shared<HistogramFamily>();
  std::unique_ptr<CallPool> workers_;
  std::mutex sets_mu_;
  std::map<std::string, ports::RunnerSet> sets_;  // "target\0group" -> set
};

// The HTTP status and error code a failure answers with (billet-wire.md §2).
struct WireError {
  int status;
  const char* code;
};
WireError MapStatus(const Status& s);

}  // namespace nodeplane::wire
