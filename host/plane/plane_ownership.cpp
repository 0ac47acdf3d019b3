// Ownership: which process holds each lease's compute, and who may act on it.
#include <algorithm>
#include <set>

#include "plane/plane.h"
#include "plane/plane_internal.h"

namespace nodeplane::plane {

uint64_t Plane::RecordOwnerLocked(const std::string& lease_id, RequestOwner owner, int64_t request_id) {
  const uint64_t seq = ++owner_seq_;
  if (auto old = owners_.find(lease_id); old != owners_.end()) EraseOwnerLocked(old);
  owned_by_node_[owner.node].insert(lease_id);
  if (request_id != 0) owned_by_request_[request_id].insert(lease_id);
  owners_[lease_id] = OwnerRecord{std::move(owner), request_id, seq};
  owner_order_.emplace_back(seq, lease_id);
  // The backstop bound (R25): ended leases are forgotten by ForgetEndedLocked;
  // this only limits what nodes that never return leave behind.
  while (owners_.size() > opts_.max_owners && !owner_order_.empty()) {
    auto [old_seq, id] = owner_order_.front();
    owner_order_.pop_front();
    auto it = owners_.find(id);
    if (it != owners_.end() && it->second.seq == old_seq) {
      log_->Warn("plane.owner_evicted", {{"lease", id}, {"node", it->second.owner.node}});
      EraseOwnerLocked(it);
    }
  }
  // Entries whose record was replaced or removed are dropped as they surface.
  while (!owner_order_.empty()) {
    auto it = owners_.find(owner_order_.front().second);
    if (it != owners_.end() && it->second.seq == owner_order_.front().first) break;
    owner_order_.pop_front();
  }
  return seq;
}

namespace {

template <typename Index, typename Key>
void Unindex(Index& index, const Key& key, const std::string& lease_id) {
  auto owned = index.find(key);
  if (owned == index.end()) return;
  owned->second.erase(lease_id);
  if (owned->second.empty()) index.erase(owned);
}

}  // namespace

Plane::OwnerMap::iterator Plane::EraseOwnerLocked(OwnerMap::iterator it) {
  Unindex(owned_by_node_, it->second.owner.node, it->first);
  Unindex(owned_by_request_, it->second.request_id, it->first);
  return owners_.erase(it);
}

void Plane::AdoptLocked(const std::string& node, const std::string& incarnation,
                        const std::vector<ports::Lease>& leases, const std::set<std::string>* inventory) {
  const NodeState* n = Find(node);
  if (n == nullptr || n->incarnation != incarnation) return;  // overtaken meanwhile
  for (const ports::Lease& l : leases) {
    // Only what the ledger places on this node can be this node's (R30: an
    // inventory is a claim, and a claim never reaches another node's lease).
    if (l.node != node) continue;
    const bool claimed = inventory != nullptr && inventory->count(l.id) != 0;
    if (!claimed && !ports::Launched(l.phase)) continue;
    if (owners_.count(l.id) != 0) continue;  // gaps only: never another process's record
    // The process the ledger recorded as holding the lease keeps it, unless
    // the registering process says it runs it itself.
    const std::string& holder = claimed || l.holder_incarnation.empty() ? incarnation : l.holder_incarnation;
    if (holder.empty()) continue;  // a node that claims no incarnation is never an owner
    RecordOwnerLocked(l.id, RequestOwner{node, holder, true}, l.request_id);
  }
}

void Plane::ForgetEndedLocked(const std::string& node, const std::vector<ports::Lease>& open, uint64_t before) {
  auto owned = owned_by_node_.find(node);
  if (owned == owned_by_node_.end()) return;
  std::set<std::string> still;
  for (const ports::Lease& l : open) still.insert(l.id);
  std::vector<OwnerMap::iterator> ended;
  for (const std::string& id : owned->second) {
    auto it = owners_.find(id);
    // A record made after the read began may be for a lease the read missed.
    if (it->second.seq <= before && still.count(id) == 0) ended.push_back(it);
  }
  for (OwnerMap::iterator it : ended) EraseOwnerLocked(it);
}

Result<std::vector<ports::Lease>> Plane::LeasesOn(const std::string& node) const {
  if (opts_.leases == nullptr) return std::vector<ports::Lease>();
  return opts_.leases->ListLeases(node);
}

void Plane::AdoptOwnership(const std::string& node, const std::string& incarnation,
                           const std::vector<ports::Lease>& leases) {
  MutexLock lock(mu_);
  AdoptLocked(node, incarnation, leases, nullptr);
}

std::optional<RequestOwner> Plane::OwnerOfLease(const std::string& lease_id) const {
  MutexLock lock(mu_);
  auto it = owners_.find(lease_id);
  if (it == owners_.end()) return std::nullopt;
  RequestOwner o = it->second.owner;
  const NodeState* n = Find(o.node);
  o.current = n != nullptr && !SupersededLocked(*n, o.incarnation);
  return o;
}

Result<std::optional<RequestOwner>> Plane::DurableOwnerOfRequest(int64_t request_id) const {
  if (opts_.leases == nullptr || request_id == 0) return std::optional<RequestOwner>();
  auto open = opts_.leases->ListLeases("");
  if (!open.ok()) return open.status();
  for (const ports::Lease& l : *open) {
    if (l.request_id != request_id || l.node.empty()) continue;
    if (!ports::Launched(l.phase) && l.phase != ports::Phase::kQuarantine) continue;
    MutexLock lock(mu_);
    const NodeState* n = Find(l.node);
    RequestOwner o{l.node, l.holder_incarnation, false};
    o.current = n != nullptr && !SupersededLocked(*n, o.incarnation);
    return std::optional<RequestOwner>(o);
  }
  return std::optional<RequestOwner>();
}

std::optional<RequestOwner> Plane::OwnerOfRequest(int64_t request_id) const {
  MutexLock lock(mu_);
  if (request_id == 0) return std::nullopt;
  auto owned = owned_by_request_.find(request_id);
  if (owned == owned_by_request_.end()) return std::nullopt;
  RequestOwner o = owners_.at(*owned->second.begin()).owner;  // the lowest lease id, as the map's order gave
  const NodeState* n = Find(o.node);
  o.current = n != nullptr && !SupersededLocked(*n, o.incarnation);
  return o;
}

void Plane::ForgetLease(const std::string& node, const std::string& lease_id) {
  MutexLock lock(mu_);
  auto it = owners_.find(lease_id);
  if (it != owners_.end() && it->second.owner.node == node) EraseOwnerLocked(it);
}

void Plane::ForgetForRequestLocked(int64_t request_id) {
  auto owned = owned_by_request_.find(request_id);
  if (request_id == 0 || owned == owned_by_request_.end()) return;
  const std::set<std::string> ids = owned->second;  // erasing the records empties the index entry
  for (const std::string& id : ids) EraseOwnerLocked(owners_.find(id));
}

Result<bool> Plane::AuthorizeLease(const std::string& node, const std::string& incarnation,
                                   const std::string& lease_id) const {
  MutexLock lock(mu_);  // one snapshot for both answers (R19)
  auto it = owners_.find(lease_id);
  if (it != owners_.end() && it->second.owner.node == node && it->second.owner.incarnation == incarnation) {
    return true;
  }
  if (it != owners_.end() && it->second.owner.node != node) {
    return Superseded("lease " + lease_id + " was given to node \"" + it->second.owner.node +
                      "\" and this request came from \"" + node + "\"");
  }
  const NodeState* n = Find(node);
  if (n == nullptr) return Unregistered("node \"" + node + "\" is not registered; register again");
  if (SupersededLocked(*n, incarnation)) {
    return Superseded("lease " + lease_id + " was not given to this process of node \"" + node + "\"");
  }
  return false;
}

Status Plane::AdmitLeaseRequest(const std::string& node, const std::string& incarnation,
                                const std::string& lease_id) const {
  auto by_owner = AuthorizeLease(node, incarnation, lease_id);
  if (by_owner.ok() && *by_owner) return Status::Ok();  // the recorded owner
  if (opts_.leases == nullptr) return by_owner.ok() ? Status::Unavailable("no ledger is configured") : by_owner.status();
  auto lease = opts_.leases->GetLease(lease_id);
  if (!lease.ok() && ports::Is(lease.status(), ports::Verdict::kNotFound)) {
    // Ended: whose job it was decides, so its node can still settle a
    // release and remove the lease's runner (R25).
    auto ended = opts_.leases->EndedLeaseNode(lease_id);
    if (ended.ok() && *ended == node) return Status::Ok();
    return by_owner.ok() ? lease.status() : by_owner.status();
  }
  if (!lease.ok()) return lease.status();
  if (!by_owner.ok()) {
    // Not a process the plane admits; the holder the ledger recorded
    // still is, as after a restart that forgot it (R14, R26).
    const bool holder = !incarnation.empty() && lease->node == node && lease->holder_incarnation == incarnation;
    return holder ? Status::Ok() : by_owner.status();
  }
  // Admitted by membership alone: the ledger must place the lease here (R19).
  const std::string& placed = lease->node.empty() ? lease->target_node : lease->node;
  if (!placed.empty() && placed != node) {
    return Superseded("the ledger places lease " + lease_id + " on node \"" + placed + "\", not \"" + node + "\"");
  }
  return Status::Ok();
}

Status Plane::MayMutateLease(const std::string& node, const std::string& incarnation,
                             const std::string& lease_id) const {
  return AuthorizeLease(node, incarnation, lease_id).status();
}

Result<int64_t> Plane::ReconcileInventory(const std::string& node, const std::string& incarnation,
                                          const std::vector<std::string>& running) {
  int64_t epoch;
  uint64_t before;
  {
    MutexLock lock(mu_);
    NodeState* n = Find(node);
    if (n == nullptr) return Unregistered("node \"" + node + "\" is not registered; register again");
    if (SupersededLocked(*n, incarnation)) return Superseded("another process is registered as node \"" + node + "\"");
    epoch = n->ledger_epoch;
    before = owner_seq_;
  }
  const std::set<std::string> inventory(running.begin(), running.end());
  auto open = LeasesOn(node);
  if (!open.ok()) return open.status();
  // Only a quarantined lease the inventory does not name can be freed; most
  // reconciles have none, and the ledger is not asked.
  const bool freeable = std::any_of(open->begin(), open->end(), [&](const ports::Lease& l) {
    return l.phase == ports::Phase::kQuarantine && inventory.count(l.id) == 0;
  });
  int64_t freed = 0;
  if (opts_.registrar != nullptr && freeable) {
    auto r = opts_.registrar->ResolveQuarantineFor(node, running, epoch);
    if (!r.ok()) return r.status();
    freed = *r;
    if (freed > 0) {  // read again, so what it freed is forgotten now
      open = LeasesOn(node);
      if (!open.ok()) return open.status();
    }
  }
  MutexLock lock(mu_);
  NodeState* n = Find(node);
  if (n == nullptr || n->incarnation != incarnation) return freed;  // overtaken: the newer registration adopts
  n->inventory = inventory;
  n->inventory_known = true;
  ForgetEndedLocked(node, *open, before);
  AdoptLocked(node, incarnation, *open, &inventory);
  return freed;
}

Result<std::string> Plane::EntitledToLaunch(const std::string& node, const std::string& incarnation,
                                            const std::string& lease_id) const {
  MutexLock lock(mu_);
  const NodeState* n = Find(node);
  if (n == nullptr) return Unregistered("node \"" + node + "\" is not registered; register again");
  for (const auto& [id, p] : n->in_flight) {
    if (p->cmd.kind == CommandKind::kLaunch && p->cmd.lease && p->cmd.lease->id == lease_id &&
        p->taken_by == incarnation) {
      return p->cmd.tier ? p->cmd.tier->label : p->cmd.lease->tier;
    }
  }
  return NotEntitled("node \"" + node + "\" is executing no launch for lease " + lease_id +
                     ", so it may not mint a runner registration for it");
}

}  // namespace nodeplane::plane
