#include "github_api.h"

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <thread>
#include <vector>

#include "plugin_error.h"
#include "plugin_time.h"
#include "secret_file.h"

namespace nodeplane::plugins::github {
namespace {

// A token is replaced this long before GitHub's expiry, so no request is
// ever sent with one that expires on the way.
constexpr int64_t kRefreshMargin = 5 * kMinuteNs;
// What GitHub advises for a secondary limit that names no time.
constexpr int64_t kDefaultRateLimitWait = 60 * kSecondNs;
// The longest Retry-After a request sleeps through itself (go-retryablehttp's
// RetryWaitMax for GitHub's clients); a longer one goes to the host.
constexpr int64_t kMaxRetryAfterWait = 30 * kSecondNs;

bool Digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// Exponential backoff with ±25% jitter, so many callers failing together do
// not come back together: 250 ms, 500 ms, 1 s, ... up to 8 s.
int64_t Backoff(int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const int64_t base = std::min<int64_t>(250'000'000LL << std::min(attempt - 1, 5), 8 * kSecondNs);
  std::uniform_int_distribution<int64_t> jitter(-base / 4, base / 4);
  return base + jitter(rng);
}

}  // namespace

Verdict Classify(const HttpReply& r, int64_t now_wall_ns) {
  if (r.status == 401) return {Verdict::kUnauthorized, 0};
  const bool limited = r.status == 429 || (r.status == 403 && (r.ratelimit_remaining == "0" || !r.retry_after.empty()));
  if (limited) {
    int64_t wait = kDefaultRateLimitWait;
    if (Digits(r.retry_after) && r.retry_after.size() < 10) {
      wait = std::stoll(r.retry_after) * kSecondNs;
    } else if (r.ratelimit_remaining == "0" && Digits(r.ratelimit_reset) && r.ratelimit_reset.size() < 15) {
      wait = std::stoll(r.ratelimit_reset) * kSecondNs - now_wall_ns;
    }
    return {Verdict::kRateLimited, std::max(wait, kSecondNs)};
  }
  if (r.status >= 500 || r.status == 408) return {Verdict::kOutage, 0};
  return {Verdict::kAnswer, 0};
}

int64_t ParseTimestamp(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != 19) {
    return -1;
  }
  size_t at = 19;
  int64_t fraction_ns = 0;
  if (at < text.size() && text[at] == '.') {
    int64_t scale = 100'000'000;
    for (++at; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])); ++at, scale /= 10) {
      fraction_ns += (text[at] - '0') * scale;
    }
  }
  int64_t offset_s = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at + 6 == text.size() && (text[at] == '+' || text[at] == '-') && text[at + 3] == ':' &&
             std::isdigit(static_cast<unsigned char>(text[at + 1])) && std::isdigit(static_cast<unsigned char>(text[at + 2])) &&
             std::isdigit(static_cast<unsigned char>(text[at + 4])) && std::isdigit(static_cast<unsigned char>(text[at + 5]))) {
    const int64_t hh = (text[at + 1] - '0') * 10 + (text[at + 2] - '0');
    const int64_t mm = (text[at + 4] - '0') * 10 + (text[at + 5] - '0');
    offset_s = (text[at] == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
    at += 6;
  } else {
    return -1;  // RFC 3339 requires a zone
  }
  if (at != text.size()) return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const time_t t = timegm(&tm);
  if (t == static_cast<time_t>(-1)) return -1;
  const int64_t utc = static_cast<int64_t>(t) - offset_s;
  return utc < 0 ? -1 : utc * kSecondNs + fraction_ns;  // .NET's and Go's zero times are "unknown"
}

namespace {

std::string Cut(std::string text, size_t n) { return text.size() > n ? text.substr(0, n) + "..." : text; }

}  // namespace

GithubErrorInfo GithubError(const HttpReply& r) {
  std::string_view body = r.body;
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return {};
  auto text = [&](const char* key) {
    const boost::json::value* m = v.as_object().if_contains(key);
    return m != nullptr && m->is_string() ? std::string(m->as_string()) : std::string();
  };
  GithubErrorInfo e{text("typeName"), Cut(text("message"), 200)};
  // "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionExpiredException, GitHub.Actions.Runtime.WebApi"
  e.type = e.type.substr(0, e.type.find(','));
  e.type = Cut(e.type.substr(e.type.rfind('.') == std::string::npos ? 0 : e.type.rfind('.') + 1), 80);
  return e;
}

