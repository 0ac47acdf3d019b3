// The config loader: parse, read the schema, check across tables, and
// report every problem sorted by where it was written. The layers, each its
// own file: toml_reader.h (reading one table strictly, design notes 1-2),
// config_schema.h (every key nodeplaned knows), config_checks.h (rules across
// tables).
#include "config/config_loader.h"

#include <algorithm>
#include <tuple>

#include "config/config_checks.h"

namespace nodeplane::config {
namespace {

LoadResult Finish(Diagnostics& diag, Config cfg) {
  LoadResult out;
  if (diag.empty()) {
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
  Config cfg;
  ConfigSources sources;
  ReadConfig(root, diag, cfg, sources);
  CrossCheck(cfg, sources, diag);
  return Finish(diag, std::move(cfg));
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
