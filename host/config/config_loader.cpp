// Design notes for the config loader.
//
// (1) A TableReader wraps one TOML table. Every key the schema knows is asked
//     for through it, which records the key as known; Finish() then reports
//     every key that nobody asked for, with the closest known key suggested.
//     So the schema is written once, as the sequence of reads, and unknown-key
//     detection can never drift from it.
// (2) Errors accumulate in a Diagnostics object; nothing throws past this
//     file. A value that fails its check is reported and left at its default,
//     so later checks run and one load reports every problem at once.
// (3) Cross-field rules (LoopbackOnly, declared sites, target -> JIT instance)
//     run after every table was read, against the typed structures, pointing
//     at the location of the value that breaks them.
#include "config/config_loader.h"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <toml++/toml.h>

#include "common/names.h"
#include "config/address.h"

namespace nodeplane::config {
namespace {

const char* TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

bool IsBareKey(std::string_view k) {
  if (k.empty()) return false;
  for (char c : k) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string JoinPath(const std::string& parent, std::string_view key) {
  std::string part = IsBareKey(key) ? std::string(key) : "\"" + std::string(key) + "\"";
  return parent.empty() ? part : parent + "." + part;
}

class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}

  void Add(const toml::source_region& where, const std::string& key, std::string message) {
    errors_.push_back(ConfigError{file_, where.begin.line, where.begin.column, key,
                                  std::move(message)});
  }
  void Add(const SourceLocation& where, const std::string& key, std::string message) {
    errors_.push_back(ConfigError{file_, where.line, where.column, key, std::move(message)});
  }
  SourceLocation Locate(const toml::source_region& where) const {
    return SourceLocation{file_, where.begin.line, where.begin.column};
  }
  const std::string& file() const { return file_; }
  std::vector<ConfigError> Take() { return std::move(errors_); }
  bool empty() const { return errors_.empty(); }

 private:
  std::string file_;
  std::vector<ConfigError> errors_;
};

// A value that was read together with where it was written.
template <typename T>
struct Located {
  T value{};
  SourceLocation where;
  std::string key;
  bool present = false;
};

class TableReader {
 public:
  TableReader(const toml::table& table, std::string path, Diagnostics& diag)
      : table_(table), path_(std::move(path)), diag_(diag) {}

  const std::string& path() const { return path_; }
  std::string KeyPath(std::string_view key) const { return JoinPath(path_, key); }
  SourceLocation where() const { return diag_.Locate(table_.source()); }

  // Returns the node for a known key, or nullptr when absent.
  const toml::node* Get(std::string_view key) {
    known_.emplace(key);
    return table_.get(key);
  }

  void TypeError(std::string_view key, const toml::node& n, std::string_view expected) {
    diag_.Add(n.source(), KeyPath(key),
              "expected " + std::string(expected) + ", found " + TypeName(n));
  }
  void ValueError(std::string_view key, const toml::node& n, std::string message) {
    diag_.Add(n.source(), KeyPath(key), std::move(message));
  }
  void Missing(std::string_view key, std::string_view expected) {
    diag_.Add(table_.source(), KeyPath(key),
              "required key is missing; expected " + std::string(expected));
  }

  Located<std::string> String(std::string_view key, bool required = false) {
    Located<std::string> out;
    out.key = KeyPath(key);
    const toml::node* n = Get(key);
    if (n == nullptr) {
      if (required) Missing(key, "a string");
      return out;
    }
    out.where = diag_.Locate(n->source());
    if (const auto* s = n->as_string()) {
      out.value = s->get();
      out.present = true;
    } else {
      TypeError(key, *n, "a string");
    }
    return out;
  }

  // A name that must match the name rule.
  Located<std::string> Name(std::string_view key, bool required = false) {
    Located<std::string> out = String(key, required);
    if (out.present && !IsValidName(out.value)) {
      diag_.Add(out.where, out.key, NameProblem(out.value));
      out.present = false;
    }
    return out;
  }

  std::optional<int64_t> Integer(std::string_view key, int64_t min, int64_t max) {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::nullopt;
    const auto* i = n->as_integer();
    if (i == nullptr) {
      TypeError(key, *n, "an integer");
      return std::nullopt;
    }
    if (i->get() < min || i->get() > max) {
      ValueError(key, *n, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                              ", got " + std::to_string(i->get()));
      return std::nullopt;
    }
    return i->get();
  }

