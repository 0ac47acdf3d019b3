// J3 of the job intake (host/jobs/scale_set_listener.h): a completion is
// marked settled only once its lease has ended with GitHub's result. Found
// by e2e ha-failover: a lease quarantined while its job ran was ended failed
// by its node's inventory between the settler's read of the lease and its
// destroy, and the entry was marked settled over the failed verdict.
//
// The plane is the unit tests' (a fake clock and registrar; this test plays
// node n1); the ledger is the real SQLite one on a clock of the test's own;
// the job source answers nothing, so only the settler works.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "jobs/scale_set_listener.h"
#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_library.h"
#include "plane_fixture.h"

namespace nodeplane::jobs {
namespace {

using plane::kGiB;
using plane::kS;
constexpr int64_t kMinute = 60 * kS;

// A job source that is never reachable: the listener's queue loop retries,
// its settler works from the journal alone.
struct UnreachableSource : ports::JobSource {
  Status Down() { return Status::Unavailable("the forge is unreachable in this test"); }
  Result<ports::ScaleSet> EnsureScaleSet(const std::string&, const std::string&,
                                         const std::vector<std::string>&) override {
    return Down();
  }
  Result<uint64_t> OpenSession(int64_t, const std::string&, ports::QueueStatistics*) override { return Down(); }
  Result<std::optional<ports::QueueMessage>> NextMessage(uint64_t, int64_t, int64_t, Nanos) override {
    return Down();
  }
  Status Acknowledge(uint64_t, int64_t) override { return Down(); }
  Result<std::vector<int64_t>> Acquire(uint64_t, const std::vector<int64_t>&) override { return Down(); }
  Result<ports::JitRegistration> ScaleSetJit(int64_t, const std::string&, const std::string&) override {
    return Down();
  }
  Status CloseSession(uint64_t) override { return Status::Ok(); }
  void Cancel(uint64_t) override {}
  std::optional<RateLimit> RateLimitLeft() override { return std::nullopt; }
};

class IntakeSettleTest : public plane::PlaneTest {
 protected:
  void SetUp() override {
    PlaneTest::SetUp();
    std::string tmpl = ::testing::TempDir() + "/np-settle-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    services_ = std::make_unique<loader::HostServices>(log_, dir_, [this] { return now_.load(); });
    auto lib = loader::PluginLibrary::Open(std::string(PLUGIN_DIR) + "/ledger-sqlite.so", "", services_->c());
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    auto ledger = loader::LedgerAdapter::Create(*lib, "ledger", R"({"path": "ledger.db"})", services_->c(), false);
    ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
    ledger_sql_ = std::move(*ledger);
    ports::Catalog c;
    c.lease_ttl_ns = 3 * kS;
    ports::TierSpec small;
    small.label = "small";
    small.vcpu = 2;
    small.memory = 4 * kGiB;
    small.providers = {"docker"};
    c.tiers = {small};
    ASSERT_TRUE(ledger_sql_->SetCatalog(c).ok());
  }
  void TearDown() override {
    listener_.reset();
    ledger_sql_.reset();
    PlaneTest::TearDown();
    std::filesystem::remove_all(dir_);
  }
  // Waits, bounded, until the journal owes nothing for the tier.
  bool AllSettled() {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      auto owed = ledger_sql_->UnsettledForgeJobs("small", 10);
      if (owed.ok() && owed->empty()) return true;
      if (std::chrono::steady_clock::now() > limit) return false;
      std::this_thread::yield();
    }
  }

  std::string dir_;
  std::atomic<int64_t> now_{1'800'000'000LL * kS};
  std::unique_ptr<loader::HostServices> services_;
  std::unique_ptr<loader::LedgerAdapter> ledger_sql_;
  UnreachableSource source_;
  IntakeCounters counters_;
  std::unique_ptr<ScaleSetListener> listener_;
};

// J3: the node's inventory ends the quarantined lease failed while the
// settler destroys its runner; the settled lease carries GitHub's result.
TEST_F(IntakeSettleTest, J3_ACompletionIsSettledOnlyOnceItsLeaseEndsWithGithubsResult) {
  constexpr int64_t kRequest = 4242;
  // n1 runs the job: in the ledger, and in the plane, which took its launch.
  auto epoch = ledger_sql_->RegisterNode(ports::NodeRegistration{"n1", "docker", "", "i1", "", 8, 32 * kGiB, 1});
  ASSERT_TRUE(epoch.ok()) << epoch.status().ToString();
  auto escrowed = ledger_sql_->EscrowForLaunch("small", 0, kRequest);
  ASSERT_TRUE(escrowed.ok() && escrowed->has_value()) << escrowed.status().ToString();
  const ports::Lease lease = (*escrowed)->lease;
  ASSERT_TRUE(ledger_sql_->Bind(lease.id, lease.epoch, "n1", "i1").ok());
  for (ports::Phase p : {ports::Phase::kLaunching, ports::Phase::kOnline, ports::Phase::kBusy}) {
    ASSERT_TRUE(ledger_sql_->Advance(lease.id, lease.epoch, p, "i1").ok());
  }
  Reg("n1");
  auto launch = LaunchAsync(Lease(lease.id, "n1"), kRequest);
  WaitQueued("n1", 1);
  ASSERT_TRUE(Answer("n1", Take("n1"), true).ok());
  ASSERT_TRUE(launch.get().ok());
  // It expired while n1 could not heartbeat it (a takeover): quarantined.
  now_ += 10 * kS;
  ASSERT_TRUE(ledger_sql_->Reap().ok());
  ASSERT_EQ(ledger_sql_->GetLease(lease.id)->phase, ports::Phase::kQuarantine);
  // GitHub says its job succeeded; the journal owes the completion.
  ports::ForgeJob job;
  job.tier = "small";
  job.job_id = "job-1";
  job.runner_name = "np-" + lease.id;
  job.lease_id = lease.id;
  job.started_at_ns = now_ - 5 * kS;
  job.completed_at_ns = now_;
  job.result = "succeeded";
  ASSERT_TRUE(ledger_sql_->RecordForgeJob(job).ok());

  ScaleSetTier tier;
  tier.tier = "small";
  tier.target = "acme";
  tier.scale_set = "np-small";
  tier.max_runners = 4;
  ListenerTiming timing;
  timing.settle_retry = std::chrono::milliseconds(10);
  listener_ = std::make_unique<ScaleSetListener>(tier, "test", source_, *ledger_sql_, plane_->runner(), log_, nullptr,
                                                 counters_, timing);
  // The settler destroys through n1; n1's inventory, which no longer lists
  // the runner, ends the quarantined lease first.
  WaitQueued("n1", 1);
  plane::Command destroy = Take("n1");
  ASSERT_EQ(destroy.kind, plane::CommandKind::kDestroy);
  now_ += 10 * kMinute;  // past the quarantine's grace
  auto freed = ledger_sql_->ResolveQuarantineFor("n1", {}, *epoch);
  ASSERT_TRUE(freed.ok() && *freed == 1) << freed.status().ToString();
  ASSERT_TRUE(Answer("n1", destroy, true).ok());

  ASSERT_TRUE(AllSettled());
  auto ended = ledger_sql_->JobForLease(lease.id);
  ASSERT_TRUE(ended.ok() && ended->has_value()) << ended.status().ToString();
  EXPECT_EQ((*ended)->conclusion, ports::Phase::kDone) << "settled over the inventory's verdict";
}

}  // namespace
}  // namespace nodeplane::jobs
