#include "nodeplaned/catalog.h"

namespace nodeplane {

ports::Catalog CatalogFromConfig(const config::Config& cfg) {
  ports::Catalog c;
  c.lease_ttl_ns = cfg.leases.ttl.count();
  c.max_vcpu = cfg.limits.max_vcpu;
  c.max_memory = static_cast<int64_t>(cfg.limits.max_memory);
  c.spread = cfg.limits.placement == config::Placement::kSpread;
  for (const config::TierConfig& t : cfg.tiers) {
    ports::TierSpec s;
    s.label = t.label;
    s.vcpu = t.vcpu;
    s.memory = static_cast<int64_t>(t.memory);
    for (config::Provider p : t.providers) s.providers.push_back(config::ProviderName(p));
    s.guest_os = config::GuestOSName(t.guest_os);
    s.node = t.node;
    s.site = t.site;
    s.max_concurrent = t.max_concurrent;
    s.reserved = t.reserved;
    c.tiers.push_back(std::move(s));
  }
  for (const config::NodePolicy& n : cfg.nodes) {
    ports::NodePolicy p;
    p.name = n.name;
    if (n.provider) p.provider = config::ProviderName(*n.provider);
    for (config::GuestOS os : n.guest_os) p.guest_os.push_back(config::GuestOSName(os));
    p.macos_vm_limit = n.macos_vm_limit;
    p.max_vcpu = n.max_vcpu;
    p.max_memory = static_cast<int64_t>(n.max_memory);
    c.nodes.push_back(std::move(p));
  }
  return c;
}

}  // namespace nodeplane
