// nodeplanectl's command line, read against the command registry
// (command_registry.h): the words name the command, the rest are its
// positional words and --flags, typed as the registry says, so the request
// it builds is the one the admin API checks. The usage is generated from
// the same table.
//
// Global flags, anywhere on the line: --config FILE, --socket PATH, --json.
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "admin/command_registry.h"
#include "common/status.h"

namespace nodeplane::admin {

struct CommandLine {
  const CommandSpec* command = nullptr;
  std::string request;                       // the request line for the admin socket, without the newline
  std::map<std::string, std::string> local;  // the local arguments' values, by key (ca issue's "out")
  bool json = false;                         // --json
  std::string config;                        // --config, "" when not given
  std::string socket;                        // --socket, "" when not given
};

// `args` is argv without the program's name. Invalid, saying what is wrong
// in the operator's terms ("--tier is required", "launch takes no --tire").
Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

// Whether the line asks for help: --help or -h anywhere, or the word help
// where a command word goes (never a flag's value).
bool AsksForHelp(const std::vector<std::string>& args);

// The whole usage; or, when the line names a command, that command's.
std::string UsageText(const std::vector<std::string>& args = {});

}  // namespace nodeplane::admin
