#include "http_load.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <variant>

namespace nodeplane::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::use_awaitable;
using Clock = std::chrono::steady_clock;

namespace {

struct Shared {
  tcp::endpoint endpoint;
  asio::ssl::context* tls = nullptr;
  std::string host, target;
  int expect = 0;
  Clock::time_point end;
  std::atomic<int64_t> answered{0}, failed{0};
};

template <typename Stream>
asio::awaitable<void> Loop(Shared& s, Stream& stream) {
  beast::flat_buffer buffer;
  http::request<http::empty_body> req{http::verb::get, s.target, 11};
  req.set(http::field::host, s.host);
  req.keep_alive(true);
  while (Clock::now() < s.end) {
    co_await http::async_write(stream, req, use_awaitable);
    http::response<http::string_body> res;
    co_await http::async_read(stream, buffer, res, use_awaitable);
    if (static_cast<int>(res.result_int()) == s.expect) {
      ++s.answered;
    } else {
      ++s.failed;
    }
  }
}

asio::awaitable<void> Client(Shared& s) {
  auto ex = co_await asio::this_coro::executor;
  try {
    if (s.tls == nullptr) {
      beast::tcp_stream stream(ex);
      co_await stream.async_connect(s.endpoint, use_awaitable);
      co_await Loop(s, stream);
    } else {
      beast::ssl_stream<beast::tcp_stream> stream(ex, *s.tls);
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(stream.native_handle()), s.host.c_str());
      co_await beast::get_lowest_layer(stream).async_connect(s.endpoint, use_awaitable);
      co_await stream.async_handshake(asio::ssl::stream_base::client, use_awaitable);
      co_await Loop(s, stream);
    }
  } catch (const std::exception&) {
    ++s.failed;
  }
}

}  // namespace

LoadResult Hammer(const std::string& host, uint16_t port, const std::optional<LoadTls>& tls, const std::string& target,
                  int expect_status, int connections, std::chrono::seconds duration) {
  asio::io_context ioc;
  std::optional<asio::ssl::context> ctx;
  Shared s;
  s.endpoint = tcp::endpoint(asio::ip::make_address(host), port);
  s.host = host;
  s.target = target;
  s.expect = expect_status;
  if (tls) {
    ctx.emplace(asio::ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_3_VERSION);
    ctx->add_certificate_authority(asio::buffer(tls->ca_pem));
    ctx->set_verify_mode(asio::ssl::verify_peer);
    if (!tls->cert_pem.empty()) {
      ctx->use_certificate_chain(asio::buffer(tls->cert_pem));
      ctx->use_private_key(asio::buffer(tls->key_pem), asio::ssl::context::pem);
    }
    s.tls = &*ctx;
  }
  const auto start = Clock::now();
  s.end = start + duration;
  for (int i = 0; i < connections; ++i) asio::co_spawn(ioc, Client(s), asio::detached);
  ioc.run();
  LoadResult r;
  r.answered = s.answered.load();
  r.failed = s.failed.load();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

}  // namespace nodeplane::bench