  std::optional<bool> Bool(std::string_view key) {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::nullopt;
    if (const auto* b = n->as_boolean()) return b->get();
    TypeError(key, *n, "true or false");
    return std::nullopt;
  }

  void UInt32(std::string_view key, uint32_t& out, uint32_t min, uint32_t max) {
    if (auto v = Integer(key, min, max)) out = static_cast<uint32_t>(*v);
  }

  void Duration(std::string_view key, Nanos& out) {
    const toml::node* n = Get(key);
    if (n == nullptr) return;
    const auto* s = n->as_string();
    if (s == nullptr) {
      TypeError(key, *n, "a duration string such as \"50s\" or \"10m\"");
      return;
    }
    Result<Nanos> d = ParseDuration(s->get());
    if (!d.ok()) {
      ValueError(key, *n, d.status().message());
      return;
    }
    out = *d;
  }

  void Size(std::string_view key, uint64_t& out, bool required = false) {
    const toml::node* n = Get(key);
    if (n == nullptr) {
      if (required) Missing(key, "a size such as \"8GiB\"");
      return;
    }
    const auto* s = n->as_string();
    if (s == nullptr) {
      TypeError(key, *n, "a size string such as \"8GiB\" or \"512MiB\"");
      return;
    }
    Result<uint64_t> v = ParseByteSize(s->get());
    if (!v.ok()) {
      ValueError(key, *n, v.status().message());
      return;
    }
    if (*v == 0) {
      ValueError(key, *n, "must be greater than zero");
      return;
    }
    out = *v;
  }

  // An array of strings; `located` receives each element's location.
  std::optional<std::vector<std::string>> StringArray(
      std::string_view key, std::vector<SourceLocation>* located = nullptr) {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::nullopt;
    const auto* a = n->as_array();
    if (a == nullptr) {
      TypeError(key, *n, "an array of strings");
      return std::nullopt;
    }
    std::vector<std::string> out;
    bool good = true;
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      if (const auto* s = e.as_string()) {
        out.push_back(s->get());
        if (located != nullptr) located->push_back(diag_.Locate(e.source()));
      } else {
        diag_.Add(e.source(), KeyPath(key) + "[" + std::to_string(i) + "]",
                  std::string("expected a string, found ") + TypeName(e));
        good = false;
      }
    }
    if (!good) return std::nullopt;
    return out;
  }

  // Reads one of a fixed set of words.
  template <typename E>
  std::optional<E> Enum(std::string_view key, const std::vector<std::pair<const char*, E>>& words) {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::nullopt;
    const auto* s = n->as_string();
    if (s == nullptr) {
      TypeError(key, *n, "a string");
      return std::nullopt;
    }
    for (const auto& [word, value] : words) {
      if (s->get() == word) return value;
    }
    ValueError(key, *n, "unknown value \"" + s->get() + "\"; expected one of " + WordList(words));
    return std::nullopt;
  }

  // An array of words from a fixed set, each at most once. `what` names one
  // element in messages ("provider"); `missing_hint` makes the key required.
  template <typename E>
  std::optional<std::vector<E>> EnumArray(std::string_view key, const std::vector<std::pair<const char*, E>>& words,
                                          std::string_view what, bool allow_empty,
                                          std::string_view missing_hint = {}) {
    std::vector<SourceLocation> where;
    std::optional<std::vector<std::string>> items = StringArray(key, &where);
    if (!items) {
      if (!missing_hint.empty() && table_.get(key) == nullptr) Missing(key, missing_hint);
      return std::nullopt;
    }
    if (items->empty() && !allow_empty) {
      diag_.Add(table_.source(), KeyPath(key), "must name at least one " + std::string(what));
    }
    std::vector<E> out;
    for (size_t i = 0; i < items->size(); ++i) {
      const std::string& word = (*items)[i];
      auto it = std::find_if(words.begin(), words.end(), [&](const auto& w) { return word == w.first; });
      if (it == words.end()) {
        diag_.Add(where[i], KeyPath(key),
                  "unknown " + std::string(what) + " \"" + word + "\"; expected one of " + WordList(words));
      } else if (std::find(out.begin(), out.end(), it->second) != out.end()) {
        diag_.Add(where[i], KeyPath(key), "\"" + word + "\" is listed twice");
      } else {
        out.push_back(it->second);
      }
    }
    return out;
  }

