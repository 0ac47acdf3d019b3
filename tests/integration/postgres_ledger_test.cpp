// ledger-postgres against a real server (NODEPLANE_TEST_PG_DSN; skipped
// without it): a server restart makes calls fail as unavailable, never as a
// verdict, and the same instance recovers without a restart of the host;
// two instances on one database never both win the last capacity; a leader
// stopped inside a write does not keep the others from taking over; the
// charge counter's triggers as PostgreSQL spells them; and what escrow keeps
// between writes is not trusted across a reconnect (a failover).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>

#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_library.h"
#include "nodeplane/np_plugin.h"

namespace nodeplane {
namespace {

constexpr int64_t kGiB = 1LL << 30;

class PostgresLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dsn = std::getenv("NODEPLANE_TEST_PG_DSN");
    if (dsn == nullptr) GTEST_SKIP() << "NODEPLANE_TEST_PG_DSN is not set";
    dsn_ = dsn;
    pause_ = std::getenv("NODEPLANE_TEST_PG_PAUSE");  // commands that stop and start the server again
    resume_ = std::getenv("NODEPLANE_TEST_PG_RESUME");
    schema_ = "t_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : schema_) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    schema_.resize(std::min<size_t>(schema_.size(), 63));
    host_ = std::make_unique<loader::HostServices>(log_, ::testing::TempDir());
    auto lib = loader::PluginLibrary::Open(std::string(PLUGIN_DIR) + "/ledger-postgres.so", "", host_->c());
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    lib_ = *lib;
  }

  // `dsn_extra` is appended to the DSN (" application_name=...").
  std::unique_ptr<loader::LedgerAdapter> Open(const std::string& dsn_extra = "") {
    auto l = loader::LedgerAdapter::Create(
        lib_, "ledger", R"({"dsn": ")" + dsn_ + dsn_extra + R"(", "schema": ")" + schema_ + R"(", "pool": 2})",
        host_->c(), false);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    if (!l.ok()) return nullptr;
    ports::Catalog cat;
    cat.lease_ttl_ns = 90'000'000'000;
    cat.tiers.push_back({"small", 1, kGiB, {"process"}, "linux", "", "", 0, 0});
    EXPECT_TRUE((*l)->SetCatalog(cat).ok());
    return std::move(*l);
  }

  // Runs `statements` on a connection of its own.
  void Sql(const std::string& statements) {
    PGconn* c = PQconnectdb(dsn_.c_str());
    ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    PGresult* r = PQexec(c, statements.c_str());
    EXPECT_TRUE(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK)
        << statements << ": " << PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
  }
  // The one integer `query` answers, over a connection of its own.
  int64_t Scalar(const std::string& query) {
    PGconn* c = PQconnectdb(dsn_.c_str());
    EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    PGresult* r = PQexec(c, query.c_str());
    int64_t value = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) value = std::atoll(PQgetvalue(r, 0, 0));
    EXPECT_NE(value, -1) << query << ": " << PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
    return value;
  }

  std::string dsn_, schema_;
  const char* pause_ = nullptr;
  const char* resume_ = nullptr;
  Logger log_{LogLevel::kError};
  std::unique_ptr<loader::HostServices> host_;
  std::shared_ptr<const loader::PluginLibrary> lib_;
};

TEST_F(PostgresLedgerTest, AnOutageIsUnavailableThenRecoversWithoutRestartingTheHost) {
  if (pause_ == nullptr || resume_ == nullptr) GTEST_SKIP() << "NODEPLANE_TEST_PG_PAUSE/RESUME are not set";
  auto ledger = Open();
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->RegisterNode({"n1", "process", "", "i1", "", 4, 8 * kGiB, 1}).ok());
  ASSERT_EQ(std::system(pause_), 0);
  // While the server is down every call is an outage, never a verdict.
  auto nodes = ledger->ListNodes();
  EXPECT_EQ(nodes.status().code(), Code::kUnavailable) << nodes.status().ToString();
  auto escrow = ledger->Escrow("small", 1);
  EXPECT_EQ(escrow.status().code(), Code::kUnavailable) << escrow.status().ToString();
  EXPECT_TRUE(escrow.status().retryable());
  ASSERT_EQ(std::system(resume_), 0);
  // The same instance re-establishes its sessions, and the data survived.
  nodes = ledger->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_EQ(nodes->size(), 1u);
  escrow = ledger->Escrow("small", 1);
  ASSERT_TRUE(escrow.ok()) << escrow.status().ToString();
  EXPECT_EQ(escrow->size(), 1u);
}

