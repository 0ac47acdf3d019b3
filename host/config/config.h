// The deployment's configuration, as typed and validated structures.
//
// Loaded from TOML by config_loader.h; everything here has already passed
// validation, so the rest of the host never re-checks a name, a duration or a
// cross-reference (a tier's site is declared, a target's JIT instance exists).
// docs/configuration.md describes every key.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/units.h"

namespace nodeplane::config {

using namespace std::chrono_literals;

// Where a value was written, so later checks (a plugin refusing its config)
// can still point at the file and line.
struct SourceLocation {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
};

struct TlsConfig {
  // Names for the server certificate minted from the deployment CA at boot.
  std::vector<std::string> server_names;
  // Or an operator-provided certificate and key (both or neither).
  std::string cert_file;
  std::string key_file;
  // Where the deployment CA's files live; "" : state_dir. Replicas of one
  // deployment ([ha]) share one (docs/operations.md, "High availability").
  std::string ca_dir;
};

struct WireConfig {
  std::string listen = "127.0.0.1:7717";
  std::optional<TlsConfig> tls;  // absent: plain HTTP, loopback only
  Nanos poll_window = 50s;
  Nanos command_timeout = 10min;
  Nanos header_timeout = 10s;
  // How long an answered connection may wait for its next request. Unset,
  // 45 s or a third of the lease TTL plus 15 s, whichever is longer: above
  // the heartbeat interval, so a node running jobs keeps the connection it
  // heartbeats on.
  Nanos idle_timeout = 45s;
  Nanos inventory_interval = 30s;  // between barrier rounds asking the fleet what it runs
  uint32_t max_connections = 20000;
  // Threads that run the listener (TLS, HTTP, the routes that do not block);
  // 0: one per core, as a busy fleet's handshakes and polls need them all.
  uint32_t io_threads = 0;
};

// The listener for machines that hold no certificate yet (GET /v1/ca,
// POST /v1/enroll), with its own connection budget.
struct BootstrapConfig {
  std::string listen;
  uint32_t max_connections = 64;
  uint32_t max_enrollments_in_flight = 64;
};

// The Prometheus scrape endpoint and the read-only dashboard, on a listener
// of their own with its own connection budget: off unless `listen` is set.
struct MetricsConfig {
  std::string listen;  // "" : off
  uint32_t max_connections = 64;
  Nanos sample_interval = 10s;  // the dashboard's plot: one sample of the fleet each, an hour kept
  // Plain HTTP beyond loopback, said on purpose (the fleet's names and
  // shape are no secret, but they are not everyone's business either).
  bool insecure = false;
  // Who may read: clients presenting a certificate of client_ca (TLS), or
  // the bearer token in this file (Authorization: Bearer ...). With either
  // set, every route but /healthz asks for one of them; a listener beyond
  // loopback must have one (config_checks.cpp).
  std::string bearer_token_file;  // SECRET content; "" : none
  // The Host names (without port) the listener answers to; empty: the
  // loopback names for a loopback listener (DNS rebinding), any otherwise.
  std::vector<std::string> hosts;
  // TLS: the operator's certificate and key, or (both empty) the wire's
  // server certificate, which needs [wire.tls].
  struct Tls {
    std::string cert_file;
    std::string key_file;
    // "deployment" (the deployment CA: nodes' certificates too) or a PEM
    // file of the CA whose certificates may read; "" : no client certificate.
    std::string client_ca;
  };
  std::optional<Tls> tls;
};

struct AdminConfig {
  std::string socket = "admin.sock";  // relative paths are under state_dir
  uint32_t mode = 0660;
  std::string owner;  // empty: the process's own
  std::string group;
};

struct LeaseConfig {
  Nanos ttl = 90s;
  Nanos reap_interval = 30s;
};

enum class Placement { kPack, kSpread };

// Deployment-wide ceilings; zero means no ceiling of that kind.
struct LimitsConfig {
  uint32_t max_vcpu = 0;
  uint64_t max_memory = 0;
  Placement placement = Placement::kPack;
};

enum class GuestOS { kLinux, kMacOS, kWindows };
enum class Provider { kProcess, kDocker, kFirecracker, kTart, kEc2, kContainer };

const char* GuestOSName(GuestOS os);
const char* ProviderName(Provider p);

// What the server allows on one named host, whatever the host claims.
struct NodePolicy {
  std::string name;
  std::optional<Provider> provider;  // absent: any provider the node claims
  std::vector<GuestOS> guest_os;     // empty: every OS
  uint32_t macos_vm_limit = 2;
  uint32_t max_vcpu = 0;             // 0: the node's claim, unbounded
  uint64_t max_memory = 0;
};

struct SiteConfig {
  std::string name;   // byte-exact; never normalised
  std::string store;  // the site's authoritative storage backend, "" when unstated
};

struct TierConfig {
  std::string label;
  uint32_t vcpu = 0;
  uint64_t memory = 0;
  std::vector<Provider> providers;  // preference order
  GuestOS guest_os = GuestOS::kLinux;
  std::string node;  // pin to one host; "" for any
  std::string site;  // confine to one site; "" for any
  std::string target;
  std::string runner_group;
  std::string scale_set;  // the target's runner scale set feeding this tier; "" : none
  std::vector<std::string> labels;
  std::string image;
  std::vector<std::string> command;  // argv
  // The container provider's: the network mode ("" : the engine's default
  // bridge), the pids limit, and the grace between SIGTERM and SIGKILL.
  std::string network;
  uint32_t pids_limit = 4096;
  Nanos stop_grace = std::chrono::seconds(10);
  uint32_t max_concurrent = 0;       // 0: uncapped
  uint32_t reserved = 0;             // floor held for this tier
  // With a scale_set: runners kept registered and waiting beyond the jobs
  // GitHub has assigned, and how long a runner beyond those may stay idle
  // before it is retired.
  uint32_t min_idle = 0;
  Nanos idle_timeout = 5min;
};

struct TargetConfig {
  std::string name;
  std::string jit;   // the plugin instance holding this target's credentials
  std::string jobs;  // the instance reading its job queue; "" : no job source
  // How long the intake waits before asking again for a scale set's message
  // session another holder has (a 409: perhaps this host before a restart).
  Nanos session_retry = std::chrono::seconds(30);
  // A long poll of the target's message queue is given up (as no message,
  // never an outage) after this: longer than GitHub holds an idle poll
  // (~50 s on GHES, ~88 s on github.com).
  Nanos poll_timeout = std::chrono::minutes(2);
  // The forge's web root, for links to a job's run: https://github.com, or
  // https://HOST for GHES (no trailing slash).
  std::string web_url = "https://github.com";
  // How often each scale set's runners at GitHub are checked against the
  // leases (registrations left behind are removed); 0: never.
  Nanos ghost_check = std::chrono::minutes(5);
};

enum class Interface { kLedger, kJit, kRevocation, kCachePolicy, kJobs };
const char* InterfaceName(Interface i);

struct PluginInstance {
  std::string name;
  std::string library;  // short name, resolved in plugin_dir, or an absolute path
  std::vector<Interface> provides;
  std::string config_json;  // the opaque [plugins.NAME.config] table, as JSON
  SourceLocation where;     // the instance's table header
  bool Provides(Interface i) const;
};

// [ha]: several replicas of nodeplaned on one shared ledger, one active at a
// time (docs/operations.md, "High availability").
struct HaConfig {
  std::string replica;    // this replica's name; "" : the host name
  std::string advertise;  // host:port where nodes reach this replica's node wire
  Nanos term = std::chrono::seconds(15);  // a leadership not renewed for this long ends
};

struct Config {
  std::string file;
  std::string deployment;
  std::string state_dir;
  std::string plugin_dir;  // "" : the directory compiled into the host
  LogLevel log_level = LogLevel::kInfo;
  LogFormat log_format = LogFormat::kLogfmt;
  WireConfig wire;
  std::optional<BootstrapConfig> bootstrap;
  MetricsConfig metrics;
  AdminConfig admin;
  std::optional<HaConfig> ha;  // absent: one replica
  LeaseConfig leases;
  LimitsConfig limits;
  std::vector<SiteConfig> sites;
  std::vector<NodePolicy> nodes;
  std::vector<TierConfig> tiers;
  std::vector<TargetConfig> targets;
  std::vector<PluginInstance> plugins;

  // Validation guarantees exactly one.
  const PluginInstance& LedgerPlugin() const;
  // The admin socket's path with state_dir applied.
  std::string AdminSocketPath() const;
  // wire.tls.ca_dir, or state_dir when unset.
  std::string CaDir() const;
};

}  // namespace nodeplane::config
