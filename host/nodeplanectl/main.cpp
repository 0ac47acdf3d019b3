// nodeplanectl: the operator's tool. It speaks the admin API (admin/admin_api.h)
// over the host's Unix socket; it holds no state and no credential of its own.
//
// Exit codes: 0 done; 1 the control plane refused (or found nothing); 2 the
// command line is wrong; 3 the host could not be reached; 4 the host is
// up but its ledger or a plugin is unavailable (try again).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "admin/admin_client.h"
#include "common/units.h"
#include "config/config_loader.h"
#include "pki/authority.h"

namespace json = boost::json;
using nodeplane::Status;

namespace {

constexpr int kOk = 0, kRefused = 1, kUsage = 2, kUnreachable = 3, kUnavailable = 4;
constexpr const char* kDefaultConfig = "/etc/nodeplane/nodeplane.toml";

constexpr const char* kUsageText =
    "usage: nodeplanectl [--config FILE | --socket PATH] [--json] COMMAND...\n"
    "\n"
    "  status\n"
    "  ca init | ca show | ca issue NODE --out DIR | ca rotate | ca retire\n"
    "  tokens create [--uses N] [--ttl DURATION] [--note TEXT] | tokens list | tokens revoke ID\n"
    "  enrollments list [--state pending|approved|denied|all]\n"
    "  enrollments approve NODE --fingerprint FP | enrollments deny NODE --fingerprint FP\n"
    "  nodes list | nodes revoke NODE [--reason TEXT]\n"
    "  leases list [--node NODE] | leases show LEASE | leases release LEASE\n"
    "  jobs list [--tier TIER] [--since DURATION] [--limit N]\n"
    "  certs list [--node NODE] | certs revoke SERIAL [--reason TEXT] [--force]\n"
    "  launch --tier TIER --request-id N [--wait]\n"
    "  destroy --request-id N\n"
    "  drain [--timeout DURATION]\n"
    "  admission open\n"
    "  upgrade NODE --version V [--manifest-sha256 HEX] [--rollout-id ID]\n"
    "  metrics\n"
    "\n"
    "The socket is the config's [admin] socket (--config, default " "/etc/nodeplane/nodeplane.toml),\n"
    "or --socket PATH. --json prints the host's answer as JSON, for scripts.\n";

int Usage(const std::string& why) {
  std::fprintf(stderr, "nodeplanectl: %s\n%s", why.c_str(), kUsageText);
  return kUsage;
}

// The command line: positional words and --flags (value-taking unless listed).
struct Line {
  std::vector<std::string> words;
  std::map<std::string, std::string> flags;
  std::string Flag(const std::string& name, const std::string& fallback = "") const {
    auto it = flags.find(name);
    return it == flags.end() ? fallback : it->second;
  }
  bool Has(const std::string& name) const { return flags.count(name) != 0; }
};

// Flags that take no value.
const std::vector<std::string> kSwitches = {"--json", "--wait", "--force"};

// Whether the line asks for help: --help or -h anywhere, or the word help
// where a command word goes (never a flag's value).
bool AsksForHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h" || a == "help") return true;
    const bool takes_value = a.rfind("--", 0) == 0 && std::find(kSwitches.begin(), kSwitches.end(), a) == kSwitches.end();
    if (takes_value) ++i;
  }
  return false;
}

bool Parse(int argc, char** argv, Line& line, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      line.words.push_back(a);
      continue;
    }
    if (std::find(kSwitches.begin(), kSwitches.end(), a) != kSwitches.end()) {
      line.flags[a] = "1";
      continue;
    }
    if (i + 1 >= argc) {
      error = a + " needs a value";
      return false;
    }
    line.flags[a] = argv[++i];
  }
  return true;
}

std::string Word(const Line& l, size_t i) { return i < l.words.size() ? l.words[i] : ""; }

