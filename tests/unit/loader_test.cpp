// The plugin loader against real compiled plugins (plain C, built by clang):
// negotiation, descriptor lookup, required slots, config refusal, file
// checks, and calls through the adapter's thread pool.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "loader/cache_policy_adapter.h"
#include "loader/host_services.h"
#include "loader/plugin_call.h"
#include "loader/plugin_library.h"

namespace nodeplane::loader {
namespace {

const std::string kDir = TEST_PLUGIN_DIR;

class LoaderTest : public ::testing::Test {
 protected:
  LoaderTest() : log_file_(std::tmpfile()), log_(LogLevel::kDebug, LogFormat::kLogfmt, log_file_), host_(log_, ::testing::TempDir()) {}
  ~LoaderTest() override { std::fclose(log_file_); }

  std::string LogText() {
    std::fflush(log_file_);
    std::rewind(log_file_);
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof buf, log_file_) != nullptr) out += buf;
    return out;
  }

  std::FILE* log_file_;
  Logger log_;
  HostServices host_;
};

TEST_F(LoaderTest, LoadsACPluginBuiltWithClangAndCallsIt) {
  auto lib = PluginLibrary::Open(kDir + "/test-cache-policy.so", "/unused", host_.c());
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ((*lib)->name(), "test-cache-policy");
  EXPECT_EQ((*lib)->version(), "0.0.1");
  EXPECT_EQ((*lib)->abi(), 1u);
  auto policy = CachePolicyAdapter::Create(*lib, "cache", R"({"deny_owner":"evil"})", host_.c(), false);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  ASSERT_NE(*policy, nullptr);
  auto allowed = (*policy)->ActionsCacheAllowed("acme", "app");
  ASSERT_TRUE(allowed.ok());
  EXPECT_TRUE(*allowed);
  allowed = (*policy)->ActionsCacheAllowed("evil", "app");
  ASSERT_TRUE(allowed.ok());
  EXPECT_FALSE(*allowed);
  // The plugin's log event arrived through the host, prefixed as a plugin's.
  EXPECT_NE(LogText().find("event=plugin.test_cache_policy.create plugin.validate_only=false"), std::string::npos)
      << LogText();
}

// A plugin compiled (by clang) against the frozen v1.0 headers, whose vtable
// predates the optional describe slot, still loads and works; the slot it
// does not have is absent, never read past the size it declared.
TEST_F(LoaderTest, APluginBuiltAgainstAnOlderHeaderStillLoads) {
  auto lib = PluginLibrary::Open("test-cache-policy-frozen", kDir, host_.c());
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  auto policy = CachePolicyAdapter::Create(*lib, "cache", R"({"deny_owner":"evil"})", host_.c(), false);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_FALSE(*(*policy)->ActionsCacheAllowed("evil", "r"));
  EXPECT_TRUE(*(*policy)->ActionsCacheAllowed("acme", "r"));
  auto described = (*policy)->Describe();
  ASSERT_FALSE(described.ok());
  EXPECT_NE(described.status().message().find("does not describe itself"), std::string::npos);

  auto current = PluginLibrary::Open("test-cache-policy", kDir, host_.c());
  ASSERT_TRUE(current.ok());
  auto newer = CachePolicyAdapter::Create(*current, "cache", R"({"deny_owner":"evil"})", host_.c(), false);
  ASSERT_TRUE(newer.ok());
  auto line = (*newer)->Describe();
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(*line, "deny one owner");
}

TEST_F(LoaderTest, ResolvesAShortNameInThePluginDirectory) {
  EXPECT_EQ(ResolveLibraryPath("ledger-sqlite", "/usr/lib/np"), "/usr/lib/np/ledger-sqlite.so");
  EXPECT_EQ(ResolveLibraryPath("/opt/x.so", "/usr/lib/np"), "/opt/x.so");
  auto lib = PluginLibrary::Open("test-cache-policy", kDir, host_.c());
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
}

TEST_F(LoaderTest, ValidateOnlyCreatesNoInstance) {
  auto lib = PluginLibrary::Open("test-cache-policy", kDir, host_.c());
  ASSERT_TRUE(lib.ok());
  auto policy = CachePolicyAdapter::Create(*lib, "cache", "{}", host_.c(), true);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_EQ(*policy, nullptr);
  EXPECT_NE(LogText().find("plugin.validate_only=true"), std::string::npos);
}

