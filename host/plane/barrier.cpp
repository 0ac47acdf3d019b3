// The compute barrier loop: ask the fleet what it runs while a drain waits.
#include <algorithm>
#include <future>

#include "plane/plane.h"
#include "plane/plane_internal.h"

namespace nodeplane::plane {
namespace {

constexpr int64_t kIdleNs = 5'000'000'000;     // no barrier, or the ledger is not quiet
constexpr size_t kConcurrentAsks = 8;

}  // namespace

std::vector<std::string> Plane::BarrierTargets() const {
  MutexLock lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, n] : nodes_) {
    if (n->wire_version >= kMinProtocol) names.push_back(name);
  }
  std::sort(names.begin(), names.end());  // sorted, never map order (R22)
  return names;
}

Status Plane::AskNode(const std::string& node, const std::string& barrier_id, std::stop_token stop) {
  // The fence is captured BEFORE the question (R21).
  auto fence = opts_.barrier->NodeFenceOf(node);
  if (!fence.ok()) return fence.status();
  if (!fence->has_value()) return Status::Ok();
  Command cmd;
  cmd.id = NewCommandId();
  cmd.kind = CommandKind::kInventory;
  cmd.barrier_id = barrier_id;
  Dispatched d = Dispatch(node, std::move(cmd), "", "", (*fence)->epoch, stop);
  // Stopping is not an answer: it records nothing, and the next round asks again.
  if (d.stopped) {
    return Status::Ok();
  }
  const bool answered = d.result && d.result->ok && d.result->barrier_id == barrier_id;
  if (answered) {
    // A barrier's inventory is a real inventory: it frees quarantine too.
    auto freed = opts_.barrier->ResolveQuarantineFor(node, d.result->instances, (*fence)->epoch);
    if (!freed.ok()) log_->Warn("plane.quarantine_unresolved", {{"node", node}, {"error", freed.status().message()}});
  }
  ports::BarrierObservation obs{node, barrier_id, (*fence)->epoch, (*fence)->dispatch,
                                answered && d.result->instances.empty()};
  return opts_.barrier->RecordBarrierObservation(obs);
}

void Plane::BarrierLoop(std::stop_token stop) {
  if (opts_.barrier == nullptr) return;  // a plane without one never proves anything (R07)
  std::mutex m;
  std::condition_variable cv;
  std::stop_callback wake(stop, [&] {
    std::lock_guard lock(m);
    cv.notify_all();
  });
  auto sleep = [&](int64_t ns) {
    std::unique_lock lock(m);
    clock_->WaitUntil(lock, cv, clock_->Now() + ns, [&] { return stop.stop_requested(); });
  };
  while (!stop.stop_requested()) {
    // A timer, because the request is a durable row another process wrote (R20).
    auto barrier = opts_.barrier->ComputeBarrierInForce();
    if (!barrier.ok() || !barrier->has_value()) {
      sleep(kIdleNs);
      continue;
    }
    const ports::ComputeBarrier& b = **barrier;
    auto admission = opts_.barrier->AdmissionGeneration();
    if (admission.ok() && (admission->first != b.generation || !admission->second)) {
      Status s = opts_.barrier->DropComputeBarrier(b.id);  // it can no longer mean anything
      if (!s.ok()) log_->Warn("plane.barrier_drop_failed", {{"error", s.message()}});
      sleep(kIdleNs);
      continue;
    }
    auto quiet = opts_.barrier->GetQuiescence();
    if (!quiet.ok() || !quiet->Quiet()) {
      sleep(kIdleNs);
      continue;
    }
    std::vector<std::string> targets = BarrierTargets();
    for (size_t i = 0; i < targets.size() && !stop.stop_requested(); i += kConcurrentAsks) {
      std::vector<std::future<Status>> asks;
      for (size_t j = i; j < std::min(targets.size(), i + kConcurrentAsks); ++j) {
        asks.push_back(std::async(std::launch::async,
                                  [this, &targets, j, &b, stop] { return AskNode(targets[j], b.id, stop); }));
      }
      for (auto& a : asks) {
        Status s = a.get();
        if (!s.ok()) log_->Warn("plane.barrier_ask_failed", {{"error", s.message()}});
      }
    }
    sleep(opts_.barrier_round_ns);
  }
}

}  // namespace nodeplane::plane
