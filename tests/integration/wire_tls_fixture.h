// The whole control plane in process (nodeplane_daemon's Daemon, from a TOML
// config) over real TLS on loopback, driven by the project's own client: the
// fixture shared by wire_tls_test (C test plugins) and jit_github_wire_test
// (the real jit-github plugin against the GitHub fake).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <thread>

#include "common/units.h"
#include "config/config_loader.h"
#include "nodeplaned/daemon.h"
#include "pki/authority.h"
#include "plane_test_peer.h"
#include "protocol/messages.h"
#include "wire/http_client.h"

namespace nodeplane {

inline void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

struct NodeCert {
  std::string cert_pem, key_pem, serial;
};

class WireTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-tls-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/state");
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove_all(dir_);
  }

  // The C test plugins for the JIT sources of targets org-a and org-b,
  // whose registrations say which App minted them ("jit:A:...").
  static std::string TestJitPlugins() {
    const std::string tp = TEST_PLUGIN_DIR;
    return R"([plugins.app-a]
library = ")" + tp + R"(/test-jit.so"
provides = ["jit"]
[plugins.app-a.config]
app = "A"
[plugins.app-b]
library = ")" + tp + R"(/test-jit.so"
provides = ["jit"]
[plugins.app-b.config]
app = "B"
)";
  }

  // Starts the daemon; `jit_plugins` declares [plugins.app-a] and
  // [plugins.app-b], the sources of targets org-a and org-b.
  void Start(bool with_plugins = true, const std::string& jit_plugins = TestJitPlugins()) {
    const std::string tp = TEST_PLUGIN_DIR;
    std::string toml = R"(deployment = "acme"
state_dir = ")" + dir_ + R"(/state"
plugin_dir = ")" + PLUGIN_DIR + R"("
[log]
level = "error"
[wire]
listen = "127.0.0.1:0"
[wire.tls]
server_names = ["127.0.0.1"]
[tiers.a]
vcpu = 1
memory = "1GiB"
providers = ["process"]
command = ["/bin/true"]
target = "org-a"
runner_group = "builders"
labels = ["self-hosted", "a"]
[tiers.b]
vcpu = 1
memory = "1GiB"
providers = ["process"]
command = ["/bin/true"]
target = "org-b"
labels = ["b"]
[tiers.plain]
vcpu = 1
memory = "1GiB"
providers = ["process"]
command = ["/bin/true"]
[plugins.ledger]
library = "ledger-sqlite"
provides = ["ledger"]
[plugins.ledger.config]
path = "ledger.db"
)" + ledger_config_;
    if (with_plugins) {
      toml += R"([targets.org-a]
jit = "app-a"
[targets.org-b]
jit = "app-b"
)" + jit_plugins + R"([plugins.crl]
library = ")" + tp + R"(/test-revocation.so"
provides = ["revocation"]
[plugins.crl.config]
serials_file = ")" + dir_ + R"(/revoked.txt"
[plugins.cache]
library = ")" + tp + R"(/test-cache-policy.so"
provides = ["cache_policy"]
[plugins.cache.config]
deny_owner = "evil"
)";
    } else {
      // The catalogue still names targets; their sources are simply absent.
      std::string::size_type at;
      for (const char* key : {"target = \"org-", "runner_group = "}) {
        while ((at = toml.find(key)) != std::string::npos) toml.erase(at, toml.find('\n', at) - at + 1);
      }
    }
    auto loaded = config::LoadConfigText(toml, dir_ + "/nodeplane.toml");
    ASSERT_TRUE(loaded.ok()) << (loaded.errors.empty() ? "" : loaded.errors.front().ToString());
    auto d = Daemon::Start(*loaded.config, log_);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    daemon_ = std::move(*d);
  }

  // A certificate for `node` from the daemon's authority, recorded as issued.
  NodeCert Issue(const std::string& node, bool record = true) {
    auto issued = daemon_->authority()->IssueNode(node, WallNowNs());
    EXPECT_TRUE(issued.ok());
    auto info = pki::InspectCert(issued->first);
    EXPECT_TRUE(info.ok());
    if (record) {
      EXPECT_TRUE(daemon_->ledger().RecordIssuedCert({info->serial, node, "issued", info->not_after_ns, WallNowNs(), false})
                      .ok());
    }
    return NodeCert{issued->first, issued->second.private_pem, info->serial};
  }

  std::unique_ptr<wire::HttpClient> Client(const NodeCert& c, const std::string& ca_pem = "") {
    wire::ClientOptions o;
    o.host = "127.0.0.1";
    o.port = daemon_->wire_port();
    o.tls = wire::ClientTls{ca_pem.empty() ? daemon_->authority()->trust_bundle_pem() : ca_pem, "127.0.0.1",
                            c.cert_pem, c.key_pem, true};
    o.timeout = std::chrono::seconds(20);
    return std::make_unique<wire::HttpClient>(o);
  }

  wire::ClientResponse Call(wire::HttpClient& c, const std::string& method, const std::string& target,
                            const std::string& body = "", const std::string& incarnation = "i1") {
    auto r = c.Do(method, target, body, {{"Nodeplane-Incarnation", incarnation}});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : wire::ClientResponse{};
  }

  wire::ClientResponse Register(wire::HttpClient& c, const std::string& node, const std::string& inc = "i1") {
    return Call(c, "POST", "/v1/register",
                R"({"version":1,"node":")" + node + R"(","provider":"process","deployment":"acme","incarnation":")" +
                    inc + R"(","vcpu":4,"memory":8589934592})",
                inc);
  }

  // Launches a lease of `tier` onto whichever of n1 and n2 the plane picks,
  // and has that node (the one entitled) mint its runner registration; the
  // config, or "status N body" when the mint was refused. Along the way the
  // other node, and a name nodeplane did not give, are refused (R24).
  void LaunchAndMint(const std::string& tier, wire::HttpClient& c1, wire::HttpClient& c2, std::string* config) {
    ports::Ledger& ledger = daemon_->ledger();
    auto leases = ledger.Escrow(tier, 1);
    ASSERT_TRUE(leases.ok() && leases->size() == 1) << leases.status().ToString();
    ports::Lease lease = leases->front();
    ASSERT_TRUE(ledger.Assign(lease.id, lease.epoch, 7, next_request_++).ok());  // one open lease a request
    lease.phase = ports::Phase::kAssigned;
    protocol::Job job{42, 7, "workflow_job", "acme", "repo", "ref"};
    auto launched = std::async(std::launch::async, [&] { return daemon_->plane().runner().Launch(lease, job); });
    // Wait on the plane's state: the launch is queued for one of the nodes.
    while (plane::PlaneTestPeer(daemon_->plane()).Queued("n1") + plane::PlaneTestPeer(daemon_->plane()).Queued("n2") == 0) {
      ASSERT_NE(launched.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "the launch found no node";
      std::this_thread::yield();
    }
    wire::ClientResponse cmd;
    for (auto* c : {&c1, &c2}) {
      const std::string node = c == &c1 ? "n1" : "n2";
      if (plane::PlaneTestPeer(daemon_->plane()).Queued(node) == 0) continue;
      cmd = Call(*c, "POST", "/v1/nodes/" + node + "/poll");
      const std::string other = node == "n1" ? "n2" : "n1";
      wire::HttpClient& holder = *c;
      wire::HttpClient& stranger = node == "n1" ? c2 : c1;
      const std::string runner = protocol::RunnerNameFor(lease.id);
      // Another node is not entitled; neither is a name nodeplane did not give.
      EXPECT_EQ(Call(stranger, "POST", "/v1/nodes/" + other + "/jit", R"({"runner_name":")" + runner + R"("})").status,
                403);
      EXPECT_EQ(Call(holder, "POST", "/v1/nodes/" + node + "/jit", R"({"runner_name":"my-runner"})").status, 403);
      auto minted = Call(holder, "POST", "/v1/nodes/" + node + "/jit",
                         R"({"runner_name":")" + runner + R"(","work_folder":"_work"})");
      if (minted.status == 200) {
        std::smatch m;
        ASSERT_TRUE(std::regex_search(minted.body, m, std::regex(R"re("config":"([^"]*)")re")));
        *config = m[1].str();
      } else {
        *config = "status " + std::to_string(minted.status) + " " + minted.body;
      }
      std::smatch id;
      ASSERT_TRUE(std::regex_search(cmd.body, id, std::regex(R"re("id":"([0-9a-f]{32})")re")));
      EXPECT_EQ(Call(holder, "POST", "/v1/nodes/" + node + "/result", R"({"id":")" + id[1].str() + R"(","ok":true})")
                    .status,
                204);
      break;
    }
    ASSERT_EQ(cmd.status, 200) << "no node was given the launch";
    EXPECT_TRUE(launched.get().ok());
  }

  std::string dir_;
  std::string ledger_config_;  // more keys of [plugins.ledger.config], one per line
  int64_t next_request_ = 42;  // LaunchAndMint's request ids
  Logger log_{LogLevel::kError};
  std::unique_ptr<Daemon> daemon_;
};

}  // namespace nodeplane
