// The admin command set, written once. Each command names its arguments
// with their types; the admin API parses a request against it
// (command_args.h) and nodeplanectl builds a request from a command line
// against it (command_line.h) and prints the answer the way the command
// says. Adding a command is one entry here and one handler in the area file
// that owns it (commands_*.cpp); AdminApi refuses to start without both.
//
// A command's name is its words on the command line joined with dots:
// `tokens create` is "tokens.create". Pure data: no JSON, no I/O; safe to
// read from any thread.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace nodeplane::admin {

enum class ArgType {
  kString,
  kName,     // a string that, when given, is a valid node name (common/names.h)
  kInt,
  kSeconds,  // a duration on the command line ("90s", "1h"); whole seconds in the request
  kSwitch,   // a flag with no value; true when given
};

struct ArgSpec {
  std::string_view key;   // in the request's "args"
  ArgType type = ArgType::kString;
  std::string_view flag;  // "--uses"; empty for a positional word
  std::string_view meta;  // what the usage shows for the value: NODE, N, DURATION
  bool required = false;
  bool local = false;     // read by nodeplanectl only, never sent (ca issue --out)
  std::string_view fallback;  // the value when absent, as the request carries it ("3600" for an hour)
  std::string_view choices;   // "a|b|c": the only values a kString takes
  int64_t min = std::numeric_limits<int64_t>::min();  // bounds of a kInt or kSeconds
  int64_t max = std::numeric_limits<int64_t>::max();

  constexpr ArgSpec Required() const {
    ArgSpec a = *this;
    a.required = true;
    return a;
  }
  constexpr ArgSpec Local() const {
    ArgSpec a = *this;
    a.local = true;
    return a;
  }
  constexpr ArgSpec Default(std::string_view v) const {
    ArgSpec a = *this;
    a.fallback = v;
    return a;
  }
  constexpr ArgSpec OneOf(std::string_view c) const {
    ArgSpec a = *this;
    a.choices = c;
    return a;
  }
  constexpr ArgSpec Between(int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max()) const {
    ArgSpec a = *this;
    a.min = lo;
    a.max = hi;
    return a;
  }
};

// A positional word (always required) and a --flag.
constexpr ArgSpec Word(std::string_view key, std::string_view meta, ArgType type = ArgType::kString) {
  ArgSpec a;
  a.key = key;
  a.type = type;
  a.meta = meta;
  a.required = true;
  return a;
}
constexpr ArgSpec Flag(std::string_view key, std::string_view flag, ArgType type, std::string_view meta = "") {
  ArgSpec a;
  a.key = key;
  a.type = type;
  a.flag = flag;
  a.meta = meta;
  return a;
}

// How nodeplanectl shows a successful answer (--json prints it as it came).
enum class Output {
  kShow,        // an array as a table, an object as "key: value" lines
  kText,        // the result's "text", as it is (metrics)
  kOneTimeSecret,  // the result's "token" alone on stdout, the rest on stderr
  kBundle,      // a certificate bundle written into --out, the key 0600, nothing printed of it
};

struct CommandSpec {
  std::string_view name;     // "tokens.create"
  std::string_view summary;  // one line, for the usage
  std::vector<ArgSpec> args;
  Output output = Output::kShow;
  std::vector<std::string_view> hidden_columns = {};  // left out of a table
};

// Every command, in the order the usage lists them.
const std::vector<CommandSpec>& Commands();
// The command `name` names, or null.
const CommandSpec* FindCommand(std::string_view name);
// The argument of `spec` with `key`, or null.
const ArgSpec* FindArg(const CommandSpec& spec, std::string_view key);

}  // namespace nodeplane::admin
