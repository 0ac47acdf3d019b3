// Lease operations: escrow, the lifecycle, reaping, and lease queries.
#include <algorithm>

#include "sql_ledger_internal.h"

namespace nodeplane::ledger {
namespace {

// The ids `sql` selects, binding `args` in order.
template <typename... A>
std::vector<std::string> SelectIds(Session& s, const std::string& sql, const A&... args) {
  std::string id;
  Query st(s, sql, soci::into(id), soci::use(args)...);
  st->execute();
  std::vector<std::string> out;
  while (st->fetch()) out.push_back(id);
  return out;
}

void CheckAdmissionOpen(Session& s) {
  std::string mode;
  s << "SELECT mode FROM admission WHERE id = 1", soci::into(mode);
  if (!s.got_data() || mode != "open") {
    Fail(NP_ADMISSION_SEALED, "the deployment is sealed and takes no new work");
  }
}

const TierSpec& TierNamed(const Catalog& cat, const std::string& label) {
  auto it = cat.tiers.find(label);
  if (it == cat.tiers.end()) Fail(NP_UNKNOWN_TIER, "tier \"" + label + "\" is not in the catalogue");
  return it->second;
}

// A job record's columns, in JobRow's order. The forge's verdict comes from
// the job journal: the completion of the job this lease's runner ran (a
// runner completion names the lease).
constexpr const char* kJobColumns =
    "SELECT lease_id, tier, node, conclusion, run_id, request_id, queued_at, assigned_at, started_at, "
    "finished_at, failure_reason, image_cache, cache_generation, actions_cache, "
    "COALESCE((SELECT f.result FROM forge_jobs f WHERE f.lease_id = job_history.lease_id AND f.completed_at <> 0 "
    "ORDER BY f.completed_at DESC LIMIT 1), '') FROM job_history ";

// Every job record `where` selects (its parameters bound from `uses`), in one statement.
template <typename... U>
std::vector<JobRow> SelectJobsWhere(Session& s, const std::string& where, U&&... uses) {
  JobRow j;
  Query st(s, std::string(kJobColumns) + where, soci::into(j.lease_id), soci::into(j.tier), soci::into(j.node),
           soci::into(j.conclusion), soci::into(j.run_id), soci::into(j.request_id), soci::into(j.queued_at),
           soci::into(j.assigned_at), soci::into(j.started_at), soci::into(j.finished_at),
           soci::into(j.failure_reason), soci::into(j.image_cache), soci::into(j.cache_generation),
           soci::into(j.actions_cache), soci::into(j.forge_result), std::forward<U>(uses)...);
  st->execute();
  std::vector<JobRow> out;
  while (st->fetch()) out.push_back(j);
  return out;
}

// The job record of lease `id`, if it has one.
std::vector<JobRow> SelectJobs(Session& s, const std::string& id) {
  return SelectJobsWhere(s, "WHERE lease_id = :id", soci::use(id));
}

}  // namespace

FleetCounters ReadFleetCounters(Session& s) {
  FleetCounters c;
  if (!FetchOne(s, "SELECT generation, charges FROM fleet WHERE id = 1", soci::into(c.generation),
                soci::into(c.charges))) {
    Fail(NP_INTERNAL, "the ledger's fleet counters row is missing");
  }
  return c;
}

const Fleet& SqlLedger::PlaceableFleet(Session& s, const std::shared_ptr<const Catalog>& cat, int64_t generation) {
  if (generation == fleet_.generation && cat == fleet_.catalog) return fleet_.hosts;
  fleet_ = {};  // a read that fails half way leaves no copy behind
  std::vector<HostRoom> hosts;
  constexpr size_t kBatch = 1024;
  std::vector<std::string> name(kBatch), provider(kBatch), site(kBatch);
  std::vector<long long> vcpu(kBatch), memory(kBatch);
  Query st(s,
           "SELECT name, provider, site, total_vcpu, total_memory FROM nodes "
           "WHERE live = 1 AND drained = 0 AND withdrawn = 0 ORDER BY name",
           soci::into(name), soci::into(provider), soci::into(site), soci::into(vcpu), soci::into(memory));
  st->execute();
  while (st->fetch()) {
    for (size_t i = 0; i < name.size(); ++i) {
      HostRoom h{std::move(name[i]), std::move(provider[i]), std::move(site[i]), {}, vcpu[i], memory[i],
                 kDefaultMacOSVMLimit};
      if (auto p = cat->nodes.find(h.name); p != cat->nodes.end()) {
        h.guest_os_allowed = p->second.guest_os;
        h.macos_slots = p->second.macos_vm_limit;
        if (p->second.max_vcpu > 0) h.vcpu = std::min<int64_t>(h.vcpu, p->second.max_vcpu);
        if (p->second.max_memory > 0) h.memory = std::min<int64_t>(h.memory, p->second.max_memory);
      }
      hosts.push_back(std::move(h));
    }
    for (auto* v : {&name, &provider, &site}) v->resize(kBatch);
    vcpu.resize(kBatch);
    memory.resize(kBatch);
  }
  // The store's ORDER BY may follow a locale (PostgreSQL); the Placer's
  // tie-break needs byte order.
  auto by_name = [](const HostRoom& a, const HostRoom& b) { return a.name < b.name; };
  if (!std::is_sorted(hosts.begin(), hosts.end(), by_name)) std::sort(hosts.begin(), hosts.end(), by_name);
  fleet_ = {generation, cat, Fleet(std::move(hosts))};
  return fleet_.hosts;
}

const ChargeTally& SqlLedger::HeldCharges(Session& s, int64_t charges) {
  if (charges_.CurrentAt(charges)) return charges_;
  // A read that fails half way throws out of the write, which drops the
  // tally (Write, T3).
  charges_.Restart(charges);
  std::string tier, host;
  long long vcpu = 0, memory = 0, macos_slots = 0, leases = 0;
  Query st(s,
           std::string("SELECT tier, ") + kChargedNode +
               ", SUM(vcpu), SUM(memory), SUM(macos_slot), COUNT(*) FROM leases WHERE " + kOpen + " GROUP BY tier, " +
               kChargedNode,
           soci::into(tier), soci::into(host), soci::into(vcpu), soci::into(memory), soci::into(macos_slots),
           soci::into(leases));
  st->execute();
  while (st->fetch()) charges_.Add({tier, host, vcpu, memory, macos_slots}, leases);
  return charges_;
}

std::vector<LeaseRow> SqlLedger::Escrow(const std::string& tier_label, int32_t want) {
  if (want < 0) Fail(NP_INVALID, "escrow wants " + std::to_string(want) + " leases; the count cannot be negative");
  const auto catalog = CatalogSnapshot();
  const TierSpec& tier = TierNamed(*catalog, tier_label);
  return Write([&](Session& s) { return EscrowIn(s, catalog, tier, want); });
}

std::vector<LeaseRow> SqlLedger::EscrowForLaunch(const std::string& tier_label, int64_t run_id, int64_t request_id,
                                                 int64_t* generation) {
  const auto catalog = CatalogSnapshot();
  const TierSpec& tier = TierNamed(*catalog, tier_label);
  int64_t fence = 0;
  std::vector<LeaseRow> made = Write([&](Session& s) {
    std::vector<LeaseRow> one = EscrowIn(s, catalog, tier, 1);
    if (one.empty()) return one;
    LeaseRow& lease = one.front();
    AssignIn(s, lease.id, lease.epoch, run_id, request_id, catalog->lease_ttl_ns);
    fence = BumpDispatchIn(s, lease.target_node);
    lease = LoadFenced(s, lease.id, lease.epoch);  // as assigned
    return one;
  });
  if (!made.empty()) *generation = fence;  // only once committed
  return made;
}

std::vector<LeaseRow> SqlLedger::EscrowIn(Session& s, const std::shared_ptr<const Catalog>& catalog,
                                          const TierSpec& tier, int32_t want) {
  const Catalog& cat = *catalog;
  CheckAdmissionOpen(s);
  std::vector<LeaseRow> made;
  if (want == 0) return made;
  const int64_t now = Now();

  // The fleet that may take new work, less what open leases hold on it;
  // each from its copy while the ledger's counters say the rows are as read
  // (L6, L10).
  const FleetCounters counters = ReadFleetCounters(s);
  const ChargeTally& held = HeldCharges(s, counters.charges);
  Placer placer(PlaceableFleet(s, catalog, counters.generation),
                cat.max_vcpu > 0 ? std::max<int64_t>(0, cat.max_vcpu - held.vcpu()) : -1,
                cat.max_memory > 0 ? std::max<int64_t>(0, cat.max_memory - held.memory()) : -1, cat.spread);
  for (const auto& [host, h] : held.hosts()) placer.Charge(host, h.vcpu, h.memory, h.macos_slots);
  // A floor counts the open leases that still stand for real capacity:
  // unplaced, or on a live host.
  auto standing = [&](const std::string& label) {
    long long n = 0;
    if (const auto* by_host = held.OpenByHost(label)) {
      for (const auto& [host, leases] : *by_host) {
        if (host.empty() || placer.Contains(host)) n += leases;
      }
    }
    return n;
  };
  for (const auto& [label, other] : cat.tiers) {  // label order (P4)
    if (label == tier.label || other.reserved == 0) continue;
    long long missing = static_cast<long long>(other.reserved) - standing(label);
    if (missing > 0) placer.Hold(other, static_cast<uint32_t>(missing));
  }
  long long cap = want;
  if (tier.max_concurrent > 0) cap = std::min<long long>(cap, tier.max_concurrent - held.Open(tier.label));
  const std::string providers = EncodeProviders(tier.providers);
  for (long long i = 0; i < cap; ++i) {
    const HostRoom* host = placer.Next(tier);
    if (host == nullptr) break;
    LeaseRow r;
    r.id = NewHexId();
    r.tier = tier.label;
    r.target_node = host->name;
    r.phase = "capacity";
    r.vcpu = r.requested_vcpu = tier.vcpu;
    r.memory = r.requested_memory = tier.memory;
    r.created_at = r.heartbeat_at = now;
    r.expires_at = now + cat.lease_ttl_ns;
    r.guest_os = tier.guest_os;
    r.providers = providers;
    r.site = host->site;
    r.macos_slot = tier.guest_os == "macos" ? 1 : 0;
    Exec(s,
         "INSERT INTO leases (id, tier, node, target_node, phase, epoch, vcpu, memory, requested_vcpu, "
         "requested_memory, created_at, heartbeat_at, expires_at, guest_os, providers, site, macos_slot) "
         "VALUES (:id, :tier, '', :target, 'capacity', 0, :v, :m, :rv, :rm, :c, :h, :e, :os, :p, :site, :mac)",
         r.id, r.tier, r.target_node, r.vcpu, r.memory, r.requested_vcpu, r.requested_memory, r.created_at,
         r.heartbeat_at, r.expires_at, r.guest_os, r.providers, r.site, r.macos_slot);
    charges_.Add(ChargeOf(r));
    made.push_back(r);
  }
  // T2: the insert trigger counted each lease once.
  if (!made.empty()) charges_.Stamp(counters.charges + static_cast<int64_t>(made.size()));
  return made;
}

void SqlLedger::Assign(const std::string& id, int64_t epoch, int64_t run_id, int64_t request_id) {
  const int64_t ttl = CatalogSnapshot()->lease_ttl_ns;
  Write([&](Session& s) { AssignIn(s, id, epoch, run_id, request_id, ttl); });
}

void SqlLedger::AssignIn(Session& s, const std::string& id, int64_t epoch, int64_t run_id, int64_t request_id,
                         int64_t ttl) {
  LeaseRow l = LoadFenced(s, id, epoch);
  if (l.phase == "assigned") {
    if (l.run_id == run_id && l.request_id == request_id) return;
    Fail(NP_CONFLICT, "lease " + id + " is already assigned to run " + std::to_string(l.run_id) + " request " +
                          std::to_string(l.request_id));
  }
  if (!CanTransition(*PhaseFromName(l.phase), NP_PHASE_ASSIGNED)) {
    Fail(NP_BAD_TRANSITION, "lease " + id + " cannot be assigned from " + l.phase);
  }
  const long long now = Now(), expires = now + ttl, run = run_id, req = request_id;
  if (req != 0) {
    // One request is served by one open lease at a time.
    std::string other;
    s << std::string("SELECT id FROM leases WHERE request_id = :r AND id <> :id AND ") + kOpen + " LIMIT 1",
        soci::into(other), soci::use(req), soci::use(id);
    if (s.got_data()) Fail(NP_CONFLICT, "request " + std::to_string(req) + " is already served by lease " + other);
  }
  Exec(s,
       "UPDATE leases SET phase = 'assigned', run_id = :run, request_id = :req, heartbeat_at = :now, "
       "expires_at = :exp WHERE id = :id AND epoch = :epoch",
       run, req, now, expires, id, static_cast<long long>(epoch));
  std::string node = l.node.empty() ? l.target_node : l.node;
  Exec(s,
       "INSERT INTO job_history (lease_id, tier, node, run_id, request_id, queued_at, assigned_at) "
       "VALUES (:id, :tier, :node, :run, :req, :q, :a) ON CONFLICT (lease_id) DO UPDATE SET "
       "run_id = excluded.run_id, request_id = excluded.request_id, assigned_at = excluded.assigned_at",
       id, l.tier, node, run, req, now, now);
}

void SqlLedger::Bind(const std::string& id, int64_t epoch, const std::string& node, const std::string& incarnation) {
  if (node.empty()) Fail(NP_INVALID, "bind needs a node name");
  const auto catalog = CatalogSnapshot();
  const Catalog& cat = *catalog;
  Write([&](Session& s) {
    LeaseRow l = LoadFenced(s, id, epoch);
    if (!l.target_node.empty() && l.target_node != node) {
      Fail(NP_WRONG_NODE, "lease " + id + " was placed on " + l.target_node + ", not " + node);
    }
    if (l.node == node) return;  // an idempotent repeat, answered before any policy check
    if (!l.node.empty()) Fail(NP_WRONG_NODE, "lease " + id + " is already bound to " + l.node);
    if (RequiresPlacement(*PhaseFromName(l.phase))) {
      Fail(NP_WRONG_NODE, "lease " + id + " is already " + l.phase + " without a node; it cannot be adopted");
    }
    CheckPlacement(s, cat, l, node);
    std::string provider, holder = incarnation;
    s << "SELECT provider, incarnation FROM nodes WHERE name = :n", soci::into(provider), soci::into(holder),
        soci::use(node);
    if (!incarnation.empty()) holder = incarnation;
    Exec(s,
         "UPDATE leases SET node = :node, chosen_provider = :p, holder_incarnation = :h WHERE id = :id AND epoch = :e",
         node, provider, holder, id, static_cast<long long>(epoch));
    Exec(s, "UPDATE job_history SET node = :node WHERE lease_id = :id", node, id);
  });
}

void SqlLedger::Advance(const std::string& id, int64_t epoch, int32_t to, const std::string& incarnation) {
  if (PhaseName(to)[0] == '\0') Fail(NP_INVALID, "unknown phase " + std::to_string(to));
  if (to == NP_PHASE_QUARANTINE) Fail(NP_BAD_TRANSITION, "only the reaper moves a lease to quarantine");
  const auto catalog = CatalogSnapshot();
  const Catalog& cat = *catalog;
  Write([&](Session& s) {
    LeaseRow l = LoadFenced(s, id, epoch);
    const int32_t from = *PhaseFromName(l.phase);
    const long long now = Now(), e = epoch;
    if (from != to && !CanTransition(from, to)) {
      Fail(NP_BAD_TRANSITION, "lease " + id + " cannot move from " + l.phase + " to " + PhaseName(to));
    }
    if (RequiresPlacement(to)) {
      if (l.node.empty()) Fail(NP_NOT_PLACED, "lease " + id + " has no node; bind it before " + PhaseName(to));
      CheckPlacement(s, cat, l, l.node);
    }
    const bool held = to == NP_PHASE_CUSTODY || to == NP_PHASE_TEARDOWN;
    if (held && !incarnation.empty()) {
      Exec(s, "UPDATE leases SET holder_incarnation = :h WHERE id = :id AND epoch = :e", incarnation, id, e);
    }
    if (to == NP_PHASE_BUSY) {
      Exec(s, "UPDATE job_history SET started_at = :now WHERE lease_id = :id AND started_at = 0", now, id);
    }
    if (from == to) return;  // no TTL refresh on a repeat
    if (IsTerminal(to)) {
      Exec(s, "UPDATE leases SET phase = :p WHERE id = :id AND epoch = :e", std::string(PhaseName(to)), id, e);
      Archive(s, l, to, now);
      return;
    }
    const long long expires = now + cat.lease_ttl_ns;
    Exec(s,
         "UPDATE leases SET phase = :p, heartbeat_at = :now, expires_at = :exp, "
         "held_at = CASE WHEN :held = 1 AND held_at = 0 THEN :now2 ELSE held_at END WHERE id = :id AND epoch = :e",
         std::string(PhaseName(to)), now, expires, static_cast<long long>(held ? 1 : 0), now, id, e);
  });
}

void SqlLedger::Heartbeat(const std::string& id, int64_t epoch) {
  const int64_t ttl = CatalogSnapshot()->lease_ttl_ns;
  const bool deregistered = Write([&](Session& s) {
    LeaseRow l = LoadFenced(s, id, epoch);
    if (l.force_release != 0) {
      Fail(NP_FORCE_RELEASE, "an operator asked the holder of lease " + id + " to give it up; release it");
    }
    const long long now = Now(), expires = now + ttl;
    Exec(s, "UPDATE leases SET heartbeat_at = :now, expires_at = :exp WHERE id = :id AND epoch = :e", now, expires,
         id, static_cast<long long>(epoch));
    return l.deregistered != 0;
  });
  // Said after the extension is committed: the holder keeps the lease until
  // it has stopped the runner and released it.
  if (deregistered) {
    Fail(NP_DEREGISTERED, "lease " + id + "'s runner is no longer registered at the forge; stop it and release the lease");
  }
}

void SqlLedger::MarkFailure(const std::string& id, int64_t epoch, const std::string& raw_reason) {
  std::string reason = raw_reason;
  reason.erase(0, reason.find_first_not_of(" \t\n\r"));
  reason.erase(reason.find_last_not_of(" \t\n\r") + 1);
  if (reason.empty()) Fail(NP_INVALID, "a failure needs a reason");
  if (IsReservedReason(reason)) Fail(NP_INVALID, "reasons starting with \"nodeplane:\" are the ledger's own");
  Write([&](Session& s) {
    LeaseRow l = LoadFenced(s, id, epoch);
    if (l.failure_reason == reason) return;
    if (!l.failure_reason.empty()) {
      Fail(NP_CONFLICT, "lease " + id + " already failed for another reason: " + l.failure_reason);
    }
    Exec(s, "UPDATE leases SET failure_reason = :r WHERE id = :id AND epoch = :e", reason, id,
         static_cast<long long>(epoch));
  });
}

void SqlLedger::Resize(const std::string& id, int64_t epoch, const std::string&, int64_t, int64_t) {
  Write([&](Session& s) {
    LeaseRow l = LoadFenced(s, id, epoch);
    if (l.phase != "launching") Fail(NP_BAD_TRANSITION, "lease " + id + " can change shape only while launching");
    std::string provider = l.chosen_provider;
    if (l.node.empty() || RunsOnHost(provider)) {
      Fail(NP_WRONG_PROVIDER, "lease " + id + " is not on a remote provider; its shape is the tier's");
    }
    Fail(NP_NOT_PLACEABLE, "node " + l.node + " registered no shape catalogue; no shape can be authorised");
  });
}

void SqlLedger::Release(const std::string& id, int64_t epoch, int32_t outcome) {
  if (!IsTerminal(outcome)) Fail(NP_BAD_TRANSITION, "a lease is released as done or failed");
  Write([&](Session& s) {
    std::vector<LeaseRow> rows = SelectLeases(s, "WHERE id = :id", id);
    if (rows.empty()) Fail(NP_NOT_FOUND, "lease " + id + " does not exist");
    LeaseRow& l = rows.front();
    if (l.epoch != epoch) {
      Fail(NP_FENCED, "lease " + id + " is at epoch " + std::to_string(l.epoch) + ", not " + std::to_string(epoch));
    }
    const int32_t phase = *PhaseFromName(l.phase);
    if (IsTerminal(phase)) {
      if (phase == outcome) return;
      Fail(NP_CONFLICT, "lease " + id + " already ended " + l.phase);
    }
    const long long ended = Exec(s, "UPDATE leases SET phase = :p WHERE id = :id AND epoch = :e",
                                 std::string(PhaseName(outcome)), id, static_cast<long long>(epoch));
    // T2: the trigger counted the one lease ended, so the tally was current
    // before this write if the counter now stands one past it.
    if (const int64_t charges = ReadFleetCounters(s).charges; ended == 1 && charges_.CurrentAt(charges - 1)) {
      charges_.Remove(ChargeOf(l));
      charges_.Stamp(charges);
    }
    Archive(s, l, outcome, Now());
  });
}

LeaseRow SqlLedger::GetLease(const std::string& id) {
  return Read([&](Session& s) {
    std::vector<LeaseRow> rows = SelectLeases(s, std::string("WHERE id = :id AND ") + kOpen, id);
    if (rows.empty()) Fail(NP_NOT_FOUND, "lease " + id + " does not exist or has ended");
    return rows.front();
  });
}

void SqlLedger::RecordCacheObservation(const std::string& id, int64_t epoch, const CacheObservation& o) {
  if (o.image_cache.empty() && o.actions_cache.empty()) Fail(NP_INVALID, "a cache observation observes something");
  if (!o.image_cache.empty() && !ValidImageCache(o.image_cache)) {
    Fail(NP_INVALID, "image_cache \"" + o.image_cache + "\" is not one of warm, cold, pulled");
  }
  if (!o.actions_cache.empty() && !ValidActionsCache(o.actions_cache)) {
    Fail(NP_INVALID, "actions_cache \"" + o.actions_cache + "\" is not one of intercepted, bypassed, disabled");
  }
  if ((o.image_cache == "warm") != !o.cache_generation.empty()) {
    Fail(NP_INVALID, "a cache generation goes with a warm image cache, and a warm one needs its generation");
  }
  Write([&](Session& s) {
    LoadFenced(s, id, epoch);
    for (const char* table : {"leases", "job_history"}) {
      const std::string key = std::string(table) == "leases" ? "id" : "lease_id";
      Exec(s,
           std::string("UPDATE ") + table +
               " SET image_cache = CASE WHEN image_cache = '' THEN :i ELSE image_cache END, "
               "cache_generation = CASE WHEN image_cache = '' THEN :g ELSE cache_generation END, "
               "actions_cache = CASE WHEN actions_cache = '' THEN :a ELSE actions_cache END WHERE " + key + " = :id",
           o.image_cache, o.cache_generation, o.actions_cache, id);
    }
  });
}

void SqlLedger::MarkDeregistered(const std::string& id) {
  Write([&](Session& s) {
    Exec(s, std::string("UPDATE leases SET deregistered = 1 WHERE id = :id AND ") + kOpen, id);
  });
}

std::vector<std::string> SqlLedger::LaunchedLeaseIds(const std::string& node) {
  return Read([&](Session& s) {
    return SelectIds(s,
                     "SELECT id FROM leases WHERE " + OpenLeaseChargedTo("n") +
                         " AND node = :bound AND phase IN ('launching', 'online', 'busy', 'custody', 'teardown') "
                         "ORDER BY id",
                     node, node);
  });
}

std::string SqlLedger::EndedLeaseNode(const std::string& id) {
  return Read([&](Session& s) {
    std::string node;
    s << "SELECT node FROM job_history WHERE lease_id = :id", soci::into(node), soci::use(id);
    if (!s.got_data()) Fail(NP_NOT_FOUND, "lease " + id + " has no job history");
    return node;
  });
}

std::vector<std::string> SqlLedger::QuarantinedLeaseIds(const std::string& node) {
  return Read([&](Session& s) {
    return SelectIds(s,
                     "SELECT id FROM leases WHERE " + OpenLeaseChargedTo("n") + " AND phase = 'quarantine' ORDER BY id",
                     node);
  });
}

int64_t SqlLedger::Reap() {
  return Write([&](Session& s) {
    const long long now = Now();
    std::vector<LeaseRow> expired =
        SelectLeases(s, "WHERE " + ExpiredOpenLease("now") + " ORDER BY expires_at LIMIT 256", now);
    for (LeaseRow& l : expired) {
      const int32_t to = HadCompute(*PhaseFromName(l.phase)) ? NP_PHASE_QUARANTINE : NP_PHASE_FAILED;
      Exec(s,
           "UPDATE leases SET phase = :p, epoch = epoch + 1, "
           "held_at = CASE WHEN :q = 1 AND held_at = 0 THEN :now ELSE held_at END WHERE id = :id AND epoch = :e",
           std::string(PhaseName(to)), static_cast<long long>(to == NP_PHASE_QUARANTINE ? 1 : 0), now, l.id, l.epoch);
      if (to == NP_PHASE_FAILED) Archive(s, l, to, now);
    }
    return static_cast<int64_t>(expired.size());
  });
}

void SqlLedger::ForceRelease(const std::string& id) {
  Write([&](Session& s) {
    std::vector<LeaseRow> rows = SelectLeases(s, "WHERE id = :id", id);
    if (rows.empty()) Fail(NP_NOT_FOUND, "lease " + id + " does not exist");
    LeaseRow& l = rows.front();
    if (l.phase == "quarantine") {
      if (l.failure_reason.empty()) l.failure_reason = kReasonForceReleased;
      Exec(s, "UPDATE leases SET phase = 'failed', epoch = epoch + 1, failure_reason = :r WHERE id = :id",
           l.failure_reason, id);
      Archive(s, l, NP_PHASE_FAILED, Now());
    } else if (l.phase == "custody" || l.phase == "teardown") {
      Exec(s, "UPDATE leases SET force_release = 1 WHERE id = :id", id);
    } else {
      Fail(NP_BAD_TRANSITION, "lease " + id + " is " + l.phase +
                                  "; only quarantine, custody and teardown can be force-released");
    }
  });
}

std::vector<LeaseRow> SqlLedger::ListLeases(const std::string& node) {
  return Read([&](Session& s) {
    if (node.empty()) return SelectLeases(s, std::string("WHERE ") + kOpen + " ORDER BY created_at, id");
    return SelectLeases(s, "WHERE " + OpenLeaseChargedTo("n") + " ORDER BY created_at, id", node);
  });
}

std::vector<JobRow> SqlLedger::JobForRequest(int64_t request_id) {
  if (request_id <= 0) Fail(NP_INVALID, "a request id is positive");
  return Read([&](Session& s) {
    std::string id;
    const long long req = request_id;
    s << "SELECT lease_id FROM job_history WHERE request_id = :r ORDER BY assigned_at DESC, lease_id LIMIT 1",
        soci::into(id), soci::use(req);
    if (!s.got_data()) return std::vector<JobRow>();
    return SelectJobs(s, id);
  });
}

std::vector<JobRow> SqlLedger::RecentJobs(int64_t since_ns, uint32_t limit) {
  return Read([&](Session& s) {
    const long long since = since_ns, n = std::min<uint32_t>(limit, 1000);
    return SelectJobsWhere(s, "WHERE assigned_at >= :s ORDER BY assigned_at DESC, lease_id LIMIT :n", soci::use(since),
                           soci::use(n));
  });
}

std::vector<JobRow> SqlLedger::JobForLease(const std::string& id) {
  return Read([&](Session& s) { return SelectJobs(s, id); });
}

}  // namespace nodeplane::ledger
