// Ownership: which process holds each lease's compute, and who may act on it.
#include <algorithm>
#include <set>

#include "plane/plane.h"
#include "plane/plane_internal.h"

namespace nodeplane::plane {

void Plane::RecordOwnerLocked(const std::string& lease_id, RequestOwner owner, int64_t request_id) {
  const uint64_t seq = ++owner_seq_;
  owners_[lease_id] = OwnerRecord{std::move(owner), request_id, seq};
  owner_order_.emplace_back(seq, lease_id);
  // Bounded (R25): a node that never goes quiet is never expired, so nothing
  // else would remove the records of ended leases it was never told about.
  while (owners_.size() > opts_.max_owners && !owner_order_.empty()) {
    auto [old_seq, id] = owner_order_.front();
    owner_order_.pop_front();
    auto it = owners_.find(id);
    if (it != owners_.end() && it->second.seq == old_seq) owners_.erase(it);
  }
  // Entries whose record was replaced or removed are dropped as they surface.
  while (!owner_order_.empty()) {
    auto it = owners_.find(owner_order_.front().second);
    if (it != owners_.end() && it->second.seq == owner_order_.front().first) break;
    owner_order_.pop_front();
  }
}

void Plane::AdoptLocked(const std::string& node, const std::string& incarnation, const std::vector<std::string>& ids,
                        bool inventory_known) {
  NodeState* n = Find(node);
  if (n == nullptr || n->incarnation != incarnation) return;
  if (inventory_known) {
    n->inventory = std::set<std::string>(ids.begin(), ids.end());
    n->inventory_known = true;
  }
  std::set<std::string> keep(ids.begin(), ids.end());
  for (const std::string& id : keep) {
    // Fills gaps only: never takes a lease a superseded process is draining.
    if (!incarnation.empty() && owners_.count(id) == 0) {
      RecordOwnerLocked(id, RequestOwner{node, incarnation, true}, 0);
    }
  }
  for (auto it = owners_.begin(); it != owners_.end();) {
    const OwnerRecord& r = it->second;
    if (r.owner.node == node && r.request_id == 0 && keep.count(it->first) == 0) {
      it = owners_.erase(it);
    } else {
      ++it;
    }
  }
}

void Plane::AdoptOwnership(const std::string& node, const std::string& incarnation,
                           const std::vector<std::string>& ids) {
  std::lock_guard lock(mu_);
  AdoptLocked(node, incarnation, ids, false);
}

void Plane::AdoptOwnershipWithInventory(const std::string& node, const std::string& incarnation,
                                        const std::vector<std::string>& ids, bool inventory_known) {
  std::lock_guard lock(mu_);
  AdoptLocked(node, incarnation, ids, inventory_known);
}

std::optional<RequestOwner> Plane::OwnerOfLease(const std::string& lease_id) const {
  std::lock_guard lock(mu_);
  auto it = owners_.find(lease_id);
  if (it == owners_.end()) return std::nullopt;
  RequestOwner o = it->second.owner;
  const NodeState* n = Find(o.node);
  o.current = n != nullptr && !SupersededLocked(*n, o.incarnation);
  return o;
}

std::optional<RequestOwner> Plane::OwnerOfRequest(int64_t request_id) const {
  std::lock_guard lock(mu_);
  if (request_id == 0) return std::nullopt;
  for (const auto& [lease, r] : owners_) {
    if (r.request_id != request_id) continue;
    RequestOwner o = r.owner;
    const NodeState* n = Find(o.node);
    o.current = n != nullptr && !SupersededLocked(*n, o.incarnation);
    return o;
  }
  return std::nullopt;
}

void Plane::ForgetLease(const std::string& node, const std::string& lease_id) {
  std::lock_guard lock(mu_);
  auto it = owners_.find(lease_id);
  if (it != owners_.end() && it->second.owner.node == node) owners_.erase(it);
}

void Plane::ForgetForRequestLocked(int64_t request_id) {
  if (request_id == 0) return;
  for (auto it = owners_.begin(); it != owners_.end();) {
    it = it->second.request_id == request_id ? owners_.erase(it) : std::next(it);
  }
}

Result<bool> Plane::AuthorizeLease(const std::string& node, const std::string& incarnation,
                                   const std::string& lease_id) const {
  std::lock_guard lock(mu_);  // one snapshot for both answers (R19)
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

Status Plane::MayMutateLease(const std::string& node, const std::string& incarnation,
                             const std::string& lease_id) const {
  return AuthorizeLease(node, incarnation, lease_id).status();
}

Result<int64_t> Plane::ReconcileInventory(const std::string& node, const std::string& incarnation,
                                          const std::vector<std::string>& running) {
  int64_t epoch;
  {
    std::lock_guard lock(mu_);
    NodeState* n = Find(node);
    if (n == nullptr) return Unregistered("node \"" + node + "\" is not registered; register again");
    if (SupersededLocked(*n, incarnation)) return Superseded("another process is registered as node \"" + node + "\"");
    epoch = n->ledger_epoch;
  }
  int64_t freed = 0;
  if (opts_.registrar != nullptr) {
    auto r = opts_.registrar->ResolveQuarantineFor(node, running, epoch);
    if (!r.ok()) return r.status();
    freed = *r;
  }
  std::lock_guard lock(mu_);
  AdoptLocked(node, incarnation, running, true);
  return freed;
}

Result<std::string> Plane::EntitledToLaunch(const std::string& node, const std::string& incarnation,
                                            const std::string& lease_id) const {
  std::lock_guard lock(mu_);
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

bool Plane::OwnsForTest(const std::string& lease_id, const std::string& node, const std::string& incarnation) const {
  std::lock_guard lock(mu_);
  auto it = owners_.find(lease_id);
  return it != owners_.end() && it->second.owner.node == node && it->second.owner.incarnation == incarnation;
}

size_t Plane::OwnersForTest() const {
  std::lock_guard lock(mu_);
  return owners_.size();
}

}  // namespace nodeplane::plane