// A session idle through a restart learns its connection is gone only from
// its next statement (no round trip is spent asking before each
// transaction): that BEGIN is retried on a new connection, so the first call
// after the restart already succeeds.
TEST_F(PostgresLedgerTest, ASessionIdleThroughARestartServesItsFirstCallAfterIt) {
  if (pause_ == nullptr || resume_ == nullptr) GTEST_SKIP() << "NODEPLANE_TEST_PG_PAUSE/RESUME are not set";
  auto ledger = Open();
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->RegisterNode({"n1", "process", "", "i1", "", 4, 8 * kGiB, 1}).ok());
  ASSERT_TRUE(ledger->ListNodes().ok());
  ASSERT_EQ(std::system(pause_), 0);
  ASSERT_EQ(std::system(resume_), 0);  // nothing was asked meanwhile
  auto nodes = ledger->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_EQ(nodes->size(), 1u);
  auto escrow = ledger->Escrow("small", 1);
  ASSERT_TRUE(escrow.ok()) << escrow.status().ToString();
  EXPECT_EQ(escrow->size(), 1u);
}

// Issue 20: a replica SIGSTOPped in the middle of a write transaction holds
// the ledger's write lock, and its connection stays open. The server ends
// that transaction (the writer sessions' idle_in_transaction_session_timeout),
// so another instance can still open the ledger and take over. The stopped
// leader's term is a millisecond, ended before it is stopped (its writes are
// fenced on its generation, not its term), so the one thing the takeover can
// wait for is the lock.
TEST_F(PostgresLedgerTest, ALeaderStoppedInsideAWriteDoesNotBlockTheTakeover) {
  const int64_t term = 1'000'000;
  const pid_t leader = ::fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {  // the child: leads, then writes back to back until stopped for good
    auto a = Open();
    if (a == nullptr) ::_exit(2);
    auto won = a->Campaign("a", "a.example:7717", term);
    if (!won.ok() || !won->active) ::_exit(3);
    for (;;) static_cast<void>(a->Heartbeat("no-such-lease", 1));
  }
  struct Reap {
    pid_t pid;
    ~Reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{leader};
  // Stop it at a moment when it holds an advisory lock inside a transaction.
  PGconn* c = PQconnectdb(dsn_.c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  bool holding = false;
  for (int attempt = 0; attempt < 5000 && !holding; ++attempt) {
    ASSERT_EQ(::kill(leader, SIGSTOP), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(leader, &status, WUNTRACED), leader);
    ASSERT_TRUE(WIFSTOPPED(status)) << "the leader exited with " << status;
    PGresult* r = PQexec(c, "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                            "WHERE l.locktype = 'advisory' AND l.granted AND a.state = 'idle in transaction'");
    holding = PQresultStatus(r) == PGRES_TUPLES_OK && std::atoi(PQgetvalue(r, 0, 0)) > 0;
    PQclear(r);
    if (!holding) {
      ASSERT_EQ(::kill(leader, SIGCONT), 0);
    }
  }
  PQfinish(c);
  ASSERT_TRUE(holding) << "the leader was never stopped inside a write";
  // Another instance opens the ledger and wins its first campaign.
  auto takeover = std::async(std::launch::async, [&]() -> Status {
    auto b = Open();
    if (b == nullptr) return Status::Internal("the second instance did not open");
    auto r = b->Campaign("b", "b.example:7717", 15'000'000'000);
    if (!r.ok()) return r.status();
    return r->active ? Status::Ok() : Status::Internal("the stopped leader still leads: " + r->holder);
  });
  // The server's timeout (5 s) bounds it; 30 s is far past it.
  if (takeover.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ::kill(leader, SIGKILL);  // lets the blocked instance go, so the test can end
    takeover.wait();
    FAIL() << "no takeover within 30 s while the stopped leader held the write lock";
  }
  Status s = takeover.get();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// Migration 9's triggers as PostgreSQL spells them: the charge counter
// escrow keeps its tally by (sql_ledger.h L10) moves when a lease opens or
// ends or another writer changes what one holds, and not on a launch's own
// steps, or every launch would have the next escrow read every open lease.
TEST_F(PostgresLedgerTest, OnlyWhatOpenLeasesHoldMovesTheChargeCounter) {
  auto l = Open();
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->RegisterNode({"n1", "process", "", "i1", "", 4, 4 * kGiB, 1}).ok());
  auto charges = [&] { return Scalar("SELECT charges FROM " + schema_ + ".fleet WHERE id = 1"); };
  const int64_t before = charges();
  auto escrowed = l->Escrow("small", 2);
  ASSERT_TRUE(escrowed.ok() && escrowed->size() == 2u) << escrowed.status().ToString();
  EXPECT_EQ(charges(), before + 2);
  const ports::Lease& lease = escrowed->front();
  ASSERT_TRUE(l->Assign(lease.id, lease.epoch, 1, 1).ok());
  ASSERT_TRUE(l->Bind(lease.id, lease.epoch, "n1", std::string(32, 'a')).ok());
  for (ports::Phase p : {ports::Phase::kLaunching, ports::Phase::kOnline, ports::Phase::kBusy}) {
    ASSERT_TRUE(l->Advance(lease.id, lease.epoch, p, "").ok());
  }
  ASSERT_TRUE(l->Heartbeat(lease.id, lease.epoch).ok());
  EXPECT_EQ(charges(), before + 2);
  ASSERT_TRUE(l->Release(lease.id, lease.epoch, ports::Phase::kDone).ok());
  EXPECT_EQ(charges(), before + 3);
  // What another writer might do: the counter moves all the same.
  EXPECT_EQ(Scalar("WITH u AS (UPDATE " + schema_ + ".leases SET vcpu = 2 WHERE id = '" + escrowed->back().id +
                   "' RETURNING 1) SELECT count(*) FROM u"),
            1);
  EXPECT_EQ(charges(), before + 4);
}

// An operator may rename the ledger's schema (or restore a dump under
// another name) and point the plugin at the new one: the triggers still find
// their counter, in the schema of the table that fired them.
TEST_F(PostgresLedgerTest, ALedgerInARenamedSchemaStillCountsWhatOpenLeasesHold) {
  {
    auto l = Open();
    ASSERT_NE(l, nullptr);
    ASSERT_TRUE(l->RegisterNode({"n1", "process", "", "i1", "", 4, 4 * kGiB, 1}).ok());
  }
  const std::string old_name = schema_;
  schema_ = old_name.substr(0, 55) + "_renamed";
  Sql("ALTER SCHEMA " + old_name + " RENAME TO " + schema_);
  auto l = Open();
  ASSERT_NE(l, nullptr);
  const int64_t before = Scalar("SELECT charges FROM " + schema_ + ".fleet WHERE id = 1");
  auto escrowed = l->Escrow("small", 1);
  ASSERT_TRUE(escrowed.ok() && escrowed->size() == 1u) << escrowed.status().ToString();
  EXPECT_EQ(Scalar("SELECT charges FROM " + schema_ + ".fleet WHERE id = 1"), before + 1);
}

// A failover to a standby that had not received the last writes
// (asynchronous replication) hands the writer a database whose counters lag
// what it read; once other writes bring them back to the values it holds,
// over other rows, copies kept by those values would be trusted (sql_ledger.h
// L6, L10). What was read on one connection is not used on the next.
TEST_F(PostgresLedgerTest, CopiesReadBeforeAReconnectAreNotTrustedAfterIt) {
  auto l = Open(" application_name=" + schema_);
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->RegisterNode({"n1", "process", "", "i1", "", 2, 4 * kGiB, 1}).ok());  // room for two
  auto mine = l->Escrow("small", 1);
  ASSERT_TRUE(mine.ok() && mine->size() == 1u) << mine.status().ToString();
  // The standby never saw that escrow nor its counter's move, and the
  // writer's connection broke.
  Sql("SET session_replication_role = replica; DELETE FROM " + schema_ + ".leases WHERE id = '" + mine->front().id +
      "'; UPDATE " + schema_ + ".fleet SET charges = charges - 1 WHERE id = 1");
  Sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '" + schema_ + "'");
  // Another writer takes the counter back where it was, with two vCPU on n1.
  Sql("INSERT INTO " + schema_ +
      ".leases (id, tier, node, target_node, phase, vcpu, memory, requested_vcpu, requested_memory, created_at, "
      "heartbeat_at, expires_at) VALUES ('" + std::string(32, 'f') +
      "', 'small', '', 'n1', 'capacity', 2, 1073741824, 2, 1073741824, 0, 0, 9000000000000000000)");
  auto more = l->Escrow("small", 5);
  ASSERT_TRUE(more.ok()) << more.status().ToString();
  EXPECT_EQ(more->size(), 0u) << "n1's two vCPU are held by the other writer's lease";
}

// The same for the fleet escrow places on (L6): a node whose registration
// the standby never saw is not placed on after the failover.
TEST_F(PostgresLedgerTest, AFleetReadBeforeAReconnectIsNotTrustedAfterIt) {
  auto l = Open(" application_name=" + schema_);
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->RegisterNode({"n2", "process", "", "i2", "", 1, 4 * kGiB, 1}).ok());
  auto placed = l->Escrow("small", 1);
  ASSERT_TRUE(placed.ok() && placed->size() == 1u && placed->front().target_node == "n2") << placed.status().ToString();
  Sql("SET session_replication_role = replica; DELETE FROM " + schema_ + ".leases; DELETE FROM " + schema_ +
      ".nodes WHERE name = 'n2'; UPDATE " + schema_ + ".fleet SET generation = generation - 1, charges = charges - 1");
  Sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '" + schema_ + "'");
  auto other = Open();
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->RegisterNode({"n3", "process", "", "i3", "", 1, 4 * kGiB, 1}).ok());  // the generation is back
  auto again = l->Escrow("small", 1);
  ASSERT_TRUE(again.ok() && again->size() == 1u) << again.status().ToString();
  EXPECT_EQ(again->front().target_node, "n3") << "n2 is not in the fleet any more";
}

TEST_F(PostgresLedgerTest, TwoInstancesOnOneDatabaseNeverBothWinTheLastCapacity) {
  auto a = Open(), b = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->RegisterNode({"n1", "process", "", "i1", "", 1, kGiB, 1}).ok());  // room for exactly one
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> won{0};
    std::thread ta([&] { if (auto r = a->Escrow("small", 1); r.ok() && !r->empty()) won++; });
    std::thread tb([&] { if (auto r = b->Escrow("small", 1); r.ok() && !r->empty()) won++; });
    ta.join();
    tb.join();
    ASSERT_EQ(won.load(), 1) << "round " << round;
    auto open = a->ListLeases("");
    ASSERT_TRUE(open.ok());
    ASSERT_EQ(open->size(), 1u);
    ASSERT_TRUE(a->Release(open->front().id, open->front().epoch, ports::Phase::kFailed).ok());
  }
}

}  // namespace
}  // namespace nodeplane