// Builds the request for the command line, or says what is wrong with it.
bool BuildRequest(const Line& l, json::object& req, std::string& error) {
  const std::string a = Word(l, 0), b = Word(l, 1), c = Word(l, 2);
  json::object args;
  auto need = [&](const std::string& what, const std::string& value) {
    if (value.empty()) error = what + " is required";
    return !value.empty();
  };
  auto integer = [&](const std::string& flag, int64_t& out) {
    const std::string v = l.Flag(flag);
    char* end = nullptr;
    out = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0') error = flag + " must be a number";
    return error.empty();
  };
  auto seconds = [&](const std::string& flag, int64_t& out) {
    auto d = nodeplane::ParseDuration(l.Flag(flag));
    if (!d.ok()) error = flag + ": " + d.status().message();
    out = d.ok() ? std::chrono::duration_cast<std::chrono::seconds>(*d).count() : 0;
    return d.ok();
  };
  std::string cmd;
  if (a == "status" || a == "metrics") {
    cmd = a;
  } else if (a == "ca" && (b == "init" || b == "show" || b == "rotate" || b == "retire")) {
    cmd = "ca." + b;
  } else if (a == "ca" && b == "issue") {
    if (!need("NODE", c) || !need("--out DIR", l.Flag("--out"))) return false;
    cmd = "ca.issue";
    args["node"] = c;
  } else if (a == "tokens" && b == "create") {
    cmd = "tokens.create";
    int64_t v = 0;
    if (l.Has("--uses")) {
      if (!integer("--uses", v)) return false;
      args["uses"] = v;
    }
    if (l.Has("--ttl")) {
      if (!seconds("--ttl", v)) return false;
      args["ttl_seconds"] = v;
    }
    args["note"] = l.Flag("--note");
  } else if (a == "tokens" && b == "list") {
    cmd = "tokens.list";
  } else if (a == "tokens" && b == "revoke") {
    if (!need("ID", c)) return false;
    cmd = "tokens.revoke";
    args["id"] = c;
  } else if (a == "enrollments" && b == "list") {
    cmd = "enrollments.list";
    args["state"] = l.Flag("--state", "pending");
  } else if (a == "enrollments" && (b == "approve" || b == "deny")) {
    if (!need("NODE", c) || !need("--fingerprint", l.Flag("--fingerprint"))) return false;
    cmd = "enrollments." + b;
    args["node"] = c;
    args["fingerprint"] = l.Flag("--fingerprint");
  } else if (a == "nodes" && b == "list") {
    cmd = "nodes.list";
  } else if (a == "nodes" && b == "revoke") {
    if (!need("NODE", c)) return false;
    cmd = "nodes.revoke";
    args["node"] = c;
    if (l.Has("--reason")) args["reason"] = l.Flag("--reason");
  } else if (a == "leases" && b == "list") {
    cmd = "leases.list";
    args["node"] = l.Flag("--node");
  } else if (a == "leases" && (b == "show" || b == "release")) {
    if (!need("LEASE", c)) return false;
    cmd = "leases." + b;
    args["lease"] = c;
  } else if (a == "jobs" && b == "list") {
    cmd = "jobs.list";
    args["tier"] = l.Flag("--tier");
    if (l.Has("--since")) {
      int64_t s = 0;
      if (!seconds("--since", s)) return false;
      args["since_seconds"] = s;
    }
    if (l.Has("--limit")) {
      int64_t n = 0;
      if (!integer("--limit", n)) return false;
      args["limit"] = n;
    }
  } else if (a == "certs" && b == "list") {
    cmd = "certs.list";
    args["node"] = l.Flag("--node");
  } else if (a == "certs" && b == "revoke") {
    if (!need("SERIAL", c)) return false;
    cmd = "certs.revoke";
    args["serial"] = c;
    if (l.Has("--reason")) args["reason"] = l.Flag("--reason");
    if (l.Has("--force")) args["force"] = true;
  } else if (a == "launch") {
    int64_t id = 0;
    if (!need("--tier", l.Flag("--tier")) || !integer("--request-id", id)) return false;
    cmd = "launch";
    args["tier"] = l.Flag("--tier");
    args["request_id"] = id;
    args["wait"] = l.Has("--wait");
  } else if (a == "destroy") {
    int64_t id = 0;
    if (!integer("--request-id", id)) return false;
    cmd = "destroy";
    args["request_id"] = id;
  } else if (a == "drain") {
    cmd = "drain";
    if (l.Has("--timeout")) {
      int64_t s = 0;
      if (!seconds("--timeout", s)) return false;
      args["timeout_seconds"] = s;
    }
  } else if (a == "admission" && b == "open") {
    cmd = "admission.open";
  } else if (a == "upgrade") {
    if (!need("NODE", b) || !need("--version", l.Flag("--version"))) return false;
    cmd = "upgrade";
    args["node"] = b;
    args["version"] = l.Flag("--version");
    args["manifest_sha256"] = l.Flag("--manifest-sha256");
    args["rollout_id"] = l.Flag("--rollout-id");
  } else {
    error = a.empty() ? "no command given" : "unknown command \"" + a + (b.empty() ? "" : " " + b) + "\"";
    return false;
  }
  req = json::object{{"cmd", cmd}, {"args", args}};
  return true;
}