  const toml::table* SubTable(std::string_view key) {
    const toml::node* n = Get(key);
    if (n == nullptr) return nullptr;
    if (const auto* t = n->as_table()) return t;
    TypeError(key, *n, "a table");
    return nullptr;
  }

  // Claims a key without reading it (an opaque sub-table handed on as is).
  void Accept(std::string_view key) { known_.emplace(key); }

  // Reports every key in the table that was never asked for.
  void Finish() {
    for (const auto& [k, v] : table_) {
      std::string_view key = k.str();
      if (known_.count(std::string(key)) != 0) continue;
      std::string msg = "unknown key";
      std::string best;
      size_t best_distance = SIZE_MAX;
      for (const std::string& candidate : known_) {
        size_t d = EditDistance(key, candidate);
        if (d < best_distance) {
          best_distance = d;
          best = candidate;
        }
      }
      if (!best.empty() && best_distance <= std::max<size_t>(2, key.size() / 3)) {
        msg += "; did you mean \"" + best + "\"?";
      } else if (!known_.empty()) {
        msg += "; known keys here: " + KnownList();
      }
      diag_.Add(k.source(), KeyPath(key), msg);
    }
  }

  static std::string NameProblem(std::string_view name) {
    std::string quoted = "\"" + std::string(name) + "\"";
    if (!name.empty() && (std::isspace(static_cast<unsigned char>(name.front())) ||
                          std::isspace(static_cast<unsigned char>(name.back())))) {
      return "name " + quoted +
             " has surrounding whitespace; names are compared byte-exactly and never trimmed";
    }
    return "invalid name " + quoted +
           "; expected 1 to 64 of [a-zA-Z0-9._-], starting with a letter or digit";
  }

 private:
  template <typename E>
  static std::string WordList(const std::vector<std::pair<const char*, E>>& words) {
    std::string out;
    for (size_t i = 0; i < words.size(); ++i) {
      if (i > 0) out += ", ";
      out += "\"" + std::string(words[i].first) + "\"";
    }
    return out;
  }
  std::string KnownList() const {
    std::string out;
    for (const std::string& k : known_) {
      if (!out.empty()) out += ", ";
      out += k;
    }
    return out;
  }

  const toml::table& table_;
  std::string path_;
  Diagnostics& diag_;
  std::set<std::string> known_;
};

const std::vector<std::pair<const char*, Provider>> kProviders = {
    {"process", Provider::kProcess}, {"docker", Provider::kDocker},
    {"firecracker", Provider::kFirecracker}, {"tart", Provider::kTart}, {"ec2", Provider::kEc2}};
const std::vector<std::pair<const char*, GuestOS>> kGuestOSes = {
    {"linux", GuestOS::kLinux}, {"macos", GuestOS::kMacOS}, {"windows", GuestOS::kWindows}};
const std::vector<std::pair<const char*, Interface>> kInterfaces = {
    {"ledger", Interface::kLedger}, {"jit", Interface::kJit},
    {"revocation", Interface::kRevocation}, {"cache_policy", Interface::kCachePolicy}, {"jobs", Interface::kJobs}};

// Iterates a table of named sub-tables ([sites.NAME], [tiers.NAME], ...),
// checking each name, and calls `each` with a reader for the sub-table.
template <typename F>
void ForEachNamed(TableReader& parent, std::string_view key, Diagnostics& diag, F each) {
  const toml::table* t = parent.SubTable(key);
  if (t == nullptr) return;
  for (const auto& [k, v] : *t) {
    std::string name(k.str());
    std::string path = JoinPath(parent.KeyPath(key), name);
    if (!IsValidName(name)) {
      diag.Add(k.source(), path, TableReader::NameProblem(name));
      continue;
    }
    const toml::table* sub = v.as_table();
    if (sub == nullptr) {
      diag.Add(v.source(), path, std::string("expected a table, found ") + TypeName(v));
      continue;
    }
    TableReader r(*sub, path, diag);
    each(name, r);
    r.Finish();
  }
}

