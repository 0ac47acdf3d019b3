#include "node/node_agent.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "common/file_text.h"
#include "common/units.h"
#include "pki/authority.h"
#include "protocol/codec.h"
#include "version.h"

namespace nodeplane::node {
namespace {

// Writes `text` to `path` through a temporary file and a rename, so a crash
// leaves the old file or the new one, never half of one.
bool WriteAtomically(const std::string& path, const std::string& text, bool secret) {
  const std::string tmp = path + ".new";
  if (secret) {
    if (!pki::WritePrivateFile(tmp, text).ok()) return false;
  } else {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

std::string NewIncarnation() {
  std::random_device rd;
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 32; ++i) out.push_back(kHex[rd() & 15]);
  return out;
}

// Sleeps in small steps so a stop is noticed; this paces a retry loop.
void Pause(std::chrono::milliseconds d, const std::stop_token& stop) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stop.stop_requested() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// GitHub's runner exits 7 when GitHub refuses its version and it was told
// not to update itself (ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE).
constexpr int kRunnerOutdated = 7;

// Why a runner's exit failed its lease, in words an operator can act on.
std::string ExitReason(const Exit& e) {
  if (e.code == kRunnerOutdated) {
    return "the runner is outdated: GitHub refused its version (exit 7); update the tier's image or command";
  }
  std::string why = "the job exited with code " + std::to_string(e.code);
  if (!e.detail.empty()) why += ": " + e.detail;
  return why;
}

std::string ErrorOf(const wire::ClientResponse& r) {
  return "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 300);
}

}  // namespace

NodeAgent::NodeAgent(NodeOptions options, std::unique_ptr<Provider> provider)
    : o_(std::move(options)), log_(*o_.log), incarnation_(NewIncarnation()), provider_(std::move(provider)) {}

std::string NodeAgent::StateFile(const char* name) const {
  auto text = ReadTextFile(o_.state_dir + "/" + name);
  return text.ok() ? *text : std::string();  // a missing file reads as empty, which no parser accepts
}

wire::ClientOptions NodeAgent::ClientFor() const {
  wire::ClientOptions c;
  const ServerAddress at = Server();  // Call aims each request at the current replica
  c.host = at.host;
  c.port = at.port;
  c.timeout = std::chrono::seconds(120);  // longer than any poll window, until the plane says its own
  c.connect_timeout = std::chrono::seconds(5);
  if (o_.tls) {
    c.tls = wire::ClientTls{StateFile("ca.crt"), o_.server_name, StateFile("node.crt"),
                            StateFile("node.key"), true};
  }
  return c;
}

ServerAddress NodeAgent::Server() const {
  std::lock_guard lock(servers_mu_);
  return o_.servers[server_];
}

void NodeAgent::FailOver(const ServerAddress& from, const std::string& active_hint) {
  std::lock_guard lock(servers_mu_);
  if (!(o_.servers[server_] == from)) return;  // the other thread moved already
  size_t next = (server_ + 1) % o_.servers.size();
  if (!active_hint.empty()) {
    // The standby named the active replica: go there, even when it is not in
    // our list (its certificate is checked like any other).
    const size_t colon = active_hint.rfind(':');
    ServerAddress named{active_hint.substr(0, colon), 0};
    try {
      named.port = static_cast<uint16_t>(std::stoul(active_hint.substr(colon + 1)));
    } catch (const std::exception&) {
      named.port = 0;
    }
    if (colon != std::string::npos && named.port != 0) {
      auto it = std::find(o_.servers.begin(), o_.servers.end(), named);
      if (it == o_.servers.end()) it = o_.servers.insert(o_.servers.end(), named);
      next = static_cast<size_t>(it - o_.servers.begin());
    }
  }
  if (next == server_) return;
  server_ = next;
  log_.Info("node.server_changed", {{"from", from.host + ":" + std::to_string(from.port)},
                                    {"to", o_.servers[next].host + ":" + std::to_string(o_.servers[next].port)},
                                    {"why", active_hint.empty() ? "unreachable" : "standby"}});
}

Result<wire::ClientResponse> NodeAgent::Call(wire::HttpClient& c, const std::string& method, const std::string& path,
                                             const std::string& body) {
  const ServerAddress at = Server();
  c.Aim(at.host, at.port);
  // Longer than the plane's poll window, so a parked poll is never cut
  // short, and short enough that a paused replica is left within one more.
  if (const int64_t poll = poll_seconds_.load(); poll > 0) c.SetTimeout(std::chrono::seconds(poll + 15));
  auto r = c.Do(method, path, body, {{"Nodeplane-Incarnation", incarnation_}});
  if (!r.ok()) {
    FailOver(at, "");
  } else if (r->status == 503 && protocol::ErrorCodeOf(r->body) == "unavailable") {
    // A standby names the active replica; an active one in an outage names
    // none, and the node stays.
    if (auto e = protocol::Decode<protocol::ErrorReply>(r->body); e.ok() && !e->active.empty()) FailOver(at, e->active);
  }
  return r;
}

Status NodeAgent::Register(wire::HttpClient& c) {
  protocol::RegisterRequest q;
  q.min_version = protocol::kMinProtocol;
  q.version = protocol::kMaxProtocol;
  q.node = o_.name;
  q.provider = o_.provider;
  q.site = o_.site;
  q.deployment = o_.deployment;
  q.incarnation = incarnation_;
  q.release = NODEPLANE_VERSION;
  q.vcpu = o_.vcpu;
  q.memory = o_.memory;
  q.instances = provider_->Running();  // what it still runs is adopted, not lost
  q.inventory_known = true;
  auto r = Call(c, "POST", "/v1/register", protocol::Encode(q));
  if (!r.ok()) return r.status();
  const std::string code = protocol::ErrorCodeOf(r->body);
  // A refusal is permanent (R01), whatever its status: this node stops.
  if (code == "refused" || r->status == 403) return Status::Refused(ErrorOf(*r));
  if (code == "superseded") return Status(Code::kConflict, ErrorOf(*r));
  if (r->status != 200) return Status::Unavailable(ErrorOf(*r));
  auto reply = protocol::Decode<protocol::RegisterResponse>(r->body);
  if (!reply.ok()) return reply.status();
  ttl_seconds_ = reply->lease_ttl_seconds > 0 ? reply->lease_ttl_seconds : 90;
  poll_seconds_ = reply->poll_seconds;
  registered_ = true;
  log_.Info("node.registered", {{"node", o_.name}, {"version", reply->version}, {"instances", q.instances.size()},
                                {"lease_ttl_seconds", reply->lease_ttl_seconds}});
  HoldAdopted(c);
  return Status::Ok();
}

void NodeAgent::HoldAdopted(wire::HttpClient& c) {
  for (const std::string& lease : provider_->Running()) {
    {
      std::lock_guard lock(mu_);
      if (jobs_.count(lease) != 0) continue;
    }
    auto r = Call(c, "GET", Path("/leases/" + lease));
    auto l = r.ok() && r->status == 200 ? protocol::Decode<protocol::LeaseReply>(r->body)
                                        : Result<protocol::LeaseReply>(Status::NotFound("no such lease"));
    if (!l.ok() || !l->lease || l->lease->node != o_.name) continue;  // the sweep stops what is not ours
    std::lock_guard lock(mu_);
    jobs_[lease] = Job{l->lease->epoch, l->lease->request_id, std::nullopt, kDefaultGrace};
    log_.Info("node.lease_held", {{"lease", lease}, {"epoch", l->lease->epoch}, {"phase", ports::PhaseName(l->lease->phase)}});
  }
}

Outcome NodeAgent::Run(std::stop_token stop) {
  // What runs here must be known before the node says so: an engine that
  // is down is waited out, never registered as an empty inventory.
  Recovered left = provider_->Recover();
  while (!left.status.ok()) {
    log_.Warn("node.provider_unavailable", {{"provider", o_.provider}, {"error", left.status.message()}});
    Pause(std::chrono::seconds(2), stop);
    if (stop.stop_requested()) return Outcome::kStopped;
    left = provider_->Recover();
  }
  for (const std::string& lease : left.stopped) log_.Warn("node.leftover_stopped", {{"lease", lease}});
  for (const std::string& lease : left.adopted) log_.Info("node.leftover_adopted", {{"lease", lease}});
  if (o_.tls) {
    auto cert = pki::InspectCert(StateFile("node.crt"));
    if (!cert.ok()) {
      log_.Error("node.certificate_unreadable", {{"path", o_.state_dir + "/node.crt"}});
      return Outcome::kFailed;
    }
    o_.deployment = cert->organization;  // the certificate says which deployment
  }
  wire::HttpClient client(ClientFor());
  std::jthread maintenance([this, stop](std::stop_token s) { Maintain(s, stop); });
  auto stopping = [&] { return stop.stop_requested() || superseded_; };
  uint64_t tls_seen = 0;
  // Every retry waits a growing, jittered while (so a fleet that lost its
  // plane does not come back in step); only an answered poll resets it.
  auto backoff = std::chrono::milliseconds(500);
  std::minstd_rand jitter(std::random_device{}());
  auto wait_out = [&] {
    Pause(backoff / 2 + std::chrono::milliseconds(jitter() % (backoff.count() / 2 + 1)), stop);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  };
  Outcome outcome = Outcome::kStopped;
  // The inventory goes with the registration, then about once a lease TTL
  // on this connection, between polls: it is never idle, where the
  // maintenance client's is closed by the control plane between its calls,
  // so a reconcile there cost a new connection (and a handshake) each time.
  auto reconciled_at = std::chrono::steady_clock::now();
  auto reconcile_if_due = [&] {
    const auto now = std::chrono::steady_clock::now();
    if (now - reconciled_at < std::chrono::seconds(std::max<int64_t>(1, ttl_seconds_))) return;
    reconciled_at = now;
    Reconcile(client);
  };

  while (!stopping()) {
    ReloadTlsIfRenewed(client, tls_seen);
    if (!registered_) {
      Status s = Register(client);
      if (s.code() == Code::kRefused) {
        log_.Error("node.refused", {{"error", s.message()}});
        outcome = Outcome::kRefused;
        break;
      }
      if (s.code() == Code::kConflict) {  // another process holds the name (R23)
        log_.Error("node.superseded", {{"error", s.message()}});
        superseded_ = true;
        outcome = Outcome::kSuperseded;
        break;
      }
      if (!s.ok()) {
        log_.Warn("node.register_failed", {{"error", s.message()}});
        wait_out();
        continue;
      }
      reconciled_at = std::chrono::steady_clock::now();
    }
    auto r = Call(client, "POST", Path("/poll"));
    if (!r.ok()) {
      log_.Warn("node.poll_failed", {{"error", r.status().message()}});
      wait_out();
      continue;
    }
    if (r->status == 200 || r->status == 204) backoff = std::chrono::milliseconds(500);
    if (r->status == 204) {
      reconcile_if_due();
      continue;
    }
    if (r->status == 401) {  // the control plane forgot this node (a restart): register again
      registered_ = false;
      wait_out();  // briefly the first time, longer while the plane keeps forgetting it
      continue;
    }
    if (r->status == 409 && r->body.find("\"superseded\"") != std::string::npos) {
      log_.Error("node.superseded", {{"error", r->body.substr(0, 300)}});
      superseded_ = true;
      outcome = Outcome::kSuperseded;
      break;
    }
    if (r->status == 403) {
      log_.Error("node.refused", {{"error", r->body.substr(0, 300)}});
      outcome = Outcome::kRefused;
      break;
    }
    if (r->status != 200) {
      log_.Warn("node.poll_failed", {{"error", ErrorOf(*r)}});
      wait_out();
      continue;
    }
    auto cmd = protocol::Decode<protocol::Command>(r->body);
    if (!cmd.ok()) {
      log_.Warn("node.command_unreadable", {{"error", cmd.status().message()}});
      continue;
    }
    Execute(client, *cmd);
    reconcile_if_due();
  }

  // Draining: no new work; what this node holds runs to its end and is
  // released by the maintenance thread.
  if (outcome == Outcome::kStopped || outcome == Outcome::kSuperseded) {
    log_.Info("node.draining", {{"leases", provider_->Running().size()}});
    while (!provider_->Running().empty()) Pause(std::chrono::milliseconds(200), {});
  }
  maintenance.request_stop();
  maintenance.join();
  log_.Info("node.stopped", {{"outcome", outcome == Outcome::kStopped      ? "stopped"
                                         : outcome == Outcome::kSuperseded ? "superseded"
                                                                           : "refused"}});
  return outcome;
}

void NodeAgent::Execute(wire::HttpClient& c, const protocol::Command& cmd) {
  protocol::CommandResult result;
  result.id = cmd.id;
  result.ok = true;
  switch (cmd.kind) {
    case protocol::CommandKind::kLaunch:
      result = Launch(c, cmd);
      break;
    case protocol::CommandKind::kDestroy: {
      std::vector<std::pair<std::string, int64_t>> targets;
      {
        std::lock_guard lock(mu_);
        for (const auto& [lease, job] : jobs_) {
          if (job.request_id == cmd.request_id) targets.emplace_back(lease, job.epoch);
        }
      }
      const bool completed = protocol::JobSucceeded(cmd.job_result);
      for (const auto& [lease, epoch] : targets) {
        {
          std::lock_guard lock(mu_);
          if (auto j = jobs_.find(lease); j != jobs_.end()) j->second.verdict = completed;
        }
        StopRunner(lease);
        EndLease(c, lease, epoch, completed, "destroyed by the control plane");
      }
      log_.Info("node.destroyed", {{"request_id", cmd.request_id}, {"leases", targets.size()}});
      break;
    }
    case protocol::CommandKind::kSweep:
      if (!Sweep(c)) {
        result.ok = false;
        result.error = "the sweep could not read what the ledger counts as launched here";
      }
      break;
    case protocol::CommandKind::kTend: {
      std::map<std::string, Job> jobs;
      {
        std::lock_guard lock(mu_);
        jobs = jobs_;
      }
      for (const auto& [lease, job] : jobs) {
        (void)Call(c, "POST", Path("/leases/" + lease + "/heartbeat"), protocol::Encode(protocol::EpochBody{job.epoch, {}}));
      }
      Reconcile(c);
      break;
    }
    case protocol::CommandKind::kInventory:
      result.barrier_id = cmd.barrier_id;
      result.instances = provider_->Running();
      break;
    case protocol::CommandKind::kUpgrade:
      result.ok = false;
      result.error = "the reference node does not upgrade itself; install the new package and restart it";
      break;
  }
  auto r = Call(c, "POST", Path("/result"), protocol::Encode(result));
  if (r.ok() && r->status == 409 && protocol::ErrorCodeOf(r->body) == "custody") {
    // A late launch result (R03): the lease is this node's to hold until its
    // job ends, which the maintenance thread sees to; the ledger is told it
    // is held in custody, so an operator can ask for it back.
    log_.Warn("node.custody", {{"command", cmd.id}});
    if (cmd.kind == protocol::CommandKind::kLaunch && cmd.lease && result.ok) {
      (void)Call(c, "POST", Path("/leases/" + cmd.lease->id + "/advance"),
                 protocol::Encode(protocol::AdvanceBody{cmd.lease->epoch, ports::Phase::kCustody}));
    }
  } else if (!r.ok() || (r->status != 204 && r->status != 200)) {
    log_.Warn("node.result_failed", {{"command", cmd.id}, {"error", r.ok() ? ErrorOf(*r) : r.status().message()}});
  }
}

protocol::CommandResult NodeAgent::Launch(wire::HttpClient& c, const protocol::Command& cmd) {
  protocol::CommandResult result;
  result.id = cmd.id;
  const ports::Lease& lease = *cmd.lease;
  const protocol::TierShape& tier = *cmd.tier;
  const int64_t request_id = cmd.RequestId();
  const std::string base = Path("/leases/" + lease.id);
  auto step = [&](const std::string& what, const std::string& path, const std::string& body) -> bool {
    auto r = Call(c, "POST", path, body);
    if (r.ok() && r->status == 204) return true;
    result.ok = false;
    result.error = what + " failed: " + (r.ok() ? ErrorOf(*r) : r.status().message());
    return false;
  };
  if (!step("bind", base + "/bind", protocol::Encode(protocol::EpochBody{lease.epoch, {}}))) return result;
  if (!step("advance to launching", base + "/advance", protocol::Encode(protocol::AdvanceBody{lease.epoch, ports::Phase::kLaunching}))) {
    return result;
  }
  {
    std::lock_guard lock(mu_);
    jobs_[lease.id] = Job{lease.epoch, request_id, std::nullopt,
                          tier.stop_grace_ms > 0 ? std::chrono::milliseconds(tier.stop_grace_ms) : kDefaultGrace};
  }
  std::string jit;  // SECRET
  if (tier.has_target) {
    auto r = Call(c, "POST", Path("/jit"),
                  protocol::Encode(protocol::JitBody{protocol::RunnerNameFor(lease.id), "_work"}));
    auto answer = r.ok() && r->status == 200 ? protocol::Decode<protocol::JitReply>(r->body)
                                             : Result<protocol::JitReply>(Status::Unavailable(
                                                   r.ok() ? ErrorOf(*r) : r.status().message()));
    if (!answer.ok()) {
      EndLease(c, lease.id, lease.epoch, false, "no runner registration: " + answer.status().message());
      result.ok = false;
      result.error = "minting the runner registration failed: " + answer.status().message();
      return result;
    }
    jit = answer->config;
  }
  if (Status s = provider_->Start(LaunchSpec{lease.id, request_id, tier, std::move(jit)}); !s.ok()) {
    EndLease(c, lease.id, lease.epoch, false, s.message());
    result.ok = false;
    result.error = "starting the runner failed: " + s.message();
    return result;
  }
  (void)step("advance to online", base + "/advance", protocol::Encode(protocol::AdvanceBody{lease.epoch, ports::Phase::kOnline}));
  (void)step("advance to busy", base + "/advance", protocol::Encode(protocol::AdvanceBody{lease.epoch, ports::Phase::kBusy}));
  log_.Info("node.launched", {{"lease", lease.id}, {"tier", tier.label}, {"request_id", request_id}});
  result.ok = true;
  result.error.clear();
  return result;
}

void NodeAgent::Reconcile(wire::HttpClient& c) {
  // What this node runs, so the ledger can free quarantined leases it does
  // not (compute that is provably gone) and the plane adopts what it does.
  auto r = Call(c, "POST", Path("/reconcile"), protocol::Encode(protocol::ReconcileBody{provider_->Running()}));
  if (r.ok() && r->status == 200 && r->body.find("\"freed\":0") == std::string::npos) {
    log_.Info("node.reconciled", {{"answer", r->body.substr(0, 100)}});
  }
}

void NodeAgent::EndLease(wire::HttpClient& c, const std::string& lease, int64_t epoch, bool ok,
                         const std::string& reason) {
  const std::string base = Path("/leases/" + lease);
  const ports::Phase outcome = ok ? ports::Phase::kDone : ports::Phase::kFailed;
  auto release = [&](int64_t at) {
    if (!ok) (void)Call(c, "POST", base + "/failure", protocol::Encode(protocol::FailureBody{at, reason.substr(0, 500)}));
    return Call(c, "POST", base + "/release", protocol::Encode(protocol::ReleaseBody{at, outcome}));
  };
  // The lease is no longer this node's to end; `event` says how it ended.
  auto settled = [&](const char* event, const std::string& detail) {
    {
      std::lock_guard lock(mu_);
      jobs_.erase(lease);
    }
    log_.Info(event, {{"lease", lease}, {"outcome", ports::PhaseName(outcome)}, {"detail", detail}});
  };
  auto r = release(epoch);
  if (r.ok() && r->status == 204) return settled("node.released", "recorded");
  const std::string code = r.ok() ? protocol::ErrorCodeOf(r->body) : std::string();
  if (code == "fenced") {
    // The epoch moved: the reaper quarantined the lease while this node
    // could not heartbeat it (an outage). The node's word that its job
    // ended, and how, still settles it while the lease is quarantined here.
    auto now = Call(c, "GET", base);
    auto l = now.ok() && now->status == 200 ? protocol::Decode<protocol::LeaseReply>(now->body)
                                            : Result<protocol::LeaseReply>(Status::NotFound("ended"));
    if (l.ok() && l->lease->phase == ports::Phase::kQuarantine && l->lease->node == o_.name) {
      auto again = release(l->lease->epoch);
      if (again.ok() && again->status == 204) {
        return settled("node.released", "recorded after the lease was quarantined");
      }
    } else if (now.ok() && (now->status == 200 || now->status == 404)) {
      // The ledger settled it otherwise (an operator, or the node's own
      // inventory freeing the quarantine): its verdict stands.
      return settled("node.release_moot", "the ledger settled the lease otherwise; its verdict stands");
    }
  } else if (code == "refused" || code == "not_found" || code == "superseded") {
    // Another outcome is recorded, or the lease is gone, or it is not this
    // process's to end: asking again cannot change the answer.
    return settled("node.release_moot", ErrorOf(*r));
  }
  log_.Warn("node.release_failed", {{"lease", lease}, {"error", r.ok() ? ErrorOf(*r) : r.status().message()}});
  std::lock_guard lock(mu_);
  unreleased_.emplace(lease, std::make_pair(ok, reason));  // Maintain asks again
}

void NodeAgent::Maintain(std::stop_token stop, std::stop_token agent_stop) {
  wire::HttpClient c(ClientFor());
  uint64_t tls_seen = 0;
  auto last_beat = std::chrono::steady_clock::now();
  auto last_sweep = last_beat;
  auto last_prune = last_beat;
  PruneJobLogs();
  while (!stop.stop_requested()) {
    if (std::chrono::steady_clock::now() - last_prune >= std::chrono::hours(1)) {
      last_prune = std::chrono::steady_clock::now();
      PruneJobLogs();
    }
    ReloadTlsIfRenewed(c, tls_seen);
    if (agent_stop.stop_requested() && !withdrawn_ && !superseded_) {
      // Withdraw first, so nothing new is placed here while the jobs this
      // node holds run to their end; it also ends the parked poll.
      auto r = Call(c, "POST", Path("/withdraw"), "{}");
      withdrawn_ = true;
      log_.Info("node.withdrew", {{"answer", r.ok() ? std::to_string(r->status) : r.status().message()}});
    }
    const std::vector<Exit> exits = provider_->Reap();
    std::set<std::string> outdated;  // runners GitHub refused as too old (exit 7): their tier pauses
    for (const Exit& e : exits) {
      if (e.code == kRunnerOutdated) outdated.insert(e.lease);
    }
    std::map<std::string, std::pair<bool, std::string>> to_end;
    {
      std::lock_guard lock(mu_);
      for (const Exit& e : exits) unreleased_[e.lease] = {e.code == 0, ExitReason(e)};
      to_end.swap(unreleased_);
    }
    for (const Exit& e : exits) {
      log_.Info("node.job_exited", {{"lease", e.lease}, {"code", e.code}, {"detail", e.code == 0 ? "" : ExitReason(e)}});
    }
    for (const auto& [lease, how] : to_end) {
      int64_t epoch = -1;
      bool ok = how.first;
      {
        std::lock_guard lock(mu_);
        if (auto j = jobs_.find(lease); j != jobs_.end()) {
          epoch = j->second.epoch;
          if (j->second.verdict) ok = *j->second.verdict;
        }
      }
      if (outdated.count(lease) != 0 && epoch >= 0) {
        auto r = Call(c, "POST", Path("/leases/" + lease + "/runner/outdated"), protocol::Encode(protocol::EpochBody{epoch, {}}));
        log_.Warn("node.runner_outdated", {{"lease", lease}, {"tier_paused", r.ok() && r->status == 204}});
      }
      // A runner whose registration GitHub removed (the intake retired it)
      // exits on its own with an error: its lease ended as asked.
      if (!ok && epoch >= 0) ok = Deregistered(c, lease, epoch);
      if (epoch >= 0) EndLease(c, lease, epoch, ok, how.second);  // a failure puts it back
    }
    // Heartbeats at a third of the lease TTL.
    const auto interval = std::chrono::seconds(std::max<int64_t>(1, ttl_seconds_ / 3));
    if (std::chrono::steady_clock::now() - last_beat >= interval) {
      last_beat = std::chrono::steady_clock::now();
      std::map<std::string, Job> jobs;
      {
        std::lock_guard lock(mu_);
        jobs = jobs_;
      }
      for (const auto& [lease, job] : jobs) {
        auto r = Call(c, "POST", Path("/leases/" + lease + "/heartbeat"), protocol::Encode(protocol::EpochBody{job.epoch, {}}));
        const std::string code = r.ok() ? protocol::ErrorCodeOf(r->body) : std::string();
        if (code == "force_release") {
          // An operator asked for the lease back: the job stops and the
          // lease is released, failed.
          log_.Warn("node.force_released", {{"lease", lease}});
          StopRunner(lease);
          EndLease(c, lease, job.epoch, false, "an operator force-released the lease");
        } else if (code == "deregistered") {
          // The runner left GitHub (retired idle, or its job ended): it
          // will take no job, so it stops and its lease ends done.
          log_.Info("node.runner_deregistered", {{"lease", lease}});
          StopRunner(lease);
          EndLease(c, lease, job.epoch, true, "");
        } else if (!r.ok() || r->status != 204) {
          log_.Warn("node.heartbeat_failed", {{"lease", lease}, {"error", r.ok() ? ErrorOf(*r) : r.status().message()}});
        }
      }
      if (o_.tls) RenewIfDue(c);
    }
    // R44: the node sweeps on its own timer too, once a lease TTL, so a
    // runner whose lease ended while the plane could not reach this node
    // (force-released during a partition) stops without waiting for a
    // reap elsewhere to trigger a sweep (review D11).
    const auto sweep_every = std::chrono::seconds(std::max<int64_t>(1, ttl_seconds_));
    if (registered_ && !provider_->Running().empty() && std::chrono::steady_clock::now() - last_sweep >= sweep_every) {
      last_sweep = std::chrono::steady_clock::now();
      (void)Sweep(c);
    }
    Pause(std::chrono::milliseconds(200), stop);
  }
}

void NodeAgent::StopRunner(const std::string& lease) {
  std::chrono::milliseconds grace = kDefaultGrace;
  {
    std::lock_guard lock(mu_);
    if (auto j = jobs_.find(lease); j != jobs_.end()) grace = j->second.grace;
  }
  (void)provider_->Stop(lease, grace);
}

bool NodeAgent::Sweep(wire::HttpClient& c) {
  // Whatever the ledger no longer counts as launched here must not run,
  // except a quarantined lease's job: its lease expired while it ran,
  // which makes it unaccounted for, not an orphan. What runs is read
  // first: a launch on the poll thread binds its lease before it starts,
  // so a runner in this snapshot is listed unless its lease ended.
  const std::vector<std::string> running = provider_->Running();
  auto r = Call(c, "GET", Path("/launched"));
  auto answer = r.ok() && r->status == 200 ? protocol::Decode<protocol::LaunchedReply>(r->body)
                                           : Result<protocol::LaunchedReply>(Status::Unavailable("no answer"));
  if (!answer.ok()) return false;
  auto listed = [](const std::vector<std::string>& v, const std::string& id) {
    return std::find(v.begin(), v.end(), id) != v.end();
  };
  size_t kept = 0, stopped = 0;
  for (const std::string& lease : running) {
    if (listed(answer->lease_ids, lease) || listed(answer->quarantined, lease)) {
      ++kept;
      continue;
    }
    log_.Warn("node.swept", {{"lease", lease}});
    StopRunner(lease);
    std::lock_guard lock(mu_);
    jobs_.erase(lease);
    ++stopped;
  }
  log_.Info("node.sweep", {{"kept", kept}, {"stopped", stopped}});
  return true;
}

bool NodeAgent::Deregistered(wire::HttpClient& c, const std::string& lease, int64_t epoch) {
  auto r = Call(c, "POST", Path("/leases/" + lease + "/heartbeat"), protocol::Encode(protocol::EpochBody{epoch, {}}));
  return r.ok() && protocol::ErrorCodeOf(r->body) == "deregistered";
}

void NodeAgent::PruneJobLogs() {
  namespace fs = std::filesystem;
  const auto cutoff = fs::file_time_type::clock::now() - o_.keep_job_logs;
  const std::vector<std::string> running = provider_->Running();
  std::error_code ec;
  size_t removed = 0;
  for (const auto& e : fs::directory_iterator(o_.state_dir + "/jobs", ec)) {
    if (e.path().extension() != ".log") continue;
    if (std::find(running.begin(), running.end(), e.path().stem().string()) != running.end()) continue;
    if (fs::last_write_time(e.path(), ec) < cutoff && fs::remove(e.path(), ec)) ++removed;
  }
  if (removed > 0) log_.Info("node.job_logs_pruned", {{"removed", removed}});
}

void NodeAgent::RenewIfDue(wire::HttpClient& c) {
  auto cert = pki::InspectCert(StateFile("node.crt"));
  if (!cert.ok() || !pki::RenewalDue(*cert, WallNowNs())) return;
  auto key = pki::GenerateKey();
  if (!key.ok()) return;
  auto csr = pki::MakeCSR(key->private_pem, o_.name);
  if (!csr.ok()) return;
  auto r = Call(c, "POST", Path("/renew"), protocol::Encode(protocol::RenewBody{*csr}));
  auto answer = r.ok() && r->status == 200 ? protocol::Decode<protocol::RenewReply>(r->body)
                                           : Result<protocol::RenewReply>(Status::Unavailable(
                                                 r.ok() ? ErrorOf(*r) : r.status().message()));
  if (!answer.ok()) {
    log_.Warn("node.renew_failed", {{"error", answer.status().message()}});
    return;  // retried on the next pass
  }
  // The previous generation stays as *.prev until the new one is in place.
  for (const char* f : {"node.crt", "node.key", "ca.crt"}) {
    std::error_code ec;
    std::filesystem::copy_file(o_.state_dir + "/" + f, o_.state_dir + "/" + f + ".prev",
                               std::filesystem::copy_options::overwrite_existing, ec);
  }
  if (!WriteAtomically(o_.state_dir + "/ca.crt", answer->ca_pem, false) ||
      !WriteAtomically(o_.state_dir + "/node.key", key->private_pem, true) ||
      !WriteAtomically(o_.state_dir + "/node.crt", answer->cert_pem, false)) {
    log_.Error("node.renew_write_failed", {{"state_dir", o_.state_dir}});
    return;
  }
  auto info = pki::InspectCert(answer->cert_pem);
  log_.Info("node.renewed", {{"serial", info.ok() ? info->serial : ""}});
  tls_generation_++;
}

void NodeAgent::ReloadTlsIfRenewed(wire::HttpClient& c, uint64_t& seen) {
  const uint64_t now = tls_generation_.load();
  if (now == seen || !o_.tls) return;
  seen = now;
  c.SetTls(*ClientFor().tls);
}

}  // namespace nodeplane::node
