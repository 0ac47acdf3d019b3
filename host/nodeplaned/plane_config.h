// The Plane's options, from the deployment's config: deployment, timings,
// sites and the tier catalogue (whose shape travels on every launch).
#pragma once

#include "config/config.h"
#include "plane/plane.h"

namespace nodeplane {

plane::PlaneOptions PlaneOptionsFromConfig(const config::Config& cfg);

}  // namespace nodeplane