class Loader {
 public:
  explicit Loader(Diagnostics& diag) : diag_(diag) {}

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
    if (const toml::table* t = r.SubTable("leases")) ReadLeases(*t);
    if (const toml::table* t = r.SubTable("limits")) ReadLimits(*t);
    ForEachNamed(r, "sites", diag_, [&](const std::string& n, TableReader& t) { ReadSite(n, t); });
    ForEachNamed(r, "nodes", diag_, [&](const std::string& n, TableReader& t) { ReadNode(n, t); });
    ForEachNamed(r, "plugins", diag_, [&](const std::string& n, TableReader& t) { ReadPlugin(n, t); });
    ForEachNamed(r, "targets", diag_, [&](const std::string& n, TableReader& t) { ReadTarget(n, t); });
    ForEachNamed(r, "tiers", diag_, [&](const std::string& n, TableReader& t) { ReadTier(n, t); });
    r.Finish();
    root_where_ = r.where();
  }

  void CrossCheck();
  Config Take() { return std::move(cfg_); }

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
      wire_listen_ = v;
    }
    r.Duration("poll_window", w.poll_window);
    r.Duration("command_timeout", w.command_timeout);
    r.Duration("header_timeout", w.header_timeout);
    r.Duration("inventory_interval", w.inventory_interval);
    r.UInt32("max_connections", w.max_connections, 1, 1'000'000);
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
      auto cert = tr.String("cert_file");
      auto key = tr.String("key_file");
      c.cert_file = cert.value;
      c.key_file = key.value;
      if (cert.present != key.present) {
        diag_.Add(tr.where(), tr.KeyPath(cert.present ? "key_file" : "cert_file"),
                  "cert_file and key_file go together; give both or neither");
      }
      if (cert.present && !c.server_names.empty()) {
        diag_.Add(tr.where(), tr.KeyPath("server_names"),
                  "server_names is for a certificate minted from the deployment CA; "
                  "it cannot be combined with cert_file");
      }
      tls_where_ = tr.where();
      tr.Finish();
      w.tls = std::move(c);
    }
    r.Finish();
  }

  void ReadBootstrap(const toml::table& t) {
    TableReader r(t, "bootstrap", diag_);
    BootstrapConfig b;
    if (auto v = r.String("listen", true); v.present) {
      b.listen = v.value;
      bootstrap_listen_ = v;
    }
    r.UInt32("max_connections", b.max_connections, 1, 100'000);
    r.UInt32("max_enrollments_in_flight", b.max_enrollments_in_flight, 1, 100'000);
    r.Finish();
    bootstrap_where_ = r.where();
    cfg_.bootstrap = std::move(b);
  }

  void ReadMetrics(const toml::table& t) {
    TableReader r(t, "metrics", diag_);
    MetricsConfig& m = cfg_.metrics;
    if (auto v = r.String("listen"); v.present) {
      m.listen = v.value;
      metrics_listen_ = v;
    }
    r.UInt32("max_connections", m.max_connections, 1, 10'000);
    r.Duration("sample_interval", m.sample_interval);
    if (m.sample_interval < 1s || m.sample_interval > 5min) {
      diag_.Add(r.where(), r.KeyPath("sample_interval"), "must be from 1s to 5m");
    }
    if (auto v = r.Bool("insecure"); v) m.insecure = *v;
    if (const toml::table* tls = r.SubTable("tls")) {
      TableReader tr(*tls, "metrics.tls", diag_);
      MetricsConfig::Tls c;
      auto cert = tr.String("cert_file");
      auto key = tr.String("key_file");
      c.cert_file = cert.value;
      c.key_file = key.value;
      if (cert.present != key.present) {
        diag_.Add(tr.where(), tr.KeyPath(cert.present ? "key_file" : "cert_file"),
                  "cert_file and key_file go together; give both or neither");
      }
      metrics_tls_where_ = tr.where();
      tr.Finish();
      m.tls = std::move(c);
    }
    metrics_where_ = r.where();
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
    leases_where_ = r.where();
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
      target_jit_[name] = v;
    }
    if (auto v = r.Name("jobs"); v.present) {
      t.jobs = v.value;
      target_jobs_[name] = v;
    }
    r.Duration("session_retry", t.session_retry);
    cfg_.targets.push_back(std::move(t));
  }

  void ReadTier(const std::string& label, TableReader& r) {
    TierConfig t;
    t.label = label;
    tier_where_[label] = r.where();
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
      tier_site_[label] = v;
    }
    if (auto v = r.String("target"); v.present) {
      t.target = v.value;
      tier_target_[label] = v;
    }
    if (auto v = r.String("runner_group"); v.present) t.runner_group = v.value;
    if (auto v = r.String("scale_set"); v.present) {
      t.scale_set = v.value;
      tier_scale_set_[label] = v;
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
    std::vector<SourceLocation> cmd_where;
    if (auto cmd = r.StringArray("command", &cmd_where)) {
      if (cmd->empty() || cmd->front().empty()) {
        diag_.Add(r.where(), r.KeyPath("command"), "must be a non-empty argv array, such as [\"/usr/bin/run\", \"--once\"]");
      }
      t.command = *cmd;
    }
    r.UInt32("max_concurrent", t.max_concurrent, 0, 1'000'000);
    r.UInt32("reserved", t.reserved, 0, 1'000'000);
    cfg_.tiers.push_back(std::move(t));
  }

  Diagnostics& diag_;
  Config cfg_;
  SourceLocation root_where_, tls_where_, bootstrap_where_, leases_where_, metrics_where_, metrics_tls_where_;
  Located<std::string> wire_listen_, bootstrap_listen_, metrics_listen_;
  std::map<std::string, SourceLocation> tier_where_;
  std::map<std::string, Located<std::string>> tier_site_, tier_target_, target_jit_, target_jobs_, tier_scale_set_;
};

void Loader::CrossCheck() {
  // The wire listener: an address, and TLS unless it is loopback (LoopbackOnly).
  SourceLocation listen_at = wire_listen_.present ? wire_listen_.where : root_where_;
  Result<ListenAddress> wire = ParseListenAddress(cfg_.wire.listen);
  if (!wire.ok()) {
    diag_.Add(listen_at, "wire.listen", wire.status().message());
  } else if (!cfg_.wire.tls && !LoopbackOnly(cfg_.wire.listen)) {
    diag_.Add(listen_at, "wire.listen",
              "\"" + cfg_.wire.listen +
                  "\" is not a loopback address, and without [wire.tls] the node wire has no "
                  "authentication; add [wire.tls] or listen on 127.0.0.1");
  } else if (cfg_.wire.tls && cfg_.wire.tls->cert_file.empty() && cfg_.wire.tls->server_names.empty() &&
             IsWildcardHost(wire->host)) {
    diag_.Add(tls_where_, "wire.tls.server_names",
              "the wire listens on every interface (\"" + cfg_.wire.listen +
                  "\"), so the server certificate's names cannot be derived; set server_names");
  }
  if (cfg_.wire.command_timeout < cfg_.wire.poll_window) {
    diag_.Add(root_where_, "wire.command_timeout",
              "must be at least the poll window (" + FormatDuration(cfg_.wire.poll_window) +
                  "), or a command could time out before a polling node can pick it up");
  }

  if (cfg_.bootstrap) {
    SourceLocation at = bootstrap_listen_.present ? bootstrap_listen_.where : bootstrap_where_;
    if (!cfg_.wire.tls) {
      diag_.Add(bootstrap_where_, "bootstrap",
                "enrollment needs TLS; add [wire.tls] (the bootstrap listener serves the same "
                "deployment CA) or remove [bootstrap]");
    }
    if (bootstrap_listen_.present) {
      Result<ListenAddress> b = ParseListenAddress(cfg_.bootstrap->listen);
      if (!b.ok()) {
        diag_.Add(at, "bootstrap.listen", b.status().message());
      } else if (wire.ok() && b->port != 0 && b->port == wire->port &&
                 (b->host == wire->host || IsWildcardHost(b->host) || IsWildcardHost(wire->host))) {
        diag_.Add(at, "bootstrap.listen",
                  "must not share an address with wire.listen; the bootstrap listener needs its own "
                  "connection budget");
      }
    }
  }

  if (!cfg_.metrics.listen.empty()) {
    const SourceLocation at = metrics_listen_.where;
    Result<ListenAddress> m = ParseListenAddress(cfg_.metrics.listen);
    auto shares = [&](const Result<ListenAddress>& other) {
      return other.ok() && m->port != 0 && m->port == other->port &&
             (m->host == other->host || IsWildcardHost(m->host) || IsWildcardHost(other->host));
    };
    if (!m.ok()) {
      diag_.Add(at, "metrics.listen", m.status().message());
    } else if (shares(wire) || (cfg_.bootstrap && shares(ParseListenAddress(cfg_.bootstrap->listen)))) {
      diag_.Add(at, "metrics.listen",
                "must not share an address with the node wire or the bootstrap listener; scrapes get a "
                "connection budget of their own, so a scraper can never slow the fleet");
    } else if (!cfg_.metrics.tls && !cfg_.metrics.insecure && !LoopbackOnly(cfg_.metrics.listen)) {
      diag_.Add(at, "metrics.listen",
                "\"" + cfg_.metrics.listen +
                    "\" is not a loopback address, and the metrics and dashboard show the fleet's nodes and "
                    "leases to whoever asks; add [metrics.tls], or insecure = true to serve plain HTTP on purpose");
    }
    if (cfg_.metrics.tls && cfg_.metrics.tls->cert_file.empty() && !cfg_.wire.tls) {
      diag_.Add(metrics_tls_where_, "metrics.tls",
                "without cert_file and key_file the metrics listener uses the wire's server certificate, "
                "which needs [wire.tls]");
    }
  } else if (cfg_.metrics.tls || cfg_.metrics.insecure) {
    diag_.Add(metrics_where_, "metrics.listen", "is required for [metrics]: set the address to serve on");
  }

  if (cfg_.leases.reap_interval > cfg_.leases.ttl) {
    diag_.Add(leases_where_, "leases.reap_interval",
              "must not exceed leases.ttl (" + FormatDuration(cfg_.leases.ttl) +
                  "), or expired leases would hold capacity for more than a TTL");
  }

  // Plugins: exactly one ledger, at most one cache policy.
  std::vector<const PluginInstance*> ledgers, caches;
  for (const PluginInstance& p : cfg_.plugins) {
    if (p.Provides(Interface::kLedger)) ledgers.push_back(&p);
    if (p.Provides(Interface::kCachePolicy)) caches.push_back(&p);
  }
  if (ledgers.empty()) {
    diag_.Add(root_where_, "plugins",
              "no plugin instance provides \"ledger\"; add [plugins.ledger] with "
              "library = \"ledger-sqlite\" and provides = [\"ledger\"]");
  }
  for (size_t i = 1; i < ledgers.size(); ++i) {
    diag_.Add(ledgers[i]->where, "plugins." + ledgers[i]->name + ".provides",
              "a second ledger; \"" + ledgers[0]->name + "\" already provides \"ledger\"");
  }
  for (size_t i = 1; i < caches.size(); ++i) {
    diag_.Add(caches[i]->where, "plugins." + caches[i]->name + ".provides",
              "a second cache policy; \"" + caches[0]->name + "\" already provides \"cache_policy\"");
  }

  // Targets: each names its own JIT instance, and optionally the job
  // source reading its queues with the same credentials.
  auto provider = [&](const Located<std::string>& at, Interface wanted) {
    auto it = std::find_if(cfg_.plugins.begin(), cfg_.plugins.end(),
                           [&](const PluginInstance& p) { return p.name == at.value; });
    if (it == cfg_.plugins.end()) {
      diag_.Add(at.where, at.key, "no plugin instance named \"" + at.value + "\" (declare [plugins." + at.value + "])");
      return false;
    }
    if (!it->Provides(wanted)) {
      diag_.Add(at.where, at.key,
                "plugin instance \"" + at.value + "\" does not provide \"" + InterfaceName(wanted) + "\"");
      return false;
    }
    return true;
  };
  std::map<std::string, std::string> jit_owner;
  for (const TargetConfig& t : cfg_.targets) {
    if (const Located<std::string>& at = target_jit_[t.name]; at.present && provider(at, Interface::kJit)) {
      if (auto [owner, fresh] = jit_owner.emplace(t.jit, t.name); !fresh) {
        diag_.Add(at.where, at.key,
                  "plugin instance \"" + t.jit + "\" already serves target \"" + owner->second +
                      "\"; each target needs its own instance with its own credentials");
      }
    }
    if (const Located<std::string>& at = target_jobs_[t.name]; at.present) provider(at, Interface::kJobs);
  }

  // Tiers: declared sites and targets, and what the providers need.
  std::set<std::string> site_names;
  for (const SiteConfig& s : cfg_.sites) site_names.insert(s.name);
  std::set<std::string> target_names;
  for (const TargetConfig& t : cfg_.targets) target_names.insert(t.name);
  for (const TierConfig& t : cfg_.tiers) {
    std::string path = JoinPath("tiers", t.label);
    if (auto it = tier_site_.find(t.label); it != tier_site_.end()) {
      const Located<std::string>& at = it->second;
      if (site_names.count(t.site) == 0) {
        std::string msg = "site \"" + t.site + "\" is not declared";
        if (site_names.empty()) {
          msg += "; this deployment declares no sites (add [sites." + (IsValidName(t.site) ? t.site : std::string("NAME")) + "])";
        } else {
          msg += " (sites are matched byte-exactly; declared:";
          for (const std::string& s : site_names) msg += " \"" + s + "\"";
          msg += ")";
        }
        diag_.Add(at.where, at.key, msg);
      }
    }
    if (auto it = tier_target_.find(t.label); it != tier_target_.end() && target_names.count(t.target) == 0) {
      diag_.Add(it->second.where, it->second.key, "target \"" + t.target + "\" is not declared under [targets]");
    }
    if (!t.runner_group.empty() && t.target.empty()) {
      diag_.Add(tier_where_[t.label], path + ".runner_group", "a runner group needs a target to live in; set target");
    }
    if (auto it = tier_scale_set_.find(t.label); it != tier_scale_set_.end()) {
      static const std::regex kScaleSetName("^[A-Za-z0-9._-]{1,100}$");
      auto target = std::find_if(cfg_.targets.begin(), cfg_.targets.end(),
                                 [&](const TargetConfig& c) { return c.name == t.target; });
      if (!std::regex_match(t.scale_set, kScaleSetName)) {
        diag_.Add(it->second.where, it->second.key, "a scale set name is 1 to 100 letters, digits, '.', '_' or '-'");
      } else if (t.target.empty()) {
        diag_.Add(it->second.where, it->second.key, "a scale set belongs to a target; set target");
      } else if (target != cfg_.targets.end() && target->jobs.empty()) {
        diag_.Add(it->second.where, it->second.key,
                  "target \"" + t.target + "\" has no job source to read the scale set's queue; set [targets." +
                      t.target + "] jobs = \"INSTANCE\"");
      }
      for (const TierConfig& other : cfg_.tiers) {
        if (&other != &t && other.target == t.target && other.scale_set == t.scale_set && other.label < t.label) {
          diag_.Add(it->second.where, it->second.key,
                    "tier \"" + other.label + "\" already takes scale set \"" + t.scale_set + "\"'s jobs");
        }
      }
    }
    bool process = std::find(t.providers.begin(), t.providers.end(), Provider::kProcess) != t.providers.end();
    if (process && t.command.empty()) {
      diag_.Add(tier_where_[t.label], path + ".command",
                "the \"process\" provider runs the tier's command; set command = [\"/path/to/program\", ...]");
    }
    if (t.max_concurrent > 0 && t.reserved > t.max_concurrent) {
      diag_.Add(tier_where_[t.label], path + ".reserved",
                "reserves " + std::to_string(t.reserved) + " but max_concurrent is " +
                    std::to_string(t.max_concurrent));
    }
  }
}

LoadResult Finish(Diagnostics& diag, Loader& loader) {
  LoadResult out;
  if (diag.empty()) {
    Config cfg = loader.Take();
    cfg.file = diag.file();
    out.config = std::move(cfg);
  }
  out.errors = diag.Take();
  std::stable_sort(out.errors.begin(), out.errors.end(), [](const ConfigError& a, const ConfigError& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  return out;
}

LoadResult LoadTable(const toml::table& root, Diagnostics& diag) {
  Loader loader(diag);
  loader.Read(root);
  loader.CrossCheck();
  return Finish(diag, loader);
}

LoadResult ParseFailure(const toml::parse_error& e, const std::string& file) {
  LoadResult out;
  out.errors.push_back(ConfigError{file, e.source().begin.line, e.source().begin.column, "",
                                   "TOML syntax: " + std::string(e.description())});
  return out;
}

}  // namespace

std::string ConfigError::ToString() const {
  std::string out = file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
  if (!key.empty()) out += key + ": ";
  return out + message;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

LoadResult LoadConfigText(std::string_view text, const std::string& file) {
  Diagnostics diag(file);
  try {
    toml::table root = toml::parse(text, file);
    return LoadTable(root, diag);
  } catch (const toml::parse_error& e) {
    return ParseFailure(e, file);
  }
}

LoadResult LoadConfigFile(const std::string& path) {
  Diagnostics diag(path);
  try {
    toml::table root = toml::parse_file(path);
    return LoadTable(root, diag);
  } catch (const toml::parse_error& e) {
    if (e.source().begin.line == 0) {
      LoadResult out;
      out.errors.push_back(ConfigError{path, 0, 0, "", "cannot read the file: " + std::string(e.description())});
      return out;
    }
    return ParseFailure(e, path);
  }
}

}  // namespace nodeplane::config
