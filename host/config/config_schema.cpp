#include "config/config_schema.h"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <sstream>

namespace nodeplane::config {
namespace {

const std::vector<std::pair<const char*, Provider>> kProviders = {
    {"process", Provider::kProcess}, {"docker", Provider::kDocker},
    {"firecracker", Provider::kFirecracker}, {"tart", Provider::kTart}, {"ec2", Provider::kEc2},
    {"container", Provider::kContainer}};
const std::vector<std::pair<const char*, GuestOS>> kGuestOSes = {
    {"linux", GuestOS::kLinux}, {"macos", GuestOS::kMacOS}, {"windows", GuestOS::kWindows}};
const std::vector<std::pair<const char*, Interface>> kInterfaces = {
    {"ledger", Interface::kLedger}, {"jit", Interface::kJit},
    {"revocation", Interface::kRevocation}, {"cache_policy", Interface::kCachePolicy}, {"jobs", Interface::kJobs}};

class SchemaReader {
 public:
  SchemaReader(Diagnostics& diag, Config& cfg, ConfigSources& src) : diag_(diag), cfg_(cfg), src_(src) {}

  void Read(const toml::table& root) {
    TableReader r(root, "", diag_);
    if (auto v = r.Name("deployment", true); v.present) cfg_.deployment = v.value;
    if (auto v = r.String("state_dir", true); v.present) {
      if (v.value.empty() || v.value.front() != '/') {
        diag_.Add(v.where, v.key, "must be an absolute path, got \"" + v.value + "\"");
      } else {
        cfg_.state_dir = v.value;
      }
    }
    if (auto v = r.String("plugin_dir"); v.present) {
      if (v.value.empty() || v.value.front() != '/') {
        diag_.Add(v.where, v.key, "must be an absolute path, got \"" + v.value + "\"");
      } else {
        cfg_.plugin_dir = v.value;
      }
    }
    if (const toml::table* t = r.SubTable("log")) ReadLog(*t);
    if (const toml::table* t = r.SubTable("wire")) ReadWire(*t);
    if (const toml::table* t = r.SubTable("bootstrap")) ReadBootstrap(*t);
    if (const toml::table* t = r.SubTable("metrics")) ReadMetrics(*t);
    if (const toml::table* t = r.SubTable("admin")) ReadAdmin(*t);
    if (const toml::table* t = r.SubTable("ha")) ReadHa(*t);
    if (const toml::table* t = r.SubTable("leases")) ReadLeases(*t);
    if (const toml::table* t = r.SubTable("limits")) ReadLimits(*t);
    ForEachNamed(r, "sites", diag_, [&](const std::string& n, TableReader& t) { ReadSite(n, t); });
    ForEachNamed(r, "nodes", diag_, [&](const std::string& n, TableReader& t) { ReadNode(n, t); });
    ForEachNamed(r, "plugins", diag_, [&](const std::string& n, TableReader& t) { ReadPlugin(n, t); });
    ForEachNamed(r, "targets", diag_, [&](const std::string& n, TableReader& t) { ReadTarget(n, t); });
    ForEachNamed(r, "tiers", diag_, [&](const std::string& n, TableReader& t) { ReadTier(n, t); });
    r.Finish();
    src_.root = r.where();
    // Unset, the idle timeout outlasts the heartbeat interval (TTL/3) by a
    // margin, so a node running jobs keeps the connection it beats on.
    if (!idle_timeout_set_) {
      cfg_.wire.idle_timeout = std::max(cfg_.wire.idle_timeout, cfg_.leases.ttl / 3 + std::chrono::seconds(15));
    }
  }

 private:
  void ReadLog(const toml::table& t) {
    TableReader r(t, "log", diag_);
    if (auto v = r.Enum<LogLevel>("level", {{"debug", LogLevel::kDebug}, {"info", LogLevel::kInfo},
                                            {"warn", LogLevel::kWarn}, {"error", LogLevel::kError}})) {
      cfg_.log_level = *v;
    }
    if (auto v = r.Enum<LogFormat>("format", {{"logfmt", LogFormat::kLogfmt}, {"json", LogFormat::kJson}})) {
      cfg_.log_format = *v;
    }
    r.Finish();
  }

