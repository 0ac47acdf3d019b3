#include "https_client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <atomic>
#include <chrono>
#include <optional>

#include "plugin_error.h"

namespace nodeplane::plugins::github {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpsPool::Tls {
  asio::ssl::context ctx{asio::ssl::context::tls_client};
};

// One kept-alive connection; used by one thread at a time.
class HttpsConnection {
 public:
  HttpsConnection(const ApiBase& api, asio::ssl::context* tls, std::chrono::nanoseconds timeout)
      : api_(api), tls_(tls), timeout_(timeout) {}

  bool open() const { return plain_.has_value() || secure_.has_value(); }

  // Every operation is asynchronous on this connection's own io_context,
  // run by the calling thread until it completes: a tcp_stream's deadline
  // applies to asynchronous operations only, and Abort can reach a request
  // in progress from another thread.
  void Connect() {
    if (aborted_) Fail(NP_UNAVAILABLE, "aborted");
    const std::string where = api_.host + ":" + std::to_string(api_.port);
    beast::error_code ec;
    tcp::resolver resolver(ioc_);
    auto endpoints = resolver.resolve(api_.host, std::to_string(api_.port), ec);
    if (ec) Fail(NP_UNAVAILABLE, "cannot resolve " + api_.host + ": " + ec.message());
    if (tls_ == nullptr) {
      plain_.emplace(ioc_);
      plain_->expires_after(timeout_);
      plain_->async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
      Run();
      if (ec) {
        plain_.reset();
        Fail(NP_UNAVAILABLE, "cannot connect to " + where + ": " + Reason(ec));
      }
      return;
    }
    secure_.emplace(ioc_, *tls_);
    SSL* ssl = secure_->native_handle();
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    if (api_.host.find_first_not_of("0123456789.") == std::string::npos || api_.host.find(':') != std::string::npos) {
      X509_VERIFY_PARAM_set1_ip_asc(param, api_.host.c_str());
    } else {
      X509_VERIFY_PARAM_set1_host(param, api_.host.c_str(), api_.host.size());
      SSL_set_tlsext_host_name(ssl, api_.host.c_str());
    }
    beast::get_lowest_layer(*secure_).expires_after(timeout_);
    beast::get_lowest_layer(*secure_).async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
    Run();
    if (!ec) {
      secure_->async_handshake(asio::ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
      Run();
    }
    if (ec) {
      secure_.reset();
      Fail(NP_UNAVAILABLE, "TLS to " + where + " failed: " + Reason(ec));
    }
  }

  // From any thread: ends the operation in progress (it fails with
  // "aborted") and every later one on this connection.
  void Abort() {
    aborted_ = true;
    asio::post(ioc_, [this] { Shut(); });
  }

  void Close() {
    Shut();
    plain_.reset();
    secure_.reset();
    buffer_.clear();
  }

  // `stale` is set when a kept-alive connection turned out closed before the
  // server could have read the request: only then is resending safe.
  HttpReply Exchange(http::request<http::string_body>& req, bool& stale) {
    if (aborted_) Fail(NP_UNAVAILABLE, "aborted");
    return secure_ ? Exchange(*secure_, req, stale) : Exchange(*plain_, req, stale);
  }

 private:
  template <typename Stream>
  HttpReply Exchange(Stream& stream, http::request<http::string_body>& req, bool& stale) {
    beast::error_code ec;
    beast::get_lowest_layer(stream).expires_after(timeout_);
    http::async_write(stream, req, [&](beast::error_code e, size_t) { ec = e; });
    Run();
    if (ec) {
      stale = !aborted_;
      Fail(NP_UNAVAILABLE, "sending the request failed: " + Reason(ec));
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(32u << 20);
    http::async_read(stream, buffer_, parser, [&](beast::error_code e, size_t) { ec = e; });
    Run();
    if (ec) {
      stale = ec == http::error::end_of_stream && !aborted_;
      if (ec == beast::error::timeout && !aborted_ && !parser.got_some()) throw DeadlinePassed(NP_UNAVAILABLE, Reason(ec));
      Fail(NP_UNAVAILABLE, Reason(ec));
    }
    auto& res = parser.get();
    HttpReply r;
    r.status = static_cast<int>(res.result_int());
    auto header = [&](const char* name) {
      auto it = res.find(name);
      return it == res.end() ? std::string() : std::string(it->value());
    };
    r.retry_after = header("retry-after");
    r.ratelimit_remaining = header("x-ratelimit-remaining");
    r.ratelimit_reset = header("x-ratelimit-reset");
    r.link = header("link");
    r.activity_id = header("activityid");
    r.github_request_id = header("x-github-request-id");
    r.body = std::move(res.body());
    if (!res.keep_alive()) Close();
    return r;
  }

  void Run() {
    ioc_.restart();
    ioc_.run();
  }

  void Shut() {
    beast::error_code ignored;
    if (plain_) plain_->socket().close(ignored);
    if (secure_) beast::get_lowest_layer(*secure_).socket().close(ignored);
  }

  std::string Reason(const beast::error_code& ec) const {
    if (aborted_) return "aborted";
    if (ec == beast::error::timeout) return "no answer within the request timeout";
    return ec.message();
  }

  const ApiBase& api_;
  asio::ssl::context* tls_;
  std::chrono::nanoseconds timeout_;
  asio::io_context ioc_;
  std::optional<beast::tcp_stream> plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure_;
  beast::flat_buffer buffer_;
  std::atomic<bool> aborted_{false};
};

HttpsPool::HttpsPool(const ApiBase& api, const std::string& ca_file, bool allow_tls12, int64_t timeout_ns)
    : api_(api), timeout_ns_(timeout_ns) {
  if (!api_.tls) return;
  tls_ = std::make_unique<Tls>();
  SSL_CTX* ctx = tls_->ctx.native_handle();
  SSL_CTX_set_min_proto_version(ctx, allow_tls12 ? TLS1_2_VERSION : TLS1_3_VERSION);
  beast::error_code ec;
  if (ca_file.empty()) {
    tls_->ctx.set_default_verify_paths(ec);
  } else {
    tls_->ctx.load_verify_file(ca_file, ec);
  }
  if (ec) {
    Fail(NP_INVALID, "jit-github: " + (ca_file.empty() ? std::string("the system trust store") : "ca_file " + ca_file) +
                         " cannot be used: " + ec.message());
  }
  tls_->ctx.set_verify_mode(asio::ssl::verify_peer);
}

HttpsPool::~HttpsPool() = default;

std::unique_ptr<HttpsConnection> HttpsPool::Take() {
  std::lock_guard lock(mu_);
  std::unique_ptr<HttpsConnection> c;
  if (!idle_.empty()) {
    c = std::move(idle_.back());
    idle_.pop_back();
  } else {
    c = std::make_unique<HttpsConnection>(api_, tls_ ? &tls_->ctx : nullptr, std::chrono::nanoseconds(timeout_ns_));
  }
  if (aborted_) c->Abort();
  busy_.insert(c.get());
  return c;
}

void HttpsPool::Give(std::unique_ptr<HttpsConnection> c) {
  std::lock_guard lock(mu_);
  busy_.erase(c.get());
  if (c->open() && !aborted_) idle_.push_back(std::move(c));
}

void HttpsPool::Abort() {
  std::lock_guard lock(mu_);
  aborted_ = true;
  for (HttpsConnection* c : busy_) c->Abort();
  idle_.clear();
}

HttpReply HttpsPool::Send(const std::string& method, const std::string& target, const std::string& body,
                          const Headers& headers) {
  http::request<http::string_body> req;
  req.method(http::string_to_verb(method));
  req.target(api_.prefix + target);
  req.version(11);
  const bool default_port = api_.port == (api_.tls ? 443 : 80);
  req.set(http::field::host, default_port ? api_.host : api_.host + ":" + std::to_string(api_.port));
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.keep_alive(true);
  req.prepare_payload();
  auto conn = Take();
  // A kept-alive connection the server closed meanwhile fails on first use;
  // that one failure is retried on a fresh connection.
  for (int attempt = 0;; ++attempt) {
    const bool reused = conn->open();
    try {
      if (!reused) conn->Connect();
      bool stale = false;
      try {
        HttpReply r = conn->Exchange(req, stale);
        Give(std::move(conn));
        return r;
      } catch (const PluginError&) {
        conn->Close();
        if (reused && stale && attempt == 0) continue;
        throw;
      }
    } catch (const DeadlinePassed& e) {
      Give(std::move(conn));
      throw DeadlinePassed(NP_UNAVAILABLE, method + " " + api_.prefix + target + ": " + e.what());
    } catch (const PluginError& e) {
      Give(std::move(conn));
      throw PluginError(NP_UNAVAILABLE, method + " " + api_.prefix + target + ": " + e.what());
    }
  }
}

}  // namespace nodeplane::plugins::github
