#include "wire/node_wire.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/units.h"
#include "plane/errors.h"
#include "protocol/codec.h"

namespace nodeplane::wire {

struct NodeWire::Call {
  HttpRequest req;
  Responder respond;
  std::vector<std::string> path;  // segments of the path
  std::string node, lease, incarnation;
  // The certificate's revocation verdict, when it was had without blocking
  // (RememberedRevocation); NotRevoked takes it instead of asking.
  std::optional<bool> revoked;
  void Reply(int status, std::string body) { respond(HttpResponse{status, "application/json", std::move(body)}); }
  void NoContent() { respond(HttpResponse{204, "", ""}); }
  void Fail(int status, std::string_view code, std::string_view message) {
    Reply(status, protocol::Encode(protocol::ErrorReply{std::string(code), std::string(message), {}}));
  }
  void Fail(const Status& s) {
    WireError e = MapStatus(s);
    HttpResponse r{e.status, "application/json", protocol::Encode(protocol::ErrorReply{e.code, s.message(), {}})};
    // An outage that named its end (a GitHub rate limit) tells the node when
    // asking again can succeed.
    if (s.code() == Code::kUnavailable) r.retry_after_seconds = SecondsCeil(s.retry_after_ns());
    respond(std::move(r));
  }
  void NoRoute() { Fail(404, "not_found", "no route for " + req.method + " " + req.target.substr(0, 200)); }
};

namespace {

constexpr const char* kIncarnationHeader = "nodeplane-incarnation";

// A certificate's issue time is its NotBefore without the clock-skew allowance.
int64_t IssuedAt(const PeerCertificate& cert) { return cert.not_before_ns + pki::kSkewNs; }

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

// The query parameter `key`, percent-decoded ("+" is a space); "" when absent.
std::string QueryParam(std::string_view target, std::string_view key) {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    size_t eq = pair.find('=');
    if (pair.substr(0, eq) != key) continue;
    std::string_view raw = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '+') {
        out.push_back(' ');
      } else if (raw[i] == '%' && i + 2 < raw.size() && std::isxdigit(static_cast<unsigned char>(raw[i + 1])) &&
                 std::isxdigit(static_cast<unsigned char>(raw[i + 2]))) {
        out.push_back(static_cast<char>(std::stoi(std::string(raw.substr(i + 1, 2)), nullptr, 16)));
        i += 2;
      } else {
        out.push_back(raw[i]);
      }
    }
    return out;
  }
  return {};
}

}  // namespace

