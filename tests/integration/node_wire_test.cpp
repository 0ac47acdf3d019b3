// The node wire on loopback, end to end in process: raw HTTP requests, the
// real listener, the Plane, and the SQLite ledger plugin through the host's
// loader. Tests wait on the plane's state (a queued command, a parked poll).
#include <gtest/gtest.h>

#include <atomic>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>

#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_library.h"
#include "plane/plane.h"
#include "plane_test_peer.h"
#include "raw_http.h"
#include "wire/http_server.h"
#include "wire/node_wire.h"

namespace nodeplane::wire {
namespace {

constexpr int64_t kGiB = 1LL << 30;

// Forwards to the ledger and remembers which barrier runs were discarded.
class RecordingBarrier : public ports::BarrierStore {
 public:
  explicit RecordingBarrier(ports::BarrierStore& inner) : inner_(inner) {}
  std::vector<std::string> Invalidated() {
    std::lock_guard l(mu_);
    return invalidated_;
  }
  Result<std::optional<ports::ComputeBarrier>> ComputeBarrierInForce() override {
    return inner_.ComputeBarrierInForce();
  }
  Status DropComputeBarrier(const std::string& id) override { return inner_.DropComputeBarrier(id); }
  Result<std::pair<int64_t, bool>> AdmissionGeneration() override { return inner_.AdmissionGeneration(); }
  Result<ports::Quiescence> GetQuiescence() override { return inner_.GetQuiescence(); }
  Result<std::optional<ports::NodeFence>> NodeFenceOf(const std::string& n) override { return inner_.NodeFenceOf(n); }
  Status RecordBarrierObservation(const ports::BarrierObservation& o) override {
    return inner_.RecordBarrierObservation(o);
  }
  Status InvalidateBarrierRun(const std::string& node) override {
    {
      std::lock_guard l(mu_);
      invalidated_.push_back(node);
    }
    return inner_.InvalidateBarrierRun(node);
  }
  Status InvalidateEveryBarrierRun() override {
    {
      std::lock_guard l(mu_);
      invalidated_.push_back("*");
    }
    return inner_.InvalidateEveryBarrierRun();
  }
  Result<int64_t> ResolveQuarantineFor(const std::string& n, const std::vector<std::string>& r, int64_t e) override {
    return inner_.ResolveQuarantineFor(n, r, e);
  }

 private:
  ports::BarrierStore& inner_;
  std::mutex mu_;
  std::vector<std::string> invalidated_;
};

struct Reply {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
};

class NodeWireTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-wire-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    host_ = std::make_unique<loader::HostServices>(log_, dir_);
    auto lib = loader::PluginLibrary::Open(std::string(PLUGIN_DIR) + "/ledger-sqlite.so", "", host_->c());
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    auto ledger = loader::LedgerAdapter::Create(*lib, "ledger", R"({"path": "ledger.db"})", host_->c(), false);
    ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
    ledger_ = std::move(*ledger);
    ports::Catalog cat;
    cat.lease_ttl_ns = 90'000'000'000;
    cat.tiers.push_back({"small", 1, kGiB, {"process"}, "linux", "", "", 0, 0});
    ASSERT_TRUE(ledger_->SetCatalog(cat).ok());
    barrier_ = std::make_unique<RecordingBarrier>(*ledger_);
    MakePlane();
    Serve(NodeWireOptions{});
  }
  // A new Plane over the fixture's ledger, on `clock` (null: the system's).
  void MakePlane(const plane::Clock* clock = nullptr) {
    plane::PlaneOptions o;
    o.deployment = "dep";
    o.tiers.push_back(plane::Tier{protocol::TierShape{"small", 1, kGiB, "linux", "", {"/bin/true"}, "", {}, false},
                                  {"process"}});
    o.registrar = ledger_.get();
    o.leases = ledger_.get();
    o.barrier = barrier_.get();
    o.log = &log_;
    o.clock = clock;
    plane_ = std::make_unique<plane::Plane>(o);
  }
  // The control plane restarts: a new Plane that remembers nothing, the
  // ledger's fleet forgotten (as nodeplaned does at start), the wire again.
  void RestartPlane(NodeWireOptions w = {}) {
    server_.reset();
    routes_.reset();
    plane_.reset();
    ASSERT_TRUE(ledger_->ForgetEveryNode().ok());
    MakePlane();
    Serve(std::move(w));
  }
  // (Re)starts the wire with `w`'s JIT settings on the fixture's plane and ledger.
  void Serve(NodeWireOptions w) {
    server_.reset();
    w.deployment = "dep";
    w.log = &log_;
    w.plane = plane_.get();
    w.leases = ledger_.get();
    w.revocations = ledger_.get();
    routes_ = std::make_unique<NodeWire>(std::move(w));
    ListenerOptions lo;
    lo.name = "wire";
    lo.host = "127.0.0.1";
    server_ = std::make_unique<HttpServer>(lo, *routes_, log_);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    server_.reset();
    routes_.reset();
    plane_.reset();
    ledger_.reset();
    std::filesystem::remove_all(dir_);
  }

