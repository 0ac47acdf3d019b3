#include "schema.h"

#include <cstdio>
#include <map>

#include "ledger_error.h"
#include "query.h"

namespace nodeplane::ledger {
namespace {

// Version 1. Times are BIGINT nanoseconds since the Unix epoch (UTC);
// booleans are BIGINT 0/1; "absent" strings are '' rather than NULL, so no
// column is nullable and every comparison is plain.
constexpr const char* kV1 = R"sql(
CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  provider TEXT NOT NULL,
  site TEXT NOT NULL DEFAULT '',
  incarnation TEXT NOT NULL DEFAULT '',
  epoch BIGINT NOT NULL DEFAULT 0,
  total_vcpu BIGINT NOT NULL,
  total_memory BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  live BIGINT NOT NULL DEFAULT 0 CHECK (live IN (0, 1)),
  drained BIGINT NOT NULL DEFAULT 0 CHECK (drained IN (0, 1)),
  withdrawn BIGINT NOT NULL DEFAULT 0 CHECK (withdrawn IN (0, 1)),
  dispatch_generation BIGINT NOT NULL DEFAULT 0,
  wire_version BIGINT NOT NULL DEFAULT 0,
  node_release TEXT NOT NULL DEFAULT ''
);
CREATE TABLE leases (
  id TEXT PRIMARY KEY,
  tier TEXT NOT NULL,
  node TEXT NOT NULL DEFAULT '',
  target_node TEXT NOT NULL DEFAULT '',
  phase TEXT NOT NULL CHECK (phase IN ('capacity', 'assigned', 'launching', 'online', 'busy',
                                       'custody', 'teardown', 'quarantine', 'done', 'failed')),
  epoch BIGINT NOT NULL DEFAULT 0,
  vcpu BIGINT NOT NULL CHECK (vcpu > 0),
  memory BIGINT NOT NULL CHECK (memory > 0),
  requested_vcpu BIGINT NOT NULL,
  requested_memory BIGINT NOT NULL,
  instance_type TEXT NOT NULL DEFAULT '',
  run_id BIGINT NOT NULL DEFAULT 0,
  request_id BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  held_at BIGINT NOT NULL DEFAULT 0,
  guest_os TEXT NOT NULL DEFAULT 'linux',
  providers TEXT NOT NULL DEFAULT '',
  chosen_provider TEXT NOT NULL DEFAULT '',
  site TEXT NOT NULL DEFAULT '',
  failure_reason TEXT NOT NULL DEFAULT '',
  holder_incarnation TEXT NOT NULL DEFAULT '',
  force_release BIGINT NOT NULL DEFAULT 0 CHECK (force_release IN (0, 1)),
  deregistered BIGINT NOT NULL DEFAULT 0 CHECK (deregistered IN (0, 1)),
  macos_slot BIGINT NOT NULL DEFAULT 0 CHECK (macos_slot IN (0, 1)),
  image_cache TEXT NOT NULL DEFAULT '',
  cache_generation TEXT NOT NULL DEFAULT '',
  actions_cache TEXT NOT NULL DEFAULT ''
);
CREATE INDEX leases_open_idx ON leases (phase) WHERE phase NOT IN ('done', 'failed');
CREATE INDEX leases_node_idx ON leases (node);
CREATE INDEX leases_target_idx ON leases (target_node);
CREATE INDEX leases_expiry_idx ON leases (expires_at) WHERE phase NOT IN ('done', 'failed');
CREATE TABLE job_history (
  lease_id TEXT PRIMARY KEY,
  tier TEXT NOT NULL,
  node TEXT NOT NULL DEFAULT '',
  run_id BIGINT NOT NULL DEFAULT 0,
  request_id BIGINT NOT NULL DEFAULT 0,
  conclusion TEXT NOT NULL DEFAULT '',
  queued_at BIGINT NOT NULL,
  assigned_at BIGINT NOT NULL DEFAULT 0,
  started_at BIGINT NOT NULL DEFAULT 0,
  finished_at BIGINT NOT NULL DEFAULT 0,
  failure_reason TEXT NOT NULL DEFAULT '',
  image_cache TEXT NOT NULL DEFAULT '',
  cache_generation TEXT NOT NULL DEFAULT '',
  actions_cache TEXT NOT NULL DEFAULT ''
);
CREATE TABLE admission (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  mode TEXT NOT NULL,
  generation BIGINT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  actor TEXT NOT NULL DEFAULT '',
  changed_at BIGINT NOT NULL DEFAULT 0
);
INSERT INTO admission (id, mode, generation) VALUES (1, 'open', 0);
CREATE TABLE compute_barrier (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  barrier_id TEXT NOT NULL,
  admission_generation BIGINT NOT NULL,
  requested_at BIGINT NOT NULL,
  requested_by TEXT NOT NULL DEFAULT ''
);
CREATE TABLE compute_barrier_nodes (
  node TEXT PRIMARY KEY,
  barrier_id TEXT NOT NULL,
  node_epoch BIGINT NOT NULL,
  dispatch_generation BIGINT NOT NULL,
  empty_since BIGINT NOT NULL,
  observed_at BIGINT NOT NULL
);
CREATE TABLE join_tokens (
  token_sha256 TEXT PRIMARY KEY,
  note TEXT NOT NULL DEFAULT '',
  uses_remaining BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE TABLE node_enrollments (
  name TEXT PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  csr_pem TEXT NOT NULL,
  cert_pem TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied')),
  requested_at BIGINT NOT NULL,
  decided_at BIGINT NOT NULL DEFAULT 0,
  source TEXT NOT NULL DEFAULT 'enrolled'
);
CREATE TABLE issued_certs (
  serial TEXT PRIMARY KEY,
  node TEXT NOT NULL,
  source TEXT NOT NULL,
  not_after BIGINT NOT NULL,
  issued_at BIGINT NOT NULL
);
CREATE INDEX issued_certs_node_idx ON issued_certs (node);
CREATE TABLE revoked_certs (
  serial TEXT PRIMARY KEY,
  node TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  revoked_at BIGINT NOT NULL
);
CREATE INDEX revoked_certs_node_idx ON revoked_certs (node);
CREATE TABLE node_revocations (
  node TEXT PRIMARY KEY,
  revoked_before BIGINT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  revoked_at BIGINT NOT NULL
)
)sql";

// Every escrow reads the placeable fleet in name order; with this partial
// covering index that is one ordered index scan instead of a row lookup per
// node (a third of a launch's cost at ten thousand nodes).
constexpr const char* kV2 = R"sql(
CREATE INDEX nodes_placement_idx ON nodes (name, provider, site, total_vcpu, total_memory)
  WHERE live = 1 AND drained = 0 AND withdrawn = 0
)sql";

