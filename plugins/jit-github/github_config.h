// The jit-github plugin's configuration: which GitHub (the API's base URL),
// which target (one organisation, repository or enterprise), and with what
// credential (a GitHub App's key, or for an enterprise a token), read
// strictly from the instance's [plugins.NAME.config] table.
#pragma once

#include <cstdint>
#include <string>

#include "plugin_config.h"

namespace nodeplane::plugins::github {

// Where the REST API is: https://api.github.com, or https://HOST/api/v3 on
// GitHub Enterprise Server. Plain http is accepted for a loopback host only
// (a local proxy or a test double): a token must never cross a network in
// the clear.
struct ApiBase {
  bool tls = true;
  std::string host;
  uint16_t port = 443;
  std::string prefix;  // "" or e.g. "/api/v3", without a trailing slash
};

// Parses `url`; throws PluginError(NP_INVALID) naming `key` when it is not
// a usable base URL.
ApiBase ParseApiBase(const std::string& plugin, const char* key, const std::string& url);

enum class Scope { kOrg, kRepo, kEnterprise };

struct GithubConfig {
  std::string api_url;  // as configured, for messages
  ApiBase api;
  Scope scope = Scope::kOrg;
  std::string owner;  // the organisation, "owner/repo", or the enterprise slug
  // Credentials: an App (app_id or client_id, as the JWT's issuer) with its
  // private key, or (enterprise only) a token with manage_runners:enterprise.
  std::string app_issuer;
  int64_t installation_id = 0;   // 0: looked up from the target
  std::string private_key_file;  // absolute; SECRET content
  std::string token_file;        // absolute; SECRET content
  std::string ca_file;           // "" : the system's trust store
  int64_t timeout_ns = 0;
  int max_attempts = 0;          // per request, for outages (5xx, timeouts, resets)
  int64_t describe_ttl_ns = 0;   // how long a runner group's description is reused
  bool allow_tls12 = false;

  // "organization acme", "repository acme/widgets", "enterprise big-co": how
  // every message names the target.
  std::string Target() const;
  // "/orgs/acme", "/repos/acme/widgets", "/enterprises/big-co": the REST
  // path every runner route hangs from (without the API prefix).
  std::string ScopePath() const;
};

// Reads and checks the config. Paths are resolved against `state_dir`. No
// file is opened here: the credential files are read by their users, so a
// validate-only create touches nothing.
GithubConfig ReadGithubConfig(PluginConfig& cfg, const std::string& state_dir);

// An instance's config JSON read whole (unknown keys refused), as both of
// the plugin's interfaces' create read it.
GithubConfig ReadInstanceConfig(const char* json, uint64_t len, const char* state_dir);

}  // namespace nodeplane::plugins::github
