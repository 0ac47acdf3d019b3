// Leadership among replicas sharing one ledger (sql_ledger.h L9).
//
// The one leadership row says who leads, at which generation, and until
// when by the store's clock. A campaign is a write on the writer session,
// serialized with every other write of every replica (L1):
//   - the leader renews its term (same generation);
//   - anyone takes an ended term (or a never-held one), bumping the generation;
//   - anyone else changes nothing and learns who leads.
// A campaign is not itself fenced by CheckLeadership: a deposed leader's
// campaign is how it learns it was deposed (active = 0). It stays fenced on
// the generation it lost, so none of its writes lands until it wins again.
#include "sql_ledger_internal.h"

namespace nodeplane::ledger {

void SqlLedger::CheckLeadership(Session& s) const {
  const int64_t mine = led_generation_.load();
  if (mine == 0) return;
  long long current = 0;
  std::string holder;
  s << "SELECT generation, holder FROM leadership WHERE id = 1", soci::into(current), soci::into(holder);
  if (current != mine) {
    Fail(NP_FENCED, "this replica's leadership (generation " + std::to_string(mine) + ") has ended: replica \"" +
                        holder + "\" leads at generation " + std::to_string(current) + "; stop acting");
  }
}

LeadershipRow SqlLedger::Campaign(const std::string& replica, const std::string& address, int64_t term_ns) {
  if (replica.empty()) Fail(NP_INVALID, "campaign needs the replica's name");
  if (term_ns <= 0) Fail(NP_INVALID, "campaign needs a term longer than zero");
  LeadershipRow out;
  writes_->Run([&](Session& s) {
    const int64_t mine = led_generation_.load();
    long long generation = 0, expires_at = 0, now = 0;
    std::string holder, advertised;
    s << "SELECT generation, holder, address, expires_at, " + options_.dialect.clock_ns +
             " FROM leadership WHERE id = 1",
        soci::into(generation), soci::into(holder), soci::into(advertised), soci::into(expires_at), soci::into(now);
    if (!s.got_data()) Fail(NP_INTERNAL, "the leadership row is missing (schema migration 7)");
    const long long until = now + term_ns;
    if (mine != 0 && generation == mine && holder == led_by_ && led_by_ == replica) {
      Exec(s, "UPDATE leadership SET expires_at = :e, address = :a WHERE id = 1", until, address);
      out = {true, generation, term_ns, holder, address};
      return;
    }
    if (expires_at <= now) {
      const long long next = generation + 1;
      Exec(s,
           "UPDATE leadership SET generation = :g, holder = :h, address = :a, expires_at = :e, acquired_at = :n "
           "WHERE id = 1",
           next, replica, address, until, now);
      out = {true, next, term_ns, replica, address};
      return;
    }
    out = {false, generation, expires_at - now, holder, advertised};
  });
  // Only what committed counts: a failed campaign leaves the instance as it was.
  if (out.active) {
    std::lock_guard lock(write_mu_);
    led_by_ = replica;
    led_generation_.store(out.generation);
  }
  return out;
}

void SqlLedger::Resign() {
  const int64_t mine = led_generation_.load();
  if (mine == 0) return;
  // Still fenced on its generation afterwards: it writes only until someone
  // else takes over, which may now be at once.
  writes_->Run([&](Session& s) {
    long long generation = mine, zero = 0;
    Exec(s, "UPDATE leadership SET expires_at = :z WHERE id = 1 AND generation = :g", zero, generation);
  });
}

}  // namespace nodeplane::ledger