// A counter every write that moves a node into or out of the placeable
// fleet bumps, so escrow can keep its copy of the fleet until it moves
// (sql_ledger.h L6).
constexpr const char* kV3 = R"sql(
CREATE TABLE fleet (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  generation BIGINT NOT NULL
);
INSERT INTO fleet (id, generation) VALUES (1, 0)
)sql";

// Serials have one spelling (np_ledger_v1.h, SERIALS): revocations that
// earlier builds stored as typed (upper case, colons, leading zeros) are
// rewritten in it, so they match the certificates they were meant for.
constexpr const char* kV4 = R"sql(
INSERT INTO revoked_certs (serial, node, reason, revoked_at)
  SELECT CASE WHEN ltrim(lower(replace(serial, ':', '')), '0') = '' THEN '0'
              ELSE ltrim(lower(replace(serial, ':', '')), '0') END, node, reason, revoked_at
  FROM revoked_certs
  WHERE serial <> CASE WHEN ltrim(lower(replace(serial, ':', '')), '0') = '' THEN '0'
                       ELSE ltrim(lower(replace(serial, ':', '')), '0') END
  ON CONFLICT (serial) DO NOTHING;
DELETE FROM revoked_certs
  WHERE serial <> CASE WHEN ltrim(lower(replace(serial, ':', '')), '0') = '' THEN '0'
                       ELSE ltrim(lower(replace(serial, ':', '')), '0') END
)sql";