WireError MapStatus(const Status& s) {
  switch (s.detail()) {
    case plane::kSuperseded: return {409, "superseded"};
    case plane::kNotEntitled: return {403, "refused"};
    case plane::kTakeCustody: return {409, "custody"};
    case plane::kUnregistered: return {401, "unregistered"};
    case plane::kRefused: return {403, "refused"};
    default: break;
  }
  if (ports::Is(s, ports::Verdict::kFenced)) return {409, "fenced"};
  if (ports::Is(s, ports::Verdict::kNotFound)) return {404, "not_found"};
  if (ports::Is(s, ports::Verdict::kNoCapacity)) return {409, "no_capacity"};
  if (ports::Is(s, ports::Verdict::kForceRelease)) return {409, "force_release"};
  if (ports::Is(s, ports::Verdict::kDeregistered)) return {409, "deregistered"};
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


namespace {

// The statuses the wire answers with, each a slot of RequestMetrics::found;
// another is looked up in the family each time.
constexpr std::array<int, 14> kCountedStatuses = {200, 204, 400, 401, 403, 404, 405, 409, 410, 413, 429, 500, 503, 504};

}  // namespace

NodeWire::RequestMetrics::RequestMetrics(size_t routes) : found(routes * kCountedStatuses.size()) {}

Histogram& NodeWire::RequestMetrics::For(size_t route, const char* label, int status) {
  const auto slot = std::find(kCountedStatuses.begin(), kCountedStatuses.end(), status);
  auto lookup = [&]() -> Histogram& {
    return family.For("route=\"" + std::string(label) + "\",status=\"" + std::to_string(status) + "\"");
  };
  if (slot == kCountedStatuses.end()) return lookup();
  std::atomic<Histogram*>& cached = found[route * kCountedStatuses.size() + (slot - kCountedStatuses.begin())];
  if (Histogram* h = cached.load(std::memory_order_acquire)) return *h;
  Histogram& h = lookup();  // the family keeps it for its life
  cached.store(&h, std::memory_order_release);
  return h;
}

NodeWire::NodeWire(NodeWireOptions options)
    : o_(std::move(options)), jit_(o_.tiers, o_.jit_sources), workers_(std::make_unique<CallPool>(o_.workers)) {
  if (!o_.now_ns) o_.now_ns = WallNowNs;
  protocol::HealthReply h;
  h.deployment = o_.deployment;
  if (o_.ha) {
    h.replica = h.active_replica = o_.ha->replica;
    h.active_address = o_.ha->address;
    h.generation = o_.ha->generation;
  }
  health_body_ = protocol::Encode(h);
}

// The route table. Every route names its guard and whether it blocks, so a
// route added without a guard is visibly missing one, and where it runs is
// decided once, by Dispatch. A path's {node} and {lease} capture one
// non-empty segment; the label is the request metrics' (a fixed set, so a
// stranger's paths cannot grow it).
const std::vector<NodeWire::Route>& NodeWire::Routes() {
  using G = Guard;
  static const std::vector<Route> kRoutes = WithSegments({
      {"GET", "/healthz", "healthz", G::kNone, false, &NodeWire::Health},
      {"HEAD", "/healthz", "healthz", G::kNone, false, &NodeWire::Health},
      // A load balancer's check: 200 only on the active replica (standby_wire.h).
      {"GET", "/healthz/active", "healthz", G::kNone, false, &NodeWire::Health},
      {"HEAD", "/healthz/active", "healthz", G::kNone, false, &NodeWire::Health},
      // Authenticated against the body's name, after decoding.
      {"POST", "/v1/register", "register", G::kNone, true, &NodeWire::Register},
      {"POST", "/v1/nodes/{node}/poll", "poll", G::kNewWork, false, &NodeWire::Poll},
      // Reporting is the handover itself: any process of the node.
      {"POST", "/v1/nodes/{node}/result", "result", G::kResult, true, &NodeWire::ReportResult},
      {"POST", "/v1/nodes/{node}/withdraw", "withdraw", G::kNewWork, true, &NodeWire::Withdraw},
      {"GET", "/v1/nodes/{node}/launched", "launched", G::kNewWork, true, &NodeWire::Launched},
      {"POST", "/v1/nodes/{node}/reconcile", "reconcile", G::kNewWork, true, &NodeWire::Reconcile},
      {"POST", "/v1/nodes/{node}/renew", "renew", G::kNode, true, &NodeWire::Renew},
      {"GET", "/v1/nodes/{node}/cache-policy", "cache-policy", G::kNode, true, &NodeWire::CachePolicy},
      {"POST", "/v1/nodes/{node}/describe", "describe", G::kNewWork, true, &NodeWire::Describe},
      // A superseded process may finish its launch.
      {"POST", "/v1/nodes/{node}/jit", "jit", G::kNode, true, &NodeWire::Jit},
      {"GET", "/v1/nodes/{node}/leases/{lease}", "lease_get", G::kOwnLease, true, &NodeWire::LeaseGet},
      {"POST", "/v1/nodes/{node}/leases/{lease}/bind", "lease_bind", G::kNewWork, true, &NodeWire::Bind},
      {"POST", "/v1/nodes/{node}/leases/{lease}/advance", "lease_advance", G::kOwnLease, true, &NodeWire::Advance},
      {"POST", "/v1/nodes/{node}/leases/{lease}/heartbeat", "lease_heartbeat", G::kOwnLease, true,
       &NodeWire::Heartbeat},
      {"POST", "/v1/nodes/{node}/leases/{lease}/failure", "lease_failure", G::kOwnLease, true, &NodeWire::MarkFailure},
      {"POST", "/v1/nodes/{node}/leases/{lease}/release", "lease_release", G::kOwnLease, true, &NodeWire::Release},
      {"POST", "/v1/nodes/{node}/leases/{lease}/runner/remove", "runner_remove", G::kOwnLease, true,
       &NodeWire::RemoveRunner},
      {"POST", "/v1/nodes/{node}/leases/{lease}/runner/recover", "runner_recover", G::kOwnLease, true,
       &NodeWire::RecoverRunner},
      {"POST", "/v1/nodes/{node}/leases/{lease}/runner/outdated", "runner_outdated", G::kOwnLease, true,
       &NodeWire::RunnerOutdated},
  });
  return kRoutes;
}

std::vector<NodeWire::Route> NodeWire::WithSegments(std::vector<Route> routes) {
  for (Route& r : routes) r.segments = Split(r.path);
  return routes;
}

namespace {

// Whether `path` has the shape of a route's `want`, filling the captures.
bool Matches(const std::vector<std::string>& want, const std::vector<std::string>& path, std::string& node,
             std::string& lease) {
  if (want.size() != path.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == "{node}" || want[i] == "{lease}") {
      if (path[i].empty()) return false;
    } else if (want[i] != path[i]) {
      return false;
    }
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == "{node}") node = path[i];
    if (want[i] == "{lease}") lease = path[i];
  }
  return true;
}

}  // namespace

