// Group commit (plugins/ledger-sql/group_commit.h, G1-G4) on a real SQLite
// session. A batch is formed on purpose: the first job holds the writer
// until the others are seen queued behind it (observed, never timed).
#include "group_commit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <latch>
#include <stdexcept>
#include <thread>

namespace nodeplane::ledger {
namespace {

class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-group-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    dialect_.soci_backend = "sqlite3";
    dialect_.begin_write = "BEGIN IMMEDIATE";
    dialect_.writer_setup = {"PRAGMA journal_mode = WAL", "PRAGMA foreign_keys = ON"};
    writer_ = std::make_unique<Session>("sqlite3", "db=" + dir_ + "/t.db");
    for (const std::string& q : dialect_.writer_setup) *writer_ << q;
    *writer_ << "CREATE TABLE parent (k TEXT PRIMARY KEY)";
    *writer_ << "CREATE TABLE t (k TEXT PRIMARY KEY, parent TEXT REFERENCES parent (k) DEFERRABLE INITIALLY DEFERRED)";
    group_ = std::make_unique<GroupCommit>(
        dialect_, *writer_, session_mu_, [this] { ++commits_; }, [this] { ++rollbacks_; });
  }
  void TearDown() override {
    group_.reset();
    writer_.reset();
    std::filesystem::remove_all(dir_);
  }

  static GroupCommit::Job Insert(const std::string& k, const std::string& parent = "") {
    return [k, parent](Session& s) {
      if (parent.empty()) {
        s << "INSERT INTO t (k) VALUES (:k)", soci::use(k);
      } else {
        s << "INSERT INTO t (k, parent) VALUES (:k, :p)", soci::use(k), soci::use(parent);
      }
    };
  }
  std::vector<std::string> Keys() {
    std::vector<std::string> keys(16);
    *writer_ << "SELECT k FROM t ORDER BY k", soci::into(keys);
    return keys;
  }

  // Runs `first` (which holds the writer), waits until `rest` are all queued
  // behind it, lets it finish, and returns each job's outcome ("" or what
  // it threw), in order.
  std::vector<std::string> Batch(GroupCommit::Job first, std::vector<GroupCommit::Job> rest) {
    std::latch started(1), release(1);
    auto run = [this](GroupCommit::Job job) {
      try {
        group_->Run(job);
        return std::string();
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
    };
    std::vector<std::future<std::string>> outcomes;
    outcomes.push_back(std::async(std::launch::async, run, [&, first](Session& s) {
      first(s);
      started.count_down();
      release.wait();
    }));
    started.wait();
    for (size_t i = 0; i < rest.size(); ++i) {
      outcomes.push_back(std::async(std::launch::async, run, rest[i]));
      while (group_->queued() != i + 1) std::this_thread::yield();  // queued in this order
    }
    release.count_down();
    std::vector<std::string> out;
    for (auto& f : outcomes) out.push_back(f.get());
    return out;
  }

  std::string dir_;
  Dialect dialect_;
  std::mutex session_mu_;
  std::unique_ptr<Session> writer_;
  std::unique_ptr<GroupCommit> group_;
  std::atomic<int> commits_{0}, rollbacks_{0};
};

// G1: writes that queue behind a running transaction share one commit.
TEST_F(GroupCommitTest, WritesQueuedBehindATransactionShareOneCommit) {
  std::vector<std::string> out = Batch(Insert("a"), {Insert("b"), Insert("c"), Insert("d")});
  EXPECT_EQ(out, (std::vector<std::string>{"", "", "", ""}));
  EXPECT_EQ(commits_.load(), 2);  // a alone, then b, c and d together
  EXPECT_EQ(Keys(), (std::vector<std::string>{"a", "b", "c", "d"}));
}

// G1: a job sees the jobs before it in its batch.
TEST_F(GroupCommitTest, AJobSeesTheJobsBeforeItInItsBatch) {
  long long seen = -1;
  Batch(Insert("a"), {Insert("b"), [&](Session& s) { s << "SELECT COUNT(*) FROM t", soci::into(seen); }});
  EXPECT_EQ(seen, 2);
}

// G2: a job that throws leaves nothing, and its neighbours commit.
TEST_F(GroupCommitTest, ARefusedJobLeavesNothingAndSparesItsNeighbours) {
  GroupCommit::Job refused = [](Session& s) {
    s << "INSERT INTO t (k) VALUES ('c')";
    throw std::runtime_error("refused after writing");
  };
  std::vector<std::string> out = Batch(Insert("a"), {Insert("b"), refused, Insert("d")});
  EXPECT_EQ(out, (std::vector<std::string>{"", "", "refused after writing", ""}));
  EXPECT_EQ(Keys(), (std::vector<std::string>{"a", "b", "d"}));
  EXPECT_EQ(rollbacks_.load(), 0);
}

// G3 and G4: a commit that fails fails every job of the batch, and keeps
// nothing of it. (A deferred foreign key is checked only at COMMIT.)
TEST_F(GroupCommitTest, ACommitThatFailsFailsTheWholeBatch) {
  std::vector<std::string> out = Batch(Insert("a"), {Insert("b"), Insert("c", "no-such-parent"), Insert("d")});
  EXPECT_EQ(out[0], "");
  for (size_t i = 1; i < out.size(); ++i) {
    EXPECT_NE(out[i].find("FOREIGN KEY"), std::string::npos) << i << ": " << out[i];
  }
  EXPECT_EQ(Keys(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(rollbacks_.load(), 1);
  EXPECT_EQ(commits_.load(), 1);
}

// Alone, a refused job rolls its own transaction back (G2, G4).
TEST_F(GroupCommitTest, ARefusedJobAloneRollsBackItsTransaction) {
  EXPECT_THROW(group_->Run([](Session& s) {
    s << "INSERT INTO t (k) VALUES ('x')";
    throw std::runtime_error("no");
  }),
               std::runtime_error);
  EXPECT_TRUE(Keys().empty());
  EXPECT_EQ(rollbacks_.load(), 1);
}

}  // namespace
}  // namespace nodeplane::ledger