// A launch is idempotent per request id: assign looks for another open
// lease serving it, and job_for_request for the newest job that did; the
// dashboard lists the newest jobs (recent_jobs).
constexpr const char* kV5 = R"sql(
CREATE INDEX leases_request_idx ON leases (request_id);
CREATE INDEX job_history_request_idx ON job_history (request_id, assigned_at);
CREATE INDEX job_history_assigned_idx ON job_history (assigned_at)
)sql";

// The job journal (np_ledger_v1.h, record_forge_job): a forge's jobs as the
// job intake read them, and the lease whose runner served each.
constexpr const char* kV6 = R"sql(
CREATE TABLE forge_jobs (
  tier TEXT NOT NULL,
  job_id TEXT NOT NULL,
  request_id BIGINT NOT NULL DEFAULT 0,
  repository TEXT NOT NULL DEFAULT '',
  workflow_ref TEXT NOT NULL DEFAULT '',
  display_name TEXT NOT NULL DEFAULT '',
  workflow_run_id BIGINT NOT NULL DEFAULT 0,
  queued_at BIGINT NOT NULL DEFAULT 0,
  received_at BIGINT NOT NULL DEFAULT 0,
  acquired_at BIGINT NOT NULL DEFAULT 0,
  started_at BIGINT NOT NULL DEFAULT 0,
  completed_at BIGINT NOT NULL DEFAULT 0,
  runner_name TEXT NOT NULL DEFAULT '',
  lease_id TEXT NOT NULL DEFAULT '',
  result TEXT NOT NULL DEFAULT '',
  settled_at BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (tier, job_id)
);
CREATE INDEX forge_jobs_received_idx ON forge_jobs (received_at);
CREATE INDEX forge_jobs_unsettled_idx ON forge_jobs (completed_at) WHERE completed_at <> 0 AND settled_at = 0
)sql";

// Who leads the ledger when several control planes share it (np_ledger_v1.h,
// campaign): one row, its generation fencing every write of a leader.
constexpr const char* kV7 = R"sql(
CREATE TABLE leadership (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  generation BIGINT NOT NULL,
  holder TEXT NOT NULL,
  address TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  acquired_at BIGINT NOT NULL
);
INSERT INTO leadership (id, generation, holder, address, expires_at, acquired_at) VALUES (1, 0, '', '', 0, 0)
)sql";

// A node's open leases, by the node they are charged to (kChargedNode, in
// the same spelling, which is how SQLite and PostgreSQL match an index on an
// expression). A registration reads them twice (what the node holds, what its
// inventory frees from quarantine); without this index each read visited
// every open lease of the fleet, or every lease ever written.
constexpr const char* kV8 = R"sql(
CREATE INDEX leases_open_charged_idx ON leases ((CASE WHEN node <> '' THEN node ELSE target_node END))
  WHERE phase NOT IN ('done', 'failed')
)sql";

// A counter every write that changes what open leases hold bumps, by
// trigger, so escrow can keep its tally of them until it moves (sql_ledger.h
// L10). A trigger, not the ledger's own statements, so that no write can
// forget it: any statement of any process, this build's or a later one's.
// Only what escrow reads counts: a lease opened or ended, or an open one
// charged to another node, another tier or other sizes; binding a lease to
// the node it was escrowed on, a heartbeat or a phase among the open ones
// moves nothing. On PostgreSQL the trigger's function names the counter in
// the schema of the table that fired it, so a write from a session with any
// search path finds it, and so does one after the schema was renamed or
// restored under another name.
#define NP_CHARGE_MOVED_ON_UPDATE                                                                  \
  "(OLD.phase NOT IN ('done', 'failed') OR NEW.phase NOT IN ('done', 'failed')) AND ("          \
  "(OLD.phase IN ('done', 'failed')) <> (NEW.phase IN ('done', 'failed')) OR "                  \
  "(CASE WHEN OLD.node <> '' THEN OLD.node ELSE OLD.target_node END) <> "                       \
  "(CASE WHEN NEW.node <> '' THEN NEW.node ELSE NEW.target_node END) OR "                       \
  "OLD.tier <> NEW.tier OR OLD.vcpu <> NEW.vcpu OR OLD.memory <> NEW.memory OR "                \
  "OLD.macos_slot <> NEW.macos_slot)"