std::string SocketPath(const Line& l, std::string& error) {
  if (l.Has("--socket")) return l.Flag("--socket");
  const std::string file = l.Flag("--config", kDefaultConfig);
  auto loaded = nodeplane::config::LoadConfigFile(file);
  if (!loaded.ok()) {
    error = loaded.errors.empty() ? "cannot read " + file : loaded.errors.front().ToString();
    return "";
  }
  return loaded.config->AdminSocketPath();
}

std::string Scalar(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_null()) return "";
  return json::serialize(v);
}

std::string When(int64_t ns) {
  if (ns <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(ns / nodeplane::kSecondNs);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::gmtime(&t));
  return buf;
}

// A table for an array of objects, "key: value" lines for an object.
void PrintHuman(const json::value& v) {
  auto cell = [](const std::string& key, const json::value& x) {
    if (key.size() > 3 && key.substr(key.size() - 3) == "_ns" && x.is_int64()) return When(x.as_int64());
    if (key == "memory" && x.is_int64()) return std::to_string(x.as_int64() >> 20) + "MiB";
    return Scalar(x);
  };
  if (v.is_array()) {
    const json::array& rows = v.as_array();
    if (rows.empty()) {
      std::puts("(none)");
      return;
    }
    static const std::vector<std::string> kSkip = {"providers", "requested_vcpu", "requested_memory", "instance_type",
                                                   "target_node", "guest_os", "chosen_provider", "force_release"};
    std::vector<std::string> cols;
    for (const auto& kv : rows.front().as_object()) {
      if (std::find(kSkip.begin(), kSkip.end(), std::string(kv.key())) == kSkip.end()) cols.emplace_back(kv.key());
    }
    std::vector<std::vector<std::string>> cells;
    std::vector<size_t> width;
    for (const auto& c : cols) width.push_back(c.size());
    for (const auto& row : rows) {
      std::vector<std::string> line;
      for (size_t i = 0; i < cols.size(); ++i) {
        const json::value* x = row.as_object().if_contains(cols[i]);
        line.push_back(x ? cell(cols[i], *x) : "");
        width[i] = std::max(width[i], line.back().size());
      }
      cells.push_back(std::move(line));
    }
    auto print = [&](const std::vector<std::string>& line) {
      std::string out;
      for (size_t i = 0; i < line.size(); ++i) {
        out += line[i];
        if (i + 1 < line.size()) out += std::string(width[i] - line[i].size() + 2, ' ');
      }
      std::puts(out.c_str());
    };
    std::vector<std::string> head;
    for (auto c : cols) {
      if (c.size() > 3 && c.substr(c.size() - 3) == "_ns") c.resize(c.size() - 3);  // shown as a time
      for (char& ch : c) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      head.push_back(c);
    }
    print(head);
    for (const auto& line : cells) print(line);
    return;
  }
  if (v.is_object()) {
    for (const auto& kv : v.as_object()) {
      std::printf("%s: %s\n", std::string(kv.key()).c_str(), cell(std::string(kv.key()), kv.value()).c_str());
    }
    return;
  }
  std::puts(Scalar(v).c_str());
}

