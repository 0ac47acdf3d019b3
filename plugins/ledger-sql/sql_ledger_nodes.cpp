// The registrar: node rows, their epochs and dispatch fences, and the
// inventory that frees quarantine.
#include <algorithm>
#include <set>

#include "sql_ledger_internal.h"

namespace nodeplane::ledger {
namespace {

// Every node write that may change the placeable fleet ends here (L6).
void FleetChanged(Session& s) { Exec(s, "UPDATE fleet SET generation = generation + 1 WHERE id = 1"); }

}  // namespace

int64_t SqlLedger::RegisterNode(const Registration& reg) {
  if (reg.name.empty()) Fail(NP_INVALID, "a registration needs a node name");
  if (reg.provider.empty()) Fail(NP_INVALID, "node " + reg.name + " registered without a provider");
  if (reg.total_vcpu <= 0 || reg.total_memory <= 0) {
    Fail(NP_INVALID, "node " + reg.name + " contributes no capacity (vCPU and memory must be positive)");
  }
  const auto catalog = CatalogSnapshot();
  const Catalog& cat = *catalog;
  if (auto p = cat.nodes.find(reg.name); p != cat.nodes.end() && !p->second.provider.empty() &&
                                         p->second.provider != reg.provider) {
    Fail(NP_WRONG_PROVIDER, "node " + reg.name + " claims provider " + reg.provider + ", but the deployment declares " +
                                p->second.provider + " for it");
  }
  return Write([&](Session& s) {
    const long long now = Now();
    NodeRow old;
    const bool known = FetchOne(s, "SELECT provider, site, epoch, incarnation FROM nodes WHERE name = :n",
                                soci::into(old.provider), soci::into(old.site), soci::into(old.epoch),
                                soci::into(old.incarnation), soci::use(reg.name));
    if (known && reg.incarnation.empty() && !old.incarnation.empty()) {
      // Once claimed, an incarnation is never blanked: a process without
      // one is another process under the name (R23).
      Fail(NP_CONFLICT, "node " + reg.name + " was registered by a process that claimed an incarnation; a "
                        "registration without one cannot replace it");
    }
    if (known && (old.provider != reg.provider || old.site != reg.site)) {
      // Live work pins a host's backend and site: anything that may have
      // compute, and escrow that has not expired.
      long long live_work = 0;
      s << "SELECT COUNT(*) FROM leases WHERE " + OpenLeaseChargedTo("n") +
               " AND (phase IN ('launching', 'online', 'busy', 'custody', 'teardown', 'quarantine') "
               "OR expires_at > :now)",
          soci::into(live_work), soci::use(reg.name), soci::use(now);
      if (live_work > 0 && old.provider != reg.provider) {
        Fail(NP_WRONG_PROVIDER, "node " + reg.name + " has " + std::to_string(live_work) + " lease(s) on " +
                                    old.provider + " and cannot switch to " + reg.provider + " until they end");
      }
      if (live_work > 0) {
        Fail(NP_WRONG_SITE, "node " + reg.name + " has " + std::to_string(live_work) + " lease(s) in site \"" +
                                old.site + "\" and cannot move to \"" + reg.site + "\" until they end");
      }
    }
    long long vcpu = reg.total_vcpu, memory = reg.total_memory, wire = reg.wire_version;
    if (auto p = cat.nodes.find(reg.name); p != cat.nodes.end()) {
      if (p->second.max_vcpu > 0) vcpu = std::min<long long>(vcpu, p->second.max_vcpu);
      if (p->second.max_memory > 0) memory = std::min<long long>(memory, p->second.max_memory);
    }
    const long long epoch = known ? old.epoch + 1 : 1;
    Exec(s,
         "INSERT INTO nodes (name, provider, site, incarnation, epoch, total_vcpu, total_memory, last_seen_at, live, "
         "drained, withdrawn, wire_version, node_release) VALUES (:n, :p, :s, :i, :e, :v, :m, :t, 1, 0, 0, :w, :r) "
         "ON CONFLICT (name) DO UPDATE SET provider = excluded.provider, site = excluded.site, "
         "incarnation = excluded.incarnation, epoch = excluded.epoch, total_vcpu = excluded.total_vcpu, "
         "total_memory = excluded.total_memory, last_seen_at = excluded.last_seen_at, live = 1, drained = 0, "
         "withdrawn = 0, wire_version = excluded.wire_version, node_release = excluded.node_release",
         reg.name, reg.provider, reg.site, reg.incarnation, epoch, vcpu, memory, now, wire, reg.release);
    FleetChanged(s);
    return static_cast<int64_t>(epoch);
  });
}

void SqlLedger::NodeGone(const std::string& node, int64_t epoch) {
  Write([&](Session& s) {
    if (Exec(s, "UPDATE nodes SET live = 0 WHERE name = :n AND epoch = :e", node, static_cast<long long>(epoch)) > 0) {
      FleetChanged(s);
    }
  });
}

void SqlLedger::NodeWithdrawn(const std::string& node, int64_t epoch, const std::string& incarnation) {
  Write([&](Session& s) {
    long long changed = Exec(s,
                             "UPDATE nodes SET live = 0, withdrawn = 1 WHERE name = :n AND epoch = :e AND "
                             "incarnation = :i AND incarnation <> ''",
                             node, static_cast<long long>(epoch), incarnation);
    if (changed == 0) {
      Fail(NP_WITHDRAWAL_STALE, "node " + node + " at epoch " + std::to_string(epoch) +
                                    " is not the registered process; its withdrawal changes nothing");
    }
    FleetChanged(s);
  });
}

void SqlLedger::ForgetEveryNode() {
  Write([&](Session& s) {
    Exec(s, "UPDATE nodes SET live = 0");
    FleetChanged(s);
  });
}

int64_t SqlLedger::BumpDispatch(const std::string& node) {
  return Write([&](Session& s) { return BumpDispatchIn(s, node); });
}

int64_t SqlLedger::BumpDispatchIn(Session& s, const std::string& node) {
  Exec(s, "UPDATE nodes SET dispatch_generation = dispatch_generation + 1 WHERE name = :n", node);
  long long generation = 0;
  s << "SELECT dispatch_generation FROM nodes WHERE name = :n", soci::into(generation), soci::use(node);
  return static_cast<int64_t>(s.got_data() ? generation : 0);
}

int64_t SqlLedger::ResolveQuarantineFor(const std::string& node, const std::vector<std::string>& running,
                                        int64_t epoch) {
  std::set<std::string> still(running.begin(), running.end());
  const std::string freeable = "WHERE " + OpenLeaseChargedTo("n") + " AND phase = 'quarantine' AND expires_at < :before";
  auto absent = [&](const LeaseRow& l) { return still.count(l.id) == 0; };
  // Nodes reconcile about once a lease TTL each, and there is almost never
  // anything to free: asked on a reader first, such a reconcile neither
  // queues for the write lock (L1) nor commits. A lease that becomes
  // freeable after this read is freed by the node's next reconcile, as if
  // this one had come a moment sooner; the write below decides afresh.
  const std::vector<LeaseRow> seen =
      Read([&](Session& s) { return SelectLeases(s, freeable, node, Now() - options_.quarantine_grace_ns); });
  if (std::none_of(seen.begin(), seen.end(), absent)) return 0;
  return Write([&](Session& s) -> int64_t {
    long long current = 0;
    if (!FetchOne(s, "SELECT epoch FROM nodes WHERE name = :n", soci::into(current), soci::use(node)) ||
        current != epoch) {
      return 0;  // an overtaken registration proves nothing
    }
    const long long now = Now(), before = now - options_.quarantine_grace_ns;
    std::vector<LeaseRow> held = SelectLeases(s, freeable, node, before);
    int64_t freed = 0;
    for (LeaseRow& l : held) {
      if (!absent(l)) continue;
      if (l.failure_reason.empty()) l.failure_reason = kReasonInventoryAbsence;
      Exec(s, "UPDATE leases SET phase = 'failed', epoch = epoch + 1, failure_reason = :r WHERE id = :id AND epoch = :e",
           l.failure_reason, l.id, l.epoch);
      Archive(s, l, NP_PHASE_FAILED, now);
      ++freed;
    }
    return freed;
  });
}

bool SqlLedger::SettleCompletionOnTerminalLease(const std::string& id, int64_t lease_epoch, int32_t outcome) {
  if (!IsTerminal(outcome)) Fail(NP_BAD_TRANSITION, "a completion settles a lease as done or failed");
  return Write([&](Session& s) {
    std::vector<LeaseRow> rows = SelectLeases(s, "WHERE id = :id", id);
    if (rows.empty()) return true;
    const LeaseRow& l = rows.front();
    if (l.epoch < lease_epoch) return false;
    if (!IsTerminal(*PhaseFromName(l.phase))) return false;  // never ends an open lease
    if (l.failure_reason == kReasonInventoryAbsence) {
      const std::string phase = PhaseName(outcome);
      Exec(s, "UPDATE leases SET phase = :p, failure_reason = '' WHERE id = :id", phase, id);
      Exec(s, "UPDATE job_history SET conclusion = :p, failure_reason = '' WHERE lease_id = :id", phase, id);
    }
    return true;
  });
}

std::vector<NodeRow> SqlLedger::ListNodes() {
  return Read([&](Session& s) {
    NodeRow n;
    Query st(s,
             "SELECT name, provider, site, incarnation, epoch, total_vcpu, total_memory, last_seen_at, live, "
             "drained, withdrawn, dispatch_generation, wire_version, node_release FROM nodes ORDER BY name",
             soci::into(n.name), soci::into(n.provider), soci::into(n.site), soci::into(n.incarnation),
             soci::into(n.epoch), soci::into(n.total_vcpu), soci::into(n.total_memory),
             soci::into(n.last_seen_at), soci::into(n.live), soci::into(n.drained), soci::into(n.withdrawn),
             soci::into(n.dispatch_generation), soci::into(n.wire_version), soci::into(n.release));
    st->execute();
    std::vector<NodeRow> out;
    while (st->fetch()) out.push_back(n);
    return out;
  });
}

}  // namespace nodeplane::ledger
