// The reference node (NodeAgent, in process) against the whole control plane
// (the Daemon, from a TOML config) on the loopback wire, running real jobs
// with its process provider: what the node does with the ledger's answers.
// Every wait is bounded and watches the ledger or a file the job writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "config/config_loader.h"
#include "jobs/launch_for_request.h"
#include "protocol/codec.h"
#include "wire/http_server.h"
#include "node/container_provider.h"
#include "node/job_sandbox.h"
#include "node/node_agent.h"
#include "node/process_provider.h"
#include "nodeplaned/daemon.h"
#include "nodeplane/np_plugin.h"

namespace nodeplane {
namespace {

class NodeAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-agent-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // The job (Python, which, unlike a shell, leaves the signal mask it was
    // given alone) reports its blocked signals, traps SIGTERM and says so,
    // then waits for its finish file.
    const std::string job =
        "import os, signal, sys, time\n"
        "def term(*_):\n"
        "    print('got-term', flush=True)\n"
        "    sys.exit(143)\n"
        "signal.signal(signal.SIGTERM, term)\n"
        "print([l for l in open('/proc/self/status') if l.startswith('SigBlk')][0].strip(), flush=True)\n"
        "print('started', flush=True)\n"
        "while not os.path.exists('" + dir_ + "/finish'):\n"
        "    time.sleep(0.05)\n";
    std::ofstream(dir_ + "/job.py") << job;
    const std::string toml = R"(deployment = "agent"
state_dir = ")" + dir_ + R"(/host"
plugin_dir = ")" + PLUGIN_DIR + R"("
[log]
level = "error"
[wire]
listen = "127.0.0.1:0"
poll_window = "1s"
command_timeout = "30s"
)" + Timing() + R"(reap_interval = "1s"
[tiers.job]
vcpu = 1
memory = "256MiB"
providers = ["process"]
command = ["python3", ")" + dir_ + R"(/job.py"]
[plugins.ledger]
library = "ledger-sqlite"
provides = ["ledger"]
)";
    auto loaded = config::LoadConfigText(toml, dir_ + "/nodeplane.toml");
    ASSERT_TRUE(loaded.ok()) << (loaded.errors.empty() ? "" : loaded.errors.front().ToString());
    auto d = Daemon::Start(*loaded.config, log_);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    daemon_ = std::move(*d);
    // As nodeplane-node's main() does: SIGTERM and SIGINT are blocked in every
    // thread it starts, the agent's among them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, &saved_mask_);
    node::NodeOptions o;
    o.name = "n1";
    o.servers = {{"127.0.0.1", daemon_->wire_port()}};
    o.state_dir = dir_ + "/n1";
    o.deployment = "agent";
    o.vcpu = 2;
    o.log = &node_log_;
    auto sandbox = node::JobSandbox::Open({std::nullopt, dir_ + "/n1-work", {}}, o.state_dir);
    ASSERT_TRUE(sandbox.ok()) << sandbox.status().message();
    sandbox_ = std::move(*sandbox);
    agent_ = std::make_unique<node::NodeAgent>(o, std::make_unique<node::ProcessProvider>(o.state_dir, *sandbox_));
    run_ = std::async(std::launch::async, [this] { return agent_->Run(stop_.get_token()); });
    ASSERT_TRUE(Eventually([&] { return daemon_->plane().Nodes() == std::vector<std::string>{"n1"}; }));
  }
  // The rest of [wire] and the lease TTL, which a fixture may set otherwise.
  virtual std::string Timing() const {
    return "header_timeout = \"2s\"\nidle_timeout = \"2s\"\n[leases]\nttl = \"3s\"\n";
  }
  void TearDown() override {
    std::ofstream(dir_ + "/finish") << "";  // any job still running ends
    stop_.request_stop();
    if (run_.valid()) run_.get();
    agent_.reset();
    daemon_.reset();
    pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr);
    std::filesystem::remove_all(dir_);
  }

  template <typename F>
  static bool Eventually(F done, int seconds = 20) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the ledger, bounded above
    }
    return true;
  }
  std::string JobLog(const std::string& lease) {
    std::ifstream in(dir_ + "/n1/jobs/" + lease + ".log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Launches one job on n1 and waits until its lease is busy and the job
  // says it started.
  ports::Lease LaunchBusy(int64_t request_id) {
    ports::Ledger& ledger = daemon_->ledger();
    auto leases = ledger.Escrow("job", 1);
    EXPECT_TRUE(leases.ok() && leases->size() == 1);
    ports::Lease lease = leases->front();
    EXPECT_TRUE(ledger.Assign(lease.id, lease.epoch, request_id, request_id).ok());
    protocol::Job job{request_id, request_id, "test", "acme", "repo", "ref"};
    EXPECT_TRUE(daemon_->plane().runner().Launch(lease, job).ok());
    EXPECT_TRUE(Eventually([&] {
      auto l = ledger.GetLease(lease.id);
      return l.ok() && l->phase == ports::Phase::kBusy && JobLog(lease.id).find("started") != std::string::npos;
    }));
    return *ledger.GetLease(lease.id);
  }
  // A sample of the control plane's metrics, by its line's opening; 0 when absent.
  double Sample(const std::string& opening) {
    const std::string text = daemon_->Metrics();
    const size_t at = text.find("\n" + opening + " ");
    return at == std::string::npos ? 0 : std::stod(text.substr(at + opening.size() + 2));
  }
  std::optional<ports::Job> Ended(const std::string& lease) {
    auto j = daemon_->ledger().JobForLease(lease);
    if (!j.ok() || !j->has_value() || !(*j)->conclusion) return std::nullopt;
    return **j;
  }

  std::string dir_;
  sigset_t saved_mask_{};
  Logger log_{LogLevel::kError};
  Logger node_log_{LogLevel::kError};
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<node::JobSandbox> sandbox_;  // outlives the agent's provider
  std::unique_ptr<node::NodeAgent> agent_;
  std::stop_source stop_;
  std::future<node::Outcome> run_;
};

// Issue 17 #12 (S14: an operator's force-release): a heartbeat answered
// "force_release" stops the job and releases the lease, failed, saying why.
TEST_F(NodeAgentTest, AForceReleasedLeaseStopsItsJobAndIsReleasedFailed) {
  ports::Lease lease = LaunchBusy(1);
  ports::Ledger& ledger = daemon_->ledger();
  // Held in custody (as after a late launch result), then taken back.
  ASSERT_TRUE(ledger.Advance(lease.id, lease.epoch, ports::Phase::kCustody, "").ok());
  ASSERT_TRUE(ledger.ForceRelease(lease.id).ok());
  ASSERT_TRUE(Eventually([&] { return Ended(lease.id).has_value(); })) << "the node never gave the lease up";
  ports::Job job = *Ended(lease.id);
  EXPECT_EQ(job.conclusion, ports::Phase::kFailed);
  EXPECT_NE(job.failure_reason.find("force-released"), std::string::npos) << job.failure_reason;
  EXPECT_NE(JobLog(lease.id).find("got-term"), std::string::npos) << "the job was not stopped: " << JobLog(lease.id);
}

// Review D4 (J6 of scale_set_listener.h): a lease whose runner left GitHub
// (the intake retired it idle, or its job ended) is marked deregistered; the
// node's next heartbeat hears NP_DEREGISTERED, stops the runner and
// releases the lease done. This is how a draining node's idle runners end.
TEST_F(NodeAgentTest, D4_ADeregisteredLeasesRunnerIsStoppedAndItsLeaseReleasedDone) {
  ports::Lease lease = LaunchBusy(3);
  ASSERT_TRUE(daemon_->ledger().MarkDeregistered(lease.id).ok());
  ASSERT_TRUE(Eventually([&] { return Ended(lease.id).has_value(); })) << "the node never stopped the retired runner";
  EXPECT_EQ(Ended(lease.id)->conclusion, ports::Phase::kDone) << Ended(lease.id)->failure_reason;
  EXPECT_NE(JobLog(lease.id).find("got-term"), std::string::npos) << "the runner was not stopped: " << JobLog(lease.id);
}

// R44, review D11: a lease the ledger ended without telling the node (an
// operator's force-release while the node was partitioned, quarantine made
// failed) is no longer launched here; the node's own sweep, once a lease
// TTL, stops its runner, with no reap anywhere to trigger a sweep.
TEST_F(NodeAgentTest, D11_TheNodesOwnSweepStopsARunnerWhoseLeaseEnded) {
  ports::Lease lease = LaunchBusy(4);
  ASSERT_TRUE(daemon_->ledger().Release(lease.id, lease.epoch, ports::Phase::kFailed).ok());
  EXPECT_TRUE(Eventually([&] { return JobLog(lease.id).find("got-term") != std::string::npos; }))
      << "the runner of an ended lease kept running: " << JobLog(lease.id);
}

// Issue 24 #1: a job starts with SIGTERM deliverable (nodeplane-node blocks
// it in its own threads), so a destroy's SIGTERM reaches the job's trap
// instead of waiting out the grace for SIGKILL.
TEST_F(NodeAgentTest, ADestroyedJobSeesSIGTERM) {
  ports::Lease lease = LaunchBusy(2);
  EXPECT_NE(JobLog(lease.id).find("SigBlk:\t0000000000000000"), std::string::npos) << JobLog(lease.id);
  EXPECT_TRUE(daemon_->plane().runner().Destroy(2).ok());
  EXPECT_NE(JobLog(lease.id).find("got-term"), std::string::npos) << JobLog(lease.id);
}

// Issue 17 #12: a job GitHub says succeeded ("succeeded", as the plane
// sends it) ends its lease done when the completion destroys it.
TEST_F(NodeAgentTest, ACompletionThatSucceededEndsTheLeaseDone) {
  ports::Lease lease = LaunchBusy(3);
  EXPECT_TRUE(daemon_->plane().runner().DestroyCompleted(3, "succeeded").ok());
  ASSERT_TRUE(Eventually([&] { return Ended(lease.id).has_value(); }));
  EXPECT_EQ(Ended(lease.id)->conclusion, ports::Phase::kDone);
}

// R37 on the path the operator's launch takes (issue 21): the escrow, the
// assignment and n1's dispatch fence are one ledger write, made before the
// command is queued, and the fence moves once for the launch, not twice.
TEST_F(NodeAgentTest, R37_ALaunchForARequestAdvancesTheNodesFenceOnce) {
  ports::Ledger& ledger = daemon_->ledger();
  auto fence = [&] {
    auto f = ledger.NodeFenceOf("n1");
    return f.ok() && f->has_value() ? (*f)->dispatch : -1;
  };
  const int64_t before = fence();
  ASSERT_GE(before, 0);
  const jobs::LaunchRequest req{"job", 4, 4, "test"};
  auto launched = jobs::LaunchForRequest(ledger, daemon_->plane().runner(), nullptr, req,
                                         WallNowNs(), {}, {});
  ASSERT_TRUE(launched.ok()) << launched.status().ToString();
  EXPECT_EQ(launched->node, "n1");
  EXPECT_EQ(launched->phase, "launched");
  EXPECT_EQ(fence(), before + 1);
  auto lease = ledger.GetLease(launched->lease);
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_EQ(lease->request_id, 4);
}

// Issue 21: an idle node holds one connection. Its periodic reconcile rides
// the poll connection, which is never idle, instead of the maintenance
// client's, which the control plane closes after its idle timeout (here
// 2 s, under the 3 s between reconciles), so that every reconcile was a
// new connection and, over TLS, a full handshake at both ends.
TEST_F(NodeAgentTest, AnIdleNodeReconcilesOnItsPollConnection) {
  const std::string reconciled = "nodeplane_wire_request_seconds_count{route=\"reconcile\",status=\"200\"}";
  ASSERT_TRUE(Eventually([&] { return Sample(reconciled) >= 3; }, 30)) << daemon_->Metrics();
  EXPECT_EQ(Sample("nodeplane_connections_accepted_total{listener=\"wire\"}"), 1) << daemon_->Metrics();
}

// Issue 21: a node running a job heartbeats every TTL/3 (here 2 s) on its
// second connection. Between beats that connection is idle, not slow, so
// it is kept for the idle timeout (5 s) rather than closed after the header
// timeout (1 s), which made every heartbeat a new connection and, over
// TLS, a full handshake at both ends.
class BusyNodeAgentTest : public NodeAgentTest {
 protected:
  std::string Timing() const override {
    return "header_timeout = \"1s\"\nidle_timeout = \"5s\"\n[leases]\nttl = \"6s\"\n";
  }
};

TEST_F(BusyNodeAgentTest, ANodeRunningAJobHeartbeatsOnOneConnection) {
  LaunchBusy(5);
  const std::string beat = "nodeplane_wire_request_seconds_count{route=\"lease_heartbeat\",status=\"204\"}";
  ASSERT_TRUE(Eventually([&] { return Sample(beat) >= 3; }, 30)) << daemon_->Metrics();
  // The poll's connection and the heartbeats'.
  EXPECT_EQ(Sample("nodeplane_connections_accepted_total{listener=\"wire\"}"), 2) << daemon_->Metrics();
}

// Issue 17 #12 (R01): a refusal is permanent whatever its status. A control
// plane that cannot decode the registration (one older than this node)
// answers 400 "refused"; the node stops instead of asking again forever.
// A control plane too old for this node: it refuses every registration.
struct Refuser : wire::HttpHandler {
  std::atomic<int> asked{0};
  void Handle(wire::HttpRequest, wire::Responder respond) override {
    ++asked;
    respond(wire::HttpResponse(400, "application/json",
                               protocol::Encode(protocol::ErrorReply{"refused", "register: unknown field \"inventory_known\"", {}})));
  }
};

// A node in a fresh state directory, run against `refuser` until it stops.
node::Outcome RunRefused(Refuser& refuser, const std::string& state_dir) {
  Logger quiet(LogLevel::kError);
  wire::ListenerOptions lo;
  lo.name = "old-plane";
  lo.host = "127.0.0.1";
  wire::HttpServer server(lo, refuser, quiet);
  EXPECT_TRUE(server.Start().ok());
  node::NodeOptions o;
  o.name = "n1";
  o.servers = {{"127.0.0.1", server.port()}};
  o.state_dir = state_dir;
  o.deployment = "agent";
  o.log = &quiet;
  auto sandbox = node::JobSandbox::Open({std::nullopt, state_dir + "-work", {}}, o.state_dir);
  EXPECT_TRUE(sandbox.ok()) << sandbox.status().message();
  if (!sandbox.ok()) return node::Outcome::kFailed;
  node::NodeAgent agent(o, std::make_unique<node::ProcessProvider>(o.state_dir, **sandbox));
  std::stop_source stop;
  auto run = std::async(std::launch::async, [&] { return agent.Run(stop.get_token()); });
  const bool stopped = run.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  stop.request_stop();
  EXPECT_TRUE(stopped) << "the node kept asking after " << refuser.asked.load() << " refusals";
  return run.get();
}

TEST(NodeAgentRefusal, R01_ARegistrationRefusedWith400StopsTheNode) {
  Refuser refuser;
  std::string tmpl = ::testing::TempDir() + "/np-refused-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  EXPECT_EQ(RunRefused(refuser, tmpl), node::Outcome::kRefused);
  EXPECT_EQ(refuser.asked.load(), 1);
  std::filesystem::remove_all(tmpl);
  std::filesystem::remove_all(tmpl + "-work");
}

// Review D20: finished jobs' logs are pruned by age when the node starts
// (and hourly); a recent one is kept.
// The agent refuses to start (issue 48) when a job uid could read its state
// directory (its key), or could not reach the work root; each refusal names
// the path. The probes run as a claimed job uid, so another agent stopping
// its job's leftovers never kills one (a start refused at random in CI).
TEST(NodeAgentRefusal, ASandboxAJobCouldEscapeOrNotUseIsRefusedNamingThePath) {
  if (::geteuid() != 0) GTEST_SKIP() << "job uids need root";
  std::string tmpl = ::testing::TempDir() + "/np-sandbox-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  ::chmod(dir.c_str(), 0711);
  node::SandboxOptions o;
  o.uids = node::UidRange{300900, 300909};
  o.claims_dir = dir + "/claims";
  o.work_root = dir + "/work";
  const std::string state = dir + "/state";
  std::filesystem::create_directories(state);
  ::chmod(state.c_str(), 0755);
  { std::ofstream(state + "/node.key") << "secret"; }
  ::chmod((state + "/node.key").c_str(), 0644);
  auto readable = node::JobSandbox::Open(o, state);
  ASSERT_FALSE(readable.ok());
  EXPECT_NE(readable.status().message().find("could read " + state), std::string::npos) << readable.status().ToString();
  ::chmod(state.c_str(), 0700);
  ::chmod((state + "/node.key").c_str(), 0600);
  const std::string hidden = dir + "/hidden";
  std::filesystem::create_directories(hidden);
  ::chmod(hidden.c_str(), 0700);
  o.work_root = hidden + "/work";
  auto unreachable = node::JobSandbox::Open(o, state);
  ASSERT_FALSE(unreachable.ok());
  EXPECT_NE(unreachable.status().message().find("cannot reach the work root " + o.work_root), std::string::npos)
      << unreachable.status().ToString();
  o.work_root = dir + "/work";
  auto good = node::JobSandbox::Open(o, state);
  EXPECT_TRUE(good.ok()) << good.status().ToString();
  std::filesystem::remove_all(dir);
}

TEST(NodeAgentRefusal, D20_FinishedJobsLogsOlderThanTheKeepArePruned) {
  Refuser refuser;
  std::string tmpl = ::testing::TempDir() + "/np-logs-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  std::filesystem::create_directories(tmpl + "/jobs");
  std::ofstream(tmpl + "/jobs/old.log") << "a week and a day ago\n";
  std::ofstream(tmpl + "/jobs/new.log") << "an hour ago\n";
  const auto now = std::filesystem::file_time_type::clock::now();
  std::filesystem::last_write_time(tmpl + "/jobs/old.log", now - std::chrono::hours(24 * 8));
  std::filesystem::last_write_time(tmpl + "/jobs/new.log", now - std::chrono::hours(1));
  EXPECT_EQ(RunRefused(refuser, tmpl), node::Outcome::kRefused);
  EXPECT_FALSE(std::filesystem::exists(tmpl + "/jobs/old.log"));
  EXPECT_TRUE(std::filesystem::exists(tmpl + "/jobs/new.log"));
  std::filesystem::remove_all(tmpl);
  std::filesystem::remove_all(tmpl + "-work");
}

// Issue 48 §2: an engine that is down is an outage, never a verdict: what
// runs cannot be read (so the agent registers no inventory it does not
// know), and a launch started nothing and may be retried.
TEST(ContainerProviderTest, AnEngineThatIsDownIsUnavailableNeverAnEmptyInventory) {
  std::string tmpl = ::testing::TempDir() + "/np-engine-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  node::ContainerProvider provider({tmpl + "/no-engine.sock", "n1", "agent", tmpl, {}});
  EXPECT_EQ(provider.Recover().status.code(), Code::kUnavailable);
  node::LaunchSpec spec;
  spec.lease = "l1";
  spec.tier.image = "localhost/nodeplane-test-job:1";
  Status started = provider.Start(spec);
  EXPECT_EQ(started.code(), Code::kUnavailable) << started.message();
  EXPECT_NE(started.message().find("no-engine.sock"), std::string::npos) << started.message();
  EXPECT_TRUE(provider.Running().empty());
  std::filesystem::remove_all(tmpl);
}

// Review D20: a pid file a previous agent left is trusted only for the very
// process it names (this boot, that start time). A pid since given to
// another process group is never signalled; the one it recorded is stopped.
TEST(ProcessProviderTest, D20_APidFileIsTrustedOnlyForTheProcessItNames) {
  std::string tmpl = ::testing::TempDir() + "/np-pids-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  auto sandbox = node::JobSandbox::Open({std::nullopt, tmpl + "-work", {}}, tmpl);
  ASSERT_TRUE(sandbox.ok()) << sandbox.status().message();
  std::filesystem::create_directories(tmpl + "/jobs");
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  // A process group of this user, not any agent's job; and its start time.
  auto spawn = [](std::string& started) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setsid();
      ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    while (::getpgid(pid) != pid) std::this_thread::yield();  // until it leads its group
    std::string stat_text;
    std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), stat_text);
    std::istringstream fields(stat_text.substr(stat_text.rfind(')') + 2));
    for (int i = 3; i <= 22; ++i) fields >> started;
    return pid;
  };
  // How the process ended: the signal that ended it.
  auto ended_by = [](pid_t pid) {
    int status = 0;
    return ::waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  };
  std::string started;
  const pid_t other = spawn(started);
  std::ofstream(tmpl + "/jobs/reused.pid") << other << " 1 " << boot << "\n";  // another start time
  std::ofstream(tmpl + "/jobs/rebooted.pid") << other << " " << started << " another-boot\n";
  EXPECT_EQ(node::ProcessProvider(tmpl, **sandbox).Recover().stopped.size(), 2u);
  ::kill(other, SIGTERM);  // ours to end: SIGTERM, unless Recover killed it first
  EXPECT_EQ(ended_by(other), SIGTERM) << "a process the pid files did not name was killed";

  const pid_t left = spawn(started);
  std::ofstream(tmpl + "/jobs/left.pid") << left << " " << started << " " << boot << "\n";
  EXPECT_EQ(node::ProcessProvider(tmpl, **sandbox).Recover().stopped, std::vector<std::string>{"left"});
  EXPECT_EQ(ended_by(left), SIGKILL) << "the process the pid file named was not stopped";
  std::filesystem::remove_all(tmpl);
  std::filesystem::remove_all(tmpl + "-work");
}

}  // namespace
}  // namespace nodeplane