void NodeWire::Handle(HttpRequest request, Responder respond) {
  auto c = std::make_shared<Call>();
  c->req = std::move(request);
  c->path = Split(c->req.target);
  const Route* route = nullptr;
  const Route* other_method = nullptr;
  for (const Route& r : Routes()) {
    if (!Matches(r.segments, c->path, c->node, c->lease)) continue;
    if (c->req.method == r.method) {
      route = &r;
      break;
    }
    other_method = &r;
  }
  // Every answer is counted and timed by route and status.
  const Route* labelled = route != nullptr ? route : other_method;
  const size_t index = labelled != nullptr ? static_cast<size_t>(labelled - Routes().data()) : Routes().size();
  c->respond = [requests = requests_, index, label = labelled ? labelled->label : "other",
                start = std::chrono::steady_clock::now(), respond = std::move(respond)](HttpResponse r) {
    requests->For(index, label, r.status).Observe(std::chrono::steady_clock::now() - start);
    respond(std::move(r));
  };
  c->incarnation = std::string(c->req.Header(kIncarnationHeader));
  if (route == nullptr && other_method != nullptr) {
    return c->Fail(405, "refused", std::string(other_method->path) + " answers " + other_method->method);
  }
  // Without a plane (tests of the listener) only /healthz is served.
  if (route == nullptr || (o_.plane == nullptr && route->handler != &NodeWire::Health)) return c->NoRoute();
  Dispatch(*route, c);
}

// The one place a route's thread is chosen: on the I/O thread when neither
// its guard nor its handler blocks, else one hop to a worker, where the guard
// and the handler run in turn.
void NodeWire::Dispatch(const Route& route, const std::shared_ptr<Call>& c) {
  if (route.guard != Guard::kNone) c->revoked = RememberedRevocation(*c);
  const bool guard_blocks =
      route.guard == Guard::kOwnLease || (route.guard != Guard::kNone && c->req.tls && !c->revoked);
  if (!route.blocks && !guard_blocks) {
    if (Admit(route.guard, c)) (this->*route.handler)(c);
    return;
  }
  workers_->Post([this, &route, c] {
    if (Admit(route.guard, c)) (this->*route.handler)(c);
  });
}

bool NodeWire::Authenticated(const std::shared_ptr<Call>& c) {
  // On the loopback wire the path is the only identity (LoopbackOnly). Over
  // TLS the certificate decides, and a path that disagrees is rejected, never
  // reconciled (R08).
  if (!c->req.tls) return true;
  if (!c->req.peer || c->req.peer->common_name.empty()) {
    c->Fail(401, "unauthenticated", "this wire requires a client certificate issued by the deployment's authority");
    return false;
  }
  if (c->req.peer->common_name != c->node) {
    c->Fail(403, "refused", "this connection is authenticated as node \"" + c->req.peer->common_name +
                                "\" and cannot act for \"" + c->node + "\"");
    return false;
  }
  return true;
}

