#include "plugin_config.h"

#include "plugin_time.h"

namespace nodeplane::plugins {

PluginConfig::PluginConfig(const char* json, size_t len, std::string plugin) : plugin_(std::move(plugin)) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(boost::json::string_view(json, len), ec);
  if (ec || !v.is_object()) Fail(NP_INVALID, plugin_ + ": the config is not a JSON object");
  obj_ = std::move(v.as_object());
}

const boost::json::value* PluginConfig::Get(const char* key) {
  known_.insert(key);
  return obj_.if_contains(key);
}

void PluginConfig::Bad(const std::string& key, const std::string& what) const {
  Fail(NP_INVALID, plugin_ + ": config key \"" + key + "\" " + what);
}

std::string PluginConfig::String(const char* key, const std::string& fallback, bool required) {
  const boost::json::value* v = Get(key);
  if (v == nullptr) {
    if (required) Bad(key, "is required");
    return fallback;
  }
  if (!v->is_string() || v->as_string().empty()) Bad(key, "must be a non-empty string");
  return std::string(v->as_string());
}

int64_t PluginConfig::Integer(const char* key, int64_t fallback, int64_t min, int64_t max) {
  const boost::json::value* v = Get(key);
  if (v == nullptr) return fallback;
  if (!v->is_int64()) Bad(key, "must be an integer");
  int64_t i = v->as_int64();
  if (i < min || i > max) Bad(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return i;
}

int64_t PluginConfig::Seconds(const char* key, int64_t fallback, int64_t min, int64_t max) {
  return Integer(key, fallback, min, max) * kSecondNs;
}

std::vector<std::string> PluginConfig::Strings(const char* key, bool required) {
  const boost::json::value* v = Get(key);
  std::vector<std::string> out;
  if (v == nullptr) {
    if (required) Bad(key, "is required");
    return out;
  }
  if (!v->is_array()) Bad(key, "must be an array of strings");
  for (const auto& e : v->as_array()) {
    if (!e.is_string() || e.as_string().empty()) Bad(key, "must be an array of non-empty strings");
    out.emplace_back(e.as_string());
  }
  if (required && out.empty()) Bad(key, "must name at least one");
  return out;
}

void PluginConfig::Finish() {
  for (const auto& kv : obj_) {
    std::string key(kv.key());
    if (known_.count(key) == 0) {
      std::string list;
      for (const std::string& k : known_) list += (list.empty() ? "" : ", ") + k;
      Bad(key, "is unknown (known keys: " + list + ")");
    }
  }
}

}  // namespace nodeplane::plugins
