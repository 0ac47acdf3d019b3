// The Plane: registration, incarnations, polling, results and liveness.
#include "plane/plane.h"

#include <algorithm>
#include <random>

#include "common/units.h"
#include "plane/plane_internal.h"

namespace nodeplane::plane {
namespace {

bool KnownProvider(const std::string& p) {
  return p == "process" || p == "container" || p == "docker" || p == "firecracker" || p == "tart" || p == "ec2";
}

bool KnownGuestOS(const std::string& os) { return os == "linux" || os == "macos" || os == "windows"; }

// A site's store decides which providers can keep their data there.
bool SiteAcceptsProvider(const Site& site, const std::string& provider) {
  if (site.store == "ceph") return provider == "firecracker";
  if (site.store == "ebs-s3") return provider == "ec2";
  return true;
}

std::string Range(int32_t lo, int32_t hi) { return std::to_string(lo) + "-" + std::to_string(hi); }

}  // namespace

std::string NewCommandId() {
  static thread_local std::random_device rd;
  static const char* kHex = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 4; ++i) {
    uint32_t v = rd();
    for (int j = 0; j < 8; ++j) {
      id.push_back(kHex[v & 15]);
      v >>= 4;
    }
  }
  return id;
}

Plane::Plane(PlaneOptions options)
    : opts_(std::move(options)),
      clock_(opts_.clock != nullptr ? opts_.clock : &system_clock_),
      log_(opts_.log != nullptr ? opts_.log : &fallback_log_),
      poll_window_ns_(opts_.poll_window_ns) {
  // The poll timer answers parked polls whose window closed.
  poll_timer_ = std::jthread([this](std::stop_token) {
    MutexLock lock(mu_);
    while (!stopping_) {
      const int64_t now = clock_->Now();
      Completions done;
      while (!poll_deadlines_.empty() && poll_deadlines_.begin()->first <= now) {
        std::shared_ptr<PollTicket> t = poll_deadlines_.begin()->second.lock();
        poll_deadlines_.erase(poll_deadlines_.begin());
        if (!t || t->finished) continue;
        t->finished = true;
        if (NodeState* n = Find(t->node)) {
          auto& w = n->waiters;
          w.erase(std::remove(w.begin(), w.end(), t), w.end());
        }
        done.push_back({t, std::optional<Command>()});
      }
      if (!done.empty()) {
        lock.Unlock();
        Fire(done);
        lock.Lock();
        continue;
      }
      const int64_t next = poll_deadlines_.empty() ? now + kSecondNs : poll_deadlines_.begin()->first;
      clock_->WaitUntil(lock.native(), timer_cv_, next, [&]() NP_REQUIRES(mu_) {
        return stopping_ || (!poll_deadlines_.empty() && poll_deadlines_.begin()->first < next);
      });
    }
  });
}

Plane::~Plane() {
  Shutdown();
  poll_timer_ = std::jthread();  // joins
}

void Plane::Shutdown() {
  Completions done;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    for (auto& [name, n] : nodes_) {
      FailQueuedLocked(*n, "the control plane is stopping, so nothing started");
      ReleaseWaitersLocked(*n, done, std::optional<Command>());
    }
  }
  results_cv_.notify_all();  // every dispatch still waiting stops waiting
  timer_cv_.notify_all();
  Fire(done);
}

Plane::NodeState* Plane::Find(const std::string& node) {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : it->second.get();
}

const Plane::NodeState* Plane::Find(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : it->second.get();
}

bool Plane::SupersededLocked(const NodeState& n, const std::string& incarnation) const {
  return !n.incarnation.empty() && n.incarnation != incarnation;
}

void Plane::Fire(Completions& done) {
  for (Completion& c : done) c.ticket->callback(std::move(c.answer));
  done.clear();
}

void Plane::PauseTier(const std::string& tier, const std::string& why) {
  MutexLock lock(mu_);
  paused_tiers_.emplace(tier, why);  // the first reason stands
}

bool Plane::ResumeTier(const std::string& tier) {
  MutexLock lock(mu_);
  return paused_tiers_.erase(tier) > 0;
}

std::map<std::string, std::string> Plane::PausedTiers() const {
  MutexLock lock(mu_);
  return paused_tiers_;
}

