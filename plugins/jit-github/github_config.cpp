#include "github_config.h"

#include <regex>

#include "plugin_error.h"
#include "plugin_time.h"

namespace nodeplane::plugins::github {
namespace {

constexpr const char* kName = "jit-github";

[[noreturn]] void Bad(const std::string& key, const std::string& what) {
  Fail(NP_INVALID, std::string(kName) + ": config key \"" + key + "\" " + what);
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

std::string Resolve(const std::string& path, const std::string& state_dir) {
  if (path.empty() || path[0] == '/') return path;
  return state_dir + "/" + path;
}

// GitHub's own rules for the names, so that a path built from them needs no
// escaping and a typo is caught at start-up rather than as a 404.
const std::regex kLogin("^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$");
const std::regex kRepoName("^[A-Za-z0-9._-]{1,100}$");
const std::regex kEnterpriseSlug("^[A-Za-z0-9](?:[A-Za-z0-9-]{0,59})$");

}  // namespace

ApiBase ParseApiBase(const std::string& plugin, const char* key, const std::string& url) {
  auto bad = [&](const std::string& why) {
    Fail(NP_INVALID, plugin + ": config key \"" + key + "\" " + why + " (got \"" + url + "\")");
  };
  static const std::regex kUrl(R"(^(https?)://(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9.-]+)(?::([0-9]{1,5}))?(/[^?#]*)?$)");
  std::smatch m;
  if (!std::regex_match(url, m, kUrl)) bad("must be an http(s) URL such as https://api.github.com or https://HOST/api/v3");
  ApiBase b;
  b.tls = m[1] == "https";
  b.host = m[2];
  if (b.host.front() == '[') b.host = b.host.substr(1, b.host.size() - 2);
  b.port = b.tls ? 443 : 80;
  if (m[3].matched) {
    int port = std::stoi(m[3]);
    if (port < 1 || port > 65535) bad("has a port outside 1..65535");
    b.port = static_cast<uint16_t>(port);
  }
  b.prefix = m[4].matched ? std::string(m[4]) : "";
  while (!b.prefix.empty() && b.prefix.back() == '/') b.prefix.pop_back();
  if (!b.tls && !IsLoopback(b.host)) bad("uses plain http to a host other than loopback; tokens would cross the network in the clear");
  return b;
}

std::string GithubConfig::Target() const {
  switch (scope) {
    case Scope::kOrg: return "organization " + owner;
    case Scope::kRepo: return "repository " + owner;
    case Scope::kEnterprise: return "enterprise " + owner;
  }
  return owner;
}

std::string GithubConfig::ScopePath() const {
  switch (scope) {
    case Scope::kOrg: return "/orgs/" + owner;
    case Scope::kRepo: return "/repos/" + owner;
    case Scope::kEnterprise: return "/enterprises/" + owner;
  }
  return "";
}

GithubConfig ReadGithubConfig(PluginConfig& cfg, const std::string& state_dir) {
  GithubConfig c;
  c.api_url = cfg.String("api_url", "https://api.github.com");
  c.api = ParseApiBase(kName, "api_url", c.api_url);

  const std::string org = cfg.String("organization", "");
  const std::string repo = cfg.String("repository", "");
  const std::string enterprise = cfg.String("enterprise", "");
  if (!org.empty() + !repo.empty() + !enterprise.empty() != 1) {
    Fail(NP_INVALID, std::string(kName) +
                         ": exactly one of the config keys \"organization\", \"repository\" (owner/name) and "
                         "\"enterprise\" names the target");
  }
  if (!org.empty()) {
    if (!std::regex_match(org, kLogin)) Bad("organization", "is not a GitHub organization name");
    c.scope = Scope::kOrg;
    c.owner = org;
  } else if (!repo.empty()) {
    const auto slash = repo.find('/');
    if (slash == std::string::npos || !std::regex_match(repo.substr(0, slash), kLogin) ||
        !std::regex_match(repo.substr(slash + 1), kRepoName)) {
      Bad("repository", "must be \"owner/name\"");
    }
    c.scope = Scope::kRepo;
    c.owner = repo;
  } else {
    if (!std::regex_match(enterprise, kEnterpriseSlug)) Bad("enterprise", "is not an enterprise slug");
    c.scope = Scope::kEnterprise;
    c.owner = enterprise;
  }

  const int64_t app_id = cfg.Integer("app_id", 0, 1, INT64_MAX);
  const std::string client_id = cfg.String("client_id", "");
  c.installation_id = cfg.Integer("installation_id", 0, 1, INT64_MAX);
  c.private_key_file = Resolve(cfg.String("private_key_file", ""), state_dir);
  c.token_file = Resolve(cfg.String("token_file", ""), state_dir);
  const bool app = app_id != 0 || !client_id.empty() || !c.private_key_file.empty() || c.installation_id != 0;
  if (c.scope == Scope::kEnterprise) {
    // GitHub's enterprise runner routes do not accept installation tokens.
    if (app) {
      Fail(NP_INVALID, std::string(kName) +
                           ": an enterprise target cannot use a GitHub App (GitHub's enterprise runner endpoints "
                           "refuse installation tokens); set \"token_file\" to a file holding a token with "
                           "manage_runners:enterprise instead of app_id/client_id/private_key_file");
    }
    if (c.token_file.empty()) Bad("token_file", "is required for an enterprise target");
  } else {
    if (!c.token_file.empty()) {
      Bad("token_file", "is for enterprise targets only; an organization or repository uses its GitHub App "
                        "(app_id or client_id, and private_key_file)");
    }
    if ((app_id != 0) == !client_id.empty()) {
      Fail(NP_INVALID, std::string(kName) + ": exactly one of the config keys \"app_id\" and \"client_id\" names "
                                            "the GitHub App (the JWT's issuer)");
    }
    if (c.private_key_file.empty()) Bad("private_key_file", "is required: the App's private key (PEM, mode 0600)");
    static const std::regex kClientId("^[A-Za-z0-9._-]{1,100}$");
    if (!client_id.empty() && !std::regex_match(client_id, kClientId)) Bad("client_id", "is not a GitHub App client ID");
    c.app_issuer = client_id.empty() ? std::to_string(app_id) : client_id;
  }
  c.ca_file = Resolve(cfg.String("ca_file", ""), state_dir);
  if (!c.ca_file.empty() && !c.api.tls) Bad("ca_file", "needs an https api_url");
  c.timeout_ns = cfg.Seconds("timeout_seconds", 10, 1, 300);
  c.max_attempts = static_cast<int>(cfg.Integer("max_attempts", 3, 1, 10));
  c.describe_ttl_ns = cfg.Seconds("describe_ttl_seconds", 300, 0, 86400);
  // GitHub's own clients (Go) accept TLS 1.2, and not every GitHub endpoint
  // is known to offer 1.3 (scale-set-vs-github-clients.md D13).
  const std::string tls = cfg.String("tls_min_version", "1.2");
  if (tls != "1.3" && tls != "1.2") Bad("tls_min_version", "must be \"1.3\" or \"1.2\"");
  c.allow_tls12 = tls == "1.2";
  return c;
}

GithubConfig ReadInstanceConfig(const char* json, uint64_t len, const char* state_dir) {
  PluginConfig cfg(json, len, kName);
  GithubConfig c = ReadGithubConfig(cfg, state_dir != nullptr ? state_dir : "");
  cfg.Finish();
  return c;
}

}  // namespace nodeplane::plugins::github