// The verdict without blocking: the ledger's adapter remembers its answer
// (revocation_memo.h) and no revocation list plugin, which may block, is to
// be asked. Empty when a worker has to ask.
std::optional<bool> NodeWire::RememberedRevocation(const Call& c) const {
  if (!c.req.tls || !c.req.peer || o_.revocations == nullptr || !o_.revocation_lists.empty()) return std::nullopt;
  return o_.revocations->KnownRevoked(c.node, c.req.peer->serial, IssuedAt(*c.req.peer));
}

bool NodeWire::NotRevoked(const std::shared_ptr<Call>& c) {
  if (!c->req.tls) return true;  // no certificate, nothing to take back
  const PeerCertificate& peer = *c->req.peer;
  auto unreadable = [&](const Status& s) {
    o_.log->Warn("wire.revocations_unreadable", {{"node", c->node}, {"error", s.message()}});
    c->Fail(503, "unavailable", "the revocation lists cannot be read, so no certificate is accepted; try again");
    return false;
  };
  auto revoked = [&] {
    o_.log->Info("wire.revoked_certificate", {{"node", c->node}, {"serial", peer.serial}});
    c->Fail(403, "refused", "certificate " + peer.serial + " of node \"" + c->node +
                                "\" has been revoked; the node needs a new certificate");
    return false;
  };
  if (o_.revocations == nullptr) return unreadable(Status::Unavailable("no revocation store is configured"));
  // Dispatch's verdict is spent here: a later check of the same call asks again.
  std::optional<bool> in_ledger = std::exchange(c->revoked, std::nullopt);
  if (!in_ledger) {
    auto asked = o_.revocations->CertRevokedFor(c->node, peer.serial, IssuedAt(peer));
    if (!asked.ok()) return unreadable(asked.status());
    in_ledger = *asked;
  }
  if (*in_ledger) return revoked();
  const ports::CertIdentity id{peer.serial, peer.issuer_sha256, c->node, peer.not_before_ns};
  for (ports::RevocationList* list : o_.revocation_lists) {
    auto r = list->IsRevoked(id);
    if (!r.ok()) return unreadable(r.status());
    if (*r) return revoked();
  }
  return true;
}

// The guards (node_wire.h). False: the call is answered already.
bool NodeWire::Admit(Guard guard, const std::shared_ptr<Call>& c) {
  if (guard == Guard::kNone) return true;
  if (!Authenticated(c) || !NotRevoked(c)) return false;
  o_.plane->Seen(c->node, c->incarnation);  // every authenticated request is evidence of life (R31)
  // S03: a node the plane does not know is told so before any other
  // verdict, and registers again; a superseded process is refused new work
  // only. Two routes decide for themselves: a result goes to the plane,
  // which still knows the commands it tombstoned for a node whose record is
  // gone (R03), and a lease's holder keeps renewing it while it registers
  // again (AdmitLeaseRequest, R19), or its leases would expire meanwhile.
  const Status known = o_.plane->CheckIncarnation(c->node, c->incarnation);
  const bool decides_itself = guard == Guard::kResult || guard == Guard::kOwnLease;
  if ((plane::Is(known, plane::kUnregistered) && !decides_itself) ||
      (guard == Guard::kNewWork && plane::Is(known, plane::kSuperseded))) {
    c->Fail(known);
    return false;
  }
  if (guard == Guard::kOwnLease) {
    if (Status s = o_.plane->AdmitLeaseRequest(c->node, c->incarnation, c->lease); !s.ok()) {
      c->Fail(s);
      return false;
    }
  }
  return true;
}

void NodeWire::Health(const std::shared_ptr<Call>& c) { c->Reply(200, health_body_); }

