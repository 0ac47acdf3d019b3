#include "charge_tally.h"

namespace nodeplane::ledger {

void ChargeTally::Drop() { *this = ChargeTally(); }

void ChargeTally::Restart(int64_t charges) {
  Drop();
  valid_ = true;
  charges_ = charges;
}

void ChargeTally::Add(const LeaseCharge& c, int64_t leases) { Apply(c, 1, leases); }

void ChargeTally::Remove(const LeaseCharge& c) { Apply(c, -1, 1); }

// Entries that reach zero are erased, so a tally kept for days over a fleet
// whose nodes come and go holds only what is open now.
void ChargeTally::Apply(const LeaseCharge& c, int64_t sign, int64_t leases) {
  vcpu_ += sign * c.vcpu;
  memory_ += sign * c.memory;
  if (!c.host.empty()) {
    HostHeld& h = hosts_[c.host];
    h.vcpu += sign * c.vcpu;
    h.memory += sign * c.memory;
    h.macos_slots += sign * c.macos_slots;
    h.leases += sign * leases;
    if (h.leases == 0) hosts_.erase(c.host);
  }
  TierOpen& t = tiers_[c.tier];
  t.leases += sign * leases;
  int64_t& on_host = t.by_host[c.host];
  on_host += sign * leases;
  if (on_host == 0) t.by_host.erase(c.host);
  if (t.leases == 0) tiers_.erase(c.tier);
}

int64_t ChargeTally::Open(const std::string& tier) const {
  auto it = tiers_.find(tier);
  return it == tiers_.end() ? 0 : it->second.leases;
}

const std::unordered_map<std::string, int64_t>* ChargeTally::OpenByHost(const std::string& tier) const {
  auto it = tiers_.find(tier);
  return it == tiers_.end() ? nullptr : &it->second.by_host;
}

}  // namespace nodeplane::ledger
