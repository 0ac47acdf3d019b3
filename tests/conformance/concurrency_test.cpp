// Races the ledger must close (billet-ledger.md §7.1; C02, C03): many
// callers, and two instances on one store as two processes would be.
#include <thread>

#include "ledger_fixture.h"

namespace nodeplane::conformance {
namespace {

using ConcurrencyTest = LedgerTest;

// C02
TEST_F(ConcurrencyTest, C02_ConcurrentReservationsNeverOvercommit) {
  Register("n1", "docker", 8, 64 * kGiB);  // 4 slots
  std::atomic<int> granted{0}, refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&] {
      auto l = ledger_->Escrow("small", 1);
      ASSERT_TRUE(l.ok());
      (l->empty() ? refused : granted)++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(granted.load(), 4);
  EXPECT_EQ(refused.load(), 60);
}

// C03, and two control-plane processes on one ledger racing for the last capacity.
TEST_F(ConcurrencyTest, C03_TwoInstancesRacingNeverBothWin) {
  Register("n1", "docker", 8, 64 * kGiB);
  auto other = OpenAnother();
  ASSERT_NE(other, nullptr);
  std::atomic<size_t> total{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    loader::LedgerAdapter* l = i % 2 ? other.get() : ledger_.get();
    threads.emplace_back([&, l] {
      auto got = l->Escrow("small", 3);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      total += got->size();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(total.load(), 4u);
  EXPECT_EQ(ledger_->ListLeases("")->size(), 4u);
}

TEST_F(ConcurrencyTest, RacingBindsLeaveOneHolder) {
  Register("n1");
  ports::Lease l = EscrowOne();
  auto other = OpenAnother();
  ASSERT_NE(other, nullptr);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    loader::LedgerAdapter* a = i % 2 ? other.get() : ledger_.get();
    threads.emplace_back([&, a, i] {
      if (a->Bind(l.id, 0, "n1", std::string(32, static_cast<char>('a' + i))).ok()) ok++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);  // the same node: every repeat is idempotent
  EXPECT_EQ(Get(l.id).node, "n1");
}

TEST_F(ConcurrencyTest, TheReaperAndAReleaseResolveAsOne) {
  Register("n1", "docker", 64, 256 * kGiB);
  std::vector<ports::Lease> leases = Escrow("small", 20);
  ASSERT_EQ(leases.size(), 20u);
  Advance(kTTL);
  auto other = OpenAnother();
  std::atomic<int> released{0}, fenced_or_gone{0};
  std::thread reaper([&] { ASSERT_TRUE(other->Reap().ok()); });
  for (const auto& l : leases) {
    Status s = ledger_->Release(l.id, 0, Phase::kFailed);
    if (s.ok()) released++;
    else if (ports::Is(s, ports::Verdict::kFenced) || ports::Is(s, ports::Verdict::kConflict)) fenced_or_gone++;
    else ADD_FAILURE() << s.ToString();
  }
  reaper.join();
  EXPECT_EQ(released.load() + fenced_or_gone.load(), 20);
  EXPECT_TRUE(ledger_->ListLeases("")->empty());
}

}  // namespace
}  // namespace nodeplane::conformance