const Tier* Plane::TierOf(const std::string& label) const {
  for (const Tier& t : opts_.tiers) {
    if (t.shape.label == label) return &t;
  }
  return nullptr;
}

int64_t Plane::poll_window_ns() const {
  MutexLock lock(mu_);
  return poll_window_ns_;
}

// ---- Registration ----

Status Plane::ArrivingForRegistration(const std::string& node) {
  if (opts_.barrier == nullptr) return Status::Ok();
  return opts_.barrier->InvalidateBarrierRun(node);
}

Status Plane::ArrivalWasUnreadable() {
  if (opts_.barrier == nullptr) return Status::Ok();
  return opts_.barrier->InvalidateEveryBarrierRun();
}

Result<RegisterResponse> Plane::CompleteRegistration(const RegisterRequest& req) {
  // Verdicts first, as a pure function of the request and the config: a
  // refusal changes nothing in memory. Everything else that fails is an
  // outage, never a refusal (R01).
  const int32_t node_min = req.min_version == 0 ? req.version : req.min_version;
  if (req.version <= 0 || req.min_version < 0 || node_min > req.version) {
    return Refused("node \"" + req.node + "\" declares protocol versions " + std::to_string(req.min_version) + ".." +
                   std::to_string(req.version) + ", which is not a range");
  }
  const int32_t negotiated = std::min(req.version, kMaxProtocol);
  if (negotiated < std::max(node_min, kMinProtocol)) {
    const bool node_too_old = req.version < kMinProtocol;
    return Refused("node \"" + req.node + "\" speaks protocol " + Range(node_min, req.version) +
                   " and this control plane speaks " + Range(kMinProtocol, kMaxProtocol) + "; " +
                   (node_too_old ? "UPGRADE THAT NODE" : "UPGRADE THIS CONTROL PLANE FIRST"));
  }
  if (req.node.empty()) return Refused("a node must have a name");
  if (req.deployment != opts_.deployment) {
    return Refused("node \"" + req.node + "\" belongs to deployment \"" + req.deployment +
                   "\", and this control plane is \"" + opts_.deployment + "\"");
  }
  if (req.vcpu <= 0 || req.memory <= 0) {
    return Refused("node \"" + req.node + "\" contributes " + std::to_string(req.vcpu) + " vCPU and " +
                   std::to_string(req.memory) + " bytes of memory; a node must contribute both");
  }
  if (!KnownProvider(req.provider)) {
    return Refused("node \"" + req.node + "\" claims provider \"" + req.provider +
                   "\", which this control plane cannot ask anything of");
  }
  for (const std::string& os : req.guest_os) {
    if (!KnownGuestOS(os)) return Refused("node \"" + req.node + "\" claims guest OS \"" + os + "\"");
  }
  if (!req.site.empty()) {
    // Byte-exact: nothing trims or folds a site name (R11, R12).
    const Site* site = nullptr;
    for (const Site& s : opts_.sites) {
      if (s.name == req.site) site = &s;
    }
    if (site == nullptr) {
      if (opts_.sites.empty()) {
        return Refused("node \"" + req.node + "\" claims site \"" + req.site +
                       "\", and this control plane declares no sites");
      }
      std::vector<std::string> names;
      for (const Site& s : opts_.sites) names.push_back(s.name);
      std::sort(names.begin(), names.end());
      std::string have;
      for (const std::string& n : names) have += (have.empty() ? "" : ", ") + n;
      return Refused("node \"" + req.node + "\" claims site \"" + req.site +
                     "\", which this control plane does not declare (have " + have + ")");
    }
    if (!SiteAcceptsProvider(*site, req.provider)) {
      return Refused("node \"" + req.node + "\" runs " + req.provider + ", which cannot use site \"" + site->name +
                     "\"'s " + site->store + " store");
    }
  }

  // Same-node registrations are serialised; other nodes are not blocked.
  std::mutex* node_lock;
  {
    MutexLock lock(mu_);
    auto& m = registration_locks_[req.node];
    if (!m) m = std::make_unique<std::mutex>();
    node_lock = m.get();
  }
  std::lock_guard registration(*node_lock);
  uint64_t before;
  {
    MutexLock lock(mu_);
    if (stopping_) return Status::Unavailable("the control plane is stopping; register again later");
    NodeState* n = Find(req.node);
    // Once a process claimed an incarnation, a registration without one is
    // another process under the name, never a wildcard (R23).
    if (n != nullptr && !n->incarnation.empty() && req.incarnation.empty()) {
      return Superseded("node \"" + req.node + "\" is registered by a process that claimed an incarnation; a "
                        "registration without one cannot replace it");
    }
    if (n != nullptr) {
      n->registering++;
      n->inventory_known = false;  // the incumbent's inventory is no longer current
      n->inventory.clear();
    }
    before = owner_seq_;
  }
  auto finish = [&]() NP_REQUIRES(mu_) {
    if (NodeState* n = Find(req.node)) n->registering = std::max(0, n->registering - 1);
  };
  // What the ledger places on the node, read before the row changes: the
  // owners a restart forgot (R14) and the ended leases to forget (R25).
  auto placed = LeasesOn(req.node);
  if (!placed.ok()) {
    MutexLock lock(mu_);
    finish();
    return Status::Unavailable("the ledger could not say what it places on node \"" + req.node +
                               "\"; try again: " + placed.status().message());
  }

  // A node is registered only once the ledger says so (R38).
  int64_t epoch = 0;
  if (opts_.registrar != nullptr) {
    ports::NodeRegistration reg{req.node, req.provider, req.site, req.incarnation, req.release,
                                req.vcpu, req.memory, negotiated};
    auto recorded = opts_.registrar->RegisterNode(reg);
    if (!recorded.ok() && ports::Is(recorded.status(), ports::Verdict::kConflict)) {
      MutexLock lock(mu_);
      finish();
      return Superseded(recorded.status().message());  // the ledger's word on R23, across restarts
    }
    if (!recorded.ok()) {
      MutexLock lock(mu_);
      finish();
      return Status::Unavailable("the ledger could not record node \"" + req.node +
                                 "\"; try again: " + recorded.status().message());
    }
    epoch = *recorded;
  }

  RegisterResponse resp;
  resp.version = negotiated;
  resp.deployment = opts_.deployment;
  resp.lease_ttl_seconds = opts_.lease_ttl_ns / kSecondNs;
  {
    MutexLock lock(mu_);
    resp.poll_seconds = poll_window_ns_ / kSecondNs;
    auto& slot = nodes_[req.node];
    if (!slot) {
      slot = std::make_unique<NodeState>();
      slot->name = req.node;
    }
    NodeState& n = *slot;
    if (epoch > 0 && epoch < n.ledger_epoch) {
      finish();  // overtaken by a newer registration: answer, install nothing
      return resp;
    }
    if (!n.incarnation.empty() && !req.incarnation.empty() && n.incarnation != req.incarnation) {
      log_->Warn("plane.superseded", {{"node", req.node}});
    }
    ResolveInFlightLocked(n, "node \"" + req.node + "\" re-registered while this command was in flight, so its "
                                                    "outcome is unknown");
    if (!req.incarnation.empty()) n.incarnation = req.incarnation;  // an empty claim never blanks the fence
    n.provider = req.provider;
    n.site = req.site;
    n.guest_os = req.guest_os;
    n.last_seen = clock_->Now();
    n.ledger_epoch = std::max(n.ledger_epoch, epoch);
    n.wire_version = negotiated;
    n.inventory_known = false;
    n.inventory.clear();
  }

  // The inventory frees the quarantined leases it does not name. Only an open
  // lease can be quarantined, and one placed on the node since `placed` was
  // read cannot have reached quarantine within this registration: a node
  // charged nothing is spared the write, half a restart storm's ledger
  // writes (docs/performance.md, "eighth pass").
  const bool may_hold_quarantine = opts_.leases == nullptr || !placed->empty();
  if (req.inventory_known && opts_.registrar != nullptr && may_hold_quarantine) {
    auto freed = opts_.registrar->ResolveQuarantineFor(req.node, req.instances, epoch);
    if (!freed.ok()) log_->Warn("plane.quarantine_unresolved", {{"node", req.node}, {"error", freed.status().message()}});
  }
  {
    MutexLock lock(mu_);
    NodeState* n = Find(req.node);
    if (n != nullptr && n->incarnation == req.incarnation) {
      const std::set<std::string> inventory(req.instances.begin(), req.instances.end());
      if (req.inventory_known) {
        n->inventory = inventory;
        n->inventory_known = true;
      }
      ForgetEndedLocked(req.node, *placed, before);
      AdoptLocked(req.node, req.incarnation, *placed, req.inventory_known ? &inventory : nullptr);
    }
    finish();
  }
  log_->Info("plane.registered", {{"node", req.node}, {"provider", req.provider}, {"site", req.site},
                                  {"epoch", static_cast<long long>(epoch)}, {"version", negotiated}});
  return resp;
}

