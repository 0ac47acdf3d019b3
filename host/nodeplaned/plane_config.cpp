#include "nodeplaned/plane_config.h"

namespace nodeplane {

plane::PlaneOptions PlaneOptionsFromConfig(const config::Config& cfg) {
  plane::PlaneOptions o;
  o.deployment = cfg.deployment;
  o.lease_ttl_ns = cfg.leases.ttl.count();
  o.poll_window_ns = cfg.wire.poll_window.count();
  o.command_timeout_ns = cfg.wire.command_timeout.count();
  o.barrier_round_ns = cfg.wire.inventory_interval.count();
  for (const config::SiteConfig& s : cfg.sites) o.sites.push_back({s.name, s.store});
  for (const config::TierConfig& t : cfg.tiers) {
    plane::Tier tier;
    tier.shape.label = t.label;
    tier.shape.vcpu = t.vcpu;
    tier.shape.memory = static_cast<int64_t>(t.memory);
    tier.shape.guest_os = config::GuestOSName(t.guest_os);
    tier.shape.image = t.image;
    tier.shape.command = t.command;
    tier.shape.network = t.network;
    tier.shape.pids_limit = t.pids_limit;
    tier.shape.stop_grace_ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.stop_grace).count();
    tier.shape.runner_group = t.runner_group;
    tier.shape.labels = t.labels;
    tier.shape.has_target = !t.target.empty();
    for (config::Provider p : t.providers) tier.providers.push_back(config::ProviderName(p));
    o.tiers.push_back(std::move(tier));
  }
  return o;
}

}  // namespace nodeplane
