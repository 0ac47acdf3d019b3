// An in-memory stand-in for the ledger ports the Plane uses, with switches
// to make it fail, and a record of what it was asked.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "ports/ledger.h"

namespace nodeplane::testing {

class FakeLedger : public ports::Registrar, public ports::LeaseStore, public ports::BarrierStore {
 public:
  // ---- switches and observations ----
  std::mutex mu;
  bool fail_register = false;
  bool fail_withdraw = false;
  bool fail_bump = false;
  bool fail_list = false;
  std::map<std::string, int64_t> epochs;           // node -> epoch
  std::map<std::string, int64_t> dispatch;         // node -> dispatch generation
  std::map<std::string, bool> live;
  std::map<std::string, std::string> incarnations;
  std::vector<ports::Lease> leases;                // open leases, as the ledger places them
  std::map<std::string, std::string> ended;        // lease -> the node its job was attributed to
  std::vector<std::pair<std::string, int64_t>> gone_calls;
  std::vector<std::string> invalidated;            // barrier runs discarded, "*" for all
  std::vector<ports::BarrierObservation> observations;
  std::vector<std::pair<std::string, std::vector<std::string>>> resolved;  // node, running
  std::optional<ports::ComputeBarrier> barrier;
  std::pair<int64_t, bool> admission{0, false};
  std::vector<ports::Lease> outstanding;
  std::set<std::string> settled_leases;            // SettleCompletion answers true for these
  std::function<void()> on_withdraw;               // runs inside NodeWithdrawn, to stage races
  std::function<void()> after_withdraw;            // runs once NodeWithdrawn recorded it, unlocked
  std::function<void()> on_list;                   // runs inside ListLeases, after its read
  std::function<int64_t()> on_resolve;             // what ResolveQuarantineFor frees (it counts); none: 0
  int quiescence_calls = 0;

  // ---- Registrar ----
  Result<int64_t> RegisterNode(const ports::NodeRegistration& reg) override {
    std::lock_guard l(mu);
    if (fail_register) return Status::Unavailable("the ledger is down");
    live[reg.name] = true;
    incarnations[reg.name] = reg.incarnation;
    return ++epochs[reg.name];
  }
  Status NodeGone(const std::string& node, int64_t epoch) override {
    std::lock_guard l(mu);
    gone_calls.emplace_back(node, epoch);
    if (epochs[node] == epoch) live[node] = false;
    return Status::Ok();
  }
  Status NodeWithdrawn(const std::string& node, int64_t epoch, const std::string& inc) override {
    std::function<void()> after;
    {
      std::lock_guard l(mu);
      if (on_withdraw) on_withdraw();
      if (fail_withdraw) return Status::Unavailable("the ledger is down");
      if (epochs[node] != epoch || incarnations[node] != inc || inc.empty()) {
        return ports::WithVerdict(Status(Code::kConflict, "stale"), ports::Verdict::kWithdrawalStale);
      }
      live[node] = false;
      after = after_withdraw;
    }
    if (after) after();
    return Status::Ok();
  }
  Status ForgetEveryNode() override {
    std::lock_guard l(mu);
    for (auto& [n, v] : live) v = false;
    return Status::Ok();
  }
  Result<int64_t> BumpDispatch(const std::string& node) override {
    std::lock_guard l(mu);
    if (fail_bump) return Status::Unavailable("the ledger is down");
    return ++dispatch[node];
  }
  Result<int64_t> ResolveQuarantineFor(const std::string& node, const std::vector<std::string>& running,
                                       int64_t) override {
    std::function<int64_t()> hook;
    {
      std::lock_guard l(mu);
      resolved.emplace_back(node, running);
      hook = on_resolve;
    }
    return hook ? hook() : 0;
  }
  Result<bool> SettleCompletionOnTerminalLease(const std::string& lease, int64_t, ports::Phase) override {
    std::lock_guard l(mu);
    return settled_leases.count(lease) != 0;
  }

  // Places an open lease on `node`, bound there (launched unless told
  // otherwise), as the ledger would after a launch.
  void Place(const std::string& node, const std::string& id, int64_t request_id = 0,
             ports::Phase phase = ports::Phase::kBusy, const std::string& holder = "") {
    std::lock_guard l(mu);
    ports::Lease lease;
    lease.id = id;
    lease.tier = "small";
    lease.node = node;
    lease.target_node = node;
    lease.phase = phase;
    lease.request_id = request_id;
    lease.holder_incarnation = holder;
    leases.push_back(lease);
  }
  void End(const std::string& id) {
    std::lock_guard l(mu);
    std::erase_if(leases, [&](const ports::Lease& lease) { return lease.id == id; });
  }

