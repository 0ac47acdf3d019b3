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
#include "admin/command_line.h"
#include "common/units.h"
#include "config/config_loader.h"
#include "pki/authority.h"

namespace json = boost::json;
using nodeplane::Status;

namespace {

constexpr int kOk = 0, kRefused = 1, kUsage = 2, kUnreachable = 3, kUnavailable = 4;
constexpr const char* kDefaultConfig = "/etc/nodeplane/nodeplane.toml";

int Usage(const std::string& why, const std::vector<std::string>& args) {
  std::fprintf(stderr, "nodeplanectl: %s\n%s", why.c_str(), nodeplane::admin::UsageText(args).c_str());
  return kUsage;
}

std::string SocketPath(const nodeplane::admin::CommandLine& l, std::string& error) {
  if (!l.socket.empty()) return l.socket;
  const std::string file = l.config.empty() ? kDefaultConfig : l.config;
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

// `text` as a terminal may show it: strings from outside (a GitHub job's
// name, a node's message) can carry escape sequences that would rewrite an
// operator's screen or hide what follows (review D12). C0 controls and DEL
// are written as a backslash, x and two hex digits; C1 controls and the
// bidirectional overrides as a backslash, u and the code point in braces;
// everything else is left as it is.
std::string Printable(const std::string& text) {
  std::string out;
  auto hex = [&out](unsigned v, int digits, const char* open, const char* close) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += open;
    for (int d = digits - 1; d >= 0; --d) out += kHex[(v >> (4 * d)) & 15];
    out += close;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0u;
    const auto third = i + 2 < text.size() ? static_cast<unsigned char>(text[i + 2]) : 0u;
    if (c < 0x20 || c == 0x7f) {
      hex(c, 2, "\\x", "");
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F
      hex(next, 4, "\\u{", "}");
      ++i;
    } else if (c == 0xe2 && ((next == 0x80 && third >= 0xaa && third <= 0xae) ||
                             (next == 0x81 && third >= 0xa6 && third <= 0xa9))) {  // U+202A..E, U+2066..9
      hex(0x2000u | ((next & 0x3fu) << 6) | (third & 0x3fu), 4, "\\u{", "}");
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// A value as a person reads it on a terminal.
std::string Shown(const json::value& v) { return Printable(Scalar(v)); }

std::string When(int64_t ns) {
  if (ns <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(ns / nodeplane::kSecondNs);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::gmtime(&t));
  return buf;
}

// A table for an array of objects (without the command's hidden columns),
// "key: value" lines for an object.
void PrintHuman(const nodeplane::admin::CommandSpec& spec, const json::value& v) {
  auto cell = [](const std::string& key, const json::value& x) {
    if (key.size() > 3 && key.substr(key.size() - 3) == "_ns" && x.is_int64()) return When(x.as_int64());
    if (key == "memory" && x.is_int64()) return std::to_string(x.as_int64() >> 20) + "MiB";
    return Shown(x);
  };
  if (v.is_array()) {
    const json::array& rows = v.as_array();
    if (rows.empty()) {
      std::puts("(none)");
      return;
    }
    const auto& hidden = spec.hidden_columns;
    std::vector<std::string> cols;
    for (const auto& kv : rows.front().as_object()) {
      if (std::find(hidden.begin(), hidden.end(), kv.key()) == hidden.end()) cols.emplace_back(kv.key());
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
      std::printf("%s: %s\n", Printable(std::string(kv.key())).c_str(), cell(std::string(kv.key()), kv.value()).c_str());
    }
    return;
  }
  std::puts(Shown(v).c_str());
}

bool WriteFileMode(const std::string& path, const std::string& text, mode_t mode) {
  if (mode == 0600) return nodeplane::pki::WritePrivateFile(path, text).ok();
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return static_cast<bool>(out) && ::chmod(path.c_str(), mode) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  using nodeplane::admin::Output;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (nodeplane::admin::AsksForHelp(args)) {
    std::fputs(nodeplane::admin::UsageText(args).c_str(), stdout);
    return kOk;
  }
  auto parsed = nodeplane::admin::ParseCommandLine(args);
  if (!parsed.ok()) return Usage(parsed.status().message(), args);
  const nodeplane::admin::CommandLine& line = *parsed;
  std::string error;
  const std::string path = SocketPath(line, error);
  if (path.empty()) {
    std::fprintf(stderr, "nodeplanectl: %s\n", error.c_str());
    return kUsage;
  }

  auto reply = nodeplane::admin::CallAdmin(path, line.request, [](const std::string& progress) {
    std::fprintf(stderr, "%s\n", Shown(json::parse(progress).as_object().at("progress")).c_str());
  });
  if (!reply.ok()) {
    std::fprintf(stderr, "nodeplanectl: %s\n", reply.status().message().c_str());
    return kUnreachable;
  }
  const json::value final_answer = json::parse(*reply);
  const json::object& answer = final_answer.as_object();
  if (!answer.at("ok").as_bool()) {
    const std::string code = Scalar(answer.at("code"));
    if (line.json) {
      std::puts(json::serialize(answer).c_str());
    } else {
      std::fprintf(stderr, "nodeplanectl: %s (%s)\n", Shown(answer.at("error")).c_str(), code.c_str());
    }
    if (code == "unavailable") return kUnavailable;
    if (code == "invalid") return kUsage;
    return kRefused;
  }
  const json::value& result = answer.at("result");
  switch (line.command->output) {
    case Output::kBundle: {
      // The key is written 0600 and never printed, not even with --json.
      // A new directory is the node's state directory to be: 0700, as
      // nodeplane-node demands of the directory holding its key.
      const std::string dir = line.local.at("out");
      std::error_code ec;
      if (std::filesystem::create_directories(dir, ec)) {
        std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
      }
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
    case Output::kText:
      if (line.json) break;
      std::fputs(Scalar(result.as_object().at("text")).c_str(), stdout);
      return kOk;
    case Output::kOneTimeSecret: {
      if (line.json) break;
      const json::object& r = result.as_object();
      std::printf("%s\n", Scalar(r.at("token")).c_str());
      std::fprintf(stderr, "join token %s: %s use(s), expires %s UTC; it is shown only now\n", Scalar(r.at("id")).c_str(),
                   Scalar(r.at("uses")).c_str(), When(r.at("expires_at_ns").as_int64()).c_str());
      return kOk;
    }
    case Output::kShow:
      if (line.json) break;
      PrintHuman(*line.command, result);
      return kOk;
  }
  std::puts(json::serialize(result).c_str());
  return kOk;
}
