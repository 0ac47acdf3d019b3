// Loading the TOML config into a validated Config.
//
// Every problem found is reported, not only the first, each naming the file,
// line and column, the key's dotted path, and what was expected. Unknown keys
// are errors (a typo must not be silently ignored) and come with the closest
// known key as a suggestion.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace nodeplane::config {

struct ConfigError {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string key;  // dotted path, e.g. "tiers.small.vcpu"; "" for the file itself
  std::string message;
  // "file:line:column: key: message"
  std::string ToString() const;
};

struct LoadResult {
  std::optional<Config> config;  // set exactly when errors is empty
  std::vector<ConfigError> errors;
  bool ok() const { return errors.empty(); }
};

LoadResult LoadConfigFile(const std::string& path);
// `file` is the name used in messages.
LoadResult LoadConfigText(std::string_view text, const std::string& file);

// Edit distance, for "did you mean" suggestions.
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace nodeplane::config
