// Every tier's scale-set listener (scale_set_listener.h), and the scale-set
// JIT configs the wire mints for their runners: a runner of a scale set
// must register with that scale set, so the node wire asks here rather than
// the target's JIT source when the tier has one.
//
// Depends on the plane's Runner and on ports; the plane never depends on it.
// Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "jobs/job_status.h"
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

  // Each tier's listener's view, by tier.
  std::map<std::string, TierStatus> Statuses() const;
  // Journalled jobs with their state (job_status.h): up to `limit` of
  // `tier` ("" for all) received since `since_ns`, newest first, among the
  // journal's kExplainedJobs newest.
  static constexpr uint32_t kExplainedJobs = 1000;
  struct Explained {
    std::vector<ports::ForgeJob> jobs;
    std::vector<JobState> states;  // one per job
    std::vector<std::string> links;  // the run's page at GitHub, "" when unknown
  };
  // `paused` is Plane::PausedTiers().
  Result<Explained> Explain(const std::string& tier, int64_t since_ns, uint32_t limit, int64_t now_ns,
                            const std::map<std::string, std::string>& paused);

  // Waits by reason (metrics): jobs counted once per reason they entered,
  // and those waiting now, with the oldest wait. Updated by Tally.
  struct Waits {
    std::map<std::pair<std::string, std::string>, uint64_t> entered;  // (tier, reason) -> jobs
    std::map<std::pair<std::string, std::string>, int64_t> waiting;   // now
    std::map<std::pair<std::string, std::string>, int64_t> oldest_ns; // now: the longest wait
  };
  // Reads the last day's waiting jobs and counts their reasons; the
  // daemon's sampler calls it every sample_interval.
  void Tally(int64_t now_ns, const std::map<std::string, std::string>& paused);
  Waits waits() const;

 private:
  struct Listening {
    ports::JobSource* source;
    std::unique_ptr<ScaleSetListener> listener;
  };
  Result<Fleet> ReadFleet(const std::vector<ports::ForgeJob>& jobs, int64_t now_ns,
                          const std::map<std::string, std::string>& paused);

  ports::Ledger& ledger_;
  IntakeCounters counters_;
  std::map<std::string, Listening> by_tier_;
  mutable std::mutex waits_mu_;
  Waits waits_;                                            // guarded by waits_mu_
  std::set<std::pair<std::string, std::string>> seen_;     // guarded by waits_mu_: (job id, reason) counted
};

}  // namespace nodeplane::jobs
