#include "node/engine_client.h"

#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <cstdlib>

namespace nodeplane::node {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using Local = asio::local::stream_protocol;
using LocalStream = beast::basic_stream<Local>;

namespace {

// Longer than any stop grace a tier sets: a stop call answers after it.
constexpr auto kCallTimeout = std::chrono::seconds(180);

http::request<http::string_body> Request(const std::string& method, const std::string& target,
                                         const std::string& body) {
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "docker");  // any name: the socket is the address
  req.set(http::field::user_agent, "nodeplane-node");
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  return req;
}

// Runs `task` on a private io_context until it finishes; the error it
// reports, if any.
template <class Task>
beast::error_code RunTask(asio::io_context& ioc, Task task) {
  beast::error_code result;
  asio::co_spawn(ioc, std::move(task), [&](std::exception_ptr e, beast::error_code ec) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const boost::system::system_error& se) {
        result = se.code();
      } catch (...) {
        result = asio::error::fault;
      }
    } else {
      result = ec;
    }
  });
  ioc.run();
  return result;
}

}  // namespace

bool ApiOlder(const std::string& a, const std::string& b) {
  auto parts = [](const std::string& v) {
    const size_t dot = v.find('.');
    return std::make_pair(std::atoi(v.substr(0, dot).c_str()),
                          dot == std::string::npos ? 0 : std::atoi(v.substr(dot + 1).c_str()));
  };
  return parts(a) < parts(b);
}

std::string EngineMessage(const EngineReply& r) {
  beast::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (!ec && v.is_object()) {
    // dockerd says "message"; podman's compat API also gives a "cause".
    if (const json::value* m = v.as_object().if_contains("message"); m != nullptr && m->is_string()) {
      return std::string(m->as_string());
    }
  }
  return r.body.substr(0, 300);
}

Result<EngineReply> EngineClient::Raw(const std::string& method, const std::string& target, const std::string& body) {
  asio::io_context ioc;
  LocalStream stream(ioc);
  EngineReply reply;
  auto task = [&]() -> asio::awaitable<beast::error_code> {
    stream.expires_after(kCallTimeout);
    co_await stream.async_connect(Local::endpoint(socket_), asio::use_awaitable);
    auto req = Request(method, target, body);
    co_await http::async_write(stream, req, asio::use_awaitable);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    co_await http::async_read(stream, buffer, res, asio::use_awaitable);
    reply.status = static_cast<int>(res.result_int());
    reply.body = std::move(res.body());
    co_return beast::error_code{};
  };
  if (beast::error_code ec = RunTask(ioc, task()); ec) {
    return Status::Unavailable("the container engine at " + socket_ + " did not answer " + method + " " + target +
                               ": " + ec.message());
  }
  return reply;
}

Result<std::string> EngineClient::ApiVersion() {
  if (!version_.empty()) return version_;
  auto r = Raw("GET", "/version", "");
  if (!r.ok()) return r.status();
  beast::error_code ec;
  json::value v = json::parse(r->body, ec);
  if (r->status != 200 || ec || !v.is_object()) {
    return Status::Unavailable("the container engine at " + socket_ + " answered GET /version with HTTP " +
                               std::to_string(r->status) + ": " + r->body.substr(0, 200));
  }
  const json::object& o = v.as_object();
  auto text = [&](const char* key) {
    const json::value* f = o.if_contains(key);
    return f != nullptr && f->is_string() ? std::string(f->as_string()) : std::string();
  };
  std::string use = text("ApiVersion");
  if (use.empty()) use = "1.24";  // the oldest the calls here need
  if (ApiOlder(kNewestApi, use)) use = kNewestApi;
  const std::string min = text("MinAPIVersion");
  if (!min.empty() && ApiOlder(use, min)) {
    return Status::Invalid("the container engine at " + socket_ + " needs API " + min + " or newer; this node speaks up to " +
                           kNewestApi);
  }
  version_ = use;
  return version_;
}

Result<EngineReply> EngineClient::Call(const std::string& method, const std::string& path, const std::string& json_body) {
  auto v = ApiVersion();
  if (!v.ok()) return v.status();
  return Raw(method, "/v" + *v + path, json_body);
}

Status EngineClient::Stream(const std::string& path, const std::function<void(const std::string&)>& line,
                            std::stop_token stop) {
  auto v = ApiVersion();
  if (!v.ok()) return v.status();
  asio::io_context ioc;
  LocalStream stream(ioc);
  // A stop cancels the read from the io_context's own thread.
  std::stop_callback on_stop(stop, [&] { asio::post(ioc, [&] { stream.cancel(); }); });
  auto task = [&]() -> asio::awaitable<beast::error_code> {
    stream.expires_after(kCallTimeout);
    co_await stream.async_connect(Local::endpoint(socket_), asio::use_awaitable);
    auto req = Request("GET", "/v" + *v + path, "");
    co_await http::async_write(stream, req, asio::use_awaitable);
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    co_await http::async_read_header(stream, buffer, parser, asio::use_awaitable);
    stream.expires_never();  // an event stream is quiet while nothing happens
    std::string pending;
    char chunk[8192];
    while (!parser.is_done() && !stop.stop_requested()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      // read_some, never read: read waits to fill the buffer, and holds
      // events back until more follow (measured).
      auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
      if (ec && ec != http::error::need_buffer) co_return ec;
      pending.append(chunk, sizeof chunk - parser.get().body().size);
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
        if (nl > 0) line(pending.substr(0, nl));
      }
    }
    co_return beast::error_code{};
  };
  beast::error_code ec = RunTask(ioc, task());
  if (ec && !stop.stop_requested()) {
    return Status::Unavailable("the container engine's event stream at " + socket_ + " ended: " + ec.message());
  }
  return Status::Ok();
}

}  // namespace nodeplane::node
