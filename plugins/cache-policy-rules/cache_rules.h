// The rules of the cache-policy-rules plugin: whether transparent Actions
// cache interception is allowed for an owner/repository, from an ordered
// list in a TOML file. The first rule whose owner and repository globs both
// match decides; when none does, the file's default does.
//
//   default = "allow"          # or "deny"; required
//   [[rules]]
//   owner = "acme"             # glob (* ? [..]), case-insensitive; default "*"
//   repository = "secret-*"    # glob, case-insensitive; default "*"
//   action = "deny"            # "allow" or "deny"; required
//
// The file is re-read when its stamp changes (file_watch.h), checked on
// every call. A file that does not parse, or names an unknown key or a bad
// action, is refused with its line: at creation the plugin fails; later, the
// rules in force stay and the log says why.
//
// Thread-safe: one mutex around a stat and a short rule walk.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "file_watch.h"
#include "nodeplane/np_plugin.h"

namespace nodeplane::plugins {

struct CacheRule {
  std::string owner = "*", repository = "*";
  bool allow = true;
};

struct RuleSet {
  std::vector<CacheRule> rules;
  bool default_allow = true;
};

// Parses a rules file; throws PluginError(NP_INVALID) with "FILE:LINE:COL: key: problem".
RuleSet ParseRules(const std::string& path);

class CacheRules {
 public:
  CacheRules(const np_host_v1* host, std::string path);  // throws PluginError
  bool Allowed(const std::string& owner, const std::string& repository);
  std::string Describe();

 private:
  void RefreshLocked();

  const np_host_v1* host_;
  const std::string path_;
  std::mutex mu_;
  FileStamp stamp_;
  RuleSet rules_;
};

}  // namespace nodeplane::plugins
