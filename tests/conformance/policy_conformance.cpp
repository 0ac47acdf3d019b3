// policy-conformance: the contracts of the two small plugin interfaces, run
// against any plugin through the host's own loader and adapters.
//
//   policy-conformance --interface revocation --plugin X.so --config JSON
//                      --revoked CERT.pem... --good CERT.pem...
//   policy-conformance --interface cache_policy --plugin X.so --config JSON
//                      --allowed OWNER/REPO... --denied OWNER/REPO...
//
// The caller sets the plugin up (a CRL revoking some certificates, rules
// denying some repositories) and says what it expects; the suite checks the
// answers, their agreement under concurrency, validate-only creation and the
// refusal of a bad config.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "loader/cache_policy_adapter.h"
#include "loader/host_services.h"
#include "loader/plugin_library.h"
#include "loader/revocation_adapter.h"
#include "pki/authority.h"

namespace nodeplane::conformance {
namespace {

struct Options {
  std::string interface, plugin, config;
  std::vector<std::string> revoked, good, allowed, denied;
};
Options& Opt() {
  static Options o;
  return o;
}

ports::CertIdentity IdentityOf(const std::string& pem_file) {
  std::ifstream in(pem_file);
  std::stringstream ss;
  ss << in.rdbuf();
  auto info = pki::InspectCert(ss.str());
  EXPECT_TRUE(info.ok()) << pem_file;
  if (!info.ok()) return {};
  return {info->serial, info->issuer_sha256, info->common_name, info->not_before_ns};
}

std::pair<std::string, std::string> Repo(const std::string& s) {
  size_t slash = s.find('/');
  return {s.substr(0, slash), slash == std::string::npos ? "" : s.substr(slash + 1)};
}

class PolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = std::make_unique<loader::HostServices>(log_, ::testing::TempDir());
    auto lib = loader::PluginLibrary::Open(Opt().plugin, "", host_->c());
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    lib_ = *lib;
  }
  bool Is(const char* interface) const { return Opt().interface == interface; }

  Logger log_{LogLevel::kError};
  std::unique_ptr<loader::HostServices> host_;
  std::shared_ptr<const loader::PluginLibrary> lib_;
};

TEST_F(PolicyTest, ValidateOnlyCreatesNoInstance) {
  if (Is("revocation")) {
    auto r = loader::RevocationAdapter::Create(lib_, "t", Opt().config, host_->c(), true);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, nullptr);
  } else {
    auto r = loader::CachePolicyAdapter::Create(lib_, "t", Opt().config, host_->c(), true);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, nullptr);
  }
}

TEST_F(PolicyTest, AnUnknownConfigKeyIsRefusedWithAMessage) {
  // The caller's good config with one key no plugin knows.
  std::string bad = Opt().config;
  bad.insert(bad.rfind('}'), R"(, "no_such_key_in_any_plugin": 1)");
  Status s = Is("revocation") ? loader::RevocationAdapter::Create(lib_, "t", bad, host_->c(), true).status()
                              : loader::CachePolicyAdapter::Create(lib_, "t", bad, host_->c(), true).status();
  EXPECT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_NE(s.message().find("no_such_key_in_any_plugin"), std::string::npos) << s.message();
}

TEST_F(PolicyTest, EachAnswerIsTheOneExpected) {
  if (Is("revocation")) {
    auto r = loader::RevocationAdapter::Create(lib_, "t", Opt().config, host_->c(), false);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (const auto& f : Opt().revoked) {
      auto v = (*r)->IsRevoked(IdentityOf(f));
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      EXPECT_TRUE(*v) << f << " should be revoked";
    }
    for (const auto& f : Opt().good) {
      auto v = (*r)->IsRevoked(IdentityOf(f));
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      EXPECT_FALSE(*v) << f << " should not be revoked";
    }
  } else {
    auto c = loader::CachePolicyAdapter::Create(lib_, "t", Opt().config, host_->c(), false);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (const auto& s : Opt().allowed) {
      auto [owner, repo] = Repo(s);
      auto v = (*c)->ActionsCacheAllowed(owner, repo);
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      EXPECT_TRUE(*v) << s << " should be allowed";
    }
    for (const auto& s : Opt().denied) {
      auto [owner, repo] = Repo(s);
      auto v = (*c)->ActionsCacheAllowed(owner, repo);
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      EXPECT_FALSE(*v) << s << " should be denied";
    }
    auto d = (*c)->Describe();  // optional slot: when present it says something
    if (d.ok()) {
      EXPECT_FALSE(d->empty());
    }
  }
}

// The interfaces are called concurrently on every request: the answers must
// not change with the number of callers.
TEST_F(PolicyTest, ConcurrentCallersGetTheSameAnswers) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  if (Is("revocation")) {
    auto r = loader::RevocationAdapter::Create(lib_, "t", Opt().config, host_->c(), false);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::pair<ports::CertIdentity, bool>> cases;
    for (const auto& f : Opt().revoked) cases.emplace_back(IdentityOf(f), true);
    for (const auto& f : Opt().good) cases.emplace_back(IdentityOf(f), false);
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 300; ++i) {
          for (const auto& [id, want] : cases) {
            auto v = (*r)->IsRevoked(id);
            if (!v.ok() || *v != want) wrong++;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  } else {
    auto c = loader::CachePolicyAdapter::Create(lib_, "t", Opt().config, host_->c(), false);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 300; ++i) {
          for (const auto& s : Opt().allowed) {
            auto [o, r] = Repo(s);
            auto v = (*c)->ActionsCacheAllowed(o, r);
            if (!v.ok() || !*v) wrong++;
          }
          for (const auto& s : Opt().denied) {
            auto [o, r] = Repo(s);
            auto v = (*c)->ActionsCacheAllowed(o, r);
            if (!v.ok() || *v) wrong++;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace nodeplane::conformance

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto& o = nodeplane::conformance::Opt();
  std::vector<std::string>* list = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--interface" && i + 1 < argc) {
      o.interface = argv[++i];
    } else if (a == "--plugin" && i + 1 < argc) {
      o.plugin = std::filesystem::absolute(argv[++i]).string();
    } else if (a == "--config" && i + 1 < argc) {
      o.config = argv[++i];
    } else if (a == "--revoked") {
      list = &o.revoked;
    } else if (a == "--good") {
      list = &o.good;
    } else if (a == "--allowed") {
      list = &o.allowed;
    } else if (a == "--denied") {
      list = &o.denied;
    } else if (list != nullptr && a.rfind("--", 0) != 0) {
      list->push_back(a);
    } else {
      std::fprintf(stderr, "policy-conformance: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (o.plugin.empty() || (o.interface != "revocation" && o.interface != "cache_policy")) {
    std::fprintf(stderr,
                 "usage: policy-conformance --interface revocation|cache_policy --plugin X.so --config JSON\n"
                 "         [--revoked CERT.pem... --good CERT.pem...] [--allowed O/R... --denied O/R...]\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
