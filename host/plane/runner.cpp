// Dispatch and the Runner: commands out, results back, and what each
// outcome means for a lease.
#include <algorithm>
#include <future>

#include "plane/plane.h"
#include "plane/plane_internal.h"

namespace nodeplane::plane {
namespace {

bool Accepts(const std::vector<std::string>& guest_os, const std::string& os) {
  return guest_os.empty() || std::find(guest_os.begin(), guest_os.end(), os) != guest_os.end();
}

Status Failure(std::string message) { return Status(Code::kConflict, std::move(message)); }

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

Result<std::string> Plane::PickLocked(const ports::Lease& lease, const Tier** tier) {
  *tier = TierOf(lease.tier);
  if (*tier == nullptr) return NoNode("tier \"" + lease.tier + "\" is not in this control plane's catalogue");
  if (auto paused = paused_tiers_.find(lease.tier); paused != paused_tiers_.end()) {
    return NoNode("tier \"" + lease.tier + "\" is paused: " + paused->second +
                  "; once its image is current: nodeplanectl tiers resume " + lease.tier);
  }
  const std::vector<std::string> providers = ports::ProvidersOf(lease.providers);
  auto accepts = [&](const NodeState& n) {
    return std::find(providers.begin(), providers.end(), n.provider) != providers.end() &&
           Accepts(n.guest_os, lease.guest_os.empty() ? "linux" : lease.guest_os);
  };
  for (const std::string* fixed : {&lease.node, &lease.target_node}) {
    if (fixed->empty()) continue;
    const NodeState* n = Find(*fixed);
    if (n == nullptr || !accepts(*n)) {
      return NoNode("lease " + lease.id + " is placed on node \"" + *fixed + "\", which is not registered here to run it");
    }
    return *fixed;
  }
  for (const std::string& provider : providers) {
    for (const std::string& name : LiveNodesLocked()) {
      const NodeState& n = *Find(name);
      if (n.provider == provider && accepts(n)) return name;
    }
  }
  return NoNode("no registered node can run lease " + lease.id + " (tier " + lease.tier + ")");
}

Plane::Dispatched Plane::Dispatch(const std::string& node, Command cmd, const std::string& expected_provider,
                                  const std::string& expected_incarnation, int64_t expected_epoch,
                                  std::stop_token stop) {
  Dispatched out;
  auto p = std::make_shared<Pending>();
  p->cmd = std::move(cmd);
  p->node = node;
  p->expected_provider = expected_provider;
  p->expected_incarnation = expected_incarnation;
  std::stop_callback on_stop(stop, [&] {
    MutexLock lock(mu_);
    results_cv_.notify_all();
  });
  Completions done;
  int64_t deadline;
  {
    MutexLock lock(mu_);
    ExpireStaleLocked(done);
    NodeState* n = Find(node);
    if (stopping_) {
      out.stopped = true;
      out.error = NoNode("the control plane is stopping, so nothing was sent to node \"" + node + "\"");
    } else if (n == nullptr) {
      out.error = NoNode("node \"" + node + "\" is not registered, so nothing was sent");
    } else if (p->cmd.kind == CommandKind::kLaunch && n->provider != expected_provider) {
      out.error = NoNode("node \"" + node + "\" changed provider before the launch was queued, so nothing was sent");
    } else if (expected_epoch != 0 && (n->registering > 0 || n->ledger_epoch != expected_epoch)) {
      out.error = NoNode("node \"" + node + "\" registered again since the fence was taken, so nothing was sent");
    } else {
      p->queued_at = clock_->Now();
      n->queue.push_back(p);
      out.queued = true;
      WakeOneLocked(*n, done);
    }
    deadline = clock_->Now() + opts_.command_timeout_ns;  // measured from enqueue
  }
  Fire(done);
  if (!out.queued) return out;

  MutexLock lock(mu_);
  clock_->WaitUntil(lock.native(), results_cv_, deadline, [&]() NP_REQUIRES(mu_) {
    return p->result.has_value() || stop.stop_requested() || stopping_;
  });
  out.delivered = p->delivered;
  out.taken_by = p->taken_by;
  if (p->result) {  // a result already handed over is used, never lost
    out.result = p->result;
    return out;
  }
  // Abandon: the caller stopped waiting.
  out.stopped = stopping_ || stop.stop_requested();
  const std::string why = stopping_                ? "the control plane is stopping"
                          : stop.stop_requested() ? "the caller stopped waiting"
                                                  : "the command timed out";
  if (NodeState* n = Find(node)) {
    if (p->delivered) {
      n->in_flight.erase(p->cmd.id);
    } else {
      auto& q = n->queue;
      q.erase(std::remove(q.begin(), q.end(), p), q.end());
    }
  }
  if (p->delivered) TombstoneLocked(node, p);
  p->result = CommandResult{p->cmd.id, false, why, false, "", {}};  // answered once: a late result finds a tombstone
  out.error = Status::Unavailable(why);
  return out;
}

Status Runner::Launch(ports::Lease& lease, const Job& job, std::stop_token stop, const std::string& fenced_node) {
  Plane& p = plane_;
  std::string node, provider;
  TierShape shape;
  Status picked = p.AfterExpiry([&]() NP_REQUIRES(p.mu_) -> Status {
    const Tier* tier = nullptr;
    auto chosen = p.PickLocked(lease, &tier);
    if (!chosen.ok()) return chosen.status();
    node = *chosen;
    provider = p.Find(node)->provider;
    shape = tier->shape;
    return Status::Ok();
  });
  if (!picked.ok()) return picked;
  // The dispatch fence moves before the launch can be taken (R37).
  if (p.opts_.registrar != nullptr && node != fenced_node) {
    auto generation = p.opts_.registrar->BumpDispatch(node);
    if (!generation.ok()) {
      return NoNode("could not advance node \"" + node + "\"'s dispatch fence, so nothing was sent: " +
                    generation.status().message());
    }
  }
  Command cmd;
  cmd.id = NewCommandId();
  cmd.kind = CommandKind::kLaunch;
  cmd.lease = lease;
  cmd.job = job;
  cmd.tier = shape;  // the catalogue's shape travels on the command (R13)
  Plane::Dispatched d = p.Dispatch(node, std::move(cmd), provider, "", 0, stop);
  if (!d.queued) return d.error;
  if (d.result && !d.delivered) {
    // Answered by the plane before any node took it (expiry, withdrawal,
    // shutdown): nothing was attempted (S01).
    return NoNode("the launch of lease " + lease.id + " was never taken: " + d.result->error);
  }
  if (d.result) {
    if (d.result->ok) {
      lease.node = node;
      return Status::Ok();
    }
    if (d.result->custody) {
      lease.node = node;  // where compute may be running: the caller must be able to say
      return Custody("node \"" + node + "\" holds lease " + lease.id + ": " + d.result->error);
    }
    return Failure("node \"" + node + "\" could not launch lease " + lease.id + ": " + d.result->error);
  }
  if (d.delivered) {
    lease.node = node;
    return Custody("node \"" + node + "\" took the launch of lease " + lease.id + " and did not answer (" +
                   d.error.message() + "), so whether compute started is unknown");
  }
  return NoNode("the launch of lease " + lease.id + " was abandoned (" + d.error.message() +
                ") before any node took it, so nothing started");
}

Status Runner::Destroy(int64_t request_id, std::stop_token stop) { return DestroyImpl(request_id, "", stop); }

Status Runner::DestroyCompleted(int64_t request_id, const std::string& job_result, std::stop_token stop) {
  return DestroyImpl(request_id, job_result, stop);
}

Status Runner::DestroyImpl(int64_t request_id, const std::string& job_result, std::stop_token stop) {
  Plane& p = plane_;
  // A snapshot for choosing whom to ask, never for deciding who answered (R39).
  std::optional<RequestOwner> owner = p.OwnerOfRequest(request_id);
  if (!owner) {
    auto durable = p.DurableOwnerOfRequest(request_id);
    if (!durable.ok()) {
      return Status::Unavailable("the ledger cannot say who holds request " + std::to_string(request_id) +
                                 ", so nothing was destroyed: " + durable.status().message());
    }
    owner = *durable;
  }
  // A known owner is asked alone, and only while its node is registered:
  // no other node could confirm (R27), so a broadcast for it is pure cost
  // (review D8). Only an unknown owner is looked for across the fleet (R41).
  std::vector<std::string> targets = p.AfterExpiry([&]() NP_REQUIRES(p.mu_) {
    if (!owner) return p.LiveNodesLocked();
    return p.Find(owner->node) != nullptr ? std::vector<std::string>{owner->node} : std::vector<std::string>{};
  });
  auto unreachable = [&]() -> Status {
    std::string m = "request " + std::to_string(request_id) + " was launched by a process on \"" + owner->node +
                    "\" that cannot be reached to confirm its compute is gone";
    return job_result.empty() ? Custody(m) : HolderUnavailable(m);
  };
  if (targets.empty()) return owner ? unreachable() : Status::Ok();

  std::vector<std::future<Plane::Dispatched>> legs;
  for (const std::string& t : targets) {
    Command cmd;
    cmd.id = NewCommandId();
    cmd.kind = CommandKind::kDestroy;
    cmd.request_id = request_id;
    cmd.job_result = job_result;
    legs.push_back(std::async(std::launch::async, [&p, t, cmd, stop]() mutable {
      return p.Dispatch(t, std::move(cmd), "", "", 0, stop);
    }));
  }
  std::vector<std::string> failures, custody;
  bool confirmed = !owner.has_value();
  for (size_t i = 0; i < legs.size(); ++i) {
    Plane::Dispatched d = legs[i].get();
    const std::string& t = targets[i];
    if (!d.result) {
      failures.push_back("node \"" + t + "\" could not destroy request " + std::to_string(request_id) + ": " +
                         d.error.message());
    } else if (d.result->ok) {
      // Confirmed only by the process that has the compute (R27).
      if (owner && t == owner->node && d.taken_by == owner->incarnation) confirmed = true;
    } else if (d.result->custody) {
      custody.push_back("node \"" + t + "\" could not confirm request " + std::to_string(request_id) +
                        " is gone: " + d.result->error);
    } else {
      failures.push_back("node \"" + t + "\" could not destroy request " + std::to_string(request_id) + ": " +
                         d.result->error);
    }
  }
  if (confirmed) {
    MutexLock lock(p.mu_);
    p.ForgetForRequestLocked(request_id);
  }
  if (!failures.empty()) return Failure(Join(failures));  // a partial destroy is a failure (R41)
  if (!custody.empty()) return Custody(Join(custody));
  if (!confirmed) return unreachable();
  return Status::Ok();
}

Status Runner::DestroyCompletedBound(int64_t request_id, const std::string& job_result, const std::string& lease_id,
                                     const std::string& node, int64_t lease_epoch, ports::Phase outcome,
                                     std::stop_token stop) {
  Plane& p = plane_;
  const std::string who = "the holder of lease " + lease_id + " on \"" + node + "\"";
  std::optional<RequestOwner> owner;
  bool settle = false;
  Status verdict = p.AfterExpiry([&]() NP_REQUIRES(p.mu_) -> Status {
    const Plane::NodeState* n = p.Find(node);
    auto it = p.owners_.find(lease_id);
    if (n != nullptr && n->registering > 0) return HolderUnavailable(who + " is registering");
    if (it == p.owners_.end()) {
      // Absence proves something only while the live incarnation has vouched
      // for a complete inventory (S18), and only about this lease (S20).
      if (n == nullptr || !n->inventory_known || n->inventory.count(lease_id) != 0 || p.opts_.registrar == nullptr) {
        return HolderUnavailable(who + " has not vouched for its inventory");
      }
      settle = true;
      return Status::Ok();
    }
    owner = it->second.owner;
    if (owner->node != node || n == nullptr || n->incarnation != owner->incarnation) {
      return HolderUnavailable(who + " is no longer the process its node's commands reach");
    }
    return Status::Ok();
  });
  if (!verdict.ok()) return verdict;
  if (settle) {
    auto settled = p.opts_.registrar->SettleCompletionOnTerminalLease(lease_id, lease_epoch, outcome);
    if (!settled.ok()) return settled.status();
    return *settled ? Status::Ok() : HolderUnavailable(who + " is still open in the ledger");
  }
  Command cmd;
  cmd.id = NewCommandId();
  cmd.kind = CommandKind::kDestroy;
  cmd.request_id = request_id;
  cmd.job_result = job_result;
  Plane::Dispatched d = p.Dispatch(node, std::move(cmd), "", owner->incarnation, 0, stop);
  if (!d.result) return d.queued ? HolderUnavailable(who + ": " + d.error.message()) : d.error;
  if (d.taken_by != owner->incarnation) return HolderUnavailable(who + " did not take the destroy");
  if (!d.result->ok) {
    if (d.result->custody) return Custody(who + " could not confirm: " + d.result->error);
    return Failure(who + " could not destroy: " + d.result->error);
  }
  p.ForgetLease(node, lease_id);
  return Status::Ok();
}

Status Runner::Broadcast(CommandKind kind, std::stop_token stop) {
  Plane& p = plane_;
  std::vector<std::string> targets = p.AfterExpiry([&]() NP_REQUIRES(p.mu_) { return p.LiveNodesLocked(); });
  std::vector<std::future<Plane::Dispatched>> legs;
  for (const std::string& t : targets) {
    Command cmd;
    cmd.id = NewCommandId();
    cmd.kind = kind;
    legs.push_back(std::async(std::launch::async, [&p, t, cmd, stop]() mutable {
      return p.Dispatch(t, std::move(cmd), "", "", 0, stop);
    }));
  }
  std::vector<std::string> errors;
  for (size_t i = 0; i < legs.size(); ++i) {
    Plane::Dispatched d = legs[i].get();
    if (d.result && d.result->ok) continue;
    errors.push_back("node \"" + targets[i] + "\" could not " + CommandKindName(kind) + ": " +
                     (d.result ? d.result->error : d.error.message()));
  }
  return errors.empty() ? Status::Ok() : Failure(Join(errors));
}

Status Runner::Sweep(std::stop_token stop) { return Broadcast(CommandKind::kSweep, stop); }

Status Runner::Tend(std::stop_token stop) { return Broadcast(CommandKind::kTend, stop); }

void Runner::KeepAlive(std::stop_token stop) {
  // Renewal is for leases a runner holds in custody, and a remote runner's
  // custody lives on its node, which renews it on its own clock. There is
  // nothing here to renew; this blocks for as long as its caller expects.
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait(lock, stop, [] { return false; });
}

Status Runner::Upgrade(const std::string& node, const UpgradeSpec& spec, std::stop_token stop) {
  Plane& p = plane_;
  if (!p.AfterExpiry([&]() NP_REQUIRES(p.mu_) { return p.Find(node) != nullptr; })) {
    return NoNode("node \"" + node + "\" is not registered, so no upgrade was sent");
  }
  Command cmd;
  cmd.id = NewCommandId();
  cmd.kind = CommandKind::kUpgrade;
  cmd.upgrade = spec;
  Plane::Dispatched d = p.Dispatch(node, std::move(cmd), "", "", 0, stop);
  if (!d.result) return d.queued ? Status::Unavailable("node \"" + node + "\" did not answer the upgrade: " +
                                                       d.error.message())
                                 : d.error;
  if (!d.result->ok) return Failure("node \"" + node + "\" could not start its upgrade: " + d.result->error);
  return Status::Ok();  // the updater started; the upgrade itself runs on (R46)
}

}  // namespace nodeplane::plane