Status Plane::CheckIncarnation(const std::string& node, const std::string& claimed) const {
  MutexLock lock(mu_);
  const NodeState* n = Find(node);
  if (n == nullptr) return Unregistered("node \"" + node + "\" is not registered; register again");
  if (n->incarnation.empty() || n->incarnation == claimed) return Status::Ok();
  return Superseded("another process is registered as node \"" + node + "\"");
}

void Plane::Seen(const std::string& node, const std::string& incarnation) {
  MutexLock lock(mu_);
  NodeState* n = Find(node);
  if (n != nullptr && !SupersededLocked(*n, incarnation)) n->last_seen = clock_->Now();
}

// ---- Polling ----

void Plane::TakeLocked(NodeState& n, const std::string& incarnation, std::optional<Command>& out) {
  while (!n.queue.empty()) {
    std::shared_ptr<Pending> p = n.queue.front();
    n.queue.pop_front();
    if (!p->expected_incarnation.empty() && p->expected_incarnation != incarnation) {
      AnswerLocked(p, CommandResult{p->cmd.id, false,
                                    "node \"" + n.name + "\" process " + incarnation +
                                        " replaced the bound holder " + p->expected_incarnation +
                                        " before taking this command",
                                    false, "", {}});
      continue;
    }
    if (p->cmd.kind == CommandKind::kLaunch && p->expected_provider != n.provider) {
      AnswerLocked(p, CommandResult{p->cmd.id, false,
                                    "node \"" + n.name + "\" changed provider from " + p->expected_provider + " to " +
                                        n.provider + " after dispatch and before taking this command",
                                    false, "", {}});
      continue;
    }
    p->delivered = true;
    p->taken_by = incarnation;
    n.in_flight[p->cmd.id] = p;
    if (p->cmd.kind == CommandKind::kLaunch && p->cmd.lease && !incarnation.empty()) {
      p->owner_seq = RecordOwnerLocked(p->cmd.lease->id, RequestOwner{n.name, incarnation, true}, p->cmd.RequestId());
    }
    if (p->cmd.kind == CommandKind::kLaunch) dispatch_latency_.Observe(std::chrono::nanoseconds(clock_->Now() - p->queued_at));
    out = p->cmd;
    return;
  }
}