  void ReadWire(const toml::table& t) {
    TableReader r(t, "wire", diag_);
    WireConfig& w = cfg_.wire;
    if (auto v = r.String("listen"); v.present) {
      w.listen = v.value;
      src_.wire_listen = v;
    }
    r.Duration("poll_window", w.poll_window);
    r.Duration("command_timeout", w.command_timeout);
    r.Duration("header_timeout", w.header_timeout);
    idle_timeout_set_ = t.contains("idle_timeout");
    r.Duration("idle_timeout", w.idle_timeout);
    r.Duration("inventory_interval", w.inventory_interval);
    r.UInt32("max_connections", w.max_connections, 1, 1'000'000);
    r.UInt32("io_threads", w.io_threads, 0, 64);
    if (const toml::table* tls = r.SubTable("tls")) {
      TableReader tr(*tls, "wire.tls", diag_);
      TlsConfig c;
      std::vector<SourceLocation> where;
      if (auto names = tr.StringArray("server_names", &where)) {
        for (size_t i = 0; i < names->size(); ++i) {
          if ((*names)[i].empty()) diag_.Add(where[i], tr.KeyPath("server_names"), "a server name may not be empty");
        }
        c.server_names = *names;
      }
      if (auto v = tr.String("ca_dir"); v.present) {
        if (v.value.empty() || v.value.front() != '/') {
          diag_.Add(v.where, v.key, "must be an absolute path, got \"" + v.value + "\"");
        } else {
          c.ca_dir = v.value;
        }
      }
      const bool own_cert = ReadCertificate(tr, c.cert_file, c.key_file);
      if (own_cert && !c.server_names.empty()) {
        diag_.Add(tr.where(), tr.KeyPath("server_names"),
                  "server_names is for a certificate minted from the deployment CA; "
                  "it cannot be combined with cert_file");
      }
      src_.tls = tr.where();
      tr.Finish();
      w.tls = std::move(c);
    }
    r.Finish();
  }

  // A listener's own certificate: cert_file and key_file, both or neither.
  // Returns whether one was given.
  bool ReadCertificate(TableReader& tr, std::string& cert_file, std::string& key_file) {
    auto cert = tr.String("cert_file");
    auto key = tr.String("key_file");
    cert_file = cert.value;
    key_file = key.value;
    if (cert.present != key.present) {
      diag_.Add(tr.where(), tr.KeyPath(cert.present ? "key_file" : "cert_file"),
                "cert_file and key_file go together; give both or neither");
    }
    return cert.present;
  }

  void ReadHa(const toml::table& t) {
    TableReader r(t, "ha", diag_);
    HaConfig h;
    if (auto v = r.Name("replica"); v.present) h.replica = v.value;
    if (auto v = r.String("advertise", true); v.present) {
      src_.ha_advertise = v;
      h.advertise = v.value;
    }
    r.Duration("term", h.term);
    if (h.term < std::chrono::seconds(1) || h.term > std::chrono::minutes(10)) {
      diag_.Add(r.where(), r.KeyPath("term"), "must be between 1s and 10m, got " + FormatDuration(h.term));
    }
    src_.ha = r.where();
    r.Finish();
    cfg_.ha = std::move(h);
  }

