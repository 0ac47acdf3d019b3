// Leadership among replicas sharing one ledger (C95–C98, nodeplane's own,
// issue 20): np_ledger_v1.h campaign and resign. Two instances of the plugin
// on one store stand for two control planes.
//
// Terms are measured by the store's clock, not the fake one, so a test that
// needs a term to end gives it one millisecond and campaigns again until the
// store says it ended: it waits on the store's answer, bounded, never on a
// sleep of a guessed length.
#include <chrono>
#include <thread>

#include "ledger_fixture.h"

namespace nodeplane::conformance {
namespace {

using LeadershipTest = LedgerTest;

constexpr int64_t kTerm = 30 * kSecond;
constexpr int64_t kInstant = 1'000'000;  // one millisecond

ports::Leadership Campaign(loader::LedgerAdapter& l, const std::string& replica, int64_t term = kTerm) {
  auto r = l.Campaign(replica, replica + ".example:7717", term);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ports::Leadership{};
}

// Campaigns as `replica` until it leads; fails after five seconds.
ports::Leadership CampaignUntilLeading(loader::LedgerAdapter& l, const std::string& replica) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    ports::Leadership r = Campaign(l, replica);
    if (r.active || std::chrono::steady_clock::now() > deadline) return r;
    std::this_thread::yield();
  }
}

// C95: the first campaign on a ledger wins generation 1; another replica's
// campaign changes nothing and learns who leads, where, and for how long;
// the leader's renewal keeps its generation.
TEST_F(LeadershipTest, C95_OneLeadsAndTheOtherLearnsWho) {
  auto other = OpenAnother();
  ports::Leadership a = Campaign(*ledger_, "a");
  EXPECT_TRUE(a.active);
  EXPECT_EQ(a.generation, 1);
  EXPECT_EQ(a.holder, "a");
  ports::Leadership b = Campaign(*other, "b");
  EXPECT_FALSE(b.active);
  EXPECT_EQ(b.generation, 1);
  EXPECT_EQ(b.holder, "a");
  EXPECT_EQ(b.address, "a.example:7717");
  EXPECT_GT(b.term_left_ns, 0);
  EXPECT_LE(b.term_left_ns, kTerm);
  ports::Leadership renewed = Campaign(*ledger_, "a");
  EXPECT_TRUE(renewed.active);
  EXPECT_EQ(renewed.generation, 1);
  // The leader writes; the standby, which never led, is not fenced either
  // (a store with one replica that never campaigns works as before).
  ASSERT_OK(ledger_->CreateJoinToken(std::string(64, 'a'), 1, Now() + kMinute, ""));
}

// C96: once the term ended, another replica takes the leadership at the next
// generation, and from then on every write of the old leader is fenced and
// changes nothing, its renewal included.
TEST_F(LeadershipTest, C96_ATakeoverFencesTheOldLeader) {
  auto other = OpenAnother();
  ASSERT_TRUE(Campaign(*ledger_, "a", kInstant).active);
  ports::Leadership b = CampaignUntilLeading(*other, "b");
  ASSERT_TRUE(b.active);
  EXPECT_EQ(b.generation, 2);
  EXPECT_EQ(b.holder, "b");

  EXPECT_NP(ledger_->CreateJoinToken(std::string(64, 'c'), 1, Now() + kMinute, "from the old leader"), NP_FENCED);
  EXPECT_NP(ledger_->ForgetEveryNode(), NP_FENCED);
  auto tokens = ledger_->ListJoinTokens();  // reads are never fenced
  ASSERT_TRUE(tokens.ok());
  EXPECT_TRUE(tokens->empty()) << "a fenced write left a row";

  ports::Leadership a = Campaign(*ledger_, "a");
  EXPECT_FALSE(a.active) << "the old leader renewed a term it had lost";
  EXPECT_EQ(a.holder, "b");
  EXPECT_EQ(a.generation, 2);
  // Learning it lost does not unfence it.
  EXPECT_NP(ledger_->CreateJoinToken(std::string(64, 'd'), 1, Now() + kMinute, ""), NP_FENCED);
  ASSERT_OK(other->CreateJoinToken(std::string(64, 'e'), 1, Now() + kMinute, "from the new leader"));
}

// C97: a leader that resigns lets another replica take over at once, and a
// replica that wins again after losing writes again.
TEST_F(LeadershipTest, C97_ResignHandsOverAtOnce) {
  auto other = OpenAnother();
  ASSERT_TRUE(Campaign(*ledger_, "a").active);
  ASSERT_OK(ledger_->Resign());
  ports::Leadership b = Campaign(*other, "b");
  ASSERT_TRUE(b.active) << "the resigned term still held until " << b.term_left_ns << " ns";
  EXPECT_EQ(b.generation, 2);
  ASSERT_OK(other->Resign());
  ports::Leadership again = Campaign(*ledger_, "a");
  ASSERT_TRUE(again.active);
  EXPECT_EQ(again.generation, 3);
  ASSERT_OK(ledger_->CreateJoinToken(std::string(64, 'f'), 1, Now() + kMinute, ""));
  EXPECT_NP(other->CreateJoinToken(std::string(64, 'g'), 1, Now() + kMinute, ""), NP_FENCED);
}

// C98: a campaign needs a replica name and a term.
TEST_F(LeadershipTest, C98_ACampaignNeedsANameAndATerm) {
  EXPECT_NP(ledger_->Campaign("", "x:1", kTerm).status(), NP_INVALID);
  EXPECT_NP(ledger_->Campaign("a", "x:1", 0).status(), NP_INVALID);
  ports::Leadership a = Campaign(*ledger_, "a");
  EXPECT_TRUE(a.active);
  EXPECT_EQ(a.generation, 1) << "a refused campaign moved the generation";
}

}  // namespace
}  // namespace nodeplane::conformance