TEST_F(LoaderTest, AMissingFileIsNamed) {
  auto lib = PluginLibrary::Open("no-such-plugin", kDir, host_.c());
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), Code::kNotFound);
  EXPECT_NE(lib.status().message().find(kDir + "/no-such-plugin.so does not exist"), std::string::npos)
      << lib.status().message();
}

TEST_F(LoaderTest, ALibraryWithoutTheEntryPointIsNotAPlugin) {
  auto lib = PluginLibrary::Open("not-a-plugin", kDir, host_.c());
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("is not a nodeplane plugin: it does not export np_plugin_entry"),
            std::string::npos)
      << lib.status().message();
}

TEST_F(LoaderTest, DisjointABIRangesAreRefusedWithBothSides) {
  auto lib = PluginLibrary::Open("test-cache-policy-abi7", kDir, host_.c());
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), Code::kRefused);
  EXPECT_NE(lib.status().message().find("supports no plugin ABI this host offers (1..1)"), std::string::npos)
      << lib.status().message();
  EXPECT_NE(lib.status().message().find("built for other ABI versions"), std::string::npos);
}

TEST_F(LoaderTest, AnInterfaceNotProvidedSaysWhatIs) {
  auto lib = PluginLibrary::Open("test-cache-policy", kDir, host_.c());
  ASSERT_TRUE(lib.ok());
  auto d = (*lib)->Find("nodeplane.ledger", 1);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("does not provide nodeplane.ledger v1 (it provides: nodeplane.cache_policy v1)"),
            std::string::npos)
      << d.status().message();
  EXPECT_FALSE((*lib)->Find("nodeplane.cache_policy", 2).ok());
}

TEST_F(LoaderTest, AMissingRequiredSlotIsNamed) {
  auto lib = PluginLibrary::Open("test-cache-policy-noslot", kDir, host_.c());
  ASSERT_TRUE(lib.ok());
  auto policy = CachePolicyAdapter::Create(*lib, "cache", "{}", host_.c(), false);
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().code(), Code::kInvalid);
  EXPECT_NE(policy.status().message().find("lacks the required function actions_cache_allowed"), std::string::npos)
      << policy.status().message();
}

TEST_F(LoaderTest, APluginRefusingItsConfigIsReportedWithItsMessage) {
  auto lib = PluginLibrary::Open("test-cache-policy", kDir, host_.c());
  ASSERT_TRUE(lib.ok());
  for (bool validate_only : {true, false}) {
    auto policy = CachePolicyAdapter::Create(*lib, "cache", R"({"bogus": 1})", host_.c(), validate_only);
    ASSERT_FALSE(policy.ok());
    EXPECT_EQ(policy.status().code(), Code::kInvalid);
    EXPECT_NE(policy.status().message().find("plugin instance \"cache\""), std::string::npos);
    EXPECT_NE(policy.status().message().find("unknown key \"bogus\" in the cache policy config"), std::string::npos)
        << policy.status().message();
  }
}

TEST_F(LoaderTest, AGroupWritableLibraryIsRefused) {
  std::string copy = ::testing::TempDir() + "/writable-plugin.so";
  std::filesystem::copy_file(kDir + "/test-cache-policy.so", copy,
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_EQ(::chmod(copy.c_str(), 0775), 0);
  auto lib = PluginLibrary::Open(copy, "", host_.c());
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), Code::kRefused);
  EXPECT_NE(lib.status().message().find("writable by group or others"), std::string::npos);
  ASSERT_EQ(::chmod(copy.c_str(), 0755), 0);
  EXPECT_TRUE(PluginLibrary::Open(copy, "", host_.c()).ok());
}

