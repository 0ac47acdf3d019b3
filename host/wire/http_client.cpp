#include "wire/http_client.h"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace nodeplane::wire {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpClient::Impl {
  ClientOptions opts;
  asio::io_context ioc;
  std::optional<asio::ssl::context> ssl;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;

  Status MakeContext() {
    ssl.emplace(asio::ssl::context::tls_client);
    SSL_CTX* ctx = ssl->native_handle();
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    // A client certificate goes out with the chain its PEM names, not with a
    // chain built from the CA bundle on every handshake: the server holds
    // that CA already (http_server.cpp, the same mode).
    SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);
    beast::error_code ec;
    const ClientTls& t = *opts.tls;
    if (t.verify) {
      ssl->add_certificate_authority(asio::buffer(t.ca_pem), ec);
      if (ec) return Status::Invalid("the CA bundle is unusable: " + ec.message());
      ssl->set_verify_mode(asio::ssl::verify_peer);
    } else {
      ssl->set_verify_mode(asio::ssl::verify_none);
    }
    if (!t.cert_pem.empty()) {
      ssl->use_certificate_chain(asio::buffer(t.cert_pem), ec);
      if (!ec) ssl->use_private_key(asio::buffer(t.key_pem), asio::ssl::context::pem, ec);
      if (ec) return Status::Invalid("the client certificate or key is unusable: " + ec.message());
    }
    return Status::Ok();
  }

  bool connected() const { return plain.has_value() || secure.has_value(); }

  Status Connect() {
    beast::error_code ec;
    tcp::resolver resolver(ioc);
    auto endpoints = resolver.resolve(opts.host, std::to_string(opts.port), ec);
    if (ec) return Status::Unavailable("cannot resolve " + opts.host + ": " + ec.message());
    const std::string where = opts.host + ":" + std::to_string(opts.port);
    if (!opts.tls) {
      plain.emplace(ioc);
      plain->expires_after(opts.connect_timeout);
      plain->connect(endpoints, ec);
      if (ec) {
        plain.reset();
        return Status::Unavailable("cannot connect to " + where + ": " + ec.message());
      }
      return Status::Ok();
    }
    if (!ssl) {
      if (Status s = MakeContext(); !s.ok()) return s;
    }
    secure.emplace(ioc, *ssl);
    const std::string& name = opts.tls->server_name.empty() ? opts.host : opts.tls->server_name;
    SSL* native = secure->native_handle();
    if (opts.tls->verify) {
      X509_VERIFY_PARAM* param = SSL_get0_param(native);
      bool ip = name.find_first_not_of("0123456789.") == std::string::npos || name.find(':') != std::string::npos;
      if (ip) {
        X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      } else {
        X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
        SSL_set_tlsext_host_name(native, name.c_str());
      }
    }
    beast::get_lowest_layer(*secure).expires_after(opts.connect_timeout);
    beast::get_lowest_layer(*secure).connect(endpoints, ec);
    if (!ec) secure->handshake(asio::ssl::stream_base::client, ec);
    if (ec) {
      secure.reset();
      return Status::Unavailable("TLS to " + where + " failed: " + ec.message());
    }
    return Status::Ok();
  }

  void Drop() {
    beast::error_code ignored;
    if (plain) plain->socket().close(ignored);
    if (secure) beast::get_lowest_layer(*secure).socket().close(ignored);
    plain.reset();
    secure.reset();
    buffer.clear();
  }

  // `stale` is set when the server had closed the kept-alive connection
  // before this request reached it (the write failed, or the connection
  // ended before a byte of the answer): only then is a retry safe, since
  // the server cannot have acted on the request.
  template <typename Stream>
  Result<ClientResponse> Exchange(Stream& stream, http::request<http::string_body>& req, bool& stale) {
    beast::error_code ec;
    beast::get_lowest_layer(stream).expires_after(opts.timeout);
    http::write(stream, req, ec);
    if (ec) {
      stale = true;
      return Status::Unavailable("sending the request failed: " + ec.message());
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(16u << 20);
    http::read(stream, buffer, parser, ec);
    if (ec) {
      stale = ec == http::error::end_of_stream;
      return Status::Unavailable("reading the response failed: " + ec.message());
    }
    auto& res = parser.get();
    if (!res.keep_alive()) Drop();
    return ClientResponse{static_cast<int>(res.result_int()), std::move(res.body())};
  }
};

HttpClient::HttpClient(ClientOptions options) : impl_(std::make_unique<Impl>()) { impl_->opts = std::move(options); }

HttpClient::~HttpClient() { Close(); }

void HttpClient::Close() { impl_->Drop(); }

void HttpClient::SetTls(ClientTls tls) {
  impl_->Drop();
  impl_->opts.tls = std::move(tls);
  impl_->ssl.reset();
}

void HttpClient::Aim(const std::string& host, uint16_t port) {
  if (impl_->opts.host == host && impl_->opts.port == port) return;
  impl_->Drop();
  impl_->opts.host = host;
  impl_->opts.port = port;
}

void HttpClient::SetTimeout(Nanos timeout) { impl_->opts.timeout = timeout; }

Result<ClientResponse> HttpClient::Do(const std::string& method, const std::string& target, const std::string& body,
                                      const std::vector<std::pair<std::string, std::string>>& headers) {
  http::request<http::string_body> req;
  req.method(http::string_to_verb(method));
  req.target(target);
  req.version(11);
  req.set(http::field::host, impl_->opts.host);
  req.set(http::field::user_agent, "nodeplane");
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty() || method == "POST") {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.keep_alive(true);
  req.prepare_payload();
  // A kept-alive connection the server has since closed fails on first use:
  // that one failure is retried on a fresh connection, and only when the
  // request cannot have reached the server.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = impl_->connected();
    if (!reused) {
      if (Status s = impl_->Connect(); !s.ok()) return s;
    }
    bool stale = false;
    auto r = impl_->secure ? impl_->Exchange(*impl_->secure, req, stale) : impl_->Exchange(*impl_->plain, req, stale);
    if (!r.ok()) impl_->Drop();
    if (r.ok() || !reused || !stale) return r;
  }
  return Status::Unavailable("the connection failed twice");
}

}  // namespace nodeplane::wire