void NodeWire::Register(const std::shared_ptr<Call>& c) {
  auto req = protocol::Decode<protocol::RegisterRequest>(c->req.body);
  if (c->req.tls) {
    // The certificate names who is arriving, whatever the body says: that
    // host's proof is discarded first (R16, R18), and no other host's.
    if (!c->req.peer || c->req.peer->common_name.empty()) {
      return c->Fail(401, "unauthenticated", "this wire requires a client certificate issued by the deployment's authority");
    }
    c->node = c->req.peer->common_name;
    if (Status s = o_.plane->ArrivingForRegistration(c->node); !s.ok()) return c->Fail(503, "", s.message());
    if (!req.ok()) return c->Fail(req.status());
    if (req->node != c->node) {
      return c->Fail(403, "refused", "this connection is authenticated as node \"" + c->node +
                                         "\" and cannot register \"" + req->node.substr(0, 100) + "\"");
    }
    if (!NotRevoked(c)) return;
  } else {
    // On the loopback wire a body that cannot be decoded names nobody, so
    // every host's proof is discarded (R15).
    if (!req.ok()) {
      if (Status s = o_.plane->ArrivalWasUnreadable(); !s.ok()) return c->Fail(503, "", s.message());
      return c->Fail(req.status());
    }
    c->node = req->node;
    if (Status s = o_.plane->ArrivingForRegistration(c->node); !s.ok()) return c->Fail(503, "", s.message());
  }
  auto resp = o_.plane->CompleteRegistration(*req);
  if (!resp.ok()) {
    if (plane::Is(resp.status(), plane::kRefused) || plane::Is(resp.status(), plane::kSuperseded)) {
      return c->Fail(resp.status());
    }
    return c->Fail(503, "", resp.status().message());  // an outage: the node retries
  }
  c->Reply(200, protocol::Encode(*resp));
}

void NodeWire::Poll(const std::shared_ptr<Call>& c) {
  plane::Plane* plane = o_.plane;
  auto deliver = [c, plane](const protocol::Command& cmd) {
    HttpResponse resp{200, "application/json", protocol::Encode(cmd)};
    // A command is delivered only to a client that is still there: one the
    // connection could not carry goes back to the queue (R43, S06).
    resp.on_unsent = [plane, node = c->node, incarnation = c->incarnation, id = cmd.id] {
      plane->GiveBack(node, incarnation, id);
    };
    c->respond(std::move(resp));
  };
  auto ticket = plane->PollAsync(c->node, c->incarnation, [this, c, plane, deliver](
                                                              nodeplane::Result<std::optional<protocol::Command>> r) {
    if (!r.ok()) return c->Fail(r.status());
    if (!r->has_value()) return c->NoContent();  // nothing to do
    if (!c->req.tls) return deliver(**r);
    // The certificate was good when the poll parked; it must still be when
    // the command is handed over, or the command goes back (S11): asked here
    // when the verdict is remembered, else on a worker.
    auto hand_over = [this, c, plane, deliver](const protocol::Command& cmd) {
      if (NotRevoked(c)) return deliver(cmd);
      plane->GiveBack(c->node, c->incarnation, cmd.id);
    };
    if ((c->revoked = RememberedRevocation(*c))) return hand_over(**r);
    workers_->Post([hand_over, cmd = std::move(**r)] { hand_over(cmd); });
  });
  if (c->req.client) {
    // A poll whose client went away takes nothing more (weak: the ticket
    // holds this call, and the call holds the watch).
    std::weak_ptr<plane::PollTicket> weak = ticket;
    c->req.client->OnGone([plane, weak] {
      if (auto t = weak.lock()) plane->CancelPoll(t);
    });
  }
}

void NodeWire::ReportResult(const std::shared_ptr<Call>& c) {
  auto res = protocol::Decode<protocol::CommandResult>(c->req.body);
  if (!res.ok()) return c->Fail(res.status());
  Status s = o_.plane->ReceiveResult(c->node, c->incarnation, *res);
  if (!s.ok()) return c->Fail(s);
  c->NoContent();
}

void NodeWire::Withdraw(const std::shared_ptr<Call>& c) {
  if (auto b = protocol::Decode<protocol::EmptyBody>(c->req.body.empty() ? "{}" : c->req.body, "withdraw"); !b.ok()) {
    return c->Fail(b.status());
  }
  Status s = o_.plane->Withdraw(c->node, c->incarnation);
  if (!s.ok()) return c->Fail(s);
  c->NoContent();
}

