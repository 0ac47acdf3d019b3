#include "nodeplaned/daemon.h"

#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "common/file_text.h"

#include "config/address.h"
#include "nodeplaned/catalog.h"
#include "nodeplaned/plane_config.h"
#include "version.h"

namespace nodeplane {
namespace {


// Who holds a scale set's session, as GitHub shows it.
std::string HostName() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("nodeplaned");
}

Status PrepareStateDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Unavailable("cannot create state directory " + dir + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) {
    return Status::Unavailable("cannot set mode 0700 on state directory " + dir + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status Because(const std::string& what, const Status& s) { return Status(s.code(), what + ": " + s.message()); }

// A listener on `listen` (an address the config loader validated), with the
// header timeout every listener shares with the wire; an answered
// connection may idle as long (the wire's own may idle longer).
wire::ListenerOptions Listener(std::string name, const std::string& listen, uint32_t max_connections,
                               Nanos header_timeout) {
  auto at = config::ParseListenAddress(listen);
  wire::ListenerOptions o;
  o.name = std::move(name);
  o.host = at->host;
  o.port = at->port;
  o.max_connections = max_connections;
  o.header_timeout = header_timeout;
  o.idle_timeout = header_timeout;
  return o;
}

}  // namespace

Daemon::Daemon(config::Config cfg, Logger& log, OnDemoted on_demoted)
    : cfg_(std::move(cfg)),
      log_(log),
      host_(log_, cfg_.state_dir),
      history_(static_cast<size_t>(std::chrono::hours(1) / cfg_.metrics.sample_interval)),
      on_demoted_(on_demoted ? std::move(on_demoted) : [](const std::string&) { std::_Exit(kExitDemoted); }) {}

Daemon::~Daemon() { Stop(); }

Result<std::unique_ptr<Daemon>> Daemon::Start(const config::Config& cfg, Logger& log, OnDemoted on_demoted) {
  if (Status s = PrepareStateDir(cfg.state_dir); !s.ok()) return s;
  std::unique_ptr<Daemon> d(new Daemon(cfg, log, std::move(on_demoted)));
  if (Status s = d->Open(); !s.ok()) return s;  // the destructor stops what started
  return d;
}

Status Daemon::Open() {
  auto plugins = loader::OpenPlugins(cfg_, host_.c(), log_);
  if (!plugins.ok()) return plugins.status();
  plugins_ = std::move(*plugins);
  if (cfg_.wire.tls) {
    auto prepared = PrepareWireTls(cfg_, host_.c()->wall_clock_ns(host_.c()->ctx));
    if (!prepared.ok()) return Because("the wire's TLS", prepared.status());
    tls_ = std::move(*prepared);
  }
  if (!cfg_.ha) {
    if (Status s = Activate(std::nullopt); !s.ok()) return s;
    wire_front_ = std::make_unique<wire::HandlerSwitch>(*routes_);
    if (Status s = StartWire(); !s.ok()) return s;
    return StartAdmin();
  }
  // A replica starts as a standby: its wire says who is active, its admin
  // socket refuses, and it campaigns (leadership_loop.h). Resign() is the
  // probe for a ledger that can elect: it changes nothing for an instance
  // that never led.
  if (Status s = plugins_.ledger->Resign(); !s.ok()) return Because("[ha] needs a ledger that elects a leader", s);
  const std::string replica = cfg_.ha->replica.empty() ? HostName() : cfg_.ha->replica;
  standby_routes_ = std::make_unique<wire::StandbyWire>(cfg_.deployment, replica);
  wire_front_ = std::make_unique<wire::HandlerSwitch>(*standby_routes_);
  if (Status s = StartWire(); !s.ok()) return s;
  if (Status s = StartAdmin(); !s.ok()) return s;
  LeadershipOptions l;
  l.replica = replica;
  l.address = cfg_.ha->advertise;
  l.term = cfg_.ha->term;
  l.on_standby = [this](const ports::Leadership& who) {
    standby_routes_->Set({who.holder, who.address, who.generation});
  };
  l.on_elected = [this, replica](const ports::Leadership& won) {
    // Off the campaign's thread, which must go on renewing meanwhile.
    activator_ = std::jthread([this, replica, won] {
      Status s = Activate(wire::ActiveReplica{replica, cfg_.ha->advertise, won.generation});
      if (!s.ok()) return on_demoted_("taking over failed: " + s.message());
      wire_front_->Use(*routes_);
      log_.Info("ha.active", {{"replica", replica}, {"generation", won.generation}});
    });
  };
  l.on_demoted = on_demoted_;
  leadership_ = std::make_unique<LeadershipLoop>(*plugins_.ledger, std::move(l), log_);
  return Status::Ok();
}

// Everything that acts: the Plane and its threads, the reaper, the job
// intake, the node wire's routes, the bootstrap listener and the admin API.
// A replica of [ha] runs it once it leads, as after a restart.
Status Daemon::Activate(std::optional<wire::ActiveReplica> leading) {
  loader::LedgerAdapter& ledger = *plugins_.ledger;
  if (Status s = ledger.SetCatalog(CatalogFromConfig(cfg_)); !s.ok()) return Because("the ledger refused the catalogue", s);
  // A plane that has just started trusts no node until it registers again.
  if (Status s = ledger.ForgetEveryNode(); !s.ok()) return Because("the ledger cannot forget the old fleet", s);

  plane::PlaneOptions plane_options = PlaneOptionsFromConfig(cfg_);
  plane_options.registrar = &ledger;
  plane_options.leases = &ledger;
  plane_options.barrier = &ledger;
  plane_options.log = &log_;
  plane_ = std::make_unique<plane::Plane>(std::move(plane_options));
  watch_ = std::jthread([this](std::stop_token stop) { plane_->Watch(stop); });
  barrier_ = std::jthread([this](std::stop_token stop) { plane_->BarrierLoop(stop); });
  // The grace gives every node time to come back and heartbeat before a
  // lease it holds can look expired (reaper.h).
  // What the reaper ends is counted, and which of those went to quarantine:
  // only a reap moves a lease there, so the new ids between two readings.
  auto quarantined = [&ledger] {
    std::set<std::string> ids;
    if (auto open = ledger.ListLeases(""); open.ok()) {
      for (const ports::Lease& l : *open) {
        if (l.phase == ports::Phase::kQuarantine) ids.insert(l.id);
      }
    }
    return ids;
  };
  auto reap = [this, &ledger, quarantined]() -> Result<int64_t> {
    const std::set<std::string> before = quarantined();
    Result<int64_t> reaped = ledger.Reap();
    if (reaped.ok() && *reaped > 0) {
      lease_events_.reaped += static_cast<uint64_t>(*reaped);
      for (const std::string& id : quarantined()) lease_events_.quarantined += before.count(id) == 0 ? 1 : 0;
    }
    return reaped;
  };
  reaper_ = std::make_unique<Reaper>(reap,
                                     [&ledger] { return ledger.AdmissionGeneration().status(); }, plane_->runner(), log_,
                                     ReapTiming{cfg_.leases.reap_interval, cfg_.leases.ttl + cfg_.wire.poll_window});

  wire::NodeWireOptions w;
  w.deployment = cfg_.deployment;
  w.log = &log_;
  w.plane = plane_.get();
  w.leases = &ledger;
  w.revocations = &ledger;
  w.revocation_lists = plugins_.RevocationLists();
  w.authority = authority();
  w.cache_policy = plugins_.cache_policy.get();
  w.jit_sources = plugins_.jit_by_target;
  w.lease_events = &lease_events_;
  w.ha = std::move(leading);
  std::vector<jobs::ScaleSetTier> scale_sets;
  for (const config::TierConfig& t : cfg_.tiers) {
    w.tiers[t.label] = wire::TierTarget{t.target, t.runner_group, t.labels, !t.scale_set.empty()};
    if (t.scale_set.empty()) continue;
    const int64_t ceiling = jobs::AdvertisedCeiling(t.max_concurrent, t.vcpu, t.memory, cfg_.limits.max_vcpu,
                                                    cfg_.limits.max_memory);
    const auto target = std::find_if(cfg_.targets.begin(), cfg_.targets.end(),
                                     [&](const config::TargetConfig& g) { return g.name == t.target; });
    jobs::ScaleSetTier tier{t.label, t.target, t.scale_set, t.runner_group, jobs::ScaleSetLabels(t.scale_set, t.labels),
                            ceiling};
    tier.min_idle = t.min_idle;
    tier.idle_timeout = t.idle_timeout;
    tier.session_retry = target->session_retry;
    tier.poll = target->poll_timeout;
    tier.web_url = target->web_url;
    tier.ghost_check = target->ghost_check;
    scale_sets.push_back(std::move(tier));
  }
  if (!scale_sets.empty()) {
    // The intake acknowledges a message only once it is journalled (J2): a
    // ledger that keeps no journal cannot take jobs.
    if (auto probe = ledger.UnsettledForgeJobs("", 1); !probe.ok() && probe.status().code() == Code::kRefused) {
      return Because("tiers with a scale_set", probe.status());
    }
    intake_ = std::make_unique<jobs::JobIntake>(std::move(scale_sets), plugins_.jobs_by_target,
                                                cfg_.deployment + "@" + HostName(), ledger, plane_->runner(), log_,
                                                &lease_events_);
    w.scale_set_jit = [this](const std::string& tier, const std::string& name, const std::string& folder) {
      return intake_->ScaleSetJit(tier, name, folder);
    };
  }
  routes_ = std::make_unique<wire::NodeWire>(std::move(w));

  // Machines without a certificate enroll on a listener of their own, with
  // its own connection budget (R04); validation guarantees TLS is configured.
  if (cfg_.bootstrap) {
    bootstrap_routes_ = std::make_unique<wire::BootstrapWire>(tls_->authority, ledger, log_,
                                                              cfg_.bootstrap->max_enrollments_in_flight);
    wire::ListenerOptions b = Listener("bootstrap", cfg_.bootstrap->listen, cfg_.bootstrap->max_connections,
                                       cfg_.wire.header_timeout);
    b.body_limit = wire::BootstrapWire::kEnrollBodyLimit;
    b.tls = tls_->tls;
    b.tls->require_client_cert = false;  // strangers are who this listener is for
    bootstrap_ = std::make_unique<wire::HttpServer>(b, *bootstrap_routes_, log_);
    if (Status s = bootstrap_->Start(); !s.ok()) return s;
    log_.Info("bootstrap.listening", {{"address", b.host + ":" + std::to_string(bootstrap_->port())},
                                      {"ca_fingerprint", tls_->authority.fingerprint()}});
  }
  admin::AdminDeps a;
  a.config = &cfg_;
  a.ledger = &ledger;
  a.plane = plane_.get();
  a.authority = authority();
  a.init_ca = [this]() -> Result<std::string> {
    auto ca = LoadOrCreateAuthority(cfg_, host_.c()->wall_clock_ns(host_.c()->ctx));
    if (!ca.ok()) return ca.status();
    return ca->fingerprint();
  };
  a.rotate_ca = [this] { return RotateAuthority(cfg_, host_.c()->wall_clock_ns(host_.c()->ctx)); };
  a.retire_ca = [this] { return RetirePreviousAuthority(cfg_); };
  a.metrics = [this] { return Metrics(); };
  a.lease_events = &lease_events_;
  a.intake = intake_.get();
  a.log = &log_;
  admin_api_ = std::make_unique<admin::AdminApi>(std::move(a));
  admin_ready_.store(admin_api_.get());
  return OpenMetrics();
}

Status Daemon::StartWire() {
  wire::ListenerOptions opts =
      Listener("wire", cfg_.wire.listen, cfg_.wire.max_connections, cfg_.wire.header_timeout);
  opts.idle_timeout = cfg_.wire.idle_timeout;
  opts.threads = cfg_.wire.io_threads != 0 ? cfg_.wire.io_threads : std::max(1u, std::thread::hardware_concurrency());
  if (tls_) opts.tls = tls_->tls;
  wire_ = std::make_unique<wire::HttpServer>(opts, *wire_front_, log_);
  if (Status s = wire_->Start(); !s.ok()) return s;
  log_.Info("host.started", {{"deployment", cfg_.deployment},
                             {"version", NODEPLANE_VERSION},
                             {"state_dir", cfg_.state_dir},
                             {"wire", opts.host + ":" + std::to_string(wire_->port())},
                             {"tls", cfg_.wire.tls.has_value()},
                             {"admin_socket", cfg_.AdminSocketPath()}});
  log_.Info("host.healthy", {{"url", std::string(cfg_.wire.tls ? "https://" : "http://") + opts.host + ":" +
                                         std::to_string(wire_->port()) + "/healthz"}});
  return Status::Ok();
}

// The admin socket answers from the start; until the API exists (a standby)
// every request is refused naming the active replica.
Status Daemon::StartAdmin() {
  admin::SocketOptions so;
  so.path = cfg_.AdminSocketPath();
  so.mode = cfg_.admin.mode;
  so.owner = cfg_.admin.owner;
  so.group = cfg_.admin.group;
  admin_ = std::make_unique<admin::AdminSocket>(
      so,
      [this](const std::string& request, const admin::AdminSocket::Progress& progress, std::stop_token stop) {
        if (admin::AdminApi* api = admin_ready_.load()) return api->Handle(request, progress, stop);
        return admin::AdminApi::Refusal(Status::Unavailable(standby_routes_->Refusal() + "; ask that replica"));
      },
      log_);
  return admin_->Start();
}

Status Daemon::OpenMetrics() {
  // The dashboard's hour: a sample every sample_interval, from start.
  sampler_ = std::jthread([this](std::stop_token stop) {
    Histogram::Snapshot dispatch = plane_->dispatch_latency().Take();
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    while (!cv.wait_for(lock, stop, cfg_.metrics.sample_interval, [&stop] { return stop.stop_requested(); })) {
      SampleHistory(dispatch);
    }
  });
  if (cfg_.metrics.listen.empty()) return Status::Ok();
  auto access = MetricsAccess();
  if (!access.ok()) return access.status();
  metrics_routes_ = std::make_unique<observe::ObserveHandler>(
      observe::Sources{[this] { return Metrics(); }, [this] { return Overview(); }, [this] { return history_.Json(); }},
      std::move(*access));
  wire::ListenerOptions o =
      Listener("metrics", cfg_.metrics.listen, cfg_.metrics.max_connections, cfg_.wire.header_timeout);
  o.body_limit = 4096;  // nothing here takes a body
  if (cfg_.metrics.tls) {
    auto t = MetricsTls();
    if (!t.ok()) return t.status();
    o.tls = std::move(*t);
  }
  metrics_ = std::make_unique<wire::HttpServer>(o, *metrics_routes_, log_);
  if (Status s = metrics_->Start(); !s.ok()) return s;
  log_.Info("metrics.listening", {{"address", o.host + ":" + std::to_string(metrics_->port())},
                                  {"tls", cfg_.metrics.tls.has_value()},
                                  {"dashboard", std::string(cfg_.metrics.tls ? "https://" : "http://") + o.host + ":" +
                                                    std::to_string(metrics_->port()) + "/dashboard"}});
  return Status::Ok();
}

// The metrics listener's certificate, and the authority whose client
// certificates may read (asked for, never required: a bearer token may
// read instead, and /healthz needs neither).
Result<wire::TlsOptions> Daemon::MetricsTls() const {
  const config::MetricsConfig::Tls& c = *cfg_.metrics.tls;
  wire::TlsOptions t;
  if (!c.cert_file.empty()) {
    auto cert = ReadTextFile(c.cert_file);
    auto key = ReadTextFile(c.key_file);
    if (!cert.ok()) return Because("metrics.tls.cert_file", cert.status());
    if (!key.ok()) return Because("metrics.tls.key_file", key.status());
    t.cert_pem = *cert;
    t.key_pem = *key;
  } else {
    t = tls_->tls;  // the wire's server certificate; validation made sure there is one
  }
  t.client_ca_pem.clear();
  if (c.client_ca == "deployment") {
    t.client_ca_pem = tls_->authority.trust_bundle_pem();
  } else if (!c.client_ca.empty()) {
    auto ca = ReadTextFile(c.client_ca);
    if (!ca.ok()) return Because("metrics.tls.client_ca", ca.status());
    t.client_ca_pem = *ca;
  }
  t.require_client_cert = false;
  t.request_client_cert = !t.client_ca_pem.empty();
  return t;
}

// Who may read the metrics listener (observe_handler.h, Access).
Result<observe::Access> Daemon::MetricsAccess() const {
  observe::Access a;
  a.client_certificates = cfg_.metrics.tls && !cfg_.metrics.tls->client_ca.empty();
  if (const std::string& file = cfg_.metrics.bearer_token_file; !file.empty()) {
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && (st.st_mode & 0077) != 0) {
      return Status::Invalid("metrics.bearer_token_file: " + file +
                             " can be read by others than its owner; it holds a secret (chmod 600)");
    }
    auto token = ReadTextFile(file);
    if (!token.ok()) return Because("metrics.bearer_token_file", token.status());
    a.bearer_token = *token;
    while (!a.bearer_token.empty() && std::isspace(static_cast<unsigned char>(a.bearer_token.back()))) {
      a.bearer_token.pop_back();
    }
    if (a.bearer_token.empty()) return Status::Invalid("metrics.bearer_token_file: " + file + " is empty");
  }
  for (std::string h : cfg_.metrics.hosts) {
    for (char& ch : h) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    a.hosts.push_back(std::move(h));
  }
  // A loopback listener answers to loopback names only: a page of another
  // site that DNS rebinds to 127.0.0.1 reads nothing.
  if (a.hosts.empty() && config::LoopbackOnly(cfg_.metrics.listen)) a.hosts = {"127.0.0.1", "localhost", "[::1]"};
  return a;
}

void Daemon::Stop() {
  // A replica stops campaigning first and waits for a takeover in progress,
  // so nothing below races an activation.
  if (leadership_) leadership_->StopCampaigning();
  if (activator_.joinable()) activator_.join();
  // Every wait on a node ends first, so nothing below waits out a command
  // timeout: the barrier's and the watch's loops are told to stop, and the
  // plane answers every dispatch still waiting (a taken launch is custody).
  // The job intake first: its parked polls end, its launches are abandoned
  // (custody where a node took one), and its sessions are closed.
  if (intake_) intake_->Stop();
  if (barrier_.joinable()) barrier_.request_stop();
  if (watch_.joinable()) watch_.request_stop();
  if (plane_) plane_->Shutdown();
  if (sampler_.joinable()) {
    sampler_.request_stop();
    sampler_.join();
  }
  if (metrics_) metrics_->Stop();
  if (admin_) admin_->Stop();
  if (bootstrap_) bootstrap_->Stop();
  if (wire_) wire_->Stop();
  reaper_.reset();
  if (watch_.joinable()) watch_.join();
  if (barrier_.joinable()) barrier_.join();
  // Nothing acts any more: a leader hands over at once.
  if (leadership_) leadership_->Resign();
}

}  // namespace nodeplane
