// Every tier's scale-set listener (scale_set_listener.h), and the scale-set
// JIT configs the wire mints for their runners: a runner of a scale set
// must register with that scale set, so the node wire asks here rather than
// the target's JIT source when the tier has one.
//
// Depends on the plane's Runner and on ports; the plane never depends on it.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jobs/scale_set_listener.h"

namespace nodeplane::jobs {

// The ceiling advertised for a tier's scale set (X-ScaleSetMaxCapacity),
// steadily, as the reference's "steady advertisement" does: the tier's
// max_concurrent, else as many of its shape (vcpu, memory) as the
// deployment's limits hold (0: none), else kDefaultCeiling; at least 1.
// Never what happens to be free now: work GitHub assigns beyond the room
// waits, assigned, until a lease can be had.
inline constexpr int64_t kDefaultCeiling = 10;
int64_t AdvertisedCeiling(uint32_t max_concurrent, uint32_t vcpu, uint64_t memory, uint32_t max_vcpu,
                          uint64_t max_memory);

// A scale set's labels: its name first, then the tier's labels (without
// one that repeats the name), as ARC registers them, so that
// `runs-on: <scale set name>` always matches, on github.com and on a GHES
// that keeps no custom labels.
std::vector<std::string> ScaleSetLabels(const std::string& scale_set, const std::vector<std::string>& tier_labels);

class JobIntake {
 public:
  // `sources` by target; every tier's target has one (validated config).
  JobIntake(std::vector<ScaleSetTier> tiers, const std::map<std::string, ports::JobSource*>& sources,
            const std::string& owner, ports::Ledger& ledger, plane::Runner& runner, Logger& log, LeaseEvents* events,
            ListenerTiming timing = {});
  ~JobIntake();

  // NotFound when `tier` has no scale set here; Unavailable until its
  // scale set is found or created.
  Result<ports::JitRegistration> ScaleSetJit(const std::string& tier, const std::string& runner_name,
                                             const std::string& work_folder);
  void Stop();
  const IntakeCounters& counters() const { return counters_; }

 private:
  struct Listening {
    ports::JobSource* source;
    std::unique_ptr<ScaleSetListener> listener;
  };
  IntakeCounters counters_;
  std::map<std::string, Listening> by_tier_;
};

}  // namespace nodeplane::jobs