void NodeWire::Bind(const std::shared_ptr<Call>& c) {
  auto body = protocol::Decode<protocol::EpochBody>(c->req.body, "bind");
  if (!body.ok()) return c->Fail(body.status());
  if (Status s = o_.plane->CheckIncarnation(c->node, c->incarnation); !s.ok()) return c->Fail(s);
  // The path decides the node; a body naming another is ignored, not obeyed.
  Status s = o_.leases->Bind(c->lease, body->epoch, c->node, c->incarnation);
  if (!s.ok()) return c->Fail(s);
  c->NoContent();
}

void NodeWire::LeaseGet(const std::shared_ptr<Call>& c) {
  auto lease = o_.leases->GetLease(c->lease);
  if (!lease.ok()) return c->Fail(lease.status());
  c->Reply(200, protocol::Encode(protocol::LeaseReply{*lease}));
}

// The lease's runner exited 7: GitHub refused its version. Its tier is
// paused (no launch is placed for it) until an operator resumes it.
void NodeWire::RunnerOutdated(const std::shared_ptr<Call>& c) {
  auto b = protocol::Decode<protocol::EpochBody>(c->req.body);
  if (!b.ok()) return c->Fail(b.status());
  auto lease = o_.leases->GetLease(c->lease);
  if (!lease.ok()) return c->Fail(lease.status());
  if (lease->epoch != b->epoch) {
    return c->Fail(Status::Fenced("lease " + c->lease + " is at epoch " + std::to_string(lease->epoch) + ", not " +
                                  std::to_string(b->epoch)));
  }
  o_.plane->PauseTier(lease->tier, "the runner of lease " + lease->id + " on node \"" + c->node +
                                       "\" was refused by GitHub as outdated (exit 7): its image is too old");
  o_.log->Warn("wire.tier_paused", {{"tier", lease->tier}, {"node", c->node}, {"lease", lease->id},
                                    {"why", "runner outdated"}});
  c->NoContent();
}

void NodeWire::Advance(const std::shared_ptr<Call>& c) {
  auto b = protocol::Decode<protocol::AdvanceBody>(c->req.body);
  if (!b.ok()) return c->Fail(b.status());
  Status s = o_.leases->Advance(c->lease, b->epoch, b->phase, c->incarnation);
  if (!s.ok()) return c->Fail(s);
  c->NoContent();
}

void NodeWire::Heartbeat(const std::shared_ptr<Call>& c) {
  auto b = protocol::Decode<protocol::EpochBody>(c->req.body, "heartbeat");
  if (!b.ok()) return c->Fail(b.status());
  Status s = o_.leases->Heartbeat(c->lease, b->epoch);
  if (!s.ok()) return c->Fail(s);
  c->NoContent();
}

void NodeWire::MarkFailure(const std::shared_ptr<Call>& c) {
  auto b = protocol::Decode<protocol::FailureBody>(c->req.body);
  if (!b.ok()) return c->Fail(b.status());
  Status s = o_.leases->MarkFailure(c->lease, b->epoch, b->reason);
  if (!s.ok()) return c->Fail(s);
  c->NoContent();
}

void NodeWire::Release(const std::shared_ptr<Call>& c) {
  auto b = protocol::Decode<protocol::ReleaseBody>(c->req.body);
  if (!b.ok()) return c->Fail(b.status());
  Status s = o_.leases->Release(c->lease, b->epoch, b->outcome);
  if (!s.ok()) return c->Fail(s);
  o_.plane->ForgetLease(c->node, c->lease);  // ended: its owner record goes
  if (o_.lease_events != nullptr) {
    ++(b->outcome == ports::Phase::kDone ? o_.lease_events->released_done : o_.lease_events->released_failed);
  }
  c->NoContent();
}

void NodeWire::Launched(const std::shared_ptr<Call>& c) {
  if (Status s = o_.plane->CheckIncarnation(c->node, c->incarnation); !s.ok()) return c->Fail(s);
  auto launched = o_.leases->LaunchedLeaseIds(c->node);
  if (!launched.ok()) return c->Fail(launched.status());
  auto quarantined = o_.leases->QuarantinedLeaseIds(c->node);
  if (!quarantined.ok()) return c->Fail(quarantined.status());
  c->Reply(200, protocol::Encode(protocol::LaunchedReply{*launched, *quarantined}));
}

