// The ledger's call model (np_ledger_v1.call_model), and the slot appended
// after it (escrow_for_launch), against real compiled plugins: the SQLite
// ledger behind a C shim (tests/plugins/test_ledger_shim.c) that logs,
// through the host, on the thread each call arrives on. NP_CALLS_ANY_THREAD is called on the caller's thread; a plugin
// that answers NP_CALLS_OWN_POOL, or was built before the slot existed, is
// called on its instance's pool, whatever lies past the vtable it declared.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_library.h"

namespace nodeplane::loader {
namespace {

// The threads the shim's get_lease ran on, in order.
std::mutex calls_mu;
std::vector<std::thread::id> call_threads;

void RecordCall(void*, int32_t, const char* event, const char* const*, const char* const*, uint32_t) {
  if (std::strcmp(event, "test_ledger.call") != 0) return;
  std::lock_guard lock(calls_mu);
  call_threads.push_back(std::this_thread::get_id());
}

class LedgerCallModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-call-model-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    services_ = std::make_unique<HostServices>(log_, dir_);
    host_ = *services_->c();
    host_.log = &RecordCall;  // ctx stays the services', for the clocks
    std::lock_guard lock(calls_mu);
    call_threads.clear();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<LedgerAdapter> Open(const std::string& plugin) {
    auto lib = PluginLibrary::Open(plugin, TEST_PLUGIN_DIR, &host_);
    EXPECT_TRUE(lib.ok()) << lib.status().ToString();
    if (!lib.ok()) return nullptr;
    auto ledger = LedgerAdapter::Create(*lib, "ledger", R"({"path": "ledger.db"})", &host_, false);
    EXPECT_TRUE(ledger.ok()) << ledger.status().ToString();
    return ledger.ok() ? std::move(*ledger) : nullptr;
  }

  // The thread get_lease ran on when this thread asked.
  static std::thread::id ThreadOfOneCall(LedgerAdapter& ledger) {
    auto lease = ledger.GetLease("no-such-lease");
    EXPECT_FALSE(lease.ok());  // the store answered: not found
    std::lock_guard lock(calls_mu);
    EXPECT_EQ(call_threads.size(), 1u);
    return call_threads.empty() ? std::thread::id() : call_threads.back();
  }

  std::string dir_;
  Logger log_{LogLevel::kError};
  std::unique_ptr<HostServices> services_;
  np_host_v1 host_{};
};

TEST_F(LedgerCallModelTest, AnyThreadIsCalledOnTheCallersThread) {
  auto ledger = Open("test-ledger-any-thread");
  ASSERT_NE(ledger, nullptr);
  EXPECT_TRUE(ledger->calls_on_caller_thread());
  const auto before = ledger->call_latency().Take();
  EXPECT_EQ(ThreadOfOneCall(*ledger), std::this_thread::get_id());
  EXPECT_EQ(ledger->call_latency().Take().count, before.count + 1);  // still timed for the metrics
}

TEST_F(LedgerCallModelTest, OwnPoolIsCalledOnTheInstancesPool) {
  auto ledger = Open("test-ledger-own-pool");
  ASSERT_NE(ledger, nullptr);
  EXPECT_FALSE(ledger->calls_on_caller_thread());
  EXPECT_NE(ThreadOfOneCall(*ledger), std::this_thread::get_id());
}

// Built before the slot: its vtable_size ends before call_model, and the
// bytes past it (which say NP_CALLS_ANY_THREAD) are not read.
TEST_F(LedgerCallModelTest, APluginBuiltBeforeTheSlotKeepsItsPool) {
  auto ledger = Open("test-ledger-legacy");
  ASSERT_NE(ledger, nullptr);
  EXPECT_FALSE(ledger->calls_on_caller_thread());
  EXPECT_NE(ThreadOfOneCall(*ledger), std::this_thread::get_id());
}

// escrow_for_launch, appended after call_model: a plugin built before it is
// never asked (the host makes the launch's three writes itself), whatever
// the bytes past its declared vtable say; a plugin that offers it is.
TEST_F(LedgerCallModelTest, EscrowForLaunchIsAskedOnlyOfAPluginThatDeclaresIt) {
  auto legacy = Open("test-ledger-legacy");
  ASSERT_NE(legacy, nullptr);
  auto refused = legacy->EscrowForLaunch("small", 1, 1);
  EXPECT_TRUE(ports::Is(refused.status(), ports::Verdict::kUnsupported)) << refused.status().ToString();
  auto current = Open("test-ledger-any-thread");
  ASSERT_NE(current, nullptr);
  auto asked = current->EscrowForLaunch("small", 1, 1);  // no catalogue installed: the store's own refusal
  EXPECT_TRUE(ports::Is(asked.status(), ports::Verdict::kUnknownTier)) << asked.status().ToString();
}

// The shipped SQL ledgers answer NP_CALLS_ANY_THREAD (plugins/ledger-sql/
// ledger_vtable.cpp): the SQLite one here, and PostgreSQL's shares the vtable.
TEST_F(LedgerCallModelTest, TheSqliteLedgerTakesCallsFromAnyThread) {
  auto lib = PluginLibrary::Open(std::string(PLUGIN_DIR) + "/ledger-sqlite.so", "", &host_);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  auto ledger = LedgerAdapter::Create(*lib, "ledger", R"({"path": "ledger.db"})", &host_, false);
  ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
  EXPECT_TRUE((*ledger)->calls_on_caller_thread());
}

}  // namespace
}  // namespace nodeplane::loader
