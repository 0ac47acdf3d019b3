#include "jobs/job_intake.h"

#include <algorithm>
#include <cctype>

#include "common/units.h"

namespace nodeplane::jobs {

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
                     LeaseEvents* events, ListenerTiming timing) {
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

}  // namespace nodeplane::jobs
