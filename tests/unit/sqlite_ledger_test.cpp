// What the SQLite store promises beyond the ledger contract: its schema
// guards (M1, M2 in plugins/ledger-sql/schema.h), its file, its checkpoints
// beside the writer (L7 in plugins/ledger-sql/sql_ledger.h), reads by node
// and the reaper's read that an index answers, and the triggers that move
// the charge counter (L10).
#include <gtest/gtest.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_library.h"
#include "nodeplane/np_plugin.h"
#include "sql_ledger_internal.h"

namespace nodeplane::loader {
namespace {

class SqliteLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-sqlite-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    host_ = std::make_unique<HostServices>(log_, dir_);
    auto lib = PluginLibrary::Open(std::string(PLUGIN_DIR) + "/ledger-sqlite.so", "", host_->c());
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    lib_ = *lib;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A docker node of 8 vCPU and 32 GiB.
  static ports::NodeRegistration Node(const std::string& name) {
    ports::NodeRegistration node;
    node.name = name;
    node.provider = "docker";
    node.incarnation = std::string(32, 'a');
    node.total_vcpu = 8;
    node.total_memory = int64_t{32} << 30;
    node.wire_version = 1;
    return node;
  }
  Result<std::unique_ptr<LedgerAdapter>> Open() {
    return LedgerAdapter::Create(lib_, "ledger", R"({"path": "ledger.db"})", host_->c(), false);
  }
  void Sql(const std::string& statement) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/ledger.db").c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  // The one integer `query` answers on the ledger file.
  int64_t Scalar(const std::string& query) {
    sqlite3* db = nullptr;
    sqlite3_stmt* st = nullptr;
    int64_t value = -1;
    EXPECT_EQ(sqlite3_open((dir_ + "/ledger.db").c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_prepare_v2(db, query.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    if (st != nullptr && sqlite3_step(st) == SQLITE_ROW) value = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return value;
  }
  // What SQLite would do to answer `query` on the ledger file.
  std::string Plan(const std::string& query) {
    sqlite3* db = nullptr;
    sqlite3_stmt* st = nullptr;
    std::string plan;
    EXPECT_EQ(sqlite3_open((dir_ + "/ledger.db").c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + query).c_str(), -1, &st, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    while (st != nullptr && sqlite3_step(st) == SQLITE_ROW) {
      plan += reinterpret_cast<const char*>(sqlite3_column_text(st, 3));
      plan += "\n";
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return plan;
  }

  std::string dir_;
  Logger log_{LogLevel::kError};
  std::unique_ptr<HostServices> host_;
  std::shared_ptr<const PluginLibrary> lib_;
};

TEST_F(SqliteLedgerTest, TheFileIsPrivateAndInWALMode) {
  auto ledger = Open();
  ASSERT_TRUE(ledger.ok());
  struct stat st{};
  ASSERT_EQ(::stat((dir_ + "/ledger.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/ledger.db-wal"));
}

TEST_F(SqliteLedgerTest, ReopeningAppliesNothingTwice) {
  ASSERT_TRUE(Open().ok());
  auto again = Open();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

TEST_F(SqliteLedgerTest, ALedgerFromANewerSchemaIsRefused) {
  ASSERT_TRUE(Open().ok());
  Sql("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (99, 'future', 'x', 0)");
  auto refused = Open();
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(ports::Is(refused.status(), ports::Verdict::kSchemaTooNew));
  EXPECT_NE(refused.status().message().find("schema version 99, written by a newer nodeplane"), std::string::npos)
      << refused.status().message();
}

TEST_F(SqliteLedgerTest, AnEditedMigrationIsRefused) {
  ASSERT_TRUE(Open().ok());
  Sql("UPDATE schema_migrations SET checksum = '0000000000000000' WHERE version = 1");
  auto refused = Open();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("schema migration 1 (initial) differs"), std::string::npos)
      << refused.status().message();
}

// Issue 22 #1: migration 4 rewrites the revocations earlier builds stored
// as typed, so they match the certificates they were meant for.
TEST_F(SqliteLedgerTest, RevocationsStoredAsTypedAreRewrittenInTheOneSpelling) {
  ASSERT_TRUE(Open().ok());
  Sql("DELETE FROM schema_migrations WHERE version = 4;"
      "INSERT INTO revoked_certs (serial, node, reason, revoked_at) VALUES ('00:AB:CD', 'n1', 'typed', 1);"
      "INSERT INTO revoked_certs (serial, node, reason, revoked_at) VALUES ('abcd', 'n1', 'twice', 2);"
      "INSERT INTO revoked_certs (serial, node, reason, revoked_at) VALUES ('0EF', 'n2', 'zeros', 3)");
  auto ledger = Open();  // applies migration 4 again
  ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
  for (const char* serial : {"abcd", "ef"}) {
    auto revoked = (*ledger)->CertRevokedFor("n9", serial, 0);
    ASSERT_TRUE(revoked.ok());
    EXPECT_TRUE(*revoked) << serial;
  }
}

// L7: the WAL is copied back into the database by the Checkpointer, long
// before the writer's own fallback mark (4000 pages) would make a commit do
// it. Until a checkpoint, every change lives in the -wal file and the
// database file keeps its size.
TEST_F(SqliteLedgerTest, TheLogIsCheckpointedBesideTheWriter) {
  auto ledger = Open();
  ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
  const std::string db = dir_ + "/ledger.db";
  const auto before = std::filesystem::file_size(db);
  // Only a checkpoint writes the database file itself (commits go to the
  // -wal file): each of its writes is an inotify event, waited for below.
  const int watch = ::inotify_init1(IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, db.c_str(), IN_MODIFY), 0);
  for (int i = 0; i < 300; ++i) {  // a few hundred pages of WAL, far below the fallback mark
    ASSERT_TRUE((*ledger)->RegisterNode(Node("node-" + std::to_string(i))).ok());
  }
  // The checkpoint runs on its own thread after the 100th commit: each write
  // to the database file wakes this wait, which ends when the file has taken
  // the pages (30 s bounds a failing test).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::filesystem::file_size(db) == before && std::chrono::steady_clock::now() < deadline) {
    pollfd p{watch, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) > 0) {
      char events[4096];
      (void)::read(watch, events, sizeof events);
    }
  }
  ::close(watch);
  EXPECT_GT(std::filesystem::file_size(db), before) << "no checkpoint reached the database file";
}

// A registration reads the node's open leases, and its inventory frees its
// quarantined ones: both found through leases_open_charged_idx (migration 8),
// not by reading every lease of the fleet (docs/performance.md, "eighth pass").
TEST_F(SqliteLedgerTest, ANodesOpenLeasesAreFoundThroughAnIndex) {
  ASSERT_TRUE(Open().ok());
  const std::string open = ledger::OpenLeaseChargedTo("n");
  for (const std::string& where : {open, open + " AND phase = 'quarantine' AND expires_at < :before"}) {
    const std::string plan = Plan("SELECT id FROM leases WHERE " + where);
    EXPECT_NE(plan.find("USING INDEX leases_open_charged_idx"), std::string::npos) << where << "\n" << plan;
  }
}

// Escrow keeps what open leases hold until the ledger's charge counter
// moves (L10; migration 9's triggers move it). It moves on what escrow
// counts: a lease opened or ended. A launch's own steps (assigned, bound to
// the node it was escrowed on, launching, busy, heartbeats) move nothing,
// or every launch would have the next escrow read every open lease again.
TEST_F(SqliteLedgerTest, OnlyWhatOpenLeasesHoldMovesTheChargeCounter) {
  auto opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  LedgerAdapter& ledger = **opened;
  ports::Catalog catalog;
  catalog.tiers.push_back({"small", 2, int64_t{4} << 30, {"docker"}, "linux", "", "", 0, 0});
  ASSERT_TRUE(ledger.SetCatalog(catalog).ok());
  ASSERT_TRUE(ledger.RegisterNode(Node("n1")).ok());
  auto charges = [&] { return Scalar("SELECT charges FROM fleet WHERE id = 1"); };
  const int64_t before = charges();
  auto escrowed = ledger.Escrow("small", 2);
  ASSERT_TRUE(escrowed.ok() && escrowed->size() == 2u) << escrowed.status().ToString();
  EXPECT_EQ(charges(), before + 2);
  const ports::Lease& l = escrowed->front();
  ASSERT_TRUE(ledger.Assign(l.id, l.epoch, 1, 1).ok());
  ASSERT_TRUE(ledger.Bind(l.id, l.epoch, "n1", std::string(32, 'a')).ok());
  for (ports::Phase p : {ports::Phase::kLaunching, ports::Phase::kOnline, ports::Phase::kBusy}) {
    ASSERT_TRUE(ledger.Advance(l.id, l.epoch, p, "").ok());
  }
  ASSERT_TRUE(ledger.Heartbeat(l.id, l.epoch).ok());
  EXPECT_EQ(charges(), before + 2);
  ASSERT_TRUE(ledger.Release(l.id, l.epoch, ports::Phase::kDone).ok());
  EXPECT_EQ(charges(), before + 3);
  Sql("UPDATE leases SET vcpu = 4 WHERE id = '" + escrowed->back().id + "'");  // what another writer might do
  EXPECT_EQ(charges(), before + 4);
}

// The reaper's read runs under the write lock every reap interval, in a
// ledger that keeps every lease it ever wrote: it must find the expired
// open leases through leases_expiry_idx, not by reading them all.
TEST_F(SqliteLedgerTest, TheReaperFindsExpiredLeasesThroughAnIndex) {
  ASSERT_TRUE(Open().ok());
  const std::string plan =
      Plan("SELECT id FROM leases WHERE " + ledger::ExpiredOpenLease("now") + " ORDER BY expires_at LIMIT 256");
  EXPECT_NE(plan.find("USING INDEX leases_expiry_idx"), std::string::npos) << plan;
}

// Every node reconciles its inventory about once a lease TTL (a few hundred
// a second at 50,000 nodes), and almost every time nothing is quarantined
// there to free. Such a reconcile reads on a reader and never queues for the
// write lock: here another process holds it, and the answer does not wait
// for it (with the lock asked for, it would wait out busy_timeout and fail).
TEST_F(SqliteLedgerTest, AReconcileWithNothingToFreeTakesNoWriteLock) {
  auto opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  LedgerAdapter& ledger = **opened;
  auto epoch = ledger.RegisterNode(Node("n1"));
  ASSERT_TRUE(epoch.ok()) << epoch.status().ToString();
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/ledger.db").c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto freed = ledger.ResolveQuarantineFor("n1", {"a-lease-it-runs"}, *epoch);
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  ASSERT_TRUE(freed.ok()) << freed.status().ToString();
  EXPECT_EQ(*freed, 0);
}

TEST_F(SqliteLedgerTest, AnUnwritableLocationIsAnOutage) {
  auto r = LedgerAdapter::Create(lib_, "ledger", R"({"path": "/nonexistent-dir/ledger.db"})", host_->c(), false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_NE(r.status().message().find("cannot open /nonexistent-dir/ledger.db"), std::string::npos);
}

TEST_F(SqliteLedgerTest, ConfigIsCheckedStrictlyWithoutTouchingTheFile) {
  for (const char* bad : {R"({"path": 5})", R"({"readers": 0})", R"({"pth": "x"})", "[1]", "not json"}) {
    auto r = LedgerAdapter::Create(lib_, "ledger", bad, host_->c(), true);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalid) << bad;
  }
  auto ok = LedgerAdapter::Create(lib_, "ledger", R"({"path": "x.db", "readers": 2})", host_->c(), true);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/x.db"));
}

}  // namespace
}  // namespace nodeplane::loader
