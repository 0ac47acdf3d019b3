#include "placement.h"

#include <algorithm>
#include <limits>

#include "lease_rules.h"

namespace nodeplane::ledger {

bool GuestOSAllowed(const std::vector<std::string>& allowed, const std::string& os) {
  return allowed.empty() || std::find(allowed.begin(), allowed.end(), os) != allowed.end();
}

Fleet::Fleet(std::vector<HostRoom> sorted_by_name) : hosts_(std::move(sorted_by_name)) {
  index_.reserve(hosts_.size());
  for (size_t i = 0; i < hosts_.size(); ++i) index_.emplace(hosts_[i].name, i);
}

int64_t Fleet::IndexOf(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
}

Placer::Placer(const Fleet& fleet, int64_t deploy_vcpu, int64_t deploy_memory, bool spread)
    : fleet_(fleet),
      spent_(fleet.hosts().size()),
      deploy_vcpu_(deploy_vcpu),
      deploy_memory_(deploy_memory),
      spread_(spread) {}

bool Placer::Contains(const std::string& host) const { return fleet_.IndexOf(host) >= 0; }

void Placer::Charge(const std::string& host, int64_t vcpu, int64_t memory, int64_t macos_slots) {
  const int64_t i = fleet_.IndexOf(host);
  if (i < 0) return;
  Spent& s = spent_[static_cast<size_t>(i)];
  s.vcpu += vcpu;
  s.memory += memory;
  s.macos_slots += macos_slots;
}

bool Placer::Eligible(const HostRoom& host, const TierSpec& tier) {
  if (!tier.node.empty() && host.name != tier.node) return false;
  if (!tier.site.empty() && host.site != tier.site) return false;
  if (std::find(tier.providers.begin(), tier.providers.end(), host.provider) == tier.providers.end()) return false;
  if (!GuestOSAllowed(host.guest_os_allowed, tier.guest_os)) return false;
  return RunsOnHost(host.provider);  // the cost of a host-backed provider is the tier request
}

int64_t Placer::Room(size_t i, const TierSpec& tier) const {
  if (tier.vcpu <= 0 || tier.memory <= 0) return 0;
  const HostRoom& h = fleet_.hosts()[i];
  const Spent& s = spent_[i];
  int64_t room = std::min((h.vcpu - s.vcpu) / tier.vcpu, (h.memory - s.memory) / tier.memory);
  if (deploy_vcpu_ >= 0) room = std::min(room, deploy_vcpu_ / tier.vcpu);
  if (deploy_memory_ >= 0) room = std::min(room, deploy_memory_ / tier.memory);
  if (tier.guest_os == "macos") room = std::min(room, h.macos_slots - s.macos_slots);
  return std::max<int64_t>(room, 0);
}

const HostRoom* Placer::Next(const TierSpec& tier) {
  const std::vector<HostRoom>& hosts = fleet_.hosts();
  size_t best = hosts.size();
  size_t best_rank = 0;
  int64_t best_room = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {  // sorted by name: the final tie-break
    const HostRoom& h = hosts[i];
    if (!Eligible(h, tier)) continue;
    int64_t room = Room(i, tier);
    if (room < 1) continue;
    size_t rank = static_cast<size_t>(
        std::find(tier.providers.begin(), tier.providers.end(), h.provider) - tier.providers.begin());
    bool better = best == hosts.size() || rank < best_rank ||
                  (rank == best_rank && (spread_ ? room > best_room : room < best_room));
    if (better) {
      best = i;
      best_rank = rank;
      best_room = room;
    }
  }
  if (best == hosts.size()) return nullptr;
  Spent& s = spent_[best];
  s.vcpu += tier.vcpu;
  s.memory += tier.memory;
  if (tier.guest_os == "macos") s.macos_slots += 1;
  if (deploy_vcpu_ >= 0) deploy_vcpu_ -= tier.vcpu;
  if (deploy_memory_ >= 0) deploy_memory_ -= tier.memory;
  return &hosts[best];
}

uint32_t Placer::Hold(const TierSpec& tier, uint32_t missing) {
  uint32_t held = 0;
  while (held < missing && Next(tier)) ++held;
  return held;
}

}  // namespace nodeplane::ledger
