// Reading a plugin's JSON config strictly: unknown keys and wrong types are
// refused with the key's name, as the host's own config is.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "plugin_error.h"

namespace nodeplane::plugins {

class PluginConfig {
 public:
  // Throws PluginError(NP_INVALID) when the text is not a JSON object.
  PluginConfig(const char* json, size_t len, std::string plugin);

  std::string String(const char* key, const std::string& fallback, bool required = false);
  int64_t Integer(const char* key, int64_t fallback, int64_t min, int64_t max);
  // A "*_seconds" key: Integer's rules, in seconds; answers nanoseconds.
  int64_t Seconds(const char* key, int64_t fallback, int64_t min, int64_t max);
  // An array of non-empty strings; with `required`, a non-empty one.
  std::vector<std::string> Strings(const char* key, bool required = false);
  // Refuses every key that was never asked for.
  void Finish();

 private:
  const boost::json::value* Get(const char* key);
  [[noreturn]] void Bad(const std::string& key, const std::string& what) const;

  boost::json::object obj_;
  std::string plugin_;
  std::set<std::string> known_;
};

}  // namespace nodeplane::plugins