std::string Detail(const HttpReply& r) {
  const GithubErrorInfo e = GithubError(r);
  std::string out = " (HTTP " + std::to_string(r.status);
  if (!e.type.empty()) out += " " + e.type;
  if (!e.message.empty()) out += ": " + e.message;
  std::string ids;
  if (!r.activity_id.empty()) ids += "activity_id=" + Cut(r.activity_id, 64);
  if (!r.github_request_id.empty()) ids += (ids.empty() ? "" : ", ") + std::string("github_request_id=") + Cut(r.github_request_id, 64);
  if (!ids.empty()) out += "; " + ids;
  return out + ")";
}

GithubApi::GithubApi(const GithubConfig& config, const np_host_v1* host)
    : config_(config),
      host_(host),
      pool_(config.api, config.ca_file, config.allow_tls12, config.timeout_ns),
      installation_id_(config.installation_id) {
  if (config_.scope == Scope::kEnterprise) {
    Token("");  // reads token_file now, so a bad one stops the start
  } else {
    signer_ = std::make_unique<AppSigner>(config_.private_key_file, config_.app_issuer);
  }
}

GithubApi::~GithubApi() = default;

void GithubApi::Log(int32_t level, const char* event,
                    std::initializer_list<std::pair<const char*, std::string>> fields) const {
  std::vector<const char*> keys{"target"}, values{nullptr};
  const std::string target = config_.Target();
  values[0] = target.c_str();
  for (const auto& [k, v] : fields) {
    keys.push_back(k);
    values.push_back(v.c_str());
  }
  host_->log(host_->ctx, level, event, keys.data(), values.data(), static_cast<uint32_t>(keys.size()));
}

void GithubApi::Refused(const std::string& what, const HttpReply& r) const {
  Fail(NP_INVALID, "jit-github: " + config_.Target() + ": " + what + Detail(r));
}

HttpReply GithubApi::Send(const std::string& method, const std::string& path, const std::string& body,
                          const std::string& auth) {
  const Headers headers{{"Accept", "application/vnd.github+json, application/json"},
                        {"X-GitHub-Api-Version", "2022-11-28"},
                        {"User-Agent", "nodeplane-jit-github/" NODEPLANE_PLUGIN_VERSION},
                        {"Authorization", auth}};
  return Retrying(pool_, method + " " + config_.api.prefix + path, method, path, body, headers);
}

HttpReply GithubApi::Retrying(HttpsPool& pool, const std::string& what, const std::string& method,
                              const std::string& target, const std::string& body, const Headers& headers,
                              int attempts, bool held_poll) {
  if (attempts <= 0) attempts = config_.max_attempts;
  std::string last;
  int64_t wait = 0;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    if (attempt > 1) {
      Log(NP_LOG_WARN, "github.retry", {{"request", what}, {"attempt", std::to_string(attempt)}, {"after", last}});
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    }
    wait = Backoff(attempt);
    HttpReply r;
    try {
      r = pool.Send(method, target, body, headers);
    } catch (const DeadlinePassed& e) {
      if (held_poll) return HttpReply{};  // GitHub held the poll past our bound: no message
      last = e.what();
      continue;
    } catch (const PluginError& e) {
      last = e.what();
      continue;
    }
    if (Digits(r.ratelimit_remaining) && r.ratelimit_remaining.size() < 15) {
      rate_remaining_ = std::stoll(r.ratelimit_remaining);
      if (Digits(r.ratelimit_reset) && r.ratelimit_reset.size() < 15) rate_reset_ns_ = std::stoll(r.ratelimit_reset) * kSecondNs;
    }
    const Verdict v = Classify(r, NowNs());
    if (v.kind == Verdict::kRateLimited) {
      const std::string seconds = std::to_string((v.retry_after_ns + kSecondNs - 1) / kSecondNs);
      Log(NP_LOG_WARN, "github.rate_limited", {{"request", what}, {"status", std::to_string(r.status)},
                                               {"retry_after_seconds", seconds}});
      throw PluginError(NP_UNAVAILABLE,
                        "jit-github: " + config_.Target() + ": GitHub's rate limit answered " + what + " with " +
                            std::to_string(r.status) + "; retry after " + seconds + " s",
                        v.retry_after_ns);
    }
    if (v.kind != Verdict::kOutage) return r;
    last = Detail(r).substr(1);
    // GitHub's 503 may say when to come back; a wait longer than a request
    // may sleep is the host's to make.
    if (Digits(r.retry_after) && r.retry_after.size() < 10) {
      wait = std::stoll(r.retry_after) * kSecondNs;
      if (wait > kMaxRetryAfterWait || attempt == attempts) {
        throw PluginError(NP_UNAVAILABLE, "jit-github: " + config_.Target() + ": " + what + " answered " + last +
                                              "; retry after " + r.retry_after + " s",
                          wait);
      }
    }
  }
  throw PluginError(NP_UNAVAILABLE,
                    "jit-github: " + config_.Target() + ": " + what + " failed " + std::to_string(attempts) +
                        (attempts == 1 ? " time" : " times") + "; last: " + last,
                    wait);
}

