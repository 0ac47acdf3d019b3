// The job intake's listener under test (host/jobs/scale_set_listener.h): the
// unit tests' Plane (a fake clock and registrar; the test plays the nodes),
// the real SQLite ledger on a clock of the test's own, and a scripted job
// source that behaves as GitHub's message queue does: a message stays until
// it is acknowledged and comes back to the next poll after lastMessageId;
// an empty poll answers nothing at once.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "common/units.h"
#include "jobs/scale_set_listener.h"
#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_library.h"
#include "plane_fixture.h"

namespace nodeplane::jobs {

using plane::kGiB;
using plane::kS;

// A job entry as GitHub's message carries it.
inline ports::QueuedJob Entry(ports::JobEvent kind, const std::string& job_id, const std::string& runner = "",
                              const std::string& result = "") {
  ports::QueuedJob j;
  j.kind = kind;
  j.job_id = job_id;
  j.owner = "acme";
  j.repository = "widgets";
  j.runner_name = runner;
  j.result = result;
  return j;
}

class ScriptedSource : public ports::JobSource {
 public:
  static constexpr int64_t kScaleSetId = 7;

  // Queues a message (its id the next) with `assigned` as GitHub's count.
  int64_t Deliver(std::vector<ports::QueuedJob> jobs, int64_t assigned) {
    std::lock_guard lock(mu_);
    ports::QueueMessage m;
    m.id = next_id_++;
    m.statistics.assigned = assigned;
    m.jobs = std::move(jobs);
    queue_.push_back(m);
    cv_.notify_all();
    return m.id;
  }
  // Waits (bounded) until message `id` has been acknowledged.
  bool AwaitAcked(int64_t id) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return acked_.count(id) != 0; });
  }
  bool Acked(int64_t id) {
    std::lock_guard lock(mu_);
    return acked_.count(id) != 0;
  }
  // Waits (bounded) until the listener has asked for messages `n` times.
  bool AwaitPolls(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return polls_ >= n; });
  }
  int polls() {
    std::lock_guard lock(mu_);
    return polls_;
  }

  std::function<Result<std::vector<int64_t>>(const std::vector<int64_t>&)> acquire;  // default: grant all
  std::function<Status(const std::string&)> remove_runner;                             // default: Ok
  std::vector<std::vector<int64_t>> acquired;  // guarded by mu(): every Acquire's ids
  std::vector<std::string> removed;            // guarded by mu(): every RemoveRunner's name
  std::vector<ports::ForgeRunner> listed;       // guarded by mu(): what ListRunners answers
  std::mutex& mu() { return mu_; }

  Result<ports::ScaleSet> EnsureScaleSet(const std::string& name, const std::string&,
                                         const std::vector<std::string>& labels) override {
    std::lock_guard lock(mu_);
    ++ensured_;
    return ports::ScaleSet{scale_set_id_, name, 1, labels};
  }
  Result<uint64_t> OpenSession(int64_t id, const std::string&, ports::QueueStatistics* stats) override {
    std::lock_guard lock(mu_);
    if (id != scale_set_id_) return Status::NotFound("scale set " + std::to_string(id) + " no longer exists");
    if (stats != nullptr) *stats = session_stats_;
    return ++sessions_;
  }
  // GitHub drops the session (the next poll answers it gone) and, with
  // `deleted`, the scale set, which is created again with another id.
  void DropSession(bool deleted) {
    std::lock_guard lock(mu_);
    session_gone_ = true;
    if (deleted) ++scale_set_id_;
    cv_.notify_all();
  }
  int sessions() {
    std::lock_guard lock(mu_);
    return static_cast<int>(sessions_);
  }
  int ensured() {
    std::lock_guard lock(mu_);
    return ensured_;
  }
  // Queues a message GitHub's client could not decode.
  int64_t DeliverUndecodable() {
    std::lock_guard lock(mu_);
    ports::QueueMessage m;
    m.id = next_id_++;
    m.decode_error = "the message body is not a JSON array";
    queue_.push_back(m);
    cv_.notify_all();
    return m.id;
  }
  void SetSessionStatistics(int64_t assigned) {
    std::lock_guard lock(mu_);
    session_stats_.assigned = assigned;
  }
  // GitHub's queue: the first unacknowledged message after `last`; nothing
  // (an empty poll) once the listener has seen every message.
  Result<std::optional<ports::QueueMessage>> NextMessage(uint64_t, int64_t last, int64_t, Nanos) override {
    std::unique_lock lock(mu_);
    ++polls_;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::milliseconds(20),
                 [&] { return Pending(last) != nullptr || cancelled_ || session_gone_; });
    if (cancelled_) return Status::Unavailable("cancelled");
    if (session_gone_) {
      session_gone_ = false;
      return Status::NotFound("the message session is gone");
    }
    if (const ports::QueueMessage* m = Pending(last)) return std::optional<ports::QueueMessage>(*m);
    return std::optional<ports::QueueMessage>();
  }
  Status Acknowledge(uint64_t, int64_t id) override {
    std::lock_guard lock(mu_);
    acked_.insert(id);
    cv_.notify_all();
    return Status::Ok();
  }
  Result<std::vector<int64_t>> Acquire(uint64_t, const std::vector<int64_t>& ids) override {
    {
      std::lock_guard lock(mu_);
      acquired.push_back(ids);
    }
    return acquire ? acquire(ids) : Result<std::vector<int64_t>>(ids);
  }
  Result<ports::JitRegistration> ScaleSetJit(int64_t, const std::string& name, const std::string&) override {
    return ports::JitRegistration{1, name, "config"};
  }
  Status RemoveRunner(int64_t, const std::string& name, int64_t) override {
    {
      std::lock_guard lock(mu_);
      removed.push_back(name);
    }
    Status s = remove_runner ? remove_runner(name) : Status::Ok();
    if (s.ok()) {  // GitHub lists it no more
      std::lock_guard lock(mu_);
      std::erase_if(listed, [&](const ports::ForgeRunner& r) { return r.name == name; });
    }
    return s;
  }
  Result<std::vector<ports::ForgeRunner>> ListRunners(int64_t, int64_t) override {
    std::lock_guard lock(mu_);
    return listed;
  }
  Status CloseSession(uint64_t) override { return Status::Ok(); }
  void Cancel(uint64_t) override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  std::optional<RateLimit> RateLimitLeft() override { return std::nullopt; }

 private:
  const ports::QueueMessage* Pending(int64_t last) const {
    for (const ports::QueueMessage& m : queue_) {
      if (m.id > last && acked_.count(m.id) == 0) return &m;
    }
    return nullptr;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ports::QueueMessage> queue_;
  std::set<int64_t> acked_;
  int64_t next_id_ = 1;
  uint64_t sessions_ = 0;
  int polls_ = 0, ensured_ = 0;
  int64_t scale_set_id_ = kScaleSetId;
  bool cancelled_ = false, session_gone_ = false;
  ports::QueueStatistics session_stats_;
};

