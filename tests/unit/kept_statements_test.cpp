// Statements kept compiled per session (plugins/ledger-sql/query.h, Q2-Q4)
// on a real SQLite file in WAL mode, with the SQLite ledger's own reset.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "query.h"
#include "statement_reset.h"

namespace nodeplane::ledger {
namespace {

class KeptStatementsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-kept-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    s_ = std::make_unique<Session>("sqlite3", "db=" + dir_ + "/t.db");
    s_->KeepStatements(&ResetSqliteStatement);
    *s_ << "PRAGMA journal_mode = WAL";
    *s_ << "CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)";
    for (int i = 0; i < 3; ++i) *s_ << "INSERT INTO t VALUES ('k" + std::to_string(i) + "', " + std::to_string(i) + ")";
  }
  void TearDown() override {
    s_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Whether a full checkpoint from another connection is kept waiting by a
  // reader: PRAGMA wal_checkpoint(TRUNCATE)'s first column.
  long long CheckpointBusy() {
    Session other("sqlite3", "db=" + dir_ + "/t.db");
    long long busy = -1, log = 0, done = 0;
    other << "PRAGMA wal_checkpoint(TRUNCATE)", soci::into(busy), soci::into(log), soci::into(done);
    return busy;
  }

  std::string dir_;
  std::unique_ptr<Session> s_;
};

TEST_F(KeptStatementsTest, Q2_AStatementIsCompiledOnceAndBoundAnewEachUse) {
  soci::statement* first = nullptr;
  for (int i = 0; i < 3; ++i) {
    long long v = -1;
    const std::string k = "k" + std::to_string(i);
    Query q(*s_, "SELECT v FROM t WHERE k = :k", soci::into(v), soci::use(k));
    q->execute(true);
    EXPECT_EQ(v, i);
    if (first == nullptr) first = &*q;
    EXPECT_EQ(&*q, first);  // the same compiled statement, new values
  }
}

// A use that stops before the last row (one row fetched of three) leaves
// nothing open once it ends: a full checkpoint from elsewhere is not kept
// waiting by the kept statement's snapshot.
TEST_F(KeptStatementsTest, Q3_AStatementHoldsNoSnapshotOnceItsUseEnds) {
  {
    long long v = -1;
    Query q(*s_, "SELECT v FROM t ORDER BY k", soci::into(v));
    q->execute(true);
    EXPECT_EQ(v, 0);
  }
  EXPECT_EQ(CheckpointBusy(), 0);
}

TEST_F(KeptStatementsTest, Q4_TheSameTextInsideItsOwnUseRunsApart) {
  long long outer = -1, inner = -1, rows = 0;
  Query q(*s_, "SELECT v FROM t WHERE v >= :m ORDER BY v", soci::into(outer), soci::use(1LL));
  q->execute();
  while (q->fetch()) {
    ++rows;
    Query again(*s_, "SELECT v FROM t WHERE v >= :m ORDER BY v", soci::into(inner), soci::use(2LL));
    EXPECT_NE(&*again, &*q);
    again->execute(true);
    EXPECT_EQ(inner, 2);
  }
  EXPECT_EQ(rows, 2);
}

}  // namespace
}  // namespace nodeplane::ledger
