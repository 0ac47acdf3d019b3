#include "wire/node_wire.h"

#include <vector>

#include "nodeplane/np_plugin.h"  // the ledger ports report NP_* codes as Status::detail()
#include "plane/errors.h"
#include "wire/codec.h"

namespace nodeplane::wire {

struct NodeWire::Call {
  HttpRequest req;
  Responder respond;
  std::vector<std::string> path;  // segments of the path
  std::string node, lease, incarnation;
  void Reply(int status, std::string body) { respond(HttpResponse{status, "application/json", std::move(body)}); }
  void NoContent() { respond(HttpResponse{204, "", ""}); }
  void Fail(int status, std::string_view code, std::string_view message) {
    Reply(status, EncodeError(code, message));
  }
  void Fail(const Status& s) {
    WireError e = MapStatus(s);
    Fail(e.status, e.code, s.message());
  }
};

namespace {

constexpr const char* kIncarnationHeader = "nodeplane-incarnation";

std::vector<std::string> Split(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  std::vector<std::string> out;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    out.emplace_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

}  // namespace

WireError MapStatus(const Status& s) {
  switch (s.detail()) {
    case plane::kSuperseded: return {409, "superseded"};
    case plane::kNotEntitled: return {403, "refused"};
    case plane::kTakeCustody: return {409, "custody"};
    case plane::kUnregistered: return {401, "unregistered"};
    case plane::kRefused: return {403, "refused"};
    case NP_FENCED: return {409, "fenced"};
    case NP_NOT_FOUND: return {404, "not_found"};
    case NP_NO_CAPACITY: return {409, "no_capacity"};
    case NP_FORCE_RELEASE: return {409, "force_release"};
    default: break;
  }
  switch (s.code()) {
    case Code::kUnavailable: return {503, "unavailable"};  // an outage is never a verdict
    case Code::kInvalid: return {400, "refused"};
    case Code::kConflict:
    case Code::kRefused:
    case Code::kFenced: return {409, "refused"};
    case Code::kNotFound: return {404, "not_found"};
    default: return {500, ""};
  }
}

NodeWire::NodeWire(std::string deployment, plane::Plane* plane, ports::LeaseStore* leases, Logger& log,
                   unsigned workers)
    : deployment_(std::move(deployment)),
      plane_(plane),
      leases_(leases),
      log_(&log),
      workers_(std::make_unique<CallPool>(workers)) {}

void NodeWire::Handle(HttpRequest request, Responder respond) {
  auto c = std::make_shared<Call>();
  c->req = std::move(request);
  c->respond = std::move(respond);
  c->path = Split(c->req.target);
  c->incarnation = std::string(c->req.Header(kIncarnationHeader));
  Route(c);
}

// The routing table. Every route that acts for a node names its guard here,
// where a route added without one is visibly missing it.
void NodeWire::Route(const std::shared_ptr<Call>& c) {
  const std::string& m = c->req.method;
  const auto& p = c->path;
  if (p.size() == 1 && p[0] == "healthz") {
    if (m != "GET" && m != "HEAD") return c->Fail(405, "refused", "/healthz answers GET only");
    return c->Reply(200, EncodeHealth(deployment_));
  }
  if (plane_ == nullptr || p.size() < 2 || p[0] != "v1") {
    return c->Fail(404, "not_found", "no route for " + m + " " + c->req.target.substr(0, 200));
  }
  if (p.size() == 2 && p[1] == "register") {
    if (m != "POST") return c->Fail(405, "refused", "a registration is a POST");
    return Register(c);
  }
  if (p.size() >= 4 && p[1] == "nodes" && !p[2].empty()) {
    c->node = p[2];
    if (!Authenticated(c)) return;
    const std::string& what = p[3];
    if (p.size() == 4) {
      if (m == "POST" && what == "poll") return ForNewWork(c) ? Poll(c) : void();
      if (m == "POST" && what == "result") return Result(c);  // forNode
      if (m == "POST" && what == "withdraw") return ForNewWork(c) ? Withdraw(c) : void();
      if (m == "GET" && what == "launched") return ForNewWork(c) ? Launched(c) : void();
      if (m == "POST" && what == "reconcile") return ForNewWork(c) ? Reconcile(c) : void();
    }
    if (what == "leases" && p.size() >= 5 && !p[4].empty()) {
      c->lease = p[4];
      if (p.size() == 5 && m == "GET") return ForOwnLease(c, [this, c] { LeaseOp(c, "get"); });
      if (p.size() == 6 && m == "POST") {
        const std::string& op = p[5];
        if (op == "bind") return ForNewWork(c) ? Bind(c) : void();
        if (op == "advance" || op == "heartbeat" || op == "failure" || op == "release") {
          return ForOwnLease(c, [this, c, op] { LeaseOp(c, op); });
        }
      }
    }
  }
  c->Fail(404, "not_found", "no route for " + m + " " + c->req.target.substr(0, 200));
}

bool NodeWire::Authenticated(const std::shared_ptr<Call>& c) {
  // On the loopback wire the path is the only identity (LoopbackOnly). Over
  // TLS the certificate decides, and a path that disagrees is rejected, never
  // reconciled (R08).
  if (!c->req.tls) return true;
  if (c->req.peer_cn.empty()) {
    c->Fail(401, "unauthenticated", "this wire requires a client certificate issued by the deployment's authority");
    return false;
  }
  if (c->req.peer_cn != c->node) {
    c->Fail(403, "refused", "this connection is authenticated as node \"" + c->req.peer_cn +
                                "\" and cannot act for \"" + c->node + "\"");
    return false;
  }
  return true;
}

bool NodeWire::ForNewWork(const std::shared_ptr<Call>& c) {
  Status s = plane_->CheckIncarnation(c->node, c->incarnation);
  if (plane::Is(s, plane::kSuperseded)) {
    c->Fail(s);
    return false;
  }
  return true;  // an unknown node is answered "unregistered" by the route itself
}

void NodeWire::ForOwnLease(const std::shared_ptr<Call>& c, std::function<void()> then) {
  workers_->Post([this, c, then = std::move(then)] {
    plane_->Seen(c->node, c->incarnation);  // a heartbeat is evidence of life
    auto by_owner = plane_->AuthorizeLease(c->node, c->incarnation, c->lease);
    if (!by_owner.ok()) return c->Fail(by_owner.status());
    if (!*by_owner) {
      // Admitted by membership alone: the ledger must place the lease here (R19).
      auto lease = leases_->GetLease(c->lease);
      if (!lease.ok()) return c->Fail(lease.status());
      const std::string& placed = lease->node.empty() ? lease->target_node : lease->node;
      if (!placed.empty() && placed != c->node) {
        return c->Fail(409, "superseded",
                       "the ledger places lease " + c->lease + " on node \"" + placed + "\", not \"" + c->node + "\"");
      }
    }
    then();
  });
}

void NodeWire::Register(const std::shared_ptr<Call>& c) {
  workers_->Post([this, c] {
    auto req = DecodeRegister(c->req.body);
    if (!req.ok()) {
      // Nobody can be named: on the loopback wire every proof is discarded (R15).
      Status s = plane_->ArrivalWasUnreadable();
      if (!s.ok()) return c->Fail(503, "", s.message());
      return c->Fail(req.status());
    }
    // Discarding the node's barrier proof comes first, before any check (R16, R18).
    if (Status s = plane_->ArrivingForRegistration(req->node); !s.ok()) return c->Fail(503, "", s.message());
    c->node = req->node;
    if (!Authenticated(c)) return;
    auto launched = leases_->LaunchedLeaseIds(req->node);
    if (!launched.ok()) return c->Fail(503, "", launched.status().message());
    auto resp = plane_->CompleteRegistration(*req, *launched);
    if (!resp.ok()) {
      if (plane::Is(resp.status(), plane::kRefused)) return c->Fail(resp.status());
      return c->Fail(503, "", resp.status().message());  // an outage: the node retries
    }
    c->Reply(200, Encode(*resp));
  });
}

void NodeWire::Poll(const std::shared_ptr<Call>& c) {
  plane_->PollAsync(c->node, c->incarnation, [c](nodeplane::Result<std::optional<plane::Command>> r) {
    if (!r.ok()) return c->Fail(r.status());
    if (!r->has_value()) return c->NoContent();  // nothing to do
    c->Reply(200, Encode(**r));
  });
}

void NodeWire::Result(const std::shared_ptr<Call>& c) {
  auto res = DecodeResult(c->req.body);
  if (!res.ok()) return c->Fail(res.status());
  Status s = plane_->ReceiveResult(c->node, c->incarnation, *res);
  if (!s.ok()) return c->Fail(s);
  c->NoContent();
}

void NodeWire::Withdraw(const std::shared_ptr<Call>& c) {
  if (Status s = DecodeEmpty(c->req.body.empty() ? "{}" : c->req.body, "withdraw"); !s.ok()) return c->Fail(s);
  workers_->Post([this, c] {
    Status s = plane_->Withdraw(c->node, c->incarnation);
    if (!s.ok()) return c->Fail(s);
    c->NoContent();
  });
}

void NodeWire::Bind(const std::shared_ptr<Call>& c) {
  auto body = DecodeEpoch(c->req.body, "bind");
  if (!body.ok()) return c->Fail(body.status());
  workers_->Post([this, c, epoch = body->epoch] {
    plane_->Seen(c->node, c->incarnation);
    if (Status s = plane_->CheckIncarnation(c->node, c->incarnation); !s.ok()) return c->Fail(s);
    // The path decides the node; a body naming another is ignored, not obeyed.
    Status s = leases_->Bind(c->lease, epoch, c->node, c->incarnation);
    if (!s.ok()) return c->Fail(s);
    c->NoContent();
  });
}

void NodeWire::LeaseOp(const std::shared_ptr<Call>& c, const std::string& op) {
  const std::string& body = c->req.body;
  if (op == "get") {
    auto lease = leases_->GetLease(c->lease);
    if (!lease.ok()) return c->Fail(lease.status());
    return c->Reply(200, EncodeLease(*lease));
  }
  Status s;
  if (op == "advance") {
    auto b = DecodeAdvance(body);
    if (!b.ok()) return c->Fail(b.status());
    s = leases_->Advance(c->lease, b->epoch, b->phase, c->incarnation);
  } else if (op == "heartbeat") {
    auto b = DecodeEpoch(body, "heartbeat");
    if (!b.ok()) return c->Fail(b.status());
    s = leases_->Heartbeat(c->lease, b->epoch);
  } else if (op == "failure") {
    auto b = DecodeFailure(body);
    if (!b.ok()) return c->Fail(b.status());
    s = leases_->MarkFailure(c->lease, b->epoch, b->reason);
  } else {
    auto b = DecodeRelease(body);
    if (!b.ok()) return c->Fail(b.status());
    s = leases_->Release(c->lease, b->epoch, b->phase);
    if (s.ok()) plane_->ForgetLease(c->node, c->lease);  // ended: its owner record goes
  }
  if (!s.ok()) return c->Fail(s);
  c->NoContent();
}

void NodeWire::Launched(const std::shared_ptr<Call>& c) {
  workers_->Post([this, c] {
    if (Status s = plane_->CheckIncarnation(c->node, c->incarnation); !s.ok()) return c->Fail(s);
    plane_->Seen(c->node, c->incarnation);
    auto launched = leases_->LaunchedLeaseIds(c->node);
    if (!launched.ok()) return c->Fail(launched.status());
    auto quarantined = leases_->QuarantinedLeaseIds(c->node);
    if (!quarantined.ok()) return c->Fail(quarantined.status());
    c->Reply(200, EncodeLaunched(*launched, *quarantined));
  });
}

void NodeWire::Reconcile(const std::shared_ptr<Call>& c) {
  auto body = DecodeReconcile(c->req.body);
  if (!body.ok()) return c->Fail(body.status());
  workers_->Post([this, c, running = std::move(body->instances)] {
    auto freed = plane_->ReconcileInventory(c->node, c->incarnation, running);
    if (!freed.ok()) return c->Fail(freed.status());
    c->Reply(200, EncodeFreed(*freed));
  });
}

}  // namespace nodeplane::wire