  // ---- LeaseStore: the Plane reads what the ledger places ----
  Result<std::vector<std::string>> LaunchedLeaseIds(const std::string& node) override {
    std::lock_guard l(mu);
    std::vector<std::string> out;
    for (const ports::Lease& lease : leases) {
      if (lease.node == node && ports::Launched(lease.phase)) out.push_back(lease.id);
    }
    return out;
  }
  Result<std::vector<ports::Lease>> ListLeases(const std::string& node) override {
    std::vector<ports::Lease> out;
    std::function<void()> hook;
    {
      std::lock_guard l(mu);
      if (fail_list) return Status::Unavailable("the ledger is down");
      for (const ports::Lease& lease : leases) {
        if (node.empty() || (lease.node.empty() ? lease.target_node : lease.node) == node) out.push_back(lease);
      }
      hook = on_list;
    }
    if (hook) hook();
    return out;
  }
  Result<std::optional<ports::Job>> JobForLease(const std::string&) override { return Unused(); }
  Status Bind(const std::string&, int64_t, const std::string&, const std::string&) override { return Unused(); }
  Status Advance(const std::string&, int64_t, ports::Phase, const std::string&) override { return Unused(); }
  Status Heartbeat(const std::string&, int64_t) override { return Unused(); }
  Status MarkFailure(const std::string&, int64_t, const std::string&) override { return Unused(); }
  Status Resize(const std::string&, int64_t, const std::string&, int64_t, int64_t) override { return Unused(); }
  Status Release(const std::string&, int64_t, ports::Phase) override { return Unused(); }
  Result<ports::Lease> GetLease(const std::string& id) override {
    std::lock_guard l(mu);
    for (const ports::Lease& lease : leases) {
      if (lease.id == id) return lease;
    }
    return ports::WithVerdict(Status::NotFound("no open lease " + id), ports::Verdict::kNotFound);
  }
  Status RecordCacheObservation(const std::string&, int64_t, const ports::CacheObservation&) override {
    return Unused();
  }
  Status MarkDeregistered(const std::string&) override { return Unused(); }
  Result<std::string> EndedLeaseNode(const std::string& id) override {
    std::lock_guard l(mu);
    auto it = ended.find(id);
    if (it == ended.end()) return ports::WithVerdict(Status::NotFound("no ended lease " + id), ports::Verdict::kNotFound);
    return it->second;
  }
  Result<std::vector<std::string>> QuarantinedLeaseIds(const std::string&) override { return Unused(); }

  // ---- BarrierStore ----
  Result<std::optional<ports::ComputeBarrier>> ComputeBarrierInForce() override {
    std::lock_guard l(mu);
    return barrier;
  }
  Status DropComputeBarrier(const std::string& id) override {
    std::lock_guard l(mu);
    if (barrier && barrier->id == id) barrier.reset();
    return Status::Ok();
  }
  Result<std::pair<int64_t, bool>> AdmissionGeneration() override {
    std::lock_guard l(mu);
    return admission;
  }
  Result<ports::Quiescence> GetQuiescence() override {
    std::lock_guard l(mu);
    ++quiescence_calls;
    return ports::Quiescence{admission.second, admission.first, outstanding};
  }
  Result<std::optional<ports::NodeFence>> NodeFenceOf(const std::string& node) override {
    std::lock_guard l(mu);
    if (epochs.count(node) == 0) return std::optional<ports::NodeFence>();
    return std::optional<ports::NodeFence>(ports::NodeFence{epochs[node], dispatch[node], 1, live[node]});
  }
  Status RecordBarrierObservation(const ports::BarrierObservation& obs) override {
    std::lock_guard l(mu);
    observations.push_back(obs);
    return Status::Ok();
  }
  Status InvalidateBarrierRun(const std::string& node) override {
    std::lock_guard l(mu);
    invalidated.push_back(node);
    return Status::Ok();
  }
  Status InvalidateEveryBarrierRun() override {
    std::lock_guard l(mu);
    invalidated.push_back("*");
    return Status::Ok();
  }

 private:
  static Status Unused() { return Status::Internal("not used by the Plane"); }
};

}  // namespace nodeplane::testing
