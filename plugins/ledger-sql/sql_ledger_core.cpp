#include <openssl/rand.h>

#include <algorithm>

#include "schema.h"
#include "session.h"
#include "sql_ledger_internal.h"

namespace nodeplane::ledger {
namespace {

// Commits between checkpoints: each writes a page or a few, so the log
// stays well under a megabyte and each checkpoint copies little.
constexpr uint64_t kCheckpointEvery = 100;

}  // namespace

std::string NewHexId() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) Fail(NP_INTERNAL, "the system random source failed");
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

SqlLedger::SqlLedger(const np_host_v1* host, Options options)
    : host_(host), options_(std::move(options)), catalog_(std::make_shared<const Catalog>()) {
  const Dialect& d = options_.dialect;
  writer_ = OpenSession(d, options_.connection, d.writer_setup);
  {
    std::lock_guard lock(write_mu_);
    Migrate(*writer_, d, Now());
  }
  for (unsigned i = 0; i < std::max(1u, options_.readers); ++i) {
    idle_readers_.push_back(OpenSession(d, options_.connection, d.reader_setup));
  }
  if (!d.checkpoint.empty()) checkpointer_ = std::make_unique<Checkpointer>(d, options_.connection, kCheckpointEvery);
  writes_ = std::make_unique<GroupCommit>(
      options_.dialect, *writer_, write_mu_,
      [this] {
        if (checkpointer_) checkpointer_->Committed();
      },
      [this] {
        fleet_ = {};
        charges_.Drop();
      });
}

SqlLedger::~SqlLedger() = default;

int64_t SqlLedger::Now() const { return host_->wall_clock_ns(host_->ctx); }

void SqlLedger::SetCatalog(Catalog catalog) {
  auto next = std::make_shared<const Catalog>(std::move(catalog));
  std::unique_lock lock(catalog_mu_);
  catalog_ = std::move(next);
}

std::shared_ptr<const Catalog> SqlLedger::CatalogSnapshot() const {
  std::shared_lock lock(catalog_mu_);
  return catalog_;
}

LeaseRow SqlLedger::LoadFenced(Session& s, const std::string& id, int64_t epoch) {
  std::vector<LeaseRow> rows = SelectLeases(s, "WHERE id = :id", id);
  if (rows.empty()) Fail(NP_NOT_FOUND, "lease " + id + " does not exist");
  const LeaseRow& r = rows.front();
  if (r.epoch != epoch) {
    Fail(NP_FENCED, "lease " + id + " is at epoch " + std::to_string(r.epoch) + ", not " + std::to_string(epoch) +
                        "; its holder has changed, stop acting on it");
  }
  if (IsTerminal(*PhaseFromName(r.phase))) Fail(NP_NOT_FOUND, "lease " + id + " has ended (" + r.phase + ")");
  return r;
}

void SqlLedger::CheckPlacement(Session& s, const Catalog& cat, const LeaseRow& lease, const std::string& node) {
  if (auto it = cat.nodes.find(node); it != cat.nodes.end() && !GuestOSAllowed(it->second.guest_os, lease.guest_os)) {
    Fail(NP_GUEST_OS_NOT_ALLOWED, "node " + node + " does not allow " + lease.guest_os + " guests");
  }
  std::vector<std::string> providers = DecodeProviders(lease.providers);
  if (providers.empty()) {
    Fail(NP_NOT_PLACEABLE, "lease " + lease.id + " has no readable provider list (\"" + lease.providers + "\")");
  }
  std::string provider;
  s << "SELECT provider FROM nodes WHERE name = :n", soci::into(provider), soci::use(node);
  if (!s.got_data()) Fail(NP_WRONG_NODE, "node " + node + " is not registered");
  if (std::find(providers.begin(), providers.end(), provider) == providers.end()) {
    Fail(NP_WRONG_PROVIDER, "node " + node + " runs " + provider + ", and lease " + lease.id + " accepts " +
                                lease.providers);
  }
}

void SqlLedger::Archive(Session& s, const LeaseRow& l, int32_t outcome, int64_t now) {
  std::string node = l.node.empty() ? l.target_node : l.node;
  std::string conclusion = PhaseName(outcome);
  long long queued = l.created_at, at = now;
  Exec(s,
       "INSERT INTO job_history (lease_id, tier, node, run_id, request_id, conclusion, queued_at, finished_at, "
       "failure_reason, image_cache, cache_generation, actions_cache) "
       "VALUES (:id, :tier, :node, :run, :req, :conc, :queued, :fin, :reason, :img, :gen, :act) "
       "ON CONFLICT (lease_id) DO UPDATE SET conclusion = excluded.conclusion, finished_at = excluded.finished_at, "
       "failure_reason = excluded.failure_reason, "
       "node = CASE WHEN excluded.node <> '' THEN excluded.node ELSE job_history.node END, "
       "run_id = CASE WHEN excluded.run_id <> 0 THEN excluded.run_id ELSE job_history.run_id END, "
       "request_id = CASE WHEN excluded.request_id <> 0 THEN excluded.request_id ELSE job_history.request_id END",
       l.id, l.tier, node, l.run_id, l.request_id, conclusion, queued, at, l.failure_reason, l.image_cache,
       l.cache_generation, l.actions_cache);
}

}  // namespace nodeplane::ledger
