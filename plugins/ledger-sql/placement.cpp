#include "placement.h"

#include <algorithm>
#include <limits>

#include "lease_rules.h"

namespace nodeplane::ledger {

bool GuestOSAllowed(const std::vector<std::string>& allowed, const std::string& os) {
  return allowed.empty() || std::find(allowed.begin(), allowed.end(), os) != allowed.end();
}

Placer::Placer(std::vector<HostRoom> hosts, int64_t deploy_vcpu, int64_t deploy_memory, bool spread)
    : hosts_(std::move(hosts)), deploy_vcpu_(deploy_vcpu), deploy_memory_(deploy_memory), spread_(spread) {}

bool Placer::Eligible(const HostRoom& host, const TierSpec& tier) {
  if (!tier.node.empty() && host.name != tier.node) return false;
  if (!tier.site.empty() && host.site != tier.site) return false;
  if (std::find(tier.providers.begin(), tier.providers.end(), host.provider) == tier.providers.end()) return false;
  if (!GuestOSAllowed(host.guest_os_allowed, tier.guest_os)) return false;
  return RunsOnHost(host.provider);  // the cost of a host-backed provider is the tier request
}

int64_t Placer::Room(const HostRoom& host, const TierSpec& tier) const {
  if (tier.vcpu <= 0 || tier.memory <= 0) return 0;
  int64_t room = std::min(host.free_vcpu / tier.vcpu, host.free_memory / tier.memory);
  if (deploy_vcpu_ >= 0) room = std::min(room, deploy_vcpu_ / tier.vcpu);
  if (deploy_memory_ >= 0) room = std::min(room, deploy_memory_ / tier.memory);
  if (tier.guest_os == "macos") room = std::min(room, host.free_macos);
  return std::max<int64_t>(room, 0);
}

const HostRoom* Placer::Next(const TierSpec& tier) {
  HostRoom* best = nullptr;
  size_t best_rank = 0;
  int64_t best_room = 0;
  for (HostRoom& h : hosts_) {  // sorted by name: the final tie-break
    if (!Eligible(h, tier)) continue;
    int64_t room = Room(h, tier);
    if (room < 1) continue;
    size_t rank = static_cast<size_t>(
        std::find(tier.providers.begin(), tier.providers.end(), h.provider) - tier.providers.begin());
    bool better = best == nullptr || rank < best_rank ||
                  (rank == best_rank && (spread_ ? room > best_room : room < best_room));
    if (better) {
      best = &h;
      best_rank = rank;
      best_room = room;
    }
  }
  if (best == nullptr) return nullptr;
  best->free_vcpu -= tier.vcpu;
  best->free_memory -= tier.memory;
  if (tier.guest_os == "macos") best->free_macos -= 1;
  if (deploy_vcpu_ >= 0) deploy_vcpu_ -= tier.vcpu;
  if (deploy_memory_ >= 0) deploy_memory_ -= tier.memory;
  return best;
}

uint32_t Placer::Hold(const TierSpec& tier, uint32_t missing) {
  uint32_t held = 0;
  while (held < missing && Next(tier)) ++held;
  return held;
}

}  // namespace nodeplane::ledger
