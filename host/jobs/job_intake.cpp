#include "jobs/job_intake.h"

#include <algorithm>
#include <cctype>

#include "common/units.h"

namespace nodeplane::jobs {
namespace {

// How far back the leases' job records are read for the nodes that ran
// the journal's finished jobs: the jobs explained are the last day's.
constexpr int64_t kEndedLookbackNs = 2 * kDayNs;

}  // namespace

int64_t AdvertisedCeiling(uint32_t max_concurrent, uint32_t vcpu, uint64_t memory, uint32_t max_vcpu,
                          uint64_t max_memory) {
  if (max_concurrent > 0) return max_concurrent;
  int64_t ceiling = -1;
  if (max_vcpu > 0 && vcpu > 0) ceiling = max_vcpu / vcpu;
  if (max_memory > 0 && memory > 0) {
    const auto by_memory = static_cast<int64_t>(max_memory / memory);
    ceiling = ceiling < 0 ? by_memory : std::min(ceiling, by_memory);
  }
  return ceiling < 0 ? kDefaultCeiling : std::max<int64_t>(ceiling, 1);
}

std::vector<std::string> ScaleSetLabels(const std::string& scale_set, const std::vector<std::string>& tier_labels) {
  auto same = [](const std::string& a, const std::string& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  std::vector<std::string> out{scale_set};
  for (const std::string& l : tier_labels) {
    if (std::none_of(out.begin(), out.end(), [&](const std::string& o) { return same(o, l); })) out.push_back(l);
  }
  return out;
}

JobIntake::JobIntake(std::vector<ScaleSetTier> tiers, const std::map<std::string, ports::JobSource*>& sources,
                     const std::string& owner, ports::Ledger& ledger, plane::Runner& runner, Logger& log,
                     LeaseEvents* events, ListenerTiming timing)
    : ledger_(ledger) {
  for (ScaleSetTier& t : tiers) {
    ports::JobSource* source = sources.at(t.target);
    const std::string label = t.tier;
    by_tier_[label] = Listening{source, std::make_unique<ScaleSetListener>(std::move(t), owner, *source, ledger, runner,
                                                                           log, events, counters_, timing)};
  }
}

JobIntake::~JobIntake() { Stop(); }

void JobIntake::Stop() {
  for (auto& [tier, l] : by_tier_) l.listener->Stop();
}

Result<ports::JitRegistration> JobIntake::ScaleSetJit(const std::string& tier, const std::string& runner_name,
                                                      const std::string& work_folder) {
  auto it = by_tier_.find(tier);
  if (it == by_tier_.end()) return Status::NotFound("tier \"" + tier + "\" takes no jobs from a scale set");
  const int64_t id = it->second.listener->scale_set_id();
  if (id == 0) {
    return Status::Unavailable("tier \"" + tier + "\"'s scale set \"" + it->second.listener->tier().scale_set +
                               "\" is not found or created yet");
  }
  auto minted = it->second.source->ScaleSetJit(id, runner_name, work_folder);
  // GitHub refusing registrations for a rate limit: the tier launches
  // nothing more until the time it named (J7).
  if (!minted.ok() && minted.status().code() == Code::kUnavailable && minted.status().retry_after_ns() > 0) {
    it->second.listener->PauseLaunches(WallNowNs() + minted.status().retry_after_ns(), minted.status().message());
  }
  return minted;
}

std::map<std::string, TierStatus> JobIntake::Statuses() const {
  std::map<std::string, TierStatus> out;
  for (const auto& [tier, l] : by_tier_) out.emplace(tier, l.listener->Snapshot());
  return out;
}

Result<Fleet> JobIntake::ReadFleet(const std::vector<ports::ForgeJob>& jobs, int64_t now_ns,
                                   const std::map<std::string, std::string>& paused) {
  Fleet f;
  f.now_ns = now_ns;
  f.paused = paused;
  f.tiers = Statuses();
  auto leases = ledger_.ListLeases("");
  if (!leases.ok()) return leases.status();
  f.leases = std::move(*leases);
  // The node of a runner whose lease has ended, from one read of the
  // leases' job records (bounded, whatever the journal holds).
  std::set<std::string> wanted;
  for (const ports::ForgeJob& j : jobs) {
    if (!j.lease_id.empty()) wanted.insert(j.lease_id);
  }
  for (const ports::Lease& l : f.leases) wanted.erase(l.id);
  if (!wanted.empty()) {
    if (auto ended = ledger_.RecentJobs(now_ns - kEndedLookbackNs, kExplainedJobs); ended.ok()) {
      for (const ports::Job& j : *ended) {
        if (wanted.count(j.lease_id) != 0) f.ended_lease_node[j.lease_id] = j.node;
      }
    }
  }
  return f;
}

Result<JobIntake::Explained> JobIntake::Explain(const std::string& tier, int64_t since_ns, uint32_t limit,
                                                int64_t now_ns, const std::map<std::string, std::string>& paused) {
  // The whole recent journal is explained, whatever was asked: a runner is
  // idle unless a job started on it, and the k-th oldest waiting job of a
  // tier is matched with the same runner whichever jobs are shown.
  auto all = ledger_.ListForgeJobs("", std::min(since_ns, now_ns - kDayNs), kExplainedJobs);
  if (!all.ok()) return all.status();
  auto fleet = ReadFleet(*all, now_ns, paused);
  if (!fleet.ok()) return fleet.status();
  const std::vector<JobState> states = ExplainJobs(*all, *fleet);
  Explained out;
  for (size_t i = 0; i < all->size() && out.jobs.size() < limit; ++i) {  // newest first
    const ports::ForgeJob& j = (*all)[i];
    if ((!tier.empty() && j.tier != tier) || j.received_at_ns < since_ns) continue;
    auto t = fleet->tiers.find(j.tier);
    out.links.push_back(RunLink(t != fleet->tiers.end() ? t->second.web_url : "https://github.com", j));
    out.states.push_back(states[i]);
    out.jobs.push_back(j);
  }
  return out;
}

void JobIntake::Tally(int64_t now_ns, const std::map<std::string, std::string>& paused) {
  auto explained = Explain("", now_ns - kDayNs, kExplainedJobs, now_ns, paused);
  if (!explained.ok()) return;  // counted at the next sample
  Waits now;
  std::set<std::pair<std::string, std::string>> waiting;  // (job id, reason)
  for (size_t i = 0; i < explained->jobs.size(); ++i) {
    const JobState& s = explained->states[i];
    if (s.state != "waiting") continue;
    const std::pair<std::string, std::string> key{explained->jobs[i].tier, s.reason};
    waiting.emplace(explained->jobs[i].tier + "/" + explained->jobs[i].job_id, s.reason);
    now.waiting[key]++;
    now.oldest_ns[key] = std::max(now.oldest_ns[key], now_ns - s.since_ns);
  }
  std::lock_guard lock(waits_mu_);
  for (const auto& [job, reason] : waiting) {
    if (seen_.count({job, reason})) continue;
    const std::string tier = job.substr(0, job.find('/'));
    waits_.entered[{tier, reason}]++;
  }
  seen_ = std::move(waiting);  // a job that leaves a reason and comes back is counted again
  waits_.waiting = std::move(now.waiting);
  waits_.oldest_ns = std::move(now.oldest_ns);
}

JobIntake::Waits JobIntake::waits() const {
  std::lock_guard lock(waits_mu_);
  return waits_;
}

}  // namespace nodeplane::jobs
