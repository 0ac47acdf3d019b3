// A small synchronous HTTP/1.1 client over plain TCP or TLS 1.3, for the
// reference node, the operator tools' tests and the load generator.
//
// TLS: the server is verified against `ca_pem` (a bundle; any CA in it
// will do) and its certificate must name `server_name`; a client
// certificate is presented when `cert_pem` is set. `verify = false` exists
// for one purpose only: fetching the CA before enrolling, whose answer the
// caller then checks against a fingerprint the operator supplied.
//
// Boost.Beast and Asio stay inside http_client.cpp. Not thread-safe: one
// client per thread; it keeps one connection alive between requests and
// reconnects when the server closed it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/units.h"

namespace nodeplane::wire {

struct ClientTls {
  std::string ca_pem;
  std::string server_name;  // DNS name or IP literal the server's certificate must carry
  std::string cert_pem;     // "" : no client certificate
  std::string key_pem;      // SECRET
  bool verify = true;
};

struct ClientOptions {
  std::string host;
  uint16_t port = 0;
  std::optional<ClientTls> tls;
  Nanos timeout = std::chrono::seconds(90);  // per request, longer than a poll window
  // Connecting and the TLS handshake: a server that accepts but never
  // answers (a paused process) is given up on this soon.
  Nanos connect_timeout = std::chrono::seconds(10);
};

struct ClientResponse {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  explicit HttpClient(ClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // One request. A transport failure (refused, reset, timed out, handshake
  // refused) is Unavailable with the reason; any HTTP status is a response.
  Result<ClientResponse> Do(const std::string& method, const std::string& target, const std::string& body = "",
                            const std::vector<std::pair<std::string, std::string>>& headers = {});
  // New TLS material (after a renewal) for the next connection.
  void SetTls(ClientTls tls);
  // Another server for the next request (a failover); a no-op when it is
  // the one already in use, so a kept-alive connection stays.
  void Aim(const std::string& host, uint16_t port);
  void SetTimeout(Nanos timeout);
  void Close();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nodeplane::wire
