#include "plane_test_peer.h"

#include <condition_variable>
#include <mutex>

#include "plane/plane_internal.h"

namespace nodeplane::plane {

Result<RegisterResponse> PlaneTestPeer::Register(const RegisterRequest& req) {
  if (Status s = p_.ArrivingForRegistration(req.node); !s.ok()) return s;
  return p_.CompleteRegistration(req);
}

Result<std::optional<Command>> PlaneTestPeer::Poll(const std::string& node, const std::string& incarnation,
                                                   std::stop_token stop) {
  struct Slot {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Result<std::optional<Command>>> answer;
  };
  auto slot = std::make_shared<Slot>();
  auto ticket = p_.PollAsync(node, incarnation, [slot](Result<std::optional<Command>> r) {
    std::lock_guard lock(slot->mu);
    slot->answer.emplace(std::move(r));
    slot->cv.notify_all();
  });
  std::stop_callback on_stop(stop, [&] {
    p_.CancelPoll(ticket);
    std::lock_guard lock(slot->mu);
    slot->cv.notify_all();
  });
  std::unique_lock lock(slot->mu);
  slot->cv.wait(lock, [&] { return slot->answer.has_value() || stop.stop_requested(); });
  if (slot->answer) return std::move(*slot->answer);
  return std::optional<Command>();
}

size_t PlaneTestPeer::Queued(const std::string& node) const {
  MutexLock lock(p_.mu_);
  const Plane::NodeState* n = p_.Find(node);
  return n == nullptr ? 0 : n->queue.size();
}

size_t PlaneTestPeer::Waiters(const std::string& node) const {
  MutexLock lock(p_.mu_);
  const Plane::NodeState* n = p_.Find(node);
  return n == nullptr ? 0 : n->waiters.size();
}

size_t PlaneTestPeer::InFlight(const std::string& node) const {
  MutexLock lock(p_.mu_);
  const Plane::NodeState* n = p_.Find(node);
  return n == nullptr ? 0 : n->in_flight.size();
}

bool PlaneTestPeer::Reconciled(const std::string& node) const {
  MutexLock lock(p_.mu_);
  const Plane::NodeState* n = p_.Find(node);
  return n != nullptr && n->inventory_known;
}

std::string PlaneTestPeer::CurrentIncarnation(const std::string& node) const {
  MutexLock lock(p_.mu_);
  const Plane::NodeState* n = p_.Find(node);
  return n == nullptr ? std::string() : n->incarnation;
}

bool PlaneTestPeer::Owns(const std::string& lease_id, const std::string& node, const std::string& incarnation) const {
  MutexLock lock(p_.mu_);
  auto it = p_.owners_.find(lease_id);
  return it != p_.owners_.end() && it->second.owner.node == node && it->second.owner.incarnation == incarnation;
}

size_t PlaneTestPeer::Owners() const {
  MutexLock lock(p_.mu_);
  return p_.owners_.size();
}

std::vector<std::string> PlaneTestPeer::BarrierTargets() const { return p_.BarrierTargets(); }

Result<std::string> PlaneTestPeer::Pick(const ports::Lease& lease) {
  MutexLock lock(p_.mu_);
  const Tier* tier = nullptr;
  return p_.PickLocked(lease, &tier);
}

Status PlaneTestPeer::AskNode(const std::string& node, const std::string& barrier_id) {
  if (p_.opts_.barrier == nullptr) return Status::Invalid("this plane has no barrier store");
  return p_.AskNode(node, barrier_id, {});
}

void PlaneTestPeer::SetPollWindow(int64_t ns) {
  MutexLock lock(p_.mu_);
  p_.poll_window_ns_ = ns;
}

void PlaneTestPeer::Forget(const std::string& node) {
  Plane::Completions done;
  {
    MutexLock lock(p_.mu_);
    Plane::NodeState* n = p_.Find(node);
    if (n == nullptr) return;
    p_.FailQueuedLocked(*n, "node \"" + node + "\" was forgotten");
    p_.ResolveInFlightLocked(*n, "node \"" + node + "\" was forgotten");
    p_.ReleaseWaitersLocked(*n, done, Unregistered("node \"" + node + "\" was forgotten"));
    p_.nodes_.erase(node);
  }
  p_.Fire(done);
}

}  // namespace nodeplane::plane
