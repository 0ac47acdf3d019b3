// The ledger's catalogue, from the deployment's config: tiers, node policies,
// ceilings and the lease TTL.
#pragma once

#include "config/config.h"
#include "ports/ledger.h"

namespace nodeplane {

ports::Catalog CatalogFromConfig(const config::Config& cfg);

}  // namespace nodeplane