constexpr const char* kV9 =
    "ALTER TABLE fleet ADD COLUMN charges BIGINT NOT NULL DEFAULT 0;\n"
    "CREATE TRIGGER leases_charge_opened AFTER INSERT ON leases WHEN NEW.phase NOT IN ('done', 'failed') "
    "BEGIN UPDATE fleet SET charges = charges + 1 WHERE id = 1; END;\n"
    "CREATE TRIGGER leases_charge_deleted AFTER DELETE ON leases WHEN OLD.phase NOT IN ('done', 'failed') "
    "BEGIN UPDATE fleet SET charges = charges + 1 WHERE id = 1; END;\n"
    "CREATE TRIGGER leases_charge_changed AFTER UPDATE ON leases WHEN " NP_CHARGE_MOVED_ON_UPDATE
    " BEGIN UPDATE fleet SET charges = charges + 1 WHERE id = 1; END";
constexpr const char* kV9PostgreSQL =
    "ALTER TABLE fleet ADD COLUMN charges BIGINT NOT NULL DEFAULT 0;\n"
    "CREATE FUNCTION leases_charge_moved() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN EXECUTE format('UPDATE %I.fleet SET charges = charges + 1 WHERE id = 1', TG_TABLE_SCHEMA); "
    "RETURN NULL; END $$;\n"
    "CREATE TRIGGER leases_charge_opened AFTER INSERT ON leases FOR EACH ROW "
    "WHEN (NEW.phase NOT IN ('done', 'failed')) EXECUTE FUNCTION leases_charge_moved();\n"
    "CREATE TRIGGER leases_charge_deleted AFTER DELETE ON leases FOR EACH ROW "
    "WHEN (OLD.phase NOT IN ('done', 'failed')) EXECUTE FUNCTION leases_charge_moved();\n"
    "CREATE TRIGGER leases_charge_changed AFTER UPDATE ON leases FOR EACH ROW "
    "WHEN (" NP_CHARGE_MOVED_ON_UPDATE ") EXECUTE FUNCTION leases_charge_moved()";
#undef NP_CHARGE_MOVED_ON_UPDATE

// Indexes no query reads any more, each written on every lease insert and
// the first also on every phase change: open leases are found through
// leases_expiry_idx and leases_open_charged_idx (the same open condition),
// leases by node through the latter, and nothing asks by escrow target.
constexpr const char* kV10 = R"sql(
DROP INDEX leases_open_idx;
DROP INDEX leases_node_idx;
DROP INDEX leases_target_idx
)sql";

// The job journal keeps the forge's whole job (np_forge_job_v1's appended
// fields): what an operator asks of a waiting job, the assignment a
// re-queue starts again (record_forge_job J2-J4), and the settler's last
// failed try, by which owed completions are read so that ones that cannot
// settle yet never hide one that can. A job record finds its forge verdict
// by lease.
constexpr const char* kV11 = R"sql(
ALTER TABLE forge_jobs ADD COLUMN event_name TEXT NOT NULL DEFAULT '';
ALTER TABLE forge_jobs ADD COLUMN request_labels TEXT NOT NULL DEFAULT '';
ALTER TABLE forge_jobs ADD COLUMN runner_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE forge_jobs ADD COLUMN assigned_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE forge_jobs ADD COLUMN runner_assigned_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE forge_jobs ADD COLUMN requeues BIGINT NOT NULL DEFAULT 0;
ALTER TABLE forge_jobs ADD COLUMN settle_tried_at BIGINT NOT NULL DEFAULT 0;
DROP INDEX forge_jobs_unsettled_idx;
CREATE INDEX forge_jobs_owed_idx ON forge_jobs (settle_tried_at, completed_at) WHERE completed_at <> 0 AND settled_at = 0;
CREATE INDEX forge_jobs_lease_idx ON forge_jobs (lease_id) WHERE lease_id <> ''
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, "initial", kV1},
      {2, "placement index", kV2},
      {3, "fleet generation", kV3},
      {4, "serials in one spelling", kV4},
      {5, "jobs by request and by age", kV5},
      {6, "the job journal", kV6},
      {7, "leadership", kV7},
      {8, "open leases by charged node", kV8},
      {9, "a counter of what open leases hold", kV9, kV9PostgreSQL},
      {10, "unread lease indexes dropped", kV10},
      {11, "the forge's whole job in the journal", kV11},
  };
  return kMigrations;
}

