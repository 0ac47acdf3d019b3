// The Plane under test: a fake clock, an in-memory ledger, and helpers that
// play the node's side in the test's own thread. Helpers wait on the
// plane's observable state (queued commands, parked polls), never on time.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "fake_ledger.h"
#include "plane/plane.h"
#include "plane_test_peer.h"

namespace nodeplane::plane {

inline constexpr int64_t kS = 1'000'000'000;
inline constexpr int64_t kGiB = 1LL << 30;

class PlaneTest : public ::testing::Test {
 protected:
  PlaneOptions Options() {
    PlaneOptions o;
    o.deployment = "dep";
    o.lease_ttl_ns = 90 * kS;
    o.poll_window_ns = 50 * kS;
    o.command_timeout_ns = 600 * kS;
    o.sites = {{"fra", "ceph"}, {"iad", ""}};
    Tier small{TierShape{"small", 2, 4 * kGiB, "linux", "img", {"/bin/run"}, "group", {"self-hosted"}, true},
               {"docker"}};
    Tier multi{TierShape{"multi", 2, 4 * kGiB, "linux", "", {"/bin/run"}, "", {}, false}, {"firecracker", "docker"}};
    o.tiers = {small, multi};
    o.clock = &clock_;
    o.registrar = &ledger_;
    o.leases = &ledger_;
    o.barrier = &ledger_;
    o.log = &log_;
    return o;
  }
  void SetUp() override { plane_ = std::make_unique<Plane>(Options()); }
  void TearDown() override { plane_.reset(); }

  RegisterRequest Req(const std::string& node, const std::string& inc = "i1", const std::string& provider = "docker") {
    RegisterRequest r;
    r.version = 1;
    r.node = node;
    r.provider = provider;
    r.deployment = "dep";
    r.incarnation = inc;
    r.vcpu = 8;
    r.memory = 32 * kGiB;
    return r;
  }
  void Reg(const std::string& node, const std::string& inc = "i1", const std::string& provider = "docker") {
    auto r = PlaneTestPeer(*plane_).Register(Req(node, inc, provider));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  static ports::Lease Lease(const std::string& id, const std::string& target = "", const std::string& tier = "small",
                            const std::string& providers = "docker") {
    ports::Lease l;
    l.id = id;
    l.tier = tier;
    l.target_node = target;
    l.providers = providers;
    l.guest_os = "linux";
    l.phase = ports::Phase::kAssigned;
    return l;
  }
  static Job JobFor(int64_t request) { return Job{request, 7, "push", "acme", "api", "ci.yml"}; }

  void WaitQueued(const std::string& node, size_t n) {
    while (PlaneTestPeer(*plane_).Queued(node) != n) std::this_thread::yield();
  }
  void WaitWaiters(const std::string& node, size_t n) {
    while (PlaneTestPeer(*plane_).Waiters(node) != n) std::this_thread::yield();
  }
  void WaitInFlight(const std::string& node, size_t n) {
    while (PlaneTestPeer(*plane_).InFlight(node) != n) std::this_thread::yield();
  }
  // Takes the next queued command as process `inc` of `node` (it must be queued).
  Command Take(const std::string& node, const std::string& inc = "i1") {
    auto r = PlaneTestPeer(*plane_).Poll(node, inc);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r.ok() && r->has_value()) << "nothing to take";
    return r.ok() && r->has_value() ? **r : Command{};
  }
  Status Answer(const std::string& node, const Command& c, bool ok, bool custody = false,
                const std::string& inc = "i1") {
    return plane_->ReceiveResult(node, inc, CommandResult{c.id, ok, ok ? "" : "it broke", custody, "", {}});
  }
  std::future<Status> LaunchAsync(ports::Lease lease, int64_t request, std::stop_token stop = {}) {
    return std::async(std::launch::async, [this, lease, request, stop]() mutable {
      return plane_->runner().Launch(lease, JobFor(request), stop);
    });
  }

  testing::FakeLedger ledger_;
  FakeClock clock_{1'800'000'000LL * kS};
  Logger log_{LogLevel::kError};
  std::unique_ptr<Plane> plane_;
};

}  // namespace nodeplane::plane
