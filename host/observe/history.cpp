#include "observe/history.h"

#include <cstdio>

namespace nodeplane::observe {

void History::Add(const Sample& s) {
  std::lock_guard lock(mu_);
  samples_.push_back(s);
  while (samples_.size() > keep_) samples_.pop_front();
}

std::string History::Json() const {
  std::lock_guard lock(mu_);
  std::string out = "{\"samples\":[";
  char buf[320];
  for (size_t i = 0; i < samples_.size(); ++i) {
    const Sample& s = samples_[i];
    std::snprintf(buf, sizeof buf,
                  "%s{\"at_ns\":%lld,\"dispatch_p50_s\":%.6f,\"dispatch_p99_s\":%.6f,\"launches\":%lld,"
                  "\"vcpu_total\":%lld,\"vcpu_used\":%lld,\"leases_open\":%lld,\"nodes_live\":%lld}",
                  i == 0 ? "" : ",", static_cast<long long>(s.at_ns), s.dispatch_p50_s, s.dispatch_p99_s,
                  static_cast<long long>(s.launches), static_cast<long long>(s.vcpu_total),
                  static_cast<long long>(s.vcpu_used), static_cast<long long>(s.leases_open),
                  static_cast<long long>(s.nodes_live));
    out += buf;
  }
  return out + "]}";
}

}  // namespace nodeplane::observe