std::shared_ptr<PollTicket> Plane::PollAsync(const std::string& node, const std::string& incarnation,
                                             PollTicket::Callback callback) {
  auto ticket = std::make_shared<PollTicket>();
  ticket->node = node;
  ticket->incarnation = incarnation;
  ticket->callback = std::move(callback);
  Completions done;
  bool earliest = false;  // the poll timer sleeps until the earliest deadline
  {
    MutexLock lock(mu_);
    NodeState* n = Find(node);
    if (stopping_) {
      // An outage the node waits out, never "register again": that sent a
      // fleet into a tight re-registration loop (issue 48).
      ticket->finished = true;
      done.push_back({ticket, Status::Unavailable("the control plane is stopping; poll again later")});
    } else if (n == nullptr) {
      ticket->finished = true;
      done.push_back({ticket, Unregistered("node \"" + node + "\" is not registered; register again")});
    } else if (SupersededLocked(*n, incarnation)) {
      ticket->finished = true;
      done.push_back({ticket, Superseded("another process is registered as node \"" + node + "\"")});
    } else {
      n->last_seen = clock_->Now();
      std::optional<Command> cmd;
      TakeLocked(*n, incarnation, cmd);
      if (cmd) {
        ticket->finished = true;
        done.push_back({ticket, std::move(cmd)});
      } else {
        ticket->deadline = clock_->Now() + poll_window_ns_;
        n->waiters.push_back(ticket);
        const auto at = poll_deadlines_.emplace(ticket->deadline, ticket);
        earliest = at == poll_deadlines_.begin();
      }
    }
  }
  // Waking the timer for a deadline behind others would cost every parked
  // poll a futex call and two context switches for nothing.
  if (earliest) timer_cv_.notify_all();
  Fire(done);
  return ticket;
}

