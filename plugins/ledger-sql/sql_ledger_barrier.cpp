// Admission and the compute barrier: the durable drain request, each host's
// fenced run of empty answers, and the ledger's word on whether the fleet is
// proved to run nothing.
#include "sql_ledger_internal.h"

namespace nodeplane::ledger {
namespace {

std::vector<BarrierRow> LoadBarrier(Session& s) {
  BarrierRow b;
  s << "SELECT barrier_id, admission_generation, requested_at, requested_by FROM compute_barrier WHERE id = 1",
      soci::into(b.id), soci::into(b.generation), soci::into(b.requested_at), soci::into(b.requested_by);
  std::vector<BarrierRow> out;
  if (s.got_data()) out.push_back(b);
  return out;
}

std::pair<int64_t, bool> LoadAdmission(Session& s) {
  std::string mode;
  long long generation = 0;
  s << "SELECT mode, generation FROM admission WHERE id = 1", soci::into(mode), soci::into(generation);
  // An unreadable or unknown mode counts as sealed: fail closed.
  return {generation, !s.got_data() || mode != "open"};
}

}  // namespace

std::vector<BarrierRow> SqlLedger::ComputeBarrierInForce() {
  return Read([&](Session& s) { return LoadBarrier(s); });
}

BarrierRow SqlLedger::RequestComputeBarrier(const std::string& actor) {
  return Write([&](Session& s) {
    auto [generation, sealed] = LoadAdmission(s);
    std::vector<BarrierRow> current = LoadBarrier(s);
    if (!current.empty() && current.front().generation == generation) return current.front();
    BarrierRow b{NewHexId(), generation, Now(), actor};
    Exec(s, "DELETE FROM compute_barrier_nodes");
    Exec(s, "DELETE FROM compute_barrier");
    Exec(s,
         "INSERT INTO compute_barrier (id, barrier_id, admission_generation, requested_at, requested_by) "
         "VALUES (1, :b, :g, :t, :a)",
         b.id, b.generation, b.requested_at, b.requested_by);
    return b;
  });
}

void SqlLedger::DropComputeBarrier(const std::string& barrier_id) {
  Write([&](Session& s) {
    std::vector<BarrierRow> current = LoadBarrier(s);
    if (current.empty() || current.front().id != barrier_id) return;  // replaced meanwhile: not ours to drop
    Exec(s, "DELETE FROM compute_barrier_nodes");
    Exec(s, "DELETE FROM compute_barrier");
  });
}

std::pair<int64_t, bool> SqlLedger::AdmissionGeneration() {
  return Read([&](Session& s) { return LoadAdmission(s); });
}

int64_t SqlLedger::SetAdmission(bool sealed, int64_t expected, const std::string& reason, const std::string& actor) {
  return Write([&](Session& s) -> int64_t {
    auto [generation, is_sealed] = LoadAdmission(s);
    if (expected >= 0 && expected != generation) {
      Fail(NP_CONFLICT, "admission is at generation " + std::to_string(generation) + ", not " +
                            std::to_string(expected));
    }
    if (sealed == is_sealed) return generation;
    const long long next = generation + 1, now = Now();
    Exec(s,
         "UPDATE admission SET mode = :m, generation = :g, reason = :r, actor = :a, changed_at = :t WHERE id = 1",
         std::string(sealed ? "sealed" : "open"), next, reason, actor, now);
    return next;
  });
}

Quiescence SqlLedger::GetQuiescence() {
  return Read([&](Session& s) {
    Quiescence q;
    std::tie(q.generation, q.sealed) = LoadAdmission(s);
    q.outstanding = SelectLeases(s, std::string("WHERE ") + kOpen + " ORDER BY created_at, id");
    return q;
  });
}

std::vector<FenceRow> SqlLedger::NodeFenceOf(const std::string& node) {
  return Read([&](Session& s) {
    FenceRow f;
    s << "SELECT epoch, dispatch_generation, wire_version, live FROM nodes WHERE name = :n", soci::into(f.epoch),
        soci::into(f.dispatch), soci::into(f.wire_version), soci::into(f.live), soci::use(node);
    std::vector<FenceRow> out;
    if (s.got_data()) out.push_back(f);
    return out;
  });
}

void SqlLedger::RecordBarrierObservation(const BarrierObservation& o) {
  Write([&](Session& s) {
    std::vector<BarrierRow> current = LoadBarrier(s);
    if (current.empty() || current.front().id != o.barrier_id) return;
    long long epoch = 0, dispatch = 0;
    s << "SELECT epoch, dispatch_generation FROM nodes WHERE name = :n", soci::into(epoch), soci::into(dispatch),
        soci::use(o.node);
    if (!s.got_data()) return;
    if (epoch != o.fence_epoch || dispatch != o.fence_dispatch || !o.empty) {
      // A launch or a new incarnation since the fence was taken, or compute
      // running: the host's run of empty answers is over.
      Exec(s, "DELETE FROM compute_barrier_nodes WHERE node = :n", o.node);
      return;
    }
    const long long now = Now();
    long long kept = Exec(s,
                          "UPDATE compute_barrier_nodes SET observed_at = :t WHERE node = :n AND barrier_id = :b "
                          "AND node_epoch = :e AND dispatch_generation = :d",
                          now, o.node, o.barrier_id, epoch, dispatch);
    if (kept > 0) return;
    Exec(s, "DELETE FROM compute_barrier_nodes WHERE node = :n", o.node);
    Exec(s,
         "INSERT INTO compute_barrier_nodes (node, barrier_id, node_epoch, dispatch_generation, empty_since, "
         "observed_at) VALUES (:n, :b, :e, :d, :s, :t)",
         o.node, o.barrier_id, epoch, dispatch, now, now);
  });
}

void SqlLedger::InvalidateBarrierRun(const std::string& node) {
  long long runs = Read([&](Session& s) {
    long long n = 0;
    FetchOne(s, "SELECT COUNT(*) FROM compute_barrier_nodes WHERE node = :n", soci::into(n), soci::use(node));
    return n;
  });
  if (runs == 0) return;  // cheap: refused registrations call this on every attempt
  Write([&](Session& s) { Exec(s, "DELETE FROM compute_barrier_nodes WHERE node = :n", node); });
}

void SqlLedger::InvalidateEveryBarrierRun() {
  long long runs = Read([&](Session& s) {
    long long n = 0;
    s << "SELECT COUNT(*) FROM compute_barrier_nodes", soci::into(n);
    return n;
  });
  if (runs == 0) return;
  Write([&](Session& s) { Exec(s, "DELETE FROM compute_barrier_nodes"); });
}

bool SqlLedger::ComputeClear() {
  return Read([&](Session& s) {
    std::vector<BarrierRow> barrier = LoadBarrier(s);
    if (barrier.empty()) return false;
    auto [generation, sealed] = LoadAdmission(s);
    if (!sealed || generation != barrier.front().generation) return false;
    // The ledger barrier first: a compute barrier means nothing while any
    // lease is open, on a withdrawn host or anywhere else.
    long long open = 0;
    s << std::string("SELECT COUNT(*) FROM leases WHERE ") + kOpen, soci::into(open);
    if (open > 0) return false;
    // Then every host that may still be asked. A withdrawn host is not: it
    // said it will not poll again, and with no lease open anywhere it holds
    // nothing the ledger knows of. One that still held a lease kept the
    // answer false above, because withdrawal changes placement, not what runs.
    long long unproved = 0;
    const long long grace = options_.barrier_grace_ns;
    s << "SELECT COUNT(*) FROM nodes n LEFT JOIN compute_barrier_nodes r ON r.node = n.name "
         "AND r.barrier_id = :b AND r.node_epoch = n.epoch AND r.dispatch_generation = n.dispatch_generation "
         "AND r.observed_at >= r.empty_since + :g WHERE n.withdrawn = 0 AND r.node IS NULL",
        soci::into(unproved), soci::use(barrier.front().id), soci::use(grace);
    return unproved == 0;
  });
}

}  // namespace nodeplane::ledger