void NodeWire::Reconcile(const std::shared_ptr<Call>& c) {
  auto body = protocol::Decode<protocol::ReconcileBody>(c->req.body);
  if (!body.ok()) return c->Fail(body.status());
  auto freed = o_.plane->ReconcileInventory(c->node, c->incarnation, body->instances);
  if (!freed.ok()) return c->Fail(freed.status());
  c->Reply(200, protocol::Encode(protocol::FreedReply{*freed}));
}

void NodeWire::Renew(const std::shared_ptr<Call>& c) {
  if (o_.authority == nullptr || !c->req.peer) {
    return c->Fail(501, "refused", "this wire has no certificate authority; renewal needs [wire.tls]");
  }
  auto renew = protocol::Decode<protocol::RenewBody>(c->req.body);
  if (!renew.ok()) return c->Fail(renew.status());
  // Named for the authenticated node, whatever the request asks for: a
  // renewal grants nothing new (R09).
  const int64_t now = o_.now_ns();
  auto cert = o_.authority->SignNodeCSR(renew->csr_pem, c->node, now);
  if (!cert.ok()) return c->Fail(400, "refused", cert.status().message());
  auto info = pki::InspectCert(*cert);
  if (!info.ok()) return c->Fail(500, "unavailable", "the signed certificate cannot be read back");
  const PeerCertificate& parent = *c->req.peer;
  ports::IssuedCert issued{info->serial, c->node, "renewed", info->not_after_ns, now, false};
  // One transaction: refused if the certificate being replaced was revoked meanwhile.
  Status s = o_.revocations != nullptr
                 ? o_.revocations->RecordRenewedCert(issued, parent.serial, IssuedAt(parent))
                 : Status::Unavailable("no revocation store is configured");
  if (ports::Is(s, ports::Verdict::kParentRevoked)) {
    return c->Fail(401, "unauthenticated", "this certificate has been revoked and cannot renew");
  }
  if (!s.ok()) return c->Fail(503, "unavailable", "the new certificate cannot be recorded: " + s.message());
  o_.log->Info("wire.renewed", {{"node", c->node}, {"parent_serial", parent.serial}, {"serial", info->serial}});
  c->Reply(200, protocol::Encode(protocol::RenewReply{*cert, o_.authority->trust_bundle_pem()}));
}

void NodeWire::CachePolicy(const std::shared_ptr<Call>& c) {
  if (o_.cache_policy == nullptr) {
    return c->Fail(503, "", "Actions cache policy is unavailable: no cache-policy plugin is configured");
  }
  auto allowed = o_.cache_policy->ActionsCacheAllowed(QueryParam(c->req.target, "owner"),
                                                      QueryParam(c->req.target, "repository"));
  if (!allowed.ok()) return c->Fail(503, "", "Actions cache policy is unavailable: " + allowed.status().message());
  c->Reply(200, protocol::Encode(protocol::CachePolicyReply{*allowed}));
}

void NodeWire::Describe(const std::shared_ptr<Call>& c) {
  auto body = protocol::Decode<protocol::DescribeBody>(c->req.body);
  if (!body.ok()) return c->Fail(body.status());
  auto target = jit_.Resolve(body->tier);
  if (!target.ok()) return c->Fail(target.status());
  auto set = jit_.RunnerSetFor(*target, false);
  if (!set.ok() && set.status().code() == Code::kNotFound) return c->Reply(200, protocol::Encode(protocol::DescribeReply{}));
  if (!set.ok()) return c->Fail(set.status());
  c->Reply(200, protocol::Encode(protocol::DescribeReply{true, set->id, set->name, set->labels}));
}