HttpReply GithubApi::Call(const std::string& method, const std::string& path, const std::string& body) {
  std::string token = Token("");
  HttpReply r = Send(method, path, body, "Bearer " + token);
  if (r.status != 401) return r;
  // Revoked, expired early, or the clock is off: one fresh token, once.
  Log(NP_LOG_WARN, "github.token_refused", {{"request", method + " " + path}});
  token = Token(token);
  r = Send(method, path, body, "Bearer " + token);
  if (r.status == 401) {
    Refused(signer_ ? "GitHub refused a freshly minted installation token" : "GitHub refused the token in token_file",
            r);
  }
  return r;
}

std::string GithubApi::Token(const std::string& stale) {
  std::lock_guard lock(token_mu_);
  if (!signer_) {
    FileStamp now = StampOf(config_.token_file);
    if (token_.empty() || now != token_stamp_) {
      std::string text = ReadSecretFile("jit-github", "token_file", config_.token_file, /*allow_group=*/false);
      const auto end = text.find_last_not_of(" \t\r\n");
      text.erase(end == std::string::npos ? 0 : end + 1);
      if (text.empty() || text.find_first_of(" \t\r\n") != std::string::npos) {
        Fail(NP_INVALID, "jit-github: token_file " + config_.token_file + " must hold one token on one line");
      }
      token_ = std::move(text);
      token_stamp_ = now;
    }
    return token_;
  }
  // Another caller may have refreshed it while this one waited for the lock.
  if (!token_.empty() && token_ != stale && NowNs() < token_expires_ns_ - kRefreshMargin) return token_;
  return MintInstallationToken();
}

int64_t GithubApi::LookupInstallation(const std::string& jwt) {
  HttpReply r = Send("GET", config_.ScopePath() + "/installation", "", "Bearer " + jwt);
  if (r.status == 401) Refused("GitHub refused the App's JWT: check app_id or client_id, private_key_file and the clock", r);
  if (r.status == 404) Refused("the GitHub App is not installed on it", r);
  if (r.status != 200) Refused("looking up the App's installation failed", r);
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(r.body, ec);
  const boost::json::value* id = !ec && v.is_object() ? v.as_object().if_contains("id") : nullptr;
  if (id == nullptr || !id->is_int64() || id->as_int64() <= 0) {
    Fail(NP_UNAVAILABLE, "jit-github: " + config_.Target() + ": the installation lookup answered without an id");
  }
  Log(NP_LOG_INFO, "github.installation_found", {{"installation_id", std::to_string(id->as_int64())}});
  return id->as_int64();
}

std::string GithubApi::MintInstallationToken() {
  const std::string jwt = signer_->Sign(NowNs() / kSecondNs);
  const bool looked_up = installation_id_ == 0;
  if (looked_up) installation_id_ = LookupInstallation(jwt);
  HttpReply r =
      Send("POST", "/app/installations/" + std::to_string(installation_id_) + "/access_tokens", "", "Bearer " + jwt);
  if (r.status == 401) Refused("GitHub refused the App's JWT: check app_id or client_id, private_key_file and the clock", r);
  if (r.status == 404 || r.status == 403) {
    if (looked_up) installation_id_ = 0;  // reinstalled, perhaps: look it up again next time
    Refused("GitHub refused an installation token for installation " + std::to_string(installation_id_), r);
  }
  if (r.status != 201 && r.status != 200) Refused("minting an installation token failed", r);
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(r.body, ec);
  const boost::json::object* o = !ec && v.is_object() ? &v.as_object() : nullptr;
  const boost::json::value* token = o ? o->if_contains("token") : nullptr;
  const boost::json::value* expires = o ? o->if_contains("expires_at") : nullptr;
  if (token == nullptr || !token->is_string() || token->as_string().empty() || expires == nullptr ||
      !expires->is_string()) {
    Fail(NP_UNAVAILABLE, "jit-github: " + config_.Target() + ": the installation token answer lacks token or expires_at");
  }
  const int64_t expiry = ParseTimestamp(std::string(expires->as_string()));
  if (expiry < 0) {
    Fail(NP_UNAVAILABLE, "jit-github: " + config_.Target() + ": the installation token's expires_at is not a time");
  }
  token_ = std::string(token->as_string());
  // A token that expires within the margin (a skewed clock, or a test
  // double's fixed example) serves the request that minted it, not a second.
  token_expires_ns_ = expiry;
  Log(NP_LOG_INFO, "github.token_minted", {{"expires_in_seconds", std::to_string((expiry - NowNs()) / kSecondNs)}});
  return token_;
}

}  // namespace nodeplane::plugins::github