std::string MigrationChecksum(const char* sql) {
  uint64_t h = 1469598103934665603ULL;
  for (const char* p = sql; *p != '\0'; ++p) {
    h ^= static_cast<unsigned char>(*p);
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

// Runs `body` in a write transaction holding the ledger's write lock,
// committed, or rolled back when it throws.
template <typename Body>
void InWriteTransaction(Session& s, const Dialect& d, Body&& body) {
  s << d.begin_write;
  try {
    if (!d.write_lock.empty()) s << d.write_lock;
    body();
    s << "COMMIT";
  } catch (...) {
    try {
      s << "ROLLBACK";
    } catch (...) {
    }
    throw;
  }
}

}  // namespace

void Migrate(Session& s, const Dialect& d, int64_t now_ns) {
  // Under the write lock: two processes opening a new ledger at once (two
  // replicas) would otherwise race on IF NOT EXISTS, which PostgreSQL does
  // not make atomic.
  InWriteTransaction(s, d, [&] {
    s << "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, "
         "checksum TEXT NOT NULL, applied_at BIGINT NOT NULL)";
  });
  std::map<int64_t, std::string> applied;
  {
    long long version = 0;
    std::string checksum;
    Query st(s, "SELECT version, checksum FROM schema_migrations ORDER BY version",
             soci::into(version), soci::into(checksum));
    st->execute();
    while (st->fetch()) applied[version] = checksum;
  }
  const auto& known = Migrations();
  const int64_t newest = known.back().version;
  for (const auto& [version, checksum] : applied) {
    if (version > newest) {
      Fail(NP_SCHEMA_TOO_NEW, "the ledger is at schema version " + std::to_string(applied.rbegin()->first) +
                                  ", written by a newer nodeplane; this one knows versions up to " +
                                  std::to_string(newest) + " and will not touch it");
    }
    const Migration& m = known[static_cast<size_t>(version - 1)];
    if (MigrationChecksum(m.SqlFor(d)) != checksum) {
      Fail(NP_REFUSED, "schema migration " + std::to_string(version) + " (" + m.name +
                           ") differs from the one applied to this ledger (checksum " + checksum +
                           "); the ledger or this build is corrupt");
    }
  }
  for (const Migration& m : known) {
    if (applied.count(m.version) != 0) continue;
    InWriteTransaction(s, d, [&] {
      long long already = 0;
      long long v = m.version;
      s << "SELECT COUNT(*) FROM schema_migrations WHERE version = :v", soci::into(already), soci::use(v);
      if (already != 0) return;  // another process applied it meanwhile
      std::string text = m.SqlFor(d);
      size_t start = 0;
      while (start < text.size()) {
        size_t end = text.find(";\n", start);
        std::string stmt = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (stmt.find_first_not_of(" \n\t") != std::string::npos) s << stmt;
        if (end == std::string::npos) break;
        start = end + 2;
      }
      long long at = now_ns;
      std::string name = m.name, sum = MigrationChecksum(m.SqlFor(d));
      s << "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (:v, :n, :c, :a)",
          soci::use(v), soci::use(name), soci::use(sum), soci::use(at);
    });
  }
}

}  // namespace nodeplane::ledger