void NodeWire::Jit(const std::shared_ptr<Call>& c) {
  auto body = protocol::Decode<protocol::JitBody>(c->req.body);
  if (!body.ok()) return c->Fail(body.status());
  const std::string lease = protocol::LeaseOfRunnerName(body->runner_name);
  if (lease.empty()) {
    return c->Fail(403, "refused", "runner name \"" + body->runner_name.substr(0, 100) +
                                       "\" was not assigned by nodeplane, so no command entitles this node to a "
                                       "registration for it");
  }
  // Only the process executing the launch is entitled, and the tier (so
  // the target, so the App) comes from that launch, never from the node.
  auto tier = o_.plane->EntitledToLaunch(c->node, c->incarnation, lease);
  if (!tier.ok()) return c->Fail(tier.status());
  auto target = jit_.Resolve(*tier);
  if (!target.ok()) return c->Fail(target.status());
  ports::JitRequest req{0, body->runner_name, target->tier->labels, body->work_folder};
  Result<ports::JitRegistration> minted = Status::Internal("not asked");
  if (target->tier->scale_set && o_.scale_set_jit) {  // a scale set's runner registers with it
    minted = o_.scale_set_jit(*tier, body->runner_name, body->work_folder);
  } else {
    for (bool fresh : {false, true}) {  // a recreated runner group must not wedge the tier
      auto set = jit_.RunnerSetFor(*target, fresh);
      if (!set.ok()) return c->Fail(set.status());
      req.set_id = set->id;
      minted = target->source->MintJitConfig(req);
      if (minted.ok() || minted.status().code() != Code::kNotFound) break;
    }
  }
  if (!minted.ok()) return c->Fail(minted.status());
  o_.log->Info("wire.jit_minted", {{"node", c->node}, {"lease", lease}, {"tier", *tier},
                                   {"target", target->tier->target}, {"runner_id", minted->runner_id}});
  c->Reply(200, protocol::Encode(protocol::JitReply{minted->encoded_config, minted->runner_id, minted->runner_name}));
}

Result<std::string> NodeWire::TierOfLease(const std::string& lease_id) {
  auto lease = o_.leases->GetLease(lease_id);
  if (lease.ok()) return lease->tier;
  if (!ports::Is(lease.status(), ports::Verdict::kNotFound)) return lease.status();
  auto job = o_.leases->JobForLease(lease_id);  // ended: its history still knows
  if (!job.ok()) return job.status();
  if (!job->has_value()) return lease.status();
  return (*job)->tier;
}

void NodeWire::RemoveRunner(const std::shared_ptr<Call>& c) {
  auto body = protocol::Decode<protocol::RemoveRunnerBody>(c->req.body);
  if (!body.ok()) return c->Fail(body.status());
  auto tier = TierOfLease(c->lease);
  if (!tier.ok()) return c->Fail(tier.status());
  auto target = jit_.Resolve(*tier);
  if (!target.ok()) return c->Fail(target.status());
  // The runner is the one named for the lease the node is entitled to; the
  // id the node sent is never trusted to say which runner that is (R24).
  const std::string name = protocol::RunnerNameFor(c->lease);
  if (body->runner_id != 0) {
    o_.log->Debug("wire.runner_id_ignored", {{"node", c->node}, {"lease", c->lease}, {"runner_id", body->runner_id}});
  }
  if (Status s = target->source->RemoveRunner(0, name); !s.ok()) return c->Fail(s);
  c->NoContent();
}

void NodeWire::RecoverRunner(const std::shared_ptr<Call>& c) {
  if (auto b = protocol::Decode<protocol::EmptyBody>(c->req.body.empty() ? "{}" : c->req.body, "runner_recover");
      !b.ok()) {
    return c->Fail(b.status());
  }
  auto lease = o_.leases->GetLease(c->lease);  // only a quarantined lease, which is open
  if (!lease.ok()) return c->Fail(lease.status());
  if (lease->phase != ports::Phase::kQuarantine) {
    return c->Fail(409, "refused", "runner recovery is only allowed for quarantined compute");
  }
  auto target = jit_.Resolve(lease->tier);
  if (!target.ok()) return c->Fail(target.status());
  const std::string name = protocol::RunnerNameFor(c->lease);
  auto state = target->source->RecoverRunner(name);
  if (!state.ok()) return c->Fail(state.status());
  if (state->busy) return c->Reply(200, protocol::Encode(protocol::RecoverReply{"busy"}));  // a job runs on it: leave it be
  if (state->present) {
    if (Status s = target->source->RemoveRunner(state->runner_id, name); !s.ok()) return c->Fail(s);
  }
  c->Reply(200, protocol::Encode(protocol::RecoverReply{"retired"}));
}

}  // namespace nodeplane::wire
