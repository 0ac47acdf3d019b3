// The process_* metric families every Prometheus client library exports
// (resident and virtual memory, CPU seconds, open and maximum descriptors,
// start time), read from /proc/self at each scrape.
#pragma once

#include <string>

namespace nodeplane::observe {

// Appends the families to `out`; a figure /proc cannot give is left out.
void RenderProcessMetrics(std::string& out);

}  // namespace nodeplane::observe
