// The operational node wire: one route table (method, path, metrics label,
// guard, whether it blocks, handler) over the Plane and the ledger's
// LeaseStore; node_wire.cpp's Routes() is the whole API.
//
// Guards (billet-wire.md §3.3):
//   kNode       any process holding the node's identity, of a node the plane
//               knows: an unknown node is answered "unregistered" first (S03)
//   kResult     kNode, except that an unknown node's result reaches the plane,
//               which answers custody for a command it tombstoned (R03) and
//               "unregistered" for any other (reporting is the handover)
//   kNewWork    the node's current process only (poll, bind, launched,
//               reconcile, withdraw): 409 superseded otherwise
//   kOwnLease   whoever Plane::AdmitLeaseRequest admits: the process that
//               owns the lease, or the current process when the ledger agrees
//               the lease is placed on this node (R19), or the holder the
//               ledger recorded for it; for an ended lease, any process of
//               the node its job was attributed to
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
// Threading: Handle() runs on an I/O thread and never blocks. Dispatch runs a
// route there only when neither its guard nor its handler blocks (/healthz,
// a loopback poll, which parks in the Plane); otherwise it posts the guard
// and the handler together to the wire's worker pool: one hop, whatever the
// transport.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
#include "wire/standby_wire.h"
#include "wire/jit_targets.h"

namespace nodeplane::wire {

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
  // [ha]: this replica, which leads; /healthz names it. Absent: one replica.
  std::optional<ActiveReplica> ha;
  unsigned workers = 8;
};

class NodeWire : public HttpHandler {
 public:
  explicit NodeWire(NodeWireOptions options);
  void Handle(HttpRequest request, Responder respond) override;
  // How long requests took to answer, by route and status (a parked poll's
  // includes its wait); each histogram's _count counts the requests.
  const HistogramFamily& request_latency() const { return requests_->family; }

 private:
  struct Call;  // one request being answered
  enum class Guard { kNone, kNode, kResult, kNewWork, kOwnLease };
  using Handler = void (NodeWire::*)(const std::shared_ptr<Call>&);
  struct Route {
    const char* method;
    std::string_view path;  // {node} and {lease} capture a segment
    const char* label;      // the request metrics' route label
    Guard guard;
    bool blocks;  // calls the ledger, a plugin or a blocking Plane method
    Handler handler;
    std::vector<std::string> segments = {};  // the path's, split once
  };
  static const std::vector<Route>& Routes();
  static std::vector<Route> WithSegments(std::vector<Route> routes);
  void Dispatch(const Route& route, const std::shared_ptr<Call>& c);

  // Guards: false when the call is answered already. Blocks over TLS (the
  // revocation check reads the ledger) and for kOwnLease.
  bool Admit(Guard guard, const std::shared_ptr<Call>& c);
  bool Authenticated(const std::shared_ptr<Call>& c);  // certificate CN = the claimed node
  bool NotRevoked(const std::shared_ptr<Call>& c);     // blocks unless c->revoked is set
  std::optional<bool> RememberedRevocation(const Call& c) const;

  // Routes
  void Health(const std::shared_ptr<Call>& c);
  void Register(const std::shared_ptr<Call>& c);
  void Poll(const std::shared_ptr<Call>& c);
  void ReportResult(const std::shared_ptr<Call>& c);
  void Withdraw(const std::shared_ptr<Call>& c);
  void Bind(const std::shared_ptr<Call>& c);
  void LeaseGet(const std::shared_ptr<Call>& c);
  void RunnerOutdated(const std::shared_ptr<Call>& c);
  void Advance(const std::shared_ptr<Call>& c);
  void Heartbeat(const std::shared_ptr<Call>& c);
  void MarkFailure(const std::shared_ptr<Call>& c);
  void Release(const std::shared_ptr<Call>& c);
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

  NodeWireOptions o_;
  // What /healthz answers: the deployment and the leading replica, both fixed
  // for the wire's life, so encoded once (it is the route load balancers
  // and monitors call most).
  std::string health_body_;
  // The request histograms, each (route, status) one looked up in the family
  // once and then read without its lock: every answer is counted. Shared
  // with every answer in flight, which may outlive the wire (a poll the
  // plane answers while it shuts down).
  struct RequestMetrics {
    explicit RequestMetrics(size_t routes);
    // `route` indexes Routes(), or is its size for a path no route knows.
    Histogram& For(size_t route, const char* label, int status);
    HistogramFamily family;
    std::vector<std::atomic<Histogram*>> found;  // by route, then status slot
  };
  std::shared_ptr<RequestMetrics> requests_ = std::make_shared<RequestMetrics>(Routes().size() + 1);
  JitTargets jit_;
  std::unique_ptr<CallPool> workers_;
};

// The HTTP status and error code a failure answers with (billet-wire.md §2).
struct WireError {
  int status;
  const char* code;
};
WireError MapStatus(const Status& s);

}  // namespace nodeplane::wire
