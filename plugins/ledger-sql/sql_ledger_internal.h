// Shared by the sql_ledger_*.cpp files: transactions, and reading rows.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "lease_rules.h"
#include "ledger_error.h"
#include "query.h"
#include "session.h"
#include "sql_ledger.h"

namespace nodeplane::ledger {

// The lease columns, in LeaseRow's order.
inline constexpr const char* kLeaseColumns =
    "id, tier, node, target_node, phase, epoch, vcpu, memory, requested_vcpu, requested_memory, instance_type, "
    "run_id, request_id, created_at, heartbeat_at, expires_at, held_at, guest_os, providers, chosen_provider, "
    "site, failure_reason, holder_incarnation, force_release, deregistered, macos_slot, image_cache, "
    "cache_generation, actions_cache";

inline void IntoLease(soci::statement& st, LeaseRow& r) {
  Exchange(st, soci::into(r.id), soci::into(r.tier), soci::into(r.node), soci::into(r.target_node),
           soci::into(r.phase), soci::into(r.epoch), soci::into(r.vcpu), soci::into(r.memory),
           soci::into(r.requested_vcpu), soci::into(r.requested_memory), soci::into(r.instance_type),
           soci::into(r.run_id), soci::into(r.request_id), soci::into(r.created_at), soci::into(r.heartbeat_at),
           soci::into(r.expires_at), soci::into(r.held_at), soci::into(r.guest_os), soci::into(r.providers),
           soci::into(r.chosen_provider), soci::into(r.site), soci::into(r.failure_reason),
           soci::into(r.holder_incarnation), soci::into(r.force_release), soci::into(r.deregistered),
           soci::into(r.macos_slot), soci::into(r.image_cache), soci::into(r.cache_generation),
           soci::into(r.actions_cache));
}

// SELECT <lease columns> FROM leases <tail>, binding `uses` in order.
template <typename... U>
std::vector<LeaseRow> SelectLeases(Session& s, const std::string& tail, const U&... uses) {
  LeaseRow r;
  Query st(Query::kUnbound, s, std::string("SELECT ") + kLeaseColumns + " FROM leases " + tail);
  IntoLease(*st, r);
  Exchange(*st, soci::use(uses)...);
  st.Bind();
  st->execute();
  std::vector<LeaseRow> out;
  while (st->fetch()) out.push_back(r);
  return out;
}

// Runs a query for at most one row, into its soci::into elements; whether
// there was a row. A kept statement on SQLite (query.h, Q2): registrations
// and revocation checks run these on every arrival.
template <typename... E>
bool FetchOne(Session& s, const std::string& sql, E&&... exchanges) {
  Query st(s, sql, std::forward<E>(exchanges)...);
  st->execute(true);
  return st->got_data();
}

// Runs a statement and returns how many rows it changed.
template <typename... U>
long long Exec(Session& s, const std::string& sql, const U&... uses) {
  Query st(s, sql, soci::use(uses)...);
  st->execute(true);
  return st->get_affected_rows();
}

// Runs `body(s)` between `begin` and COMMIT; rolls back and rethrows when
// it throws. The session is re-established first if its connection was lost
// (session.h, Begin). Writes have their own transactions (group_commit.h).
template <typename F>
auto InTransaction(Session& s, const Dialect& d, const std::vector<std::string>& setup, const std::string& begin,
                   F&& body) {
  Begin(s, d, setup, begin);
  try {
    if constexpr (std::is_void_v<decltype(body(s))>) {
      body(s);
      s << "COMMIT";
    } else {
      auto result = body(s);
      s << "COMMIT";
      return result;
    }
  } catch (...) {
    try {
      s << "ROLLBACK";
    } catch (...) {
    }
    throw;
  }
}

// A write transaction on the one writer session (L1), shared with the
// writes that queued beside it (L8, group_commit.h). A write that throws is
// rolled back, and the charge tally it may have changed is dropped (T3).
template <typename F>
auto SqlLedger::Write(F&& body) {
  auto guarded = [&](Session& s) {
    try {
      if (s.connection() != copies_connection_) {  // L11
        fleet_ = {};
        charges_.Drop();
        copies_connection_ = s.connection();
      }
      CheckLeadership(s);
      return body(s);
    } catch (...) {
      charges_.Drop();
      throw;
    }
  };
  using R = std::invoke_result_t<F&, Session&>;
  if constexpr (std::is_void_v<R>) {
    writes_->Run(guarded);
  } else {
    std::optional<R> result;
    writes_->Run([&](Session& s) { result.emplace(guarded(s)); });
    return std::move(*result);
  }
}

class SqlLedger::ReadLease {
 public:
  explicit ReadLease(SqlLedger& l) : l_(l) {
    std::unique_lock lock(l_.readers_mu_);
    l_.readers_cv_.wait(lock, [&] { return !l_.idle_readers_.empty(); });
    s_ = std::move(l_.idle_readers_.back());
    l_.idle_readers_.pop_back();
  }
  ~ReadLease() {
    std::lock_guard lock(l_.readers_mu_);
    l_.idle_readers_.push_back(std::move(s_));
    l_.readers_cv_.notify_one();
  }
  Session& session() { return *s_; }

 private:
  SqlLedger& l_;
  std::unique_ptr<Session> s_;
};

// One read-only snapshot on a reader session (L2).
template <typename F>
auto SqlLedger::Read(F&& body) {
  ReadLease lease(*this);
  return InTransaction(lease.session(), options_.dialect, options_.dialect.reader_setup, options_.dialect.begin_read,
                       std::forward<F>(body));
}

std::string NewHexId();

// The node a lease is charged to: the binder, else the escrow's choice.
inline constexpr const char* kChargedNode = "(CASE WHEN node <> '' THEN node ELSE target_node END)";
inline constexpr const char* kOpen = "phase NOT IN ('done', 'failed')";

// What `lease` holds while open, as escrow counts it (L10).
inline LeaseCharge ChargeOf(const LeaseRow& lease) {
  return {lease.tier, lease.node.empty() ? lease.target_node : lease.node, lease.vcpu, lease.memory,
          lease.macos_slot};
}

// The ledger's two counters (L6, L10), read inside a write transaction.
struct FleetCounters {
  long long generation = 0;  // of the placeable fleet
  long long charges = 0;     // of what open leases hold
};
FleetCounters ReadFleetCounters(Session& s);

// "An open lease charged to the node bound as :param", spelled as the index
// leases_open_charged_idx (schema.cpp, V8) is, so SQLite and PostgreSQL
// answer it from that index. A registration asks it twice; spelled any other
// way (the charged node without kOpen, say) it reads every open lease of the
// fleet, or every lease ever written.
inline std::string OpenLeaseChargedTo(const std::string& param) {
  return std::string(kOpen) + " AND " + kChargedNode + " = :" + param;
}

// "An open lease the reaper takes: not quarantined, expired by :param",
// spelled with kOpen as leases_expiry_idx (schema.cpp, V1) is, so both
// engines answer it from that index. Spelled as one list (phase NOT IN
// ('done', 'failed', 'quarantine')) it matched no index: every reap read
// every lease ever written, under the write lock.
inline std::string ExpiredOpenLease(const std::string& param) {
  return std::string(kOpen) + " AND phase <> 'quarantine' AND expires_at <= :" + param;
}

}  // namespace nodeplane::ledger
