#include "cache_rules.h"

#include <fnmatch.h>

#include <toml++/toml.h>

#include "plugin_error.h"

namespace nodeplane::plugins {
namespace {

std::string Where(const std::string& path, const toml::source_region& r) {
  return path + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

bool Action(const std::string& path, const toml::node& n, const std::string& key) {
  auto v = n.value<std::string>();
  if (!v || (*v != "allow" && *v != "deny")) {
    Fail(NP_INVALID, Where(path, n.source()) + ": " + key + ": must be \"allow\" or \"deny\"");
  }
  return *v == "allow";
}

std::string Glob(const std::string& path, const toml::node& n, const std::string& key) {
  auto v = n.value<std::string>();
  if (!v || v->empty()) Fail(NP_INVALID, Where(path, n.source()) + ": " + key + ": must be a non-empty glob");
  return *v;
}

}  // namespace

RuleSet ParseRules(const std::string& path) {
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    Fail(NP_INVALID, Where(path, e.source()) + ": " + std::string(e.description()));
  }
  RuleSet out;
  bool has_default = false;
  for (const auto& [k, node] : doc) {
    const std::string key(k.str());
    if (key == "default") {
      out.default_allow = Action(path, node, "default");
      has_default = true;
    } else if (key == "rules") {
      const toml::array* rules = node.as_array();
      if (rules == nullptr) Fail(NP_INVALID, Where(path, node.source()) + ": rules: must be [[rules]] tables");
      for (size_t i = 0; i < rules->size(); ++i) {
        const toml::table* t = (*rules)[i].as_table();
        const std::string name = "rules[" + std::to_string(i + 1) + "]";
        if (t == nullptr) Fail(NP_INVALID, Where(path, (*rules)[i].source()) + ": " + name + ": must be a table");
        CacheRule rule;
        bool has_action = false;
        for (const auto& [rk, rv] : *t) {
          const std::string rkey(rk.str());
          if (rkey == "owner") {
            rule.owner = Glob(path, rv, name + ".owner");
          } else if (rkey == "repository") {
            rule.repository = Glob(path, rv, name + ".repository");
          } else if (rkey == "action") {
            rule.allow = Action(path, rv, name + ".action");
            has_action = true;
          } else {
            Fail(NP_INVALID, Where(path, rv.source()) + ": " + name + "." + rkey +
                                 ": unknown key (owner, repository, action)");
          }
        }
        if (!has_action) Fail(NP_INVALID, Where(path, t->source()) + ": " + name + ": action is required");
        out.rules.push_back(std::move(rule));
      }
    } else {
      Fail(NP_INVALID, Where(path, node.source()) + ": " + key + ": unknown key (default, rules)");
    }
  }
  if (!has_default) Fail(NP_INVALID, path + ":1:1: default: required (\"allow\" or \"deny\")");
  return out;
}

CacheRules::CacheRules(const np_host_v1* host, std::string path)
    : host_(host), path_(std::move(path)), stamp_(StampOf(path_)), rules_(ParseRules(path_)) {}

void CacheRules::RefreshLocked() {
  FileStamp now = StampOf(path_);
  if (now == stamp_) return;
  stamp_ = now;
  const char* keys[] = {"file", "detail"};
  try {
    rules_ = ParseRules(path_);
    const std::string detail = std::to_string(rules_.rules.size()) + " rule(s)";
    const char* values[] = {path_.c_str(), detail.c_str()};
    host_->log(host_->ctx, NP_LOG_INFO, "cache_rules.loaded", keys, values, 2);
  } catch (const PluginError& e) {
    const std::string detail = std::string(e.what()) + "; the rules in force stay";
    const char* values[] = {path_.c_str(), detail.c_str()};
    host_->log(host_->ctx, NP_LOG_WARN, "cache_rules.rejected", keys, values, 2);
  }
}

bool CacheRules::Allowed(const std::string& owner, const std::string& repository) {
  std::lock_guard lock(mu_);
  RefreshLocked();
  for (const CacheRule& r : rules_.rules) {
    // GitHub's owner and repository names are case-insensitive.
    if (fnmatch(r.owner.c_str(), owner.c_str(), FNM_CASEFOLD) == 0 &&
        fnmatch(r.repository.c_str(), repository.c_str(), FNM_CASEFOLD) == 0) {
      return r.allow;
    }
  }
  return rules_.default_allow;
}

std::string CacheRules::Describe() {
  std::lock_guard lock(mu_);
  RefreshLocked();
  return "cache rules from " + path_ + ": " + std::to_string(rules_.rules.size()) + " rule(s), default " +
         (rules_.default_allow ? "allow" : "deny");
}

}  // namespace nodeplane::plugins