void Plane::CancelPoll(const std::shared_ptr<PollTicket>& ticket) {
  MutexLock lock(mu_);
  if (ticket->finished) return;
  ticket->finished = true;
  if (NodeState* n = Find(ticket->node)) {
    auto& w = n->waiters;
    w.erase(std::remove(w.begin(), w.end(), ticket), w.end());
  }
}

void Plane::GiveBack(const std::string& node, const std::string& incarnation, const std::string& command_id) {
  Completions done;
  {
    MutexLock lock(mu_);
    NodeState* n = Find(node);
    if (n == nullptr) return;
    auto it = n->in_flight.find(command_id);
    if (it == n->in_flight.end() || it->second->taken_by != incarnation || it->second->result) return;
    std::shared_ptr<Pending> p = it->second;
    n->in_flight.erase(it);
    if (p->owner_seq != 0) {
      auto owner = owners_.find(p->cmd.lease->id);
      if (owner != owners_.end() && owner->second.seq == p->owner_seq) EraseOwnerLocked(owner);
    }
    p->delivered = false;
    p->taken_by.clear();
    p->owner_seq = 0;
    n->queue.push_front(p);
    log_->Info("plane.command_given_back", {{"node", node}, {"command", command_id},
                                            {"kind", CommandKindName(p->cmd.kind)}});
    WakeOneLocked(*n, done);
  }
  Fire(done);
}

void Plane::ReleaseWaitersLocked(NodeState& n, Completions& done, Result<std::optional<Command>> answer) {
  for (auto& t : n.waiters) {
    if (t->finished) continue;
    t->finished = true;
    done.push_back({t, answer});
  }
  n.waiters.clear();
}

void Plane::WakeOneLocked(NodeState& n, Completions& done) {
  while (!n.waiters.empty() && !n.queue.empty()) {
    std::shared_ptr<PollTicket> t = n.waiters.front();
    n.waiters.pop_front();
    if (t->finished) continue;
    t->finished = true;
    if (SupersededLocked(n, t->incarnation)) {
      // A poll parked before the supersession is never handed work.
      done.push_back({t, Superseded("another process is registered as node \"" + n.name + "\"")});
      continue;
    }
    std::optional<Command> cmd;
    TakeLocked(n, t->incarnation, cmd);
    done.push_back({t, std::move(cmd)});  // none eligible: answered now, empty
    return;
  }
}

// ---- Results ----

void Plane::AnswerLocked(const std::shared_ptr<Pending>& p, CommandResult r) {
  if (p->result) return;
  p->result = std::move(r);
  results_cv_.notify_all();
}

void Plane::TombstoneLocked(const std::string& node, const std::shared_ptr<Pending>& p) {
  auto& list = tombstones_[node];
  list.emplace_back(p->cmd.id, Tombstone{p->cmd.kind, p->taken_by, p->cmd.RequestId(),
                                         p->cmd.lease ? p->cmd.lease->id : std::string()});
  while (list.size() > opts_.max_tombstones) list.pop_front();
}

void Plane::ResolveInFlightLocked(NodeState& n, const std::string& why) {
  for (auto& [id, p] : n.in_flight) {
    TombstoneLocked(n.name, p);
    AnswerLocked(p, CommandResult{id, false, why, p->cmd.kind == CommandKind::kLaunch, "", {}});
  }
  n.in_flight.clear();
}

void Plane::FailQueuedLocked(NodeState& n, const std::string& why) {
  for (auto& p : n.queue) AnswerLocked(p, CommandResult{p->cmd.id, false, why, false, "", {}});
  n.queue.clear();
}