bool WriteFileMode(const std::string& path, const std::string& text, mode_t mode) {
  if (mode == 0600) return nodeplane::pki::WritePrivateFile(path, text).ok();
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return static_cast<bool>(out) && ::chmod(path.c_str(), mode) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  Line line;
  std::string error;
  if (AsksForHelp(argc, argv)) {
    std::fputs(kUsageText, stdout);
    return kOk;
  }
  if (!Parse(argc, argv, line, error)) return Usage(error);
  json::object req;
  if (!BuildRequest(line, req, error)) return Usage(error);
  const std::string path = SocketPath(line, error);
  if (path.empty()) {
    std::fprintf(stderr, "nodeplanectl: %s\n", error.c_str());
    return kUsage;
  }

  auto reply = nodeplane::admin::CallAdmin(path, json::serialize(req), [](const std::string& progress) {
    std::fprintf(stderr, "%s\n", Scalar(json::parse(progress).as_object().at("progress")).c_str());
  });
  if (!reply.ok()) {
    std::fprintf(stderr, "nodeplanectl: %s\n", reply.status().message().c_str());
    return kUnreachable;
  }
  const json::value final_answer = json::parse(*reply);
  const json::object& answer = final_answer.as_object();
  if (!answer.at("ok").as_bool()) {
    const std::string code = Scalar(answer.at("code"));
    if (line.Has("--json")) {
      std::puts(json::serialize(answer).c_str());
    } else {
      std::fprintf(stderr, "nodeplanectl: %s (%s)\n", Scalar(answer.at("error")).c_str(), code.c_str());
    }
    if (code == "unavailable") return kUnavailable;
    if (code == "invalid") return kUsage;
    return kRefused;
  }
  const json::value& result = answer.at("result");
  const std::string cmd(req.at("cmd").as_string());
  if (cmd == "ca.issue") {
    // The key is written 0600 and never printed.
    const std::string dir = line.Flag("--out");
    std::filesystem::create_directories(dir);
    const json::object& r = result.as_object();
    if (!WriteFileMode(dir + "/node.key", Scalar(r.at("key_pem")), 0600) ||
        !WriteFileMode(dir + "/node.crt", Scalar(r.at("cert_pem")), 0644) ||
        !WriteFileMode(dir + "/ca.crt", Scalar(r.at("ca_pem")), 0644)) {
      std::fprintf(stderr, "nodeplanectl: cannot write the bundle into %s\n", dir.c_str());
      return kUnavailable;
    }
    std::printf("issued certificate %s for %s into %s (node.crt, node.key, ca.crt)\n", Scalar(r.at("serial")).c_str(),
                Scalar(r.at("node")).c_str(), dir.c_str());
    return kOk;
  }
  if (line.Has("--json")) {
    std::puts(json::serialize(result).c_str());
  } else if (cmd == "metrics") {
    std::fputs(Scalar(result.as_object().at("text")).c_str(), stdout);
  } else if (cmd == "tokens.create") {
    const json::object& r = result.as_object();
    std::printf("%s\n", Scalar(r.at("token")).c_str());
    std::fprintf(stderr, "join token %s: %s use(s), expires %s UTC; it is shown only now\n", Scalar(r.at("id")).c_str(),
                 Scalar(r.at("uses")).c_str(), When(r.at("expires_at_ns").as_int64()).c_str());
  } else {
    PrintHuman(result);
  }
  return kOk;
}
