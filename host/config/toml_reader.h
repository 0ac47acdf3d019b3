// Reading TOML tables strictly, collecting every problem (the config's
// reader layer; config_schema.h says what is read, config_checks.h what must
// hold across tables).
//
// (1) A TableReader wraps one TOML table. Every key the schema knows is asked
//     for through it, which records the key as known; Finish() then reports
//     every key that nobody asked for, with the closest known key suggested.
//     So the schema is written once, as the sequence of reads, and unknown-key
//     detection can never drift from it.
// (2) Errors accumulate in a Diagnostics object; nothing throws past the
//     loader. A value that fails its check is reported and left at its
//     default, so later checks run and one load reports every problem at once.
#pragma once

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/names.h"
#include "config/config.h"
#include "config/config_loader.h"

namespace nodeplane::config {

// "a table", "an integer", ...: what a node is, for messages.
const char* TypeName(const toml::node& n);
// `parent.key`, quoting a key that is not bare.
std::string JoinPath(const std::string& parent, std::string_view key);

// Every problem of one load, each with file, line, column and key (note 2).
class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}

  void Add(const toml::source_region& where, const std::string& key, std::string message) {
    errors_.push_back(ConfigError{file_, where.begin.line, where.begin.column, key,
                                  std::move(message)});
  }
  void Add(const SourceLocation& where, const std::string& key, std::string message) {
    errors_.push_back(ConfigError{file_, where.line, where.column, key, std::move(message)});
  }
  SourceLocation Locate(const toml::source_region& where) const {
    return SourceLocation{file_, where.begin.line, where.begin.column};
  }
  const std::string& file() const { return file_; }
  std::vector<ConfigError> Take() { return std::move(errors_); }
  bool empty() const { return errors_.empty(); }

 private:
  std::string file_;
  std::vector<ConfigError> errors_;
};

// A value that was read together with where it was written.
template <typename T>
struct Located {
  T value{};
  SourceLocation where;
  std::string key;
  bool present = false;
};

// One TOML table, read key by key; Finish() refuses the keys never read (note 1).
class TableReader {
 public:
  TableReader(const toml::table& table, std::string path, Diagnostics& diag)
      : table_(table), path_(std::move(path)), diag_(diag) {}

  const std::string& path() const { return path_; }
  std::string KeyPath(std::string_view key) const { return JoinPath(path_, key); }
  SourceLocation where() const { return diag_.Locate(table_.source()); }

  // Returns the node for a known key, or nullptr when absent.
  const toml::node* Get(std::string_view key) {
    known_.emplace(key);
    return table_.get(key);
  }

  void TypeError(std::string_view key, const toml::node& n, std::string_view expected) {
    diag_.Add(n.source(), KeyPath(key),
              "expected " + std::string(expected) + ", found " + TypeName(n));
  }
  void ValueError(std::string_view key, const toml::node& n, std::string message) {
    diag_.Add(n.source(), KeyPath(key), std::move(message));
  }
  void Missing(std::string_view key, std::string_view expected) {
    diag_.Add(table_.source(), KeyPath(key),
              "required key is missing; expected " + std::string(expected));
  }

  Located<std::string> String(std::string_view key, bool required = false) {
    Located<std::string> out;
    out.key = KeyPath(key);
    const toml::node* n = Get(key);
    if (n == nullptr) {
      if (required) Missing(key, "a string");
      return out;
    }
    out.where = diag_.Locate(n->source());
    if (const auto* s = n->as_string()) {
      out.value = s->get();
      out.present = true;
    } else {
      TypeError(key, *n, "a string");
    }
    return out;
  }

  // A name that must match the name rule.
  Located<std::string> Name(std::string_view key, bool required = false) {
    Located<std::string> out = String(key, required);
    if (out.present && !IsValidName(out.value)) {
      diag_.Add(out.where, out.key, NameProblem(out.value));
      out.present = false;
    }
    return out;
  }