Status Plane::ReceiveResult(const std::string& node, const std::string& incarnation, const CommandResult& result) {
  MutexLock lock(mu_);
  NodeState* n = Find(node);
  if (n != nullptr && !SupersededLocked(*n, incarnation)) n->last_seen = clock_->Now();
  if (n != nullptr) {
    auto it = n->in_flight.find(result.id);
    if (it != n->in_flight.end()) {
      std::shared_ptr<Pending> p = it->second;
      n->in_flight.erase(it);
      if (p->cmd.kind == CommandKind::kLaunch && p->cmd.lease && !result.ok && !result.custody) {
        if (auto owner = owners_.find(p->cmd.lease->id); owner != owners_.end()) {
          EraseOwnerLocked(owner);  // nothing started
        }
      }
      AnswerLocked(p, result);
      return Status::Ok();
    }
  }
  // A command the plane stopped waiting for. Tombstones outlive a withdrawn
  // node's record, so a result cut short by its stop is still understood.
  auto tomb = tombstones_.find(node);
  if (tomb != tombstones_.end()) {
    auto& list = tomb->second;
    auto it = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == result.id; });
    if (it != list.end()) {
      Tombstone t = it->second;
      list.erase(it);
      if (t.kind == CommandKind::kLaunch) {
        if (result.ok) return TakeCustody();  // R03: redirected, not rejected
        ForgetForRequestLocked(t.request_id);
        return Status::Ok();
      }
      if (t.kind == CommandKind::kDestroy && result.ok && t.request_id != 0) {
        bool held_here = false;
        if (auto owned = owned_by_request_.find(t.request_id); owned != owned_by_request_.end()) {
          for (const std::string& id : owned->second) {
            const RequestOwner& o = owners_.at(id).owner;
            held_here = held_here || (o.node == node && o.incarnation == t.taken_by);
          }
        }
        if (held_here) ForgetForRequestLocked(t.request_id);
      }
      return Status::Ok();
    }
  }
  // A node this plane does not know, reporting a command it never
  // tombstoned (it never registered here, or the plane restarted since), is
  // told so first (S03): it registers again, and the leases the ledger
  // places on it are adopted by that registration (R14).
  if (n == nullptr) return Unregistered("node \"" + node + "\" is not registered; register again");
  // An id this plane does not know from a node it does: its tombstone was
  // evicted. A success may be a launch that started compute, so the node
  // keeps custody of whatever it holds (R03); a failure started nothing.
  if (result.ok) return TakeCustody();
  return Status::Ok();
}

// ---- Liveness ----

void Plane::ExpireStaleLocked(Completions& done) {
  const int64_t now = clock_->Now();
  if (now - seen_floor_ <= StaleAfterLocked()) return;  // nobody can be stale yet
  int64_t floor = now;
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    NodeState& n = *it->second;
    // Busy is not silent: a command in flight is bounded by the command timeout.
    if (now - n.last_seen <= StaleAfterLocked() || !n.in_flight.empty() || n.registering > 0) {
      floor = std::min(floor, n.last_seen);
      ++it;
      continue;
    }
    FailQueuedLocked(n, "node \"" + n.name + "\" went silent before taking this command, so nothing started");
    ReleaseWaitersLocked(n, done, Unregistered("node \"" + n.name + "\" was forgotten after going silent"));
    tombstones_.erase(n.name);
    pending_gone_.emplace_back(n.name, n.ledger_epoch);
    log_->Info("plane.node_expired", {{"node", n.name}});
    it = nodes_.erase(it);
  }
  seen_floor_ = floor;
}

void Plane::RecordGone(std::vector<std::pair<std::string, int64_t>> gone) {
  if (opts_.registrar == nullptr) return;
  std::vector<std::pair<std::string, int64_t>> retry;
  for (auto& [name, epoch] : gone) {
    // Fenced on the epoch: an expiry landing after the node came back matches nothing (S15).
    Status s = opts_.registrar->NodeGone(name, epoch);
    if (!s.ok()) {
      log_->Warn("plane.node_gone_unrecorded", {{"node", name}, {"error", s.message()}});
      retry.emplace_back(name, epoch);
    }
  }
  MutexLock lock(mu_);
  pending_gone_.insert(pending_gone_.end(), retry.begin(), retry.end());
}

void Plane::ExpireSilentNodes() {
  Completions done;
  std::vector<std::pair<std::string, int64_t>> gone;
  {
    MutexLock lock(mu_);
    ExpireStaleLocked(done);
    gone.swap(pending_gone_);
  }
  Fire(done);
  RecordGone(std::move(gone));
}

