#include "jobs/drain.h"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/units.h"

namespace nodeplane::jobs {
namespace {

// How often the ledger is asked again: a wait paced for people.
constexpr auto kRecheck = std::chrono::milliseconds(500);

}  // namespace

Result<std::string> Drain(ports::Ledger& ledger, const plane::Plane& plane, const DrainRequest& req,
                          const std::function<void(const std::string&)>& say, std::stop_token stop) {
  auto tell = [&](const std::string& text) {
    if (say) say(text);
  };
  auto admission = ledger.AdmissionGeneration();
  if (!admission.ok()) return admission.status();
  if (!admission->second) {
    auto sealed = ledger.SetAdmission(true, admission->first, "drain", req.actor);
    if (!sealed.ok()) return sealed.status();
    tell("admission sealed: no new work is placed");
  }
  auto barrier = ledger.RequestComputeBarrier(req.actor);
  if (!barrier.ok()) return barrier.status();
  tell("compute barrier " + barrier->id + " requested; waiting for the fleet to prove it runs nothing");
  const int64_t deadline = req.timeout_ns > 0 ? WallNowNs() + req.timeout_ns : 0;
  std::mutex mu;
  std::condition_variable_any cv;
  size_t last = SIZE_MAX;
  while (!stop.stop_requested()) {
    auto clear = ledger.ComputeClear();
    if (clear.ok() && *clear) return barrier->id;
    auto q = ledger.GetQuiescence();
    if (q.ok() && q->outstanding.size() != last) {
      last = q->outstanding.size();
      tell(std::to_string(last) + " lease(s) still open; " + std::to_string(plane.GetStats().nodes) +
           " node(s) registered");
    }
    if (deadline != 0 && WallNowNs() > deadline) {
      return Status::Unavailable("the fleet has not proved it is empty yet; the barrier stays requested");
    }
    std::unique_lock lock(mu);
    cv.wait_for(lock, stop, kRecheck, [] { return false; });
  }
  return Status::Unavailable("stopped while draining; the barrier stays requested");
}

}  // namespace nodeplane::jobs
