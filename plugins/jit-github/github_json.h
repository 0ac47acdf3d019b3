// Reading GitHub's JSON answers the way GitHub's own Go clients do, so that
// what they would accept we accept: a UTF-8 byte order mark before a body is
// skipped (actions/scaleset common_client.go), a member is matched by name
// exactly or else without regard to case (Go's encoding/json), and a member
// that is absent or of another type reads as empty. Strictness about what
// must be present is the caller's, with the field named in its message.
//
// Internal to the plugin (Boost.JSON stays out of every host header).
#pragma once

#include <boost/json.hpp>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nodeplane::plugins::github::gjson {

namespace json = boost::json;

inline std::string_view Unmarked(std::string_view body) {
  return body.substr(0, 3) == "\xEF\xBB\xBF" ? body.substr(3) : body;
}

// A body as JSON; null when it is not JSON.
inline json::value Parse(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(Unmarked(body), ec);
  return ec ? json::value() : v;
}

// The member `key`: exact, else the first whose name matches ignoring case.
inline const json::value* Member(const json::object& o, std::string_view key) {
  if (const json::value* v = o.if_contains(key)) return v;
  for (const auto& kv : o) {
    const std::string_view name = kv.key();
    if (name.size() != key.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(name[i])) == std::tolower(static_cast<unsigned char>(key[i]));
    }
    if (same) return &kv.value();
  }
  return nullptr;
}

inline std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = Member(o, key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : "";
}

inline int64_t Int(const json::object& o, std::string_view key) {
  const json::value* v = Member(o, key);
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->as_uint64());
  return 0;
}

inline const json::object* Object(const json::object& o, std::string_view key) {
  const json::value* v = Member(o, key);
  return v != nullptr ? v->if_object() : nullptr;
}

inline const json::array* Array(const json::object& o, std::string_view key) {
  const json::value* v = Member(o, key);
  return v != nullptr ? v->if_array() : nullptr;
}

inline std::vector<std::string> Strings(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const json::array* a = Array(o, key)) {
    for (const json::value& v : *a) {
      if (v.is_string()) out.emplace_back(v.as_string());
    }
  }
  return out;
}

}  // namespace nodeplane::plugins::github::gjson
