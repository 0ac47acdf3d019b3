#include "admin/command_line.h"

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>

#include "common/units.h"

namespace nodeplane::admin {
namespace json = boost::json;
namespace {

constexpr std::string_view kGlobalSwitch = "--json";
constexpr std::string_view kGlobalValued[] = {"--config", "--socket"};

// Whether `flag` takes no value. The registry gives a flag one type in every
// command (command_line_test), so this needs no command to answer.
bool IsSwitch(std::string_view flag) {
  if (flag == kGlobalSwitch) return true;
  for (const CommandSpec& c : Commands()) {
    for (const ArgSpec& a : c.args) {
      if (a.flag == flag) return a.type == ArgType::kSwitch;
    }
  }
  return false;
}

bool IsGlobal(std::string_view flag) {
  return flag == kGlobalSwitch || flag == kGlobalValued[0] || flag == kGlobalValued[1];
}

std::string Words(std::string_view name) {
  std::string out(name);
  for (char& c : out) c = c == '.' ? ' ' : c;
  return out;
}

std::string Syntax(const CommandSpec& c) {
  std::string out = Words(c.name);
  for (const ArgSpec& a : c.args) {
    if (a.flag.empty()) {
      out += " " + std::string(a.meta);
      continue;
    }
    std::string f(a.flag);
    if (!a.meta.empty()) f += " " + std::string(a.meta);
    if (!a.choices.empty()) f = std::string(a.flag) + " " + std::string(a.choices);
    out += a.required ? " " + f : " [" + f + "]";
  }
  return out;
}

// The command the leading words name: two words ("tokens create") before one ("launch").
const CommandSpec* Named(const std::vector<std::string>& words, size_t& used) {
  if (words.size() >= 2) {
    if (const CommandSpec* c = FindCommand(words[0] + "." + words[1])) {
      used = 2;
      return c;
    }
  }
  if (!words.empty()) {
    if (const CommandSpec* c = FindCommand(words[0]); c != nullptr && c->name.find('.') == std::string_view::npos) {
      used = 1;
      return c;
    }
  }
  return nullptr;
}

// Splits the line into words and flags; a flag's value follows it.
Status Split(const std::vector<std::string>& args, std::vector<std::string>& words,
             std::map<std::string, std::string, std::less<>>& flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      words.push_back(a);
      continue;
    }
    if (IsSwitch(a)) {
      flags[a] = "";
      continue;
    }
    if (i + 1 >= args.size()) return Status::Invalid(a + " needs a value");
    flags[a] = args[++i];
  }
  return Status::Ok();
}

}  // namespace

Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  std::map<std::string, std::string, std::less<>> flags;
  if (Status s = Split(args, words, flags); !s.ok()) return s;
  size_t used = 0;
  const CommandSpec* spec = Named(words, used);
  if (spec == nullptr) {
    if (words.empty()) return Status::Invalid("no command given");
    return Status::Invalid("unknown command \"" + words[0] + (words.size() > 1 ? " " + words[1] : "") + "\"");
  }
  CommandLine out;
  out.command = spec;
  out.json = flags.contains(kGlobalSwitch);
  if (auto it = flags.find("--config"); it != flags.end()) out.config = it->second;
  if (auto it = flags.find("--socket"); it != flags.end()) out.socket = it->second;
  for (const auto& [flag, value] : flags) {
    if (IsGlobal(flag)) continue;
    bool declared = false;
    for (const ArgSpec& a : spec->args) declared = declared || a.flag == flag;
    if (!declared) {
      std::string takes;
      for (const ArgSpec& a : spec->args) {
        if (!a.flag.empty()) takes += (takes.empty() ? "" : ", ") + std::string(a.flag);
      }
      return Status::Invalid(Words(spec->name) + " takes no " + flag + (takes.empty() ? "" : " (it takes " + takes + ")"));
    }
  }
  json::object request_args;
  size_t next_word = used;
  for (const ArgSpec& a : spec->args) {
    const std::string key(a.key);
    std::optional<std::string> given;
    if (a.flag.empty()) {
      if (next_word < words.size()) given = words[next_word++];
    } else if (auto it = flags.find(a.flag); it != flags.end()) {
      given = it->second;
    }
    if (!given) {
      if (a.required) return Status::Invalid(std::string(a.flag.empty() ? a.meta : a.flag) + " is required");
      continue;
    }
    if (a.local) {
      out.local[key] = *given;
      continue;
    }
    switch (a.type) {
      case ArgType::kString:
      case ArgType::kName:
        request_args[key] = *given;
        break;
      case ArgType::kInt: {
        char* end = nullptr;
        const long long v = std::strtoll(given->c_str(), &end, 10);
        if (given->empty() || *end != '\0') return Status::Invalid(std::string(a.flag) + " must be a number");
        request_args[key] = static_cast<int64_t>(v);
        break;
      }
      case ArgType::kSeconds: {
        auto d = ParseDuration(*given);
        if (!d.ok()) return Status::Invalid(std::string(a.flag) + ": " + d.status().message());
        request_args[key] = static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(*d).count());
        break;
      }
      case ArgType::kSwitch:
        request_args[key] = true;
        break;
    }
  }
  if (next_word < words.size()) {
    return Status::Invalid(Words(spec->name) + " does not take \"" + words[next_word] + "\"");
  }
  out.request = json::serialize(json::object{{"cmd", spec->name}, {"args", std::move(request_args)}});
  return out;
}

bool AsksForHelp(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h" || a == "help") return true;
    if (a.rfind("--", 0) == 0 && !IsSwitch(a)) ++i;  // its value is never a request for help
  }
  return false;
}

std::string UsageText(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind("--", 0) == 0 || args[i] == "-h") {
      if (args[i].rfind("--", 0) == 0 && !IsSwitch(args[i])) ++i;
      continue;
    }
    words.push_back(args[i]);
  }
  size_t used = 0;
  if (const CommandSpec* c = Named(words, used)) {
    return "usage: nodeplanectl [--config FILE | --socket PATH] [--json] " + Syntax(*c) + "\n\n  " +
           std::string(c->summary) + "\n";
  }
  std::string out = "usage: nodeplanectl [--config FILE | --socket PATH] [--json] COMMAND...\n\n";
  for (const CommandSpec& c : Commands()) out += "  " + Syntax(c) + "\n      " + std::string(c.summary) + "\n";
  out +=
      "\nThe socket is the config's [admin] socket (--config, default /etc/nodeplane/nodeplane.toml),\n"
      "or --socket PATH. --json prints the host's answer as JSON, for scripts.\n";
  return out;
}

}  // namespace nodeplane::admin
