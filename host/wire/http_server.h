// An HTTP/1.1 listener with a connection budget, a header read timeout and a
// body limit, that hands each request to an HttpHandler.
//
// Boost.Beast and Asio stay inside http_server.cpp: nothing that includes
// this header pulls them in.
//
// Timeouts: a request head must arrive within `header_timeout` (of the
// handshake on a new connection, of its own first byte on a kept-alive one),
// and the body within the same again; once a request is whole, nothing times
// the connection out while the handler holds it, because a long poll is a
// request that is answered late on purpose. While the handler holds it the
// listener still watches the connection, so a client that goes away is
// noticed (ClientWatch) instead of being answered into the void. An answered
// connection waits `idle_timeout` for its next request to begin.
//
// Threading: the server runs its own I/O threads. Handle() is called on one
// of them and must not block; it answers through the Responder, exactly
// once, from any thread, now or later.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "common/units.h"

namespace nodeplane::wire {

// The verified client certificate a TLS connection presented.
struct PeerCertificate {
  std::string common_name;    // the node's identity
  std::string serial;         // lowercase hex, no leading zeros
  std::string issuer_sha256;  // hex SHA-256 of the issuer name's DER
  int64_t not_before_ns = 0;
};

// Tells whoever holds a request that its client went away before the answer
// was written (the connection closed or reset). Thread-safe.
class ClientWatch {
 public:
  // Runs `f` once when the client is gone, on an I/O thread; at once, on the
  // calling thread, if it already is. A later call replaces the callback.
  void OnGone(std::function<void()> f);
  bool gone() const;
  // The listener's: the connection closed with the request unanswered.
  void MarkGone();

 private:
  mutable std::mutex mu_;
  bool gone_ = false;
  std::function<void()> on_gone_;
};

struct HttpRequest {
  std::string method;
  std::string target;  // path and query, as sent
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  bool tls = false;
  // Null without a verified client certificate. Read once per connection.
  std::shared_ptr<const PeerCertificate> peer;
  // Set by the listener (null for a request made in process).
  std::shared_ptr<ClientWatch> client;
  // The header's value, or "" when absent.
  std::string_view Header(std::string_view lower_name) const;
};

struct HttpResponse {
  HttpResponse(int status_code = 200, std::string type = "", std::string text = "")
      : status(status_code), content_type(std::move(type)), body(std::move(text)) {}
  int status = 200;
  std::string content_type;  // "" for no body
  std::string body;
  int64_t retry_after_seconds = 0;  // > 0: sent as Retry-After
  // Runs, on an I/O thread, when the answer could not be written because
  // the client is gone (a response the kernel accepted counts as written).
  std::function<void()> on_unsent;
};

using Responder = std::function<void(HttpResponse)>;

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  virtual void Handle(HttpRequest request, Responder respond) = 0;
};

// A TLS listener: TLS 1.3 only. With require_client_cert a connection
// without a certificate from one of the client_ca_pem authorities fails in
// the handshake, before any request is read.
struct TlsOptions {
  std::string cert_pem;  // the server's chain
  std::string key_pem;   // SECRET
  std::string client_ca_pem;
  bool require_client_cert = false;
  // Asks for a certificate of client_ca_pem, verifies one that is given
  // (HttpRequest::peer) and lets a connection without one in.
  bool request_client_cert = false;
};

struct ListenerOptions {
  std::string name;  // for logs: "wire", "bootstrap"
  std::string host;
  uint16_t port = 0;  // 0: the kernel chooses; see HttpServer::port()
  uint32_t max_connections = 1024;
  Nanos header_timeout = std::chrono::seconds(10);
  Nanos idle_timeout = std::chrono::seconds(10);  // from an answer to the next request's first byte
  size_t body_limit = 1 << 20;
  unsigned threads = 1;
  std::optional<TlsOptions> tls;  // absent: plain HTTP
};

class HttpServer {
 public:
  // `handler` and `log` are borrowed and must outlive the server.
  HttpServer(ListenerOptions options, HttpHandler& handler, Logger& log);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving; an error names the address and the reason.
  Status Start();
  // The bound port (useful when options.port was 0).
  uint16_t port() const;
  // Stops accepting, closes every connection and joins the I/O threads.
  void Stop();
  // Connections currently open (a test hook and a metric).
  uint32_t open_connections() const;
  // Accepts that failed, each followed by a pause (out of descriptors, most
  // often; a metric and a test hook).
  uint64_t accept_failures() const;
  // Connections accepted and served since Start (a metric and a test hook):
  // a fleet that keeps its connections accepts few, so a steady rate here is
  // handshakes paid again and again.
  uint64_t accepted_connections() const;

  struct Impl;  // opaque: defined, with Beast, in http_server.cpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nodeplane::wire