  void ReadBootstrap(const toml::table& t) {
    TableReader r(t, "bootstrap", diag_);
    BootstrapConfig b;
    if (auto v = r.String("listen", true); v.present) {
      b.listen = v.value;
      src_.bootstrap_listen = v;
    }
    r.UInt32("max_connections", b.max_connections, 1, 100'000);
    r.UInt32("max_enrollments_in_flight", b.max_enrollments_in_flight, 1, 100'000);
    r.Finish();
    src_.bootstrap = r.where();
    cfg_.bootstrap = std::move(b);
  }

  void ReadMetrics(const toml::table& t) {
    TableReader r(t, "metrics", diag_);
    MetricsConfig& m = cfg_.metrics;
    if (auto v = r.String("listen"); v.present) {
      m.listen = v.value;
      src_.metrics_listen = v;
    }
    r.UInt32("max_connections", m.max_connections, 1, 10'000);
    r.Duration("sample_interval", m.sample_interval);
    if (m.sample_interval < 1s || m.sample_interval > 5min) {
      diag_.Add(r.where(), r.KeyPath("sample_interval"), "must be from 1s to 5m");
    }
    if (auto v = r.Bool("insecure"); v) m.insecure = *v;
    if (auto v = r.String("bearer_token_file"); v.present) m.bearer_token_file = v.value;
    if (auto v = r.StringArray("hosts")) m.hosts = *v;
    if (const toml::table* tls = r.SubTable("tls")) {
      TableReader tr(*tls, "metrics.tls", diag_);
      MetricsConfig::Tls c;
      ReadCertificate(tr, c.cert_file, c.key_file);
      if (auto v = tr.String("client_ca"); v.present) c.client_ca = v.value;
      src_.metrics_tls = tr.where();
      tr.Finish();
      m.tls = std::move(c);
    }
    src_.metrics = r.where();
    r.Finish();
  }

  void ReadAdmin(const toml::table& t) {
    TableReader r(t, "admin", diag_);
    AdminConfig& a = cfg_.admin;
    if (auto v = r.String("socket"); v.present) {
      if (v.value.empty()) diag_.Add(v.where, v.key, "may not be empty");
      else a.socket = v.value;
    }
    if (auto v = r.String("mode"); v.present) {
      const std::string& m = v.value;
      bool octal = m.size() >= 3 && m.size() <= 4 && m.find_first_not_of("01234567") == std::string::npos;
      uint32_t mode = octal ? static_cast<uint32_t>(std::stoul(m, nullptr, 8)) : 0;
      if (!octal || mode > 0777) {
        diag_.Add(v.where, v.key, "expected an octal file mode such as \"0660\", got \"" + m + "\"");
      } else if ((mode & 0007) != 0) {
        diag_.Add(v.where, v.key, "the admin socket may not be accessible to others (mode \"" + m +
                                      "\" grants rights to every local user); use \"0660\" or \"0600\"");
      } else {
        a.mode = mode;
      }
    }
    if (auto v = r.String("owner"); v.present) {
      if (getpwnam(v.value.c_str()) == nullptr) diag_.Add(v.where, v.key, "no such user \"" + v.value + "\"");
      else a.owner = v.value;
    }
    if (auto v = r.String("group"); v.present) {
      if (getgrnam(v.value.c_str()) == nullptr) diag_.Add(v.where, v.key, "no such group \"" + v.value + "\"");
      else a.group = v.value;
    }
    r.Finish();
  }

  void ReadLeases(const toml::table& t) {
    TableReader r(t, "leases", diag_);
    r.Duration("ttl", cfg_.leases.ttl);
    r.Duration("reap_interval", cfg_.leases.reap_interval);
    src_.leases = r.where();
    r.Finish();
  }

  void ReadLimits(const toml::table& t) {
    TableReader r(t, "limits", diag_);
    r.UInt32("max_vcpu", cfg_.limits.max_vcpu, 1, 10'000'000);
    r.Size("max_memory", cfg_.limits.max_memory);
    if (auto v = r.Enum<Placement>("placement", {{"pack", Placement::kPack}, {"spread", Placement::kSpread}})) {
      cfg_.limits.placement = *v;
    }
    r.Finish();
  }

  void ReadSite(const std::string& name, TableReader& r) {
    SiteConfig s;
    s.name = name;
    if (auto v = r.Enum<std::string>("store", {{"ceph", "ceph"}, {"ebs-s3", "ebs-s3"}})) s.store = *v;
    cfg_.sites.push_back(std::move(s));
  }

  void ReadNode(const std::string& name, TableReader& r) {
    NodePolicy n;
    n.name = name;
    n.provider = r.Enum<Provider>("provider", kProviders);
    if (auto oses = r.EnumArray("guest_os", kGuestOSes, "guest OS", true)) n.guest_os = *oses;
    r.UInt32("macos_vm_limit", n.macos_vm_limit, 0, 1000);
    r.UInt32("max_vcpu", n.max_vcpu, 1, 1'000'000);
    r.Size("max_memory", n.max_memory);
    cfg_.nodes.push_back(std::move(n));
  }

  void ReadPlugin(const std::string& name, TableReader& r) {
    PluginInstance p;
    p.name = name;
    p.where = r.where();
    if (auto v = r.String("library", true); v.present) {
      const std::string& lib = v.value;
      bool absolute = !lib.empty() && lib.front() == '/';
      bool short_name = IsValidName(lib) && lib.find('/') == std::string::npos;
      if (!absolute && !short_name) {
        diag_.Add(v.where, v.key,
                  "expected a plugin short name (like \"ledger-sqlite\", looked up in plugin_dir) "
                  "or an absolute path to a .so, got \"" + lib + "\"");
      }
      p.library = lib;
    }
    if (auto provides = r.EnumArray("provides", kInterfaces, "interface", false, "an array such as [\"ledger\"]")) {
      p.provides = *provides;
    }
    if (const toml::table* c = r.SubTable("config")) {
      std::ostringstream json;
      json << toml::json_formatter{*c, toml::format_flags::none};
      p.config_json = json.str();
    } else {
      p.config_json = "{}";
    }
    cfg_.plugins.push_back(std::move(p));
  }

  void ReadTarget(const std::string& name, TableReader& r) {
    TargetConfig t;
    t.name = name;
    if (auto v = r.Name("jit", true); v.present) {
      t.jit = v.value;
      src_.target_jit[name] = v;
    }
    if (auto v = r.Name("jobs"); v.present) {
      t.jobs = v.value;
      src_.target_jobs[name] = v;
    }
    r.Duration("session_retry", t.session_retry);
    r.Duration("poll_timeout", t.poll_timeout);
    r.Duration("ghost_check", t.ghost_check);
    if (auto v = r.String("web_url"); v.present) {
      if (v.value.rfind("https://", 0) != 0 && v.value.rfind("http://", 0) != 0) {
        diag_.Add(v.where, v.key, "must be an http(s) URL, such as https://github.com");
      }
      t.web_url = v.value;
      while (!t.web_url.empty() && t.web_url.back() == '/') t.web_url.pop_back();
    }
    cfg_.targets.push_back(std::move(t));
  }

  void ReadTier(const std::string& label, TableReader& r) {
    TierConfig t;
    t.label = label;
    src_.tier[label] = r.where();
    if (auto v = r.Integer("vcpu", 1, 100'000)) t.vcpu = static_cast<uint32_t>(*v);
    else if (r.Get("vcpu") == nullptr) r.Missing("vcpu", "a positive integer");
    r.Size("memory", t.memory, true);
    if (auto providers = r.EnumArray("providers", kProviders, "provider", false,
                                     "an array of providers in preference order, such as [\"process\"]")) {
      t.providers = *providers;
    }
    if (auto os = r.Enum<GuestOS>("guest_os", kGuestOSes)) t.guest_os = *os;
    if (auto v = r.Name("node"); v.present) {
      t.node = v.value;
    }
    if (auto v = r.String("site"); v.present) {
      t.site = v.value;
      src_.tier_site[label] = v;
    }
    if (auto v = r.String("target"); v.present) {
      t.target = v.value;
      src_.tier_target[label] = v;
    }
    if (auto v = r.String("runner_group"); v.present) t.runner_group = v.value;
    if (auto v = r.String("scale_set"); v.present) {
      t.scale_set = v.value;
      src_.tier_scale_set[label] = v;
    }
    std::vector<SourceLocation> label_where;
    if (auto labels = r.StringArray("labels", &label_where)) {
      for (size_t i = 0; i < labels->size(); ++i) {
        const std::string& l = (*labels)[i];
        bool bad = l.empty() || l.size() > 256 ||
                   std::any_of(l.begin(), l.end(), [](char c) {
                     return c == ',' || static_cast<unsigned char>(c) <= ' ';
                   });
        if (bad) {
          diag_.Add(label_where[i], r.KeyPath("labels"),
                    "runner label \"" + l + "\" must be 1 to 256 characters without spaces or commas");
        }
      }
      t.labels = *labels;
    }
    if (auto v = r.String("image"); v.present) t.image = v.value;
    if (auto v = r.String("network"); v.present) t.network = v.value;
    r.UInt32("pids_limit", t.pids_limit, 16, 10'000'000);
    r.Duration("stop_grace", t.stop_grace);
    std::vector<SourceLocation> cmd_where;
    if (auto cmd = r.StringArray("command", &cmd_where)) {
      if (cmd->empty() || cmd->front().empty()) {
        diag_.Add(r.where(), r.KeyPath("command"), "must be a non-empty argv array, such as [\"/usr/bin/run\", \"--once\"]");
      }
      t.command = *cmd;
    }
    r.UInt32("max_concurrent", t.max_concurrent, 0, 1'000'000);
    r.UInt32("reserved", t.reserved, 0, 1'000'000);
    for (const char* key : {"min_idle", "idle_timeout"}) {
      if (const toml::node* n = r.Get(key); n != nullptr && src_.tier_idle.count(label) == 0) {
        src_.tier_idle[label] = Located<std::string>{"", diag_.Locate(n->source()), r.KeyPath(key), true};
      }
    }
    r.UInt32("min_idle", t.min_idle, 0, 1'000'000);
    r.Duration("idle_timeout", t.idle_timeout);
    cfg_.tiers.push_back(std::move(t));
  }

  Diagnostics& diag_;
  Config& cfg_;
  ConfigSources& src_;
  bool idle_timeout_set_ = false;  // [wire] idle_timeout was written
};

}  // namespace

void ReadConfig(const toml::table& root, Diagnostics& diag, Config& cfg, ConfigSources& sources) {
  SchemaReader(diag, cfg, sources).Read(root);
}

}  // namespace nodeplane::config
