// HTTP/1.1 to the GitHub REST API over Beast: TLS with the server verified
// (the system's trust store, or the configured CA file for a GHES with a
// private CA), keep-alive, and a deadline per request.
//
// Thread safety: an HttpsPool is shared; each connection it lends is used by
// one thread at a time. Boost.Beast and Asio stay inside https_client.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "github_config.h"
#include "plugin_error.h"

namespace nodeplane::plugins::github {

struct HttpReply {
  int status = 0;
  std::string body;
  // The headers the API client reads; "" when absent. activity_id and
  // github_request_id are how GitHub Support finds a request (ActivityId,
  // X-GitHub-Request-Id: actions/scaleset error.go).
  std::string retry_after, ratelimit_remaining, ratelimit_reset, link, activity_id, github_request_id;
};

// The deadline passed with the request sent and no answer begun: the server
// is holding it (a long poll), or is slow. Other transport failures are a
// plain PluginError.
class DeadlinePassed : public PluginError {
 public:
  using PluginError::PluginError;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

class HttpsConnection;

class HttpsPool {
 public:
  // Throws PluginError(NP_INVALID) when ca_file cannot be used.
  HttpsPool(const ApiBase& api, const std::string& ca_file, bool allow_tls12, int64_t timeout_ns);
  ~HttpsPool();

  // One request. A transport failure (resolve, connect, handshake, a reset,
  // the deadline) throws PluginError(NP_UNAVAILABLE) with the reason, and
  // DeadlinePassed when the request was sent and no answer came in time;
  // every HTTP status is a reply. `target` starts with '/'; the base URL's prefix
  // is prepended here. Header values may be secrets: they are never logged.
  HttpReply Send(const std::string& method, const std::string& target, const std::string& body,
                 const Headers& headers);
  // From any thread: the requests in progress fail at once ("aborted"),
  // and so does every later one. For a long poll cut short at shutdown.
  void Abort();

 private:
  std::unique_ptr<HttpsConnection> Take();
  void Give(std::unique_ptr<HttpsConnection> c);

  struct Tls;
  ApiBase api_;
  int64_t timeout_ns_;
  std::unique_ptr<Tls> tls_;
  std::mutex mu_;
  std::vector<std::unique_ptr<HttpsConnection>> idle_;
  std::set<HttpsConnection*> busy_;  // lent out, for Abort
  bool aborted_ = false;
};

}  // namespace nodeplane::plugins::github
