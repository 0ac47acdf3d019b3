// Authenticated calls to the GitHub REST API for one target, and what their
// failures mean.
//
// Credentials. With an App: the App JWT (app_jwt.h) finds the installation
// (unless configured) and mints an installation token, which is cached and
// refreshed 5 minutes before its expires_at, and at once when GitHub answers
// 401 to it. Tokens are opaque: no length or format is assumed. With an
// enterprise token: read from token_file, and read again when the file is
// replaced.
//
// Failures (the contract of np_jit_v1):
//   - 429, and 403 carrying rate-limit headers: NP_UNAVAILABLE with the
//     retry-after GitHub asked for (Retry-After, or x-ratelimit-reset when
//     x-ratelimit-remaining is 0, else GitHub's advised minute). Not retried
//     here: GitHub bans clients that keep calling while limited.
//   - 5xx, timeouts, resets: retried up to max_attempts with exponential
//     backoff and jitter, then NP_UNAVAILABLE with the next backoff as hint.
//     A Retry-After on a 5xx (GitHub's 503) sets the wait, as
//     go-retryablehttp's backoff does for GitHub's clients; one longer than
//     kMaxRetryAfterWait is handed to the host instead of slept here.
//   - anything else comes back as a reply for the caller to judge (404, 409
//     and 422 mean different things on different routes).
// No token, key or JIT config is ever in a log line or a message.
//
// Thread-safe. A token refresh is done by one caller while the others wait
// for its result, so a burst of launches mints one token, not many.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <atomic>
#include <string>

#include "app_jwt.h"
#include "file_watch.h"
#include "github_config.h"
#include "https_client.h"
#include "nodeplane/np_plugin.h"

namespace nodeplane::plugins::github {

// GitHub's REST lists: the most a page holds, and a bound on pagination so
// a misbehaving server cannot keep a call forever (100 pages of 100 is
// more runners than GitHub allows in one group).
inline constexpr int kPerPage = 100;
inline constexpr int kMaxPages = 100;

// What a reply that is not a success means for retrying.
struct Verdict {
  enum Kind { kAnswer, kOutage, kRateLimited, kUnauthorized } kind = kAnswer;
  int64_t retry_after_ns = 0;  // for kRateLimited
};
Verdict Classify(const HttpReply& r, int64_t now_wall_ns);

// An RFC 3339 time as Go's time.Time reads GitHub's (`expires_at`,
// `queueTime`, ...): any offset (Z or +hh:mm), fractions to the
// nanosecond; UTC ns, -1 when malformed.
int64_t ParseTimestamp(const std::string& text);

// What a GitHub error body says: the REST API's `message`, and the Actions
// service's exception (`typeName` "GitHub.Actions.Runtime.WebApi.<Type>,
// <assembly>", kept as <Type>), each cut to a readable length; "" when
// absent. (GitHub's error messages carry no credentials.)
struct GithubErrorInfo {
  std::string type, message;
};
GithubErrorInfo GithubError(const HttpReply& r);

// A refusal as a person (or GitHub Support) needs it: " (HTTP 400
// RunnerScaleSetSessionExpiredException: The session ...; activity_id=...,
// github_request_id=...)".
std::string Detail(const HttpReply& r);

class GithubApi {
 public:
  // Reads the credential (private key or token file); throws PluginError.
  GithubApi(const GithubConfig& config, const np_host_v1* host);
  ~GithubApi();

  // An authenticated request with retries (see above). Throws PluginError
  // for outages and rate limits; returns every other reply.
  HttpReply Call(const std::string& method, const std::string& path, const std::string& body = "");

  // The same, with `auth` as the Authorization header (a RemoteAuth
  // registration token, say) and no token refresh.
  HttpReply CallAs(const std::string& method, const std::string& path, const std::string& body,
                   const std::string& auth) {
    return Send(method, path, body, auth);
  }

  // One request on `pool` with the retries above (`attempts` 0: the
  // config's max_attempts); `what` names it in messages. Every other
  // reply, 401 included, is the caller's to judge. With `held_poll`, a
  // request the server still holds at the pool's deadline is not retried
  // and answers status 0: a long poll GitHub held past our bound (no
  // message, never an outage).
  HttpReply Retrying(HttpsPool& pool, const std::string& what, const std::string& method, const std::string& target,
                     const std::string& body, const Headers& headers, int attempts = 0, bool held_poll = false);

  // Logs through the host; values are never secrets.
  void Log(int32_t level, const char* event, std::initializer_list<std::pair<const char*, std::string>> fields) const;

  const GithubConfig& config() const { return config_; }
  // The rate limit as GitHub's latest answer stated it; remaining -1 before any did.
  struct RateLimit {
    int64_t remaining = -1, reset_at_ns = 0;
  };
  RateLimit rate_limit() const { return {rate_remaining_.load(), rate_reset_ns_.load()}; }
  int64_t NowNs() const { return host_->wall_clock_ns(host_->ctx); }

 private:
  // With retries for outages; `auth` is the Authorization header's value.
  HttpReply Send(const std::string& method, const std::string& path, const std::string& body,
                 const std::string& auth);
  // The credential for the API routes; `stale` is one GitHub just refused.
  std::string Token(const std::string& stale);
  std::string MintInstallationToken();  // with token_mu_ held
  int64_t LookupInstallation(const std::string& jwt);
  [[noreturn]] void Refused(const std::string& what, const HttpReply& r) const;

  GithubConfig config_;
  const np_host_v1* host_;
  std::unique_ptr<AppSigner> signer_;  // App targets
  HttpsPool pool_;

  std::mutex token_mu_;
  std::string token_;  // SECRET
  int64_t token_expires_ns_ = 0;
  FileStamp token_stamp_;
  int64_t installation_id_;
  std::atomic<int64_t> rate_remaining_{-1}, rate_reset_ns_{0};
};

}  // namespace nodeplane::plugins::github