  std::optional<int64_t> Integer(std::string_view key, int64_t min, int64_t max) {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::nullopt;
    const auto* i = n->as_integer();
    if (i == nullptr) {
      TypeError(key, *n, "an integer");
      return std::nullopt;
    }
    if (i->get() < min || i->get() > max) {
      ValueError(key, *n, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                              ", got " + std::to_string(i->get()));
      return std::nullopt;
    }
    return i->get();
  }

  std::optional<bool> Bool(std::string_view key) {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::nullopt;
    if (const auto* b = n->as_boolean()) return b->get();
    TypeError(key, *n, "true or false");
    return std::nullopt;
  }

  void UInt32(std::string_view key, uint32_t& out, uint32_t min, uint32_t max) {
    if (auto v = Integer(key, min, max)) out = static_cast<uint32_t>(*v);
  }

  void Duration(std::string_view key, Nanos& out) {
    const toml::node* n = Get(key);
    if (n == nullptr) return;
    const auto* s = n->as_string();
    if (s == nullptr) {
      TypeError(key, *n, "a duration string such as \"50s\" or \"10m\"");
      return;
    }
    Result<Nanos> d = ParseDuration(s->get());
    if (!d.ok()) {
      ValueError(key, *n, d.status().message());
      return;
    }
    out = *d;
  }

  void Size(std::string_view key, uint64_t& out, bool required = false) {
    const toml::node* n = Get(key);
    if (n == nullptr) {
      if (required) Missing(key, "a size such as \"8GiB\"");
      return;
    }
    const auto* s = n->as_string();
    if (s == nullptr) {
      TypeError(key, *n, "a size string such as \"8GiB\" or \"512MiB\"");
      return;
    }
    Result<uint64_t> v = ParseByteSize(s->get());
    if (!v.ok()) {
      ValueError(key, *n, v.status().message());
      return;
    }
    if (*v == 0) {
      ValueError(key, *n, "must be greater than zero");
      return;
    }
    out = *v;
  }