void Plane::Evict(const std::string& node, const std::string& why) {
  Completions done;
  std::vector<std::pair<std::string, int64_t>> gone;
  {
    MutexLock lock(mu_);
    NodeState* n = Find(node);
    if (n == nullptr) return;
    FailQueuedLocked(*n, "node \"" + node + "\" was evicted (" + why + ") before taking this command, so nothing started");
    ResolveInFlightLocked(*n, "node \"" + node + "\" was evicted (" + why + ") while this command was in flight, so "
                                                                        "its outcome is unknown");
    ReleaseWaitersLocked(*n, done, Unregistered("node \"" + node + "\" was evicted: " + why));
    gone.emplace_back(node, n->ledger_epoch);
    nodes_.erase(node);
  }
  Fire(done);
  log_->Info("plane.node_evicted", {{"node", node}, {"why", why}});
  RecordGone(std::move(gone));
}

void Plane::Watch(std::stop_token stop) {
  std::mutex m;
  std::condition_variable cv;
  std::stop_callback wake(stop, [&] {
    std::lock_guard lock(m);
    cv.notify_all();
  });
  while (!stop.stop_requested()) {
    ExpireSilentNodes();
    int64_t period;
    {
      MutexLock lock(mu_);
      period = StaleAfterLocked() / 2;  // noticed within about one and a half windows
    }
    std::unique_lock lock(m);
    clock_->WaitUntil(lock, cv, clock_->Now() + period, [&] { return stop.stop_requested(); });
  }
}

Status Plane::Withdraw(const std::string& node, const std::string& incarnation) {
  int64_t epoch;
  {
    MutexLock lock(mu_);
    NodeState* n = Find(node);
    if (n == nullptr) return Unregistered("node \"" + node + "\" is not registered");
    if (SupersededLocked(*n, incarnation)) {
      return Superseded("only the registered process may withdraw node \"" + node + "\"");
    }
    epoch = n->ledger_epoch;
  }
  // Ledger first: if it cannot record the withdrawal the node stays placeable (R34).
  if (opts_.registrar != nullptr) {
    Status s = opts_.registrar->NodeWithdrawn(node, epoch, incarnation);
    if (ports::Is(s, ports::Verdict::kWithdrawalStale)) return Superseded("node \"" + node + "\" registered again meanwhile");
    if (!s.ok()) return Status::Unavailable("the ledger could not record that node \"" + node + "\" is leaving: " +
                                            s.message());
  }
  Completions done;
  {
    MutexLock lock(mu_);
    NodeState* n = Find(node);
    // The race between the two sections resolves as expiry would (R35).
    if (n == nullptr || n->incarnation != incarnation || n->ledger_epoch != epoch) {
      return Superseded("node \"" + node + "\" was forgotten or registered again while withdrawing");
    }
    FailQueuedLocked(*n, "node \"" + node + "\" withdrew before taking this command, so nothing started");
    ResolveInFlightLocked(*n, "node \"" + node + "\" withdrew while this command was in flight, so its outcome is "
                                                 "unknown");
    ReleaseWaitersLocked(*n, done, Unregistered("node \"" + node + "\" withdrew"));
    nodes_.erase(node);  // owners, tombstones and barrier runs are left alone (R36)
  }
  Fire(done);
  log_->Info("plane.node_withdrew", {{"node", node}});
  return Status::Ok();
}

std::vector<std::string> Plane::LiveNodesLocked() const {
  std::vector<std::string> names;
  for (const auto& [name, n] : nodes_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> Plane::Nodes() const {
  MutexLock lock(mu_);
  return LiveNodesLocked();
}

// ---- Test hooks ----

Plane::Stats Plane::GetStats() const {
  MutexLock lock(mu_);
  Stats s;
  s.nodes = nodes_.size();
  for (const auto& [name, n] : nodes_) {
    s.queued_commands += n->queue.size();
    s.in_flight_commands += n->in_flight.size();
    s.parked_polls += n->waiters.size();
  }
  s.lease_owners = owners_.size();
  return s;
}

std::map<std::string, int64_t> Plane::LastSeen() const {
  MutexLock lock(mu_);
  std::map<std::string, int64_t> out;
  for (const auto& [name, n] : nodes_) out[name] = n->last_seen;
  return out;
}

}  // namespace nodeplane::plane
