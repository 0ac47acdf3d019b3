// The one name rule of nodeplane: deployments, sites, tiers, targets, nodes
// and plugin instances are named ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$, so a
// name is safe in a path, a metric label, a certificate's CN and a log line
// without quoting. The config checks it, and so do the wire and the admin
// API for names that arrive at run time (an enrolling node, a lease's tier).
#pragma once

#include <string_view>

namespace nodeplane {

bool IsValidName(std::string_view name);

}  // namespace nodeplane