class IntakeFixture : public plane::PlaneTest {
 protected:
  void SetUp() override {
    PlaneTest::SetUp();
    std::string tmpl = ::testing::TempDir() + "/np-intake-XXXXXX";
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

  // Node `name` (8 vCPUs) in the ledger and in the plane; its ledger epoch.
  int64_t Node(const std::string& name) {
    auto epoch = ledger_sql_->RegisterNode(ports::NodeRegistration{name, "docker", "", "i1", "", 8, 32 * kGiB, 1});
    EXPECT_TRUE(epoch.ok()) << epoch.status().ToString();
    Reg(name);
    return epoch.ok() ? *epoch : 0;
  }
  ScaleSetTier Tier(int64_t max_runners = 4) {
    ScaleSetTier t;
    t.tier = "small";
    t.target = "acme";
    t.scale_set = "np-small";
    t.max_runners = max_runners;
    return t;
  }
  void Listen(ScaleSetTier tier, ports::JobSource& source) {
    ListenerTiming timing;
    timing.settle_retry = std::chrono::milliseconds(10);
    timing.retry_min = std::chrono::milliseconds(10);
    timing.retry_max = std::chrono::milliseconds(50);
    timing.reconcile = std::chrono::milliseconds(20);
    timing.ghost_grace = Nanos(0);
    listener_ = std::make_unique<ScaleSetListener>(tier, "test", source, *ledger_sql_, plane_->runner(), log_, nullptr,
                                                   counters_, timing);
  }
  // Waits, bounded, until `n` commands are queued to `node`.
  bool AwaitQueued(const std::string& node, size_t n) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (plane::PlaneTestPeer(*plane_).Queued(node) < n) {
      if (std::chrono::steady_clock::now() > limit) return false;
      std::this_thread::yield();
    }
    return true;
  }
  // Plays the node: takes the launch queued to `node`, answers that its
  // runner is up, and moves the lease to busy as the reference node does.
  ports::Lease RunLaunch(const std::string& node) {
    if (!AwaitQueued(node, 1)) {
      ADD_FAILURE() << "no launch was queued to " << node;
      return {};
    }
    plane::Command launch = Take(node);
    EXPECT_EQ(launch.kind, plane::CommandKind::kLaunch);
    if (!launch.lease) return {};
    const ports::Lease lease = *launch.lease;
    EXPECT_TRUE(ledger_sql_->Bind(lease.id, lease.epoch, node, "i1").ok());
    for (ports::Phase p : {ports::Phase::kLaunching, ports::Phase::kOnline, ports::Phase::kBusy}) {
      EXPECT_TRUE(ledger_sql_->Advance(lease.id, lease.epoch, p, "i1").ok());
    }
    EXPECT_TRUE(Answer(node, launch, true).ok());
    return lease;
  }
  // Waits, bounded, until the settler has made `n` more passes over the
  // journal, or a command is queued to `node` meanwhile (a settling destroy
  // holds the settler until the node answers it); false when neither came.
  bool AwaitSettlePasses(uint64_t n, const std::string& node) {
    const uint64_t target = counters_.settle_passes.load() + n;
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (counters_.settle_passes.load() < target && plane::PlaneTestPeer(*plane_).Queued(node) == 0) {
      if (std::chrono::steady_clock::now() > limit) return false;
      std::this_thread::yield();
    }
    return true;
  }
  // Waits, bounded, until `pred` holds.
  template <typename Pred>
  bool Eventually(Pred pred) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > limit) return false;
      std::this_thread::yield();
    }
    return true;
  }
  bool Deregistered(const std::string& lease) {
    auto l = ledger_sql_->GetLease(lease);
    return l.ok() && l->deregistered;
  }
  std::vector<ports::Lease> OpenLeases() {
    auto open = ledger_sql_->ListLeases("");
    EXPECT_TRUE(open.ok()) << open.status().ToString();
    return open.ok() ? *open : std::vector<ports::Lease>{};
  }

  std::string dir_;
  // The ledger's clock: the wall clock at the start (the listener reads the
  // wall clock too), moved on by the tests that need a lease to expire.
  std::atomic<int64_t> now_{WallNowNs()};
  std::unique_ptr<loader::HostServices> services_;
  std::unique_ptr<loader::LedgerAdapter> ledger_sql_;
  IntakeCounters counters_;
  ScriptedSource source_;  // declared before the listener, which uses it until it is destroyed
  std::unique_ptr<ScaleSetListener> listener_;
};

}  // namespace nodeplane::jobs
