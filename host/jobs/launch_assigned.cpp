#include "jobs/launch_assigned.h"

namespace nodeplane::jobs {

Status LaunchAssigned(ports::LeaseStore& leases, plane::Runner& runner, LeaseEvents* events, ports::Lease& lease,
                      const protocol::Job& job, std::stop_token stop, const std::string& fenced_node) {
  Status launched = runner.Launch(lease, job, stop, fenced_node);
  if (launched.ok() || plane::Is(launched, plane::kCustody)) return launched;
  (void)leases.MarkFailure(lease.id, lease.epoch, launched.message().substr(0, 500));
  if (leases.Release(lease.id, lease.epoch, ports::Phase::kFailed).ok() && events != nullptr) ++events->released_failed;
  return launched;
}

}  // namespace nodeplane::jobs