  // An array of strings; `located` receives each element's location.
  std::optional<std::vector<std::string>> StringArray(
      std::string_view key, std::vector<SourceLocation>* located = nullptr) {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::nullopt;
    const auto* a = n->as_array();
    if (a == nullptr) {
      TypeError(key, *n, "an array of strings");
      return std::nullopt;
    }
    std::vector<std::string> out;
    bool good = true;
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      if (const auto* s = e.as_string()) {
        out.push_back(s->get());
        if (located != nullptr) located->push_back(diag_.Locate(e.source()));
      } else {
        diag_.Add(e.source(), KeyPath(key) + "[" + std::to_string(i) + "]",
                  std::string("expected a string, found ") + TypeName(e));
        good = false;
      }
    }
    if (!good) return std::nullopt;
    return out;
  }

  // Reads one of a fixed set of words.
  template <typename E>
  std::optional<E> Enum(std::string_view key, const std::vector<std::pair<const char*, E>>& words) {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::nullopt;
    const auto* s = n->as_string();
    if (s == nullptr) {
      TypeError(key, *n, "a string");
      return std::nullopt;
    }
    for (const auto& [word, value] : words) {
      if (s->get() == word) return value;
    }
    ValueError(key, *n, "unknown value \"" + s->get() + "\"; expected one of " + WordList(words));
    return std::nullopt;
  }

  // An array of words from a fixed set, each at most once. `what` names one
  // element in messages ("provider"); `missing_hint` makes the key required.
  template <typename E>
  std::optional<std::vector<E>> EnumArray(std::string_view key, const std::vector<std::pair<const char*, E>>& words,
                                          std::string_view what, bool allow_empty,
                                          std::string_view missing_hint = {}) {
    std::vector<SourceLocation> where;
    std::optional<std::vector<std::string>> items = StringArray(key, &where);
    if (!items) {
      if (!missing_hint.empty() && table_.get(key) == nullptr) Missing(key, missing_hint);
      return std::nullopt;
    }
    if (items->empty() && !allow_empty) {
      diag_.Add(table_.source(), KeyPath(key), "must name at least one " + std::string(what));
    }
    std::vector<E> out;
    for (size_t i = 0; i < items->size(); ++i) {
      const std::string& word = (*items)[i];
      auto it = std::find_if(words.begin(), words.end(), [&](const auto& w) { return word == w.first; });
      if (it == words.end()) {
        diag_.Add(where[i], KeyPath(key),
                  "unknown " + std::string(what) + " \"" + word + "\"; expected one of " + WordList(words));
      } else if (std::find(out.begin(), out.end(), it->second) != out.end()) {
        diag_.Add(where[i], KeyPath(key), "\"" + word + "\" is listed twice");
      } else {
        out.push_back(it->second);
      }
    }
    return out;
  }

  const toml::table* SubTable(std::string_view key) {
    const toml::node* n = Get(key);
    if (n == nullptr) return nullptr;
    if (const auto* t = n->as_table()) return t;
    TypeError(key, *n, "a table");
    return nullptr;
  }

  // Claims a key without reading it (an opaque sub-table handed on as is).
  void Accept(std::string_view key) { known_.emplace(key); }

  // Reports every key in the table that was never asked for.
  void Finish() {
    for (const auto& [k, v] : table_) {
      std::string_view key = k.str();
      if (known_.count(std::string(key)) != 0) continue;
      std::string msg = "unknown key";
      std::string best;
      size_t best_distance = SIZE_MAX;
      for (const std::string& candidate : known_) {
        size_t d = EditDistance(key, candidate);
        if (d < best_distance) {
          best_distance = d;
          best = candidate;
        }
      }
      if (!best.empty() && best_distance <= std::max<size_t>(2, key.size() / 3)) {
        msg += "; did you mean \"" + best + "\"?";
      } else if (!known_.empty()) {
        msg += "; known keys here: " + KnownList();
      }
      diag_.Add(k.source(), KeyPath(key), msg);
    }
  }

  static std::string NameProblem(std::string_view name) {
    std::string quoted = "\"" + std::string(name) + "\"";
    if (!name.empty() && (std::isspace(static_cast<unsigned char>(name.front())) ||
                          std::isspace(static_cast<unsigned char>(name.back())))) {
      return "name " + quoted +
             " has surrounding whitespace; names are compared byte-exactly and never trimmed";
    }
    return "invalid name " + quoted +
           "; expected 1 to 64 of [a-zA-Z0-9._-], starting with a letter or digit";
  }

 private:
  template <typename E>
  static std::string WordList(const std::vector<std::pair<const char*, E>>& words) {
    std::string out;
    for (size_t i = 0; i < words.size(); ++i) {
      if (i > 0) out += ", ";
      out += "\"" + std::string(words[i].first) + "\"";
    }
    return out;
  }
  std::string KnownList() const {
    std::string out;
    for (const std::string& k : known_) {
      if (!out.empty()) out += ", ";
      out += k;
    }
    return out;
  }

  const toml::table& table_;
  std::string path_;
  Diagnostics& diag_;
  std::set<std::string> known_;
};

// Iterates a table of named sub-tables ([sites.NAME], [tiers.NAME], ...),
// checking each name, and calls `each` with a reader for the sub-table.
template <typename F>
void ForEachNamed(TableReader& parent, std::string_view key, Diagnostics& diag, F each) {
  const toml::table* t = parent.SubTable(key);
  if (t == nullptr) return;
  for (const auto& [k, v] : *t) {
    std::string name(k.str());
    std::string path = JoinPath(parent.KeyPath(key), name);
    if (!IsValidName(name)) {
      diag.Add(k.source(), path, TableReader::NameProblem(name));
      continue;
    }
    const toml::table* sub = v.as_table();
    if (sub == nullptr) {
      diag.Add(v.source(), path, std::string("expected a table, found ") + TypeName(v));
      continue;
    }
    TableReader r(*sub, path, diag);
    each(name, r);
    r.Finish();
  }
}

}  // namespace nodeplane::config