TEST_F(LoaderTest, ConcurrentCallsRunOnThePool) {
  auto lib = PluginLibrary::Open("test-cache-policy", kDir, host_.c());
  ASSERT_TRUE(lib.ok());
  auto policy = CachePolicyAdapter::Create(*lib, "cache", R"({"deny_owner":"evil"})", host_.c(), false);
  ASSERT_TRUE(policy.ok());
  std::atomic<int> allowed{0}, denied{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto r = (*policy)->ActionsCacheAllowed((i + t) % 2 ? "acme" : "evil", "r");
        ASSERT_TRUE(r.ok());
        (*r ? allowed : denied)++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(allowed.load(), 800);
  EXPECT_EQ(denied.load(), 800);
}

// Every ABI code that names a reason reaches the host as a verdict of its
// own; one that only repeats its Status code (or a code this host does not
// know) carries none, and its Status says it all.
TEST(VerdictOf, EachReasonCodeHasAVerdictOfItsOwn) {
  std::set<ports::Verdict> seen;
  for (np_code rc = NP_OK; rc <= NP_DEREGISTERED; ++rc) {
    const ports::Verdict v = VerdictOf(rc);
    const bool plain = rc == NP_OK || rc == NP_INVALID || rc == NP_UNAVAILABLE || rc == NP_REFUSED || rc == NP_INTERNAL;
    if (plain) {
      EXPECT_EQ(v, ports::Verdict::kNone) << rc;
    } else {
      EXPECT_NE(v, ports::Verdict::kNone) << rc;
      EXPECT_TRUE(seen.insert(v).second) << rc << " shares its verdict";
    }
  }
  EXPECT_EQ(VerdictOf(999), ports::Verdict::kNone);
  EXPECT_TRUE(ports::Is(PluginError().ToStatus(NP_FORCE_RELEASE, "p"), ports::Verdict::kForceRelease));
  EXPECT_TRUE(ports::Is(PluginError().ToStatus(NP_DEREGISTERED, "p"), ports::Verdict::kDeregistered));
}

}  // namespace
}  // namespace nodeplane::loader

namespace nodeplane::loader {
namespace {

// A vtable as a newer header might have it: one optional slot appended.
struct NewerVtable {
  uint32_t struct_size;
  np_code (*create)(const np_host_v1*, const char*, size_t, uint32_t, void**, np_error*);
  void (*destroy)(void*);
  np_code (*required_op)(void*);
  np_code (*optional_op_added_later)(void*);
};

np_code Op(void*) { return NP_OK; }
np_code Create(const np_host_v1*, const char*, size_t, uint32_t, void**, np_error*) { return NP_OK; }
void Destroy(void*) {}

// What a plugin built against the older header ships: the same vtable
// without the appended slot, and vtable_size saying so. Bytes past it (here
// a non-null pointer) must never be read.
TEST(CopyVtable, AnOlderPluginsMissingOptionalSlotsAreAbsent) {
  NewerVtable plugin_side{sizeof(NewerVtable), &Create, &Destroy, &Op, &Op};
  np_interface_desc desc{sizeof desc, "nodeplane.test", 1, "old", &plugin_side,
                         static_cast<uint32_t>(offsetof(NewerVtable, optional_op_added_later))};
  auto vt = CopyVtable<NewerVtable>(desc, "old.so",
                                    {{offsetof(NewerVtable, required_op), "required_op"}});
  ASSERT_TRUE(vt.ok()) << vt.status().ToString();
  EXPECT_EQ(vt->required_op, &Op);
  EXPECT_EQ(vt->optional_op_added_later, nullptr);
  EXPECT_EQ(vt->struct_size, offsetof(NewerVtable, optional_op_added_later));
}

TEST(CopyVtable, ARequiredSlotBeyondTheDeclaredSizeIsMissing) {
  NewerVtable plugin_side{sizeof(NewerVtable), &Create, &Destroy, &Op, &Op};
  np_interface_desc desc{sizeof desc, "nodeplane.test", 1, "old", &plugin_side,
                         static_cast<uint32_t>(offsetof(NewerVtable, required_op))};
  auto vt = CopyVtable<NewerVtable>(desc, "old.so", {{offsetof(NewerVtable, required_op), "required_op"}});
  ASSERT_FALSE(vt.ok());
  EXPECT_NE(vt.status().message().find("old.so: interface nodeplane.test lacks the required function required_op"),
            std::string::npos);
}

}  // namespace
}  // namespace nodeplane::loader
