// The ledger conformance suite's fixture: one fresh plugin instance per test,
// loaded through the host's own loader and ABI negotiation, on a fake clock
// and a fresh state directory.
//
// The plugin and its config come from the command line (see
// ledger_conformance_main.cpp), so a third party runs the same suite on their
// own ledger plugin.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_call.h"
#include "loader/plugin_library.h"
#include "nodeplane/np_ledger_v1.h"

namespace nodeplane::conformance {

struct Options {
  std::string plugin;  // path to the .so
  // The instance's config JSON; "{state}" is replaced by the test's fresh
  // state directory, "{test}" by a name unique to the test (a schema name).
  std::string config = "{}";
};
Options& GlobalOptions();

using ports::Phase;
inline constexpr int64_t kSecond = 1'000'000'000;
inline constexpr int64_t kMinute = 60 * kSecond;
inline constexpr int64_t kGiB = 1LL << 30;
inline constexpr int64_t kTTL = 90 * kSecond;

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // A second instance of the plugin on the same state (another process's view).
  std::unique_ptr<loader::LedgerAdapter> OpenAnother();

  // The clock every plugin call reads.
  int64_t Now() const { return clock_.load(); }
  void Advance(int64_t ns) { clock_ += ns; }

  // The default catalogue: small (2 vCPU, 4 GiB, docker), multi (firecracker
  // then docker), mac (4 vCPU, 8 GiB, tart, macOS); TTL 90 s; no ceilings.
  static ports::Catalog DefaultCatalog();
  void UseCatalog(const ports::Catalog& c);

  int64_t Register(const std::string& name, const std::string& provider = "docker", int64_t vcpu = 8,
                   int64_t memory = 32 * kGiB, const std::string& site = "", const std::string& incarnation = "");
  std::vector<ports::Lease> Escrow(const std::string& tier, int32_t want);
  ports::Lease EscrowOne(const std::string& tier = "small");
  // Escrow, assign, bind to the escrowed node and advance to `phase`.
  ports::Lease Running(const std::string& tier = "small", Phase phase = Phase::kBusy);
  ports::Lease Get(const std::string& id);

  std::string dir_;
  std::string test_name_;
  Logger log_{LogLevel::kError};
  std::atomic<int64_t> clock_{1'800'000'000LL * kSecond};
  std::unique_ptr<loader::HostServices> host_;
  std::shared_ptr<const loader::PluginLibrary> lib_;
  std::unique_ptr<loader::LedgerAdapter> ledger_;
  ports::Catalog catalog_;
  int64_t next_request_ = 200;  // Running()'s request ids
};

// Asserts a Status carries the plugin's exact code: the Status code and the
// verdict the loader reads it as.
#define EXPECT_NP(status_expr, np_code_value)                                                          \
  do {                                                                                                 \
    ::nodeplane::Status np_s_ = (status_expr);                                                         \
    EXPECT_EQ(np_s_.code(), ::nodeplane::loader::CodeOf(np_code_value)) << #status_expr << " -> " << np_s_.ToString(); \
    EXPECT_TRUE(::nodeplane::ports::Is(np_s_, ::nodeplane::loader::VerdictOf(np_code_value)))           \
        << #status_expr << " -> " << np_s_.ToString();                                                 \
  } while (0)

#define ASSERT_OK(status_expr)                                  \
  do {                                                          \
    ::nodeplane::Status np_s_ = (status_expr);                  \
    ASSERT_TRUE(np_s_.ok()) << #status_expr << " -> " << np_s_.ToString(); \
  } while (0)

}  // namespace nodeplane::conformance