  Reply Send(const std::string& method, const std::string& path, const std::string& body = "",
             const std::string& incarnation = "i1") {
    testing::RawConnection c(server_->port());
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
    if (!incarnation.empty()) req += "Nodeplane-Incarnation: " + incarnation + "\r\n";
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    EXPECT_TRUE(c.Send(req));
    std::string raw = c.ReadResponse();
    Reply r;
    if (raw.size() > 12) r.status = std::stoi(raw.substr(9, 3));
    size_t head = raw.find("\r\n\r\n");
    if (head != std::string::npos) {
      r.head = raw.substr(0, head + 2);
      r.body = raw.substr(head + 4);
    }
    return r;
  }
  std::string RegisterBody(const std::string& node, const std::string& inc, const std::string& extra = "") {
    return R"({"version":1,"node":")" + node + R"(","provider":"process","deployment":"dep","incarnation":")" + inc +
           R"(","vcpu":4,"memory":8589934592)" + extra + "}";
  }
  // The registration the reference node sends: its inventory, known.
  std::string NodeRegisterBody(const std::string& node, const std::string& inc,
                               const std::vector<std::string>& running) {
    std::string list;
    for (const std::string& id : running) list += (list.empty() ? "\"" : ",\"") + id + "\"";
    return RegisterBody(node, inc, R"(,"instances":[)" + list + R"(],"inventory_known":true)");
  }
  // A lease launched onto `node` and run by process `inc`, the way the
  // reference node does it: poll, bind, launching, result, online, busy.
  ports::Lease LaunchedOn(const std::string& node, const std::string& inc, int64_t request_id = 42) {
    auto leases = ledger_->Escrow("small", 1);
    EXPECT_TRUE(leases.ok() && leases->size() == 1);
    ports::Lease lease = leases->front();
    EXPECT_TRUE(ledger_->Assign(lease.id, lease.epoch, 7, request_id).ok());
    lease.phase = ports::Phase::kAssigned;
    auto launch = std::async(std::launch::async, [&] {
      ports::Lease l = lease;
      return plane_->runner().Launch(l, protocol::Job{request_id, 7, "push", "acme", "api", "ci.yml"});
    });
    while (plane::PlaneTestPeer(*plane_).Queued(node) != 1) std::this_thread::yield();
    Reply cmd = Send("POST", "/v1/nodes/" + node + "/poll", "", inc);
    EXPECT_EQ(cmd.status, 200) << cmd.body;
    const std::string id = cmd.body.substr(cmd.body.find(R"("id":")") + 6, 32);
    const std::string base = "/v1/nodes/" + node + "/leases/" + lease.id;
    EXPECT_EQ(Send("POST", base + "/bind", R"({"epoch":0})", inc).status, 204);
    EXPECT_EQ(Send("POST", base + "/advance", R"({"epoch":0,"phase":"launching"})", inc).status, 204);
    EXPECT_EQ(Send("POST", "/v1/nodes/" + node + "/result", R"({"id":")" + id + R"(","ok":true})", inc).status, 204);
    EXPECT_TRUE(launch.get().ok());
    EXPECT_EQ(Send("POST", base + "/advance", R"({"epoch":0,"phase":"online"})", inc).status, 204);
    EXPECT_EQ(Send("POST", base + "/advance", R"({"epoch":0,"phase":"busy"})", inc).status, 204);
    return lease;
  }
  // Waits, at most `seconds`, for `done`; false when it never held.
  template <typename F>
  static bool Eventually(F done, int seconds = 10) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::yield();
    }
    return true;
  }

  // Escrows and assigns a lease on `node`, as a job source would.
  ports::Lease Assigned() {
    auto leases = ledger_->Escrow("small", 1);
    EXPECT_TRUE(leases.ok() && leases->size() == 1);
    ports::Lease l = leases->front();
    EXPECT_TRUE(ledger_->Assign(l.id, l.epoch, 7, next_request_++).ok());  // one open lease a request
    l.phase = ports::Phase::kAssigned;
    return l;
  }

  std::string dir_;
  int64_t next_request_ = 42;  // Assigned()'s request ids
  Logger log_{LogLevel::kError};
  std::unique_ptr<loader::HostServices> host_;
  std::unique_ptr<loader::LedgerAdapter> ledger_;
  std::unique_ptr<RecordingBarrier> barrier_;
  std::unique_ptr<plane::Plane> plane_;
  std::unique_ptr<NodeWire> routes_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(NodeWireTest, AJobRunsThroughTheWire) {
  Reply reg = Send("POST", "/v1/register", RegisterBody("n1", "i1"));
  ASSERT_EQ(reg.status, 200) << reg.body;
  EXPECT_NE(reg.body.find(R"("version":1)"), std::string::npos) << reg.body;
  EXPECT_NE(reg.body.find(R"("lease_ttl_seconds":90)"), std::string::npos);

  ports::Lease lease = Assigned();
  auto launch = std::async(std::launch::async, [&] {
    ports::Lease l = lease;
    return plane_->runner().Launch(l, protocol::Job{42, 7, "push", "acme", "api", "ci.yml"});
  });
  while (plane::PlaneTestPeer(*plane_).Queued("n1") != 1) std::this_thread::yield();
  Reply cmd = Send("POST", "/v1/nodes/n1/poll");
  ASSERT_EQ(cmd.status, 200) << cmd.body;
  EXPECT_NE(cmd.body.find(R"("kind":"launch")"), std::string::npos) << cmd.body;
  EXPECT_NE(cmd.body.find(lease.id), std::string::npos);
  std::string id = cmd.body.substr(cmd.body.find(R"("id":")") + 6, 32);

  const std::string base = "/v1/nodes/n1/leases/" + lease.id;
  EXPECT_EQ(Send("POST", base + "/bind", R"({"epoch":0,"node":"someone-else"})").status, 204);
  EXPECT_EQ(Send("POST", base + "/advance", R"({"epoch":0,"phase":"launching"})").status, 204);
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/result", R"({"id":")" + id + R"(","ok":true})").status, 204);
  EXPECT_TRUE(launch.get().ok());
  EXPECT_EQ(Send("POST", base + "/heartbeat", R"({"epoch":0})").status, 204);
  Reply got = Send("GET", base);
  ASSERT_EQ(got.status, 200);
  EXPECT_NE(got.body.find(R"("node":"n1")"), std::string::npos) << got.body;  // the path decided, not the body
  Reply launched = Send("GET", "/v1/nodes/n1/launched");
  EXPECT_NE(launched.body.find(lease.id), std::string::npos) << launched.body;
  EXPECT_EQ(Send("POST", base + "/release", R"({"epoch":0,"outcome":"done"})").status, 204);
  Reply gone = Send("GET", base);
  EXPECT_EQ(gone.status, 404);
  EXPECT_NE(gone.body.find(R"("code":"not_found")"), std::string::npos);
  auto job = ledger_->JobForLease(lease.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->conclusion, ports::Phase::kDone);
}

// A JIT source that answers as told and counts what it was asked.
struct ScriptedSource : ports::JitSource {
  std::atomic<int> calls{0};
  Status mint_failure;  // Ok: mint
  Result<ports::RunnerSet> Describe(const std::string&) override { return ++calls, ports::RunnerSet{7, "g", {}}; }
  Result<ports::JitRegistration> MintJitConfig(const ports::JitRequest& r) override {
    ++calls;
    if (!mint_failure.ok()) return mint_failure;
    return ports::JitRegistration{1, r.runner_name, "secret"};
  }
  std::mutex mu;
  std::vector<std::pair<int64_t, std::string>> removed;  // (id, name) as asked
  Status RemoveRunner(int64_t id, const std::string& name) override {
    std::lock_guard l(mu);
    removed.emplace_back(id, name);
    return ++calls, Status::Ok();
  }
  Result<ports::RunnerState> RecoverRunner(const std::string&) override { return ++calls, ports::RunnerState{}; }
};

class NodeWireJitTest : public NodeWireTest {
 protected:
  // Serves the wire again with tier "small" belonging to `target`, and
  // `source` as the JIT source of target "org-a".
  void ServeJit(const std::string& target, ports::JitSource* source) {
    NodeWireOptions w;
    w.tiers["small"] = TierTarget{target, "", {"self-hosted"}};
    w.jit_sources["org-a"] = source;
    Serve(std::move(w));
  }
  // Registers n1, launches a lease onto it, and asks for the lease's
  // registration as the entitled node; then completes the launch.
  Reply MintAsTheEntitledNode() {
    EXPECT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
    ports::Lease lease = Assigned();
    auto launch = std::async(std::launch::async, [&] {
      ports::Lease l = lease;
      return plane_->runner().Launch(l, protocol::Job{42, 7, "push", "acme", "api", "ci.yml"});
    });
    while (plane::PlaneTestPeer(*plane_).Queued("n1") != 1) std::this_thread::yield();
    Reply cmd = Send("POST", "/v1/nodes/n1/poll");
    EXPECT_EQ(cmd.status, 200) << cmd.body;
    Reply minted = Send("POST", "/v1/nodes/n1/jit", R"({"runner_name":"np-)" + lease.id + R"("})");
    std::string id = cmd.body.substr(cmd.body.find(R"("id":")") + 6, 32);
    EXPECT_EQ(Send("POST", "/v1/nodes/n1/result", R"({"id":")" + id + R"(","ok":true})").status, 204);
    EXPECT_TRUE(launch.get().ok());
    return minted;
  }
};

// R10 (WithTargetJIT): a tier whose target has no JIT source is refused,
// never minted through another target's source, even for the node that is
// entitled to the launch.
TEST_F(NodeWireJitTest, R10_ATierWhoseTargetHasNoSourceIsRefused) {
  ScriptedSource other_owner;
  ServeJit("org-c", &other_owner);
  Reply minted = MintAsTheEntitledNode();
  EXPECT_EQ(minted.status, 403) << minted.body;
  EXPECT_NE(minted.body.find("org-c\\\", which has no JIT source"), std::string::npos) << minted.body;
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/describe", R"({"tier":"small"})").status, 403);
  EXPECT_EQ(other_owner.calls.load(), 0);
}

// A rate-limited mint is an outage that names its end: 503 with the
// source's hint as Retry-After, so the node knows when asking again helps.
TEST_F(NodeWireJitTest, ARateLimitedMintIs503WithRetryAfter) {
  ScriptedSource source;
  source.mint_failure = Status::Unavailable("GitHub's rate limit").WithRetryAfter(41'500'000'000);
  ServeJit("org-a", &source);
  Reply minted = MintAsTheEntitledNode();
  EXPECT_EQ(minted.status, 503) << minted.body;
  EXPECT_NE(minted.head.find("Retry-After: 42\r\n"), std::string::npos) << minted.head;
}

// S03 (issue 50): every route of the node wire answers a node the plane does
// not know "unregistered" before any other verdict (a result is never
// answered custody, a renewal never served), so the node registers again.
TEST_F(NodeWireTest, S03_EveryRouteAnswersAnUnregisteredNodeUnregisteredFirst) {
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  const ports::Lease lease = Assigned();  // n1's: the node asking is not even its holder
  const std::string lease_base = "/v1/nodes/ghost/leases/" + lease.id;
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"POST", "/v1/nodes/ghost/poll"},
      {"POST", "/v1/nodes/ghost/result"},
      {"POST", "/v1/nodes/ghost/withdraw"},
      {"GET", "/v1/nodes/ghost/launched"},
      {"POST", "/v1/nodes/ghost/reconcile"},
      {"POST", "/v1/nodes/ghost/renew"},
      {"GET", "/v1/nodes/ghost/cache-policy?owner=acme&repository=api"},
      {"POST", "/v1/nodes/ghost/describe"},
      {"POST", "/v1/nodes/ghost/jit"},
      {"GET", lease_base},
      {"POST", lease_base + "/bind"},
      {"POST", lease_base + "/advance"},
      {"POST", lease_base + "/heartbeat"},
      {"POST", lease_base + "/failure"},
      {"POST", lease_base + "/release"},
      {"POST", lease_base + "/runner/remove"},
      {"POST", lease_base + "/runner/recover"},
      {"POST", lease_base + "/runner/outdated"},
  };
  for (const auto& [method, path] : calls) {
    // A body the route would accept from a registered node.
    const std::string body = path.find("/result") != std::string::npos ? R"({"id":"0123456789abcdef0123456789abcdef","ok":true})"
                                                                        : R"({"epoch":0})";
    Reply r = Send(method, path, method == "POST" ? body : "");
    EXPECT_EQ(r.status, 401) << method << " " << path << ": " << r.body;
    EXPECT_NE(r.body.find(R"("code":"unregistered")"), std::string::npos) << method << " " << path << ": " << r.body;
  }
}

TEST_F(NodeWireTest, StrictDecodingRefusesUnknownFieldsWrongTypesAndTrailingBytes) {
  for (const std::string& body :
       {RegisterBody("n1", "i1", R"(,"shiny":true)"), std::string(R"({"version":"1"})"),
        RegisterBody("n1", "i1") + "garbage", std::string(""), std::string("[1]")}) {
    Reply r = Send("POST", "/v1/register", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_NE(r.body.find(R"("code":"refused")"), std::string::npos) << r.body;
  }
  EXPECT_NE(Send("POST", "/v1/register", RegisterBody("n1", "i1", R"(,"shiny":true)")).body.find("unknown field \\\"shiny\\\""),
            std::string::npos);
}

TEST_F(NodeWireTest, ARefusalIsA403ThatSaysWhoToUpgrade) {
  Reply foreign = Send("POST", "/v1/register", R"({"version":1,"node":"n1","provider":"process","deployment":"other","incarnation":"i1","vcpu":4,"memory":1})");
  EXPECT_EQ(foreign.status, 403);
  EXPECT_NE(foreign.body.find(R"("code":"refused")"), std::string::npos);
  Reply old = Send("POST", "/v1/register", R"({"version":9,"min_version":5,"node":"n1","provider":"process","deployment":"dep","incarnation":"i1","vcpu":4,"memory":1})");
  EXPECT_EQ(old.status, 403);
  EXPECT_NE(old.body.find("UPGRADE THIS CONTROL PLANE FIRST"), std::string::npos) << old.body;
}

// R18, R16, R17: the wire's own registration path discards the node's barrier
// proof first, even for a registration it then refuses.
TEST_F(NodeWireTest, R18_TheHTTPRegistrationPathDiscardsTheProofFirstEvenWhenRefused) {
  Reply refused = Send("POST", "/v1/register", R"({"version":1,"node":"n1","provider":"process","deployment":"other","incarnation":"i1","vcpu":4,"memory":1})");
  ASSERT_EQ(refused.status, 403);
  EXPECT_EQ(barrier_->Invalidated(), std::vector<std::string>{"n1"});
}

// R15: on the loopback wire, a registration body that cannot be decoded names
// nobody, so every host's proof is discarded.
TEST_F(NodeWireTest, R15_AnUndecodableRegistrationDiscardsEveryProof) {
  ASSERT_EQ(Send("POST", "/v1/register", R"({"version":1,"node":"n1","from_the_future":true})").status, 400);
  EXPECT_EQ(barrier_->Invalidated(), std::vector<std::string>{"*"});
}

// R04: saturating the bootstrap listener's budget does not touch the node
// wire's: a node's poll is still answered.
TEST_F(NodeWireTest, R04_ASaturatedBootstrapListenerDoesNotDelayTheWire) {
  class Hold : public HttpHandler {
    void Handle(HttpRequest, Responder) override {}  // never answers
  } hold;
  ListenerOptions b;
  b.name = "bootstrap";
  b.host = "127.0.0.1";
  b.max_connections = 2;
  HttpServer bootstrap(b, hold, log_);
  ASSERT_TRUE(bootstrap.Start().ok());
  testing::RawConnection s1(bootstrap.port()), s2(bootstrap.port());
  while (bootstrap.open_connections() != 2) std::this_thread::yield();
  testing::RawConnection s3(bootstrap.port());
  bool closed = false;
  s3.ReadUntilClose(&closed);
  ASSERT_TRUE(closed);  // the bootstrap budget is spent

  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  plane::PlaneTestPeer(*plane_).SetPollWindow(1'000'000);  // 1 ms
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/poll").status, 204);
}

TEST_F(NodeWireTest, GuardsAnswerWithTheRightCodes) {
  EXPECT_EQ(Send("POST", "/v1/nodes/ghost/poll").status, 401);
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i2")).status, 200);
  Reply old = Send("POST", "/v1/nodes/n1/poll", "", "i1");
  EXPECT_EQ(old.status, 409);
  EXPECT_NE(old.body.find(R"("code":"superseded")"), std::string::npos);
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/poll", "", "").status, 409);  // absence is no wildcard (R23)
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/withdraw", "{}", "i1").status, 409);
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/withdraw", "{}", "i2").status, 204);
  EXPECT_EQ(Send("GET", "/v1/nowhere").status, 404);
}

// Every answer is counted by route and status, the path no route knows as
// "other", whether the (route, status) histogram was found before or not.
TEST_F(NodeWireTest, EveryAnswerIsCountedByRouteAndStatus) {
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Send("GET", "/healthz").status, 200);
  EXPECT_EQ(Send("GET", "/v1/nowhere").status, 404);
  EXPECT_EQ(Send("GET", "/v1/nowhere").status, 404);
  EXPECT_EQ(Send("DELETE", "/healthz").status, 405);
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  EXPECT_EQ(Send("DELETE", "/v1/register").status, 405);  // the same route, another status
  std::string text;
  routes_->request_latency().Render(text, "requests", "help");
  EXPECT_NE(text.find("requests_count{route=\"healthz\",status=\"200\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("requests_count{route=\"other\",status=\"404\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("requests_count{route=\"healthz\",status=\"405\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("requests_count{route=\"register\",status=\"200\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("requests_count{route=\"register\",status=\"405\"} 1\n"), std::string::npos) << text;
}

TEST_F(NodeWireTest, AnIdlePollIsAnsweredWithNoContentWhenItsWindowCloses) {
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  plane::PlaneTestPeer(*plane_).SetPollWindow(50'000'000);  // 50 ms of the system clock
  Reply r = Send("POST", "/v1/nodes/n1/poll");
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.body, "");
}

TEST_F(NodeWireTest, ALateLaunchResultIsRedirectedIntoCustody) {
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  ports::Lease lease = Assigned();
  std::stop_source stop;
  auto launch = std::async(std::launch::async, [&] {
    ports::Lease l = lease;
    return plane_->runner().Launch(l, protocol::Job{42, 7, "", "", "", ""}, stop.get_token());
  });
  while (plane::PlaneTestPeer(*plane_).Queued("n1") != 1) std::this_thread::yield();
  Reply cmd = Send("POST", "/v1/nodes/n1/poll");
  std::string id = cmd.body.substr(cmd.body.find(R"("id":")") + 6, 32);
  stop.request_stop();  // the plane stops waiting
  EXPECT_TRUE(plane::Is(launch.get(), plane::kCustody));
  Reply late = Send("POST", "/v1/nodes/n1/result", R"({"id":")" + id + R"(","ok":true})");
  EXPECT_EQ(late.status, 409);
  EXPECT_NE(late.body.find(R"("code":"custody")"), std::string::npos) << late.body;
}

TEST_F(NodeWireTest, ALeaseOperationOnAnotherNodesLeaseIsRefused) {
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n2", "j1")).status, 200);
  ports::Lease lease = Assigned();  // escrowed on n1
  Reply r = Send("POST", "/v1/nodes/" + (lease.target_node == "n1" ? std::string("n2") : std::string("n1")) +
                             "/leases/" + lease.id + "/heartbeat",
                 R"({"epoch":0})", lease.target_node == "n1" ? "j1" : "i1");
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("the ledger places lease"), std::string::npos);
  Reply fenced = Send("POST", "/v1/nodes/" + lease.target_node + "/leases/" + lease.id + "/heartbeat",
                      R"({"epoch":5})", lease.target_node == "n1" ? "i1" : "j1");
  EXPECT_EQ(fenced.status, 409);
  EXPECT_NE(fenced.body.find(R"("code":"fenced")"), std::string::npos);
}

// Issue 17 #1 (R14, R26, R27, S20), through the wire with the reference
// node's real registrations: the control plane restarts, process A comes
// back with its job, process B registers under the same name running
// nothing. B never takes A's lease: A's heartbeats and release stand, and
// B's reconcile frees nothing of it.
TEST_F(NodeWireTest, R14_R26_AReplacementNeverTakesAnAdoptedLease) {
  ASSERT_EQ(Send("POST", "/v1/register", NodeRegisterBody("n1", "i1", {})).status, 200);
  ports::Lease lease = LaunchedOn("n1", "i1");
  RestartPlane();
  ASSERT_EQ(Send("POST", "/v1/register", NodeRegisterBody("n1", "i1", {lease.id}), "i1").status, 200);
  ASSERT_EQ(Send("POST", "/v1/register", NodeRegisterBody("n1", "i2", {}), "i2").status, 200);
  const std::string base = "/v1/nodes/n1/leases/" + lease.id;
  Reply beat = Send("POST", base + "/heartbeat", R"({"epoch":0})", "i1");
  EXPECT_EQ(beat.status, 204) << beat.body;
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/reconcile", R"({"instances":[]})", "i2").status, 200);
  EXPECT_TRUE(plane::PlaneTestPeer(*plane_).Owns(lease.id, "n1", "i1"));
  EXPECT_EQ(Send("POST", base + "/heartbeat", R"({"epoch":0})", "i1").status, 204);
  EXPECT_EQ(Send("POST", base + "/release", R"({"epoch":0,"outcome":"done"})", "i1").status, 204);
  auto job = ledger_->JobForLease(lease.id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->conclusion, ports::Phase::kDone);
}

// Issue 17 #1, #4 (R14, R26, R27): after a restart the ledger's holder keeps
// its lease even before anyone registers, and when only the replacement
// comes back; a destroy the replacement answers is not confirmed.
TEST_F(NodeWireTest, R14_R27_TheLedgersHolderSurvivesARestartItsReplacementCannotConfirm) {
  ASSERT_EQ(Send("POST", "/v1/register", NodeRegisterBody("n1", "i1", {})).status, 200);
  ports::Lease lease = LaunchedOn("n1", "i1", 77);
  RestartPlane();
  const std::string base = "/v1/nodes/n1/leases/" + lease.id;
  Reply early = Send("POST", base + "/heartbeat", R"({"epoch":0})", "i1");
  EXPECT_EQ(early.status, 204) << early.body;  // nobody registered yet: the ledger's holder
  ASSERT_EQ(Send("POST", "/v1/register", NodeRegisterBody("n1", "i2", {}), "i2").status, 200);
  EXPECT_TRUE(plane::PlaneTestPeer(*plane_).Owns(lease.id, "n1", "i1"));
  auto owner = plane_->OwnerOfRequest(77);
  ASSERT_TRUE(owner.has_value());  // the request id came back with the lease
  EXPECT_EQ(owner->incarnation, "i1");
  EXPECT_FALSE(owner->current);
  auto destroy = std::async(std::launch::async, [&] { return plane_->runner().Destroy(77); });
  while (plane::PlaneTestPeer(*plane_).Queued("n1") != 1) std::this_thread::yield();
  Reply cmd = Send("POST", "/v1/nodes/n1/poll", "", "i2");
  ASSERT_EQ(cmd.status, 200) << cmd.body;
  const std::string id = cmd.body.substr(cmd.body.find(R"("id":")") + 6, 32);
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/result", R"({"id":")" + id + R"(","ok":true})", "i2").status, 204);
  EXPECT_TRUE(plane::Is(destroy.get(), plane::kCustody));  // i2 truthfully has nothing; i1 has the job
  EXPECT_EQ(Send("POST", base + "/heartbeat", R"({"epoch":0})", "i1").status, 204);
}

// Issue 17 #3 (R43, S06): a poll whose client hung up takes nothing; the
// launch waits for a poll that can carry it.
TEST_F(NodeWireTest, R43_APollWhoseClientWentAwayIsCancelled) {
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  {
    testing::RawConnection dead(server_->port());
    ASSERT_TRUE(dead.Send("POST /v1/nodes/n1/poll HTTP/1.1\r\nHost: x\r\nNodeplane-Incarnation: i1\r\n"
                          "Content-Length: 0\r\n\r\n"));
    ASSERT_TRUE(Eventually([&] { return plane::PlaneTestPeer(*plane_).Waiters("n1") == 1; }));
  }  // the client closes its connection
  ASSERT_TRUE(Eventually([&] { return plane::PlaneTestPeer(*plane_).Waiters("n1") == 0; })) << "the dead poll is still parked";
  ports::Lease lease = Assigned();
  auto launch = std::async(std::launch::async, [&] {
    ports::Lease l = lease;
    return plane_->runner().Launch(l, protocol::Job{42, 7, "push", "acme", "api", "ci.yml"});
  });
  while (plane::PlaneTestPeer(*plane_).Queued("n1") != 1) std::this_thread::yield();  // not taken by the dead poll
  Reply cmd = Send("POST", "/v1/nodes/n1/poll");
  ASSERT_EQ(cmd.status, 200) << cmd.body;
  const std::string id = cmd.body.substr(cmd.body.find(R"("id":")") + 6, 32);
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/result", R"({"id":")" + id + R"(","ok":false,"error":"no"})").status, 204);
  EXPECT_FALSE(plane::Is(launch.get(), plane::kCustody));  // the node's own answer, not silence
}

// Issue 17 #8 (R03): a launch result the plane does not know (it restarted
// since) keeps the node's custody; it is never a bare 204.
// A result after a restart, for a command the new plane never sent, is
// answered "unregistered" (S03), never 204: the node registers again and
// the lease its launch started is adopted by that registration (R14), while
// its heartbeats keep the lease renewed meanwhile (R19).
TEST_F(NodeWireTest, R03_S03_AResultAfterARestartIsAnsweredUnregisteredAndItsLeaseAdopted) {
  ASSERT_EQ(Send("POST", "/v1/register", NodeRegisterBody("n1", "i1", {})).status, 200);
  ports::Lease lease = LaunchedOn("n1", "i1", 78);
  RestartPlane();
  Reply late = Send("POST", "/v1/nodes/n1/result", R"({"id":"0123456789abcdef0123456789abcdef","ok":true})", "i1");
  EXPECT_EQ(late.status, 401) << late.body;
  EXPECT_NE(late.body.find(R"("code":"unregistered")"), std::string::npos) << late.body;
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/leases/" + lease.id + "/heartbeat", R"({"epoch":0})", "i1").status, 204);
  ASSERT_EQ(Send("POST", "/v1/register", NodeRegisterBody("n1", "i1", {}), "i1").status, 200);
  EXPECT_TRUE(plane::PlaneTestPeer(*plane_).Owns(lease.id, "n1", "i1"));
}

// Issue 17 #10 (R23): once an incarnation was claimed, a registration
// without one is refused as superseded, by the plane and, after a restart,
// by the ledger; the ledger's row keeps its incarnation.
TEST_F(NodeWireTest, R23_ARegistrationWithoutAnIncarnationCannotBlankTheClaim) {
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  const std::string anonymous = R"({"version":1,"node":"n1","provider":"process","deployment":"dep","vcpu":4,"memory":8589934592})";
  Reply r = Send("POST", "/v1/register", anonymous, "");
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find(R"("code":"superseded")"), std::string::npos) << r.body;
  RestartPlane();
  Reply after = Send("POST", "/v1/register", anonymous, "");
  EXPECT_EQ(after.status, 409) << after.body;
  auto nodes = ledger_->ListNodes();
  ASSERT_TRUE(nodes.ok() && nodes->size() == 1);
  EXPECT_EQ(nodes->front().incarnation, "i1");
}

// Issue 17 #9 (R31): every authenticated request is evidence of life, not
// only polls and lease operations.
TEST_F(NodeWireTest, R31_EveryAuthenticatedRequestKeepsTheNodeAlive) {
  plane::FakeClock clock(1'800'000'000LL * 1'000'000'000);
  server_.reset();
  routes_.reset();
  MakePlane(&clock);
  Serve(NodeWireOptions{});
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  const int64_t window = plane_->poll_window_ns();
  for (const auto& [method, path, body] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"POST", "/v1/nodes/n1/describe", R"({"tier":"small"})"},
           {"GET", "/v1/nodes/n1/cache-policy?owner=a&repository=b", ""},
           {"POST", "/v1/nodes/n1/renew", "{}"},
           {"POST", "/v1/nodes/n1/reconcile", R"({"instances":[]})"},
           {"GET", "/v1/nodes/n1/launched", ""}}) {
    clock.Advance(3 * window);  // silent for three windows of the four
    Send(method, path, body);   // answered or refused, it is the node speaking
    plane_->ExpireSilentNodes();
    ASSERT_EQ(plane_->Nodes(), std::vector<std::string>{"n1"}) << path << " was not taken as a sign of life";
  }
  server_.reset();
  routes_.reset();
  plane_.reset();  // before the clock it reads
}

// Issue 17 #11 (R19, R25) and #6 (R24): after its release a lease's node can
// still remove its runner, and the runner is the one named for the lease,
// whatever id the node sent.
TEST_F(NodeWireJitTest, R24_R25_ARunnerIsRemovedByItsLeasesNameEvenAfterTheRelease) {
  ScriptedSource source;
  ServeJit("org-a", &source);
  ASSERT_EQ(Send("POST", "/v1/register", NodeRegisterBody("n1", "i1", {})).status, 200);
  ports::Lease lease = LaunchedOn("n1", "i1");
  const std::string base = "/v1/nodes/n1/leases/" + lease.id;
  ASSERT_EQ(Send("POST", base + "/release", R"({"epoch":0,"outcome":"done"})").status, 204);
  EXPECT_EQ(Send("POST", base + "/release", R"({"epoch":0,"outcome":"done"})").status, 204);  // a retry is harmless
  Reply removed = Send("POST", base + "/runner/remove", R"({"runner_id":999})");
  EXPECT_EQ(removed.status, 204) << removed.body;
  std::lock_guard l(source.mu);
  ASSERT_EQ(source.removed.size(), 1u);
  EXPECT_EQ(source.removed[0], std::make_pair(int64_t{0}, protocol::RunnerNameFor(lease.id)));
}

// Issue 22 #2: a withdraw smuggled behind a GET with an ambiguous
// Transfer-Encoding never runs: the GET is refused and the connection closed.
TEST_F(NodeWireTest, ASmuggledWithdrawNeverRuns) {
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  testing::RawConnection c(server_->port());
  ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n"
                     "POST /v1/nodes/n1/withdraw HTTP/1.1\r\nHost: x\r\nNodeplane-Incarnation: i1\r\n"
                     "Content-Length: 2\r\n\r\n{}"));
  bool closed = false;
  std::string answer = c.ReadUntilClose(&closed);
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
  EXPECT_EQ(answer.find("HTTP/1.1 204"), std::string::npos) << answer;
  EXPECT_EQ(plane_->Nodes(), std::vector<std::string>{"n1"}) << "the smuggled withdraw ran";
}

// Issue 22 #4: a number out of its field's range is refused (400), for every
// numeric field of every route: never truncated (4294967297 is not protocol
// 1), never wrapped, never a fraction.
TEST_F(NodeWireTest, ANumberOutOfItsFieldsRangeIsRefused) {
  const std::string base = R"({"node":"n1","provider":"process","deployment":"dep","incarnation":"i1")";
  for (const std::string& numbers :
       {std::string(R"("version":4294967297,"vcpu":4,"memory":8589934592)"),
        std::string(R"("version":1,"min_version":-1,"vcpu":4,"memory":8589934592)"),
        std::string(R"("version":1,"min_version":2147483648,"vcpu":4,"memory":8589934592)"),
        std::string(R"("version":1,"vcpu":18446744073709551615,"memory":8589934592)"),
        std::string(R"("version":1,"vcpu":4,"memory":-8589934592)"),
        std::string(R"("version":1.5,"vcpu":4,"memory":8589934592)"),
        std::string(R"("version":1,"vcpu":4e3,"memory":8589934592)")}) {
    Reply r = Send("POST", "/v1/register", base + "," + numbers + "}");
    EXPECT_EQ(r.status, 400) << numbers << ": " << r.body;
    EXPECT_NE(r.body.find(R"("code":"refused")"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("must be an integer from 0 to"), std::string::npos) << r.body;
  }
  ASSERT_EQ(Send("POST", "/v1/register", RegisterBody("n1", "i1")).status, 200);
  ports::Lease lease = Assigned();
  const std::string at = "/v1/nodes/n1/leases/" + lease.id;
  for (const std::string epoch : {"-1", "9223372036854775808", "0.5", "1e2"}) {
    for (const auto& [route, body] : std::vector<std::pair<std::string, std::string>>{
             {"/bind", R"({"epoch":)" + epoch + "}"},
             {"/advance", R"({"phase":"launching","epoch":)" + epoch + "}"},
             {"/heartbeat", R"({"epoch":)" + epoch + "}"},
             {"/failure", R"({"reason":"x","epoch":)" + epoch + "}"},
             {"/release", R"({"outcome":"failed","epoch":)" + epoch + "}"},
             {"/runner/remove", R"({"runner_id":)" + epoch + "}"}}) {
      Reply r = Send("POST", at + route, body);
      EXPECT_EQ(r.status, 400) << route << " " << body << ": " << r.body;
      EXPECT_NE(r.body.find("must be an integer from 0 to"), std::string::npos) << route << ": " << r.body;
    }
  }
  auto still = ledger_->GetLease(lease.id);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->phase, ports::Phase::kAssigned);  // nothing was done to it
}

}  // namespace
}  // namespace nodeplane::wire
