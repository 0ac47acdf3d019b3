#include "ledger_fixture.h"

#include <stdlib.h>

#include <filesystem>

namespace nodeplane::conformance {

Options& GlobalOptions() {
  static Options options;
  return options;
}

namespace {

std::string Substitute(std::string text, const std::string& key, const std::string& value) {
  for (size_t p = text.find(key); p != std::string::npos; p = text.find(key, p + value.size())) {
    text.replace(p, key.size(), value);
  }
  return text;
}

}  // namespace

void LedgerTest::SetUp() {
  std::string tmpl = ::testing::TempDir() + "/np-ledger-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  dir_ = tmpl;
  test_name_ = std::string("t_") + dir_.substr(dir_.size() - 6);
  for (char& c : test_name_) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  host_ = std::make_unique<loader::HostServices>(log_, dir_, [this] { return clock_.load(); });
  auto lib = loader::PluginLibrary::Open(GlobalOptions().plugin, "", host_->c());
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  lib_ = *lib;
  auto ledger = OpenAnother();
  ASSERT_NE(ledger, nullptr);
  ledger_ = std::move(ledger);
  UseCatalog(DefaultCatalog());
}

void LedgerTest::TearDown() {
  ledger_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::unique_ptr<loader::LedgerAdapter> LedgerTest::OpenAnother() {
  std::string config = Substitute(Substitute(GlobalOptions().config, "{state}", dir_), "{test}", test_name_);
  auto ledger = loader::LedgerAdapter::Create(lib_, "conformance", config, host_->c(), false);
  EXPECT_TRUE(ledger.ok()) << ledger.status().ToString();
  if (!ledger.ok()) return nullptr;
  if (!catalog_.tiers.empty()) {
    EXPECT_TRUE((*ledger)->SetCatalog(catalog_).ok());
  }
  return std::move(*ledger);
}

ports::Catalog LedgerTest::DefaultCatalog() {
  ports::Catalog c;
  c.lease_ttl_ns = kTTL;
  c.tiers.push_back({"small", 2, 4 * kGiB, {"docker"}, "linux", "", "", 0, 0});
  c.tiers.push_back({"multi", 2, 4 * kGiB, {"firecracker", "docker"}, "linux", "", "", 0, 0});
  c.tiers.push_back({"mac", 4, 8 * kGiB, {"tart"}, "macos", "", "", 0, 0});
  return c;
}

void LedgerTest::UseCatalog(const ports::Catalog& c) {
  catalog_ = c;
  Status s = ledger_->SetCatalog(c);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

int64_t LedgerTest::Register(const std::string& name, const std::string& provider, int64_t vcpu, int64_t memory,
                             const std::string& site, const std::string& incarnation) {
  ports::NodeRegistration r;
  r.name = name;
  r.provider = provider;
  r.site = site;
  r.incarnation = incarnation.empty() ? std::string(32, 'a') : incarnation;
  r.total_vcpu = vcpu;
  r.total_memory = memory;
  r.wire_version = 1;
  auto epoch = ledger_->RegisterNode(r);
  EXPECT_TRUE(epoch.ok()) << epoch.status().ToString();
  return epoch.ok() ? *epoch : -1;
}

std::vector<ports::Lease> LedgerTest::Escrow(const std::string& tier, int32_t want) {
  auto leases = ledger_->Escrow(tier, want);
  EXPECT_TRUE(leases.ok()) << leases.status().ToString();
  return leases.ok() ? *leases : std::vector<ports::Lease>{};
}

ports::Lease LedgerTest::EscrowOne(const std::string& tier) {
  std::vector<ports::Lease> l = Escrow(tier, 1);
  EXPECT_EQ(l.size(), 1u) << "no capacity for one " << tier << " lease";
  return l.empty() ? ports::Lease{} : l.front();
}

ports::Lease LedgerTest::Running(const std::string& tier, Phase phase) {
  ports::Lease l = EscrowOne(tier);
  EXPECT_TRUE(ledger_->Assign(l.id, l.epoch, 100, next_request_++).ok());  // one open lease a request
  EXPECT_TRUE(ledger_->Bind(l.id, l.epoch, l.target_node, std::string(32, 'a')).ok());
  const Phase path[] = {Phase::kLaunching, Phase::kOnline, Phase::kBusy};
  for (Phase p : path) {
    Status s = ledger_->Advance(l.id, l.epoch, p, "");
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (p == phase) break;
  }
  if (phase == Phase::kCustody || phase == Phase::kTeardown) {
    Status s = ledger_->Advance(l.id, l.epoch, phase, std::string(32, 'a'));
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return Get(l.id);
}

ports::Lease LedgerTest::Get(const std::string& id) {
  auto l = ledger_->GetLease(id);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? *l : ports::Lease{};
}

}  // namespace nodeplane::conformance
