// Design notes for the HTTP listener.
//
// (1) Lifetime. Every open connection is owned by the server's registry; an
//     asynchronous operation holds it too while one is pending. A Responder
//     holds only a weak reference plus the shared Gate: it answers only while
//     the server runs, and posts onto the connection's strand under the
//     Gate's lock, so nothing is ever posted to an io_context that Stop() has
//     begun to tear down.
// (2) Budget. A connection past max_connections is accepted and closed at
//     once, so an over-budget caller learns immediately and the kernel
//     backlog never fills with callers we will not serve.
// (3) Limits. A declared Content-Length over the body limit is answered 413
//     before a byte of the body is read; a chunked body is cut off by the
//     parser at the same limit.
// (4) Accepting. The acceptor, its handler and Stop()'s close all run on one
//     strand, so a close can never land between a completed accept and the
//     next one, and a closed acceptor ends the loop. An accept that fails
//     (out of descriptors, most often) is tried again after a pause, never
//     at once: a listener must not spin while the process has no descriptor
//     to give it.
// (5) Watching. While the handler holds a request (a parked poll), one
//     byte is read from the connection: an error means the client went
//     away, which the request's ClientWatch is told, so nothing is handed to
//     a dead poll; a byte is the start of the next request, kept in the read
//     buffer for when this one is answered. A response that can no longer be
//     written runs its on_unsent.
// (6) Framing (RFC 9112 §6). A request's body length must be certain, or
//     the bytes after its head could be read as a second request (request
//     smuggling): a Transfer-Encoding that is not exactly "chunked", one
//     beside a Content-Length, or a Content-Length that is not one run of
//     digits (several that disagree) is answered 400 and the connection
//     closed, before any body is read. A head the parser itself refuses is
//     answered 400 and closed too, never dropped in silence.
// (7) Threads. Each I/O thread runs an io_context of its own, and each
//     connection lives on one of them, dealt round-robin at accept: its
//     handlers run on one thread, in order, without a strand, and a request
//     and its answer never cross between threads. One io_context shared by
//     every thread made each completion a candidate for a wake-up of the
//     other thread and every handler pay for a strand, which on a guest
//     whose context switches are dear was most of /healthz's cost
//     (docs/performance.md). A connection's executor is what "the
//     connection's strand" means below: posting to it from any thread is
//     safe and runs on the connection's thread.
// (8) OpenSSL per thread. OpenSSL 3.0 parses a certificate (every client's,
//     in every handshake) through decoder lookups in a library context,
//     under read-write locks taken thousands of times a parse: two threads
//     parsing in one context got less done than one alone
//     (tests/bench/cert_parse_bench.cpp). So each I/O thread has a library
//     context of its own, made that thread's default (what OpenSSL decodes
//     without being given a context stays in it too), and an SSL_CTX built
//     in it; a connection dealt to the thread (7) uses that one.
// (9) Deadlines, lazily. A request moves its connection's deadline four
//     times (its head, its body, none while the handler holds it, the
//     write); cancelling and re-arming the timer each time ran a cancelled
//     handler and re-queued a wait per move. The deadline in force is kept
//     beside the timer instead: a later one is only recorded, and the timer,
//     firing before it, waits again for the rest; only a deadline earlier
//     than the pending wait re-arms it. A busy keep-alive connection touches
//     its timer once per header timeout, not four times a request.
// (10) Idle is not slow. Between an answer and the first byte of the next
//     request a connection waits under the idle timeout; from that byte
//     (the watch's, 5) the head has the header timeout, as on a new
//     connection. A node running jobs heartbeats every third of a lease
//     TTL on a connection of its own, idle in between: cut at the header
//     timeout, each heartbeat was a new connection and, over TLS, a full
//     handshake at both ends.
#include "wire/http_server.h"

#include <atomic>
#include <cctype>
#include <boost/asio.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pki/authority.h"
#include "protocol/codec.h"
#include "wire/tls_socket_stream.h"

namespace nodeplane::wire {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string_view HttpRequest::Header(std::string_view lower_name) const {
  for (const auto& [k, v] : headers) {
    if (k == lower_name) return v;
  }
  return {};
}

void ClientWatch::OnGone(std::function<void()> f) {
  std::unique_lock lock(mu_);
  if (gone_) {
    lock.unlock();
    f();
    return;
  }
  on_gone_ = std::move(f);
}

bool ClientWatch::gone() const {
  std::lock_guard lock(mu_);
  return gone_;
}

void ClientWatch::MarkGone() {
  std::function<void()> f;
  {
    std::lock_guard lock(mu_);
    if (gone_) return;
    gone_ = true;
    f = std::move(on_gone_);
  }
  if (f) f();
}

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kHeaderLimit = 16 * 1024;
constexpr auto kWriteTimeout = std::chrono::seconds(60);
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

struct Gate {
  std::mutex mu;
  bool open = true;
};

struct LibraryFree {
  void operator()(OSSL_LIB_CTX* c) const { OSSL_LIB_CTX_free(c); }
};
using Library = std::unique_ptr<OSSL_LIB_CTX, LibraryFree>;

std::string_view Trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// Why a request's framing is ambiguous, or "" when its body length is
// certain (6).
template <typename Fields>
std::string FramingProblem(const Fields& head) {
  std::vector<std::string_view> codings;
  std::optional<std::string_view> length;
  bool has_te = false;
  for (const auto& f : head) {
    if (f.name() == http::field::transfer_encoding) {
      has_te = true;
      std::string_view v = f.value();
      while (true) {
        const size_t comma = v.find(',');
        codings.push_back(Trim(v.substr(0, comma)));
        if (comma == std::string_view::npos) break;
        v.remove_prefix(comma + 1);
      }
    } else if (f.name() == http::field::content_length) {
      std::string_view v = Trim(f.value());
      if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string_view::npos) {
        return "Content-Length \"" + std::string(v.substr(0, 40)) + "\" is not a number of bytes";
      }
      if (length && *length != v) return "the request carries two different Content-Length values";
      length = v;
    }
  }
  if (!has_te) return "";
  if (length) return "the request carries both Transfer-Encoding and Content-Length";
  if (codings.size() != 1 || !IEquals(codings.front(), "chunked")) {
    return "Transfer-Encoding must be exactly \"chunked\" (RFC 9112 section 6.3)";
  }
  return "";
}

HttpResponse ErrorResponse(int status, std::string_view code, std::string_view message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = protocol::Encode(protocol::ErrorReply{std::string(code), std::string(message), {}});
  return r;
}

}  // namespace

// What the registry holds: a connection of either kind.
class ConnectionBase : public std::enable_shared_from_this<ConnectionBase> {
 public:
  virtual ~ConnectionBase() = default;
  virtual void Start() = 0;
  virtual void Close() = 0;
};

struct HttpServer::Impl {
  Impl(ListenerOptions o, HttpHandler& h, Logger& l) : opts(std::move(o)), handler(h), log(l) {}

  void Accept();
  Status ConfigureTls();
  Status ConfigureTlsContext(OSSL_LIB_CTX* library);
  void Register(const std::shared_ptr<ConnectionBase>& c);
  void Unregister(ConnectionBase* c);

  ListenerOptions opts;
  HttpHandler& handler;
  Logger& log;
  // (8): with TLS, one per I/O thread; before the io_contexts, whose
  // handlers left pending at Stop() may hold the last connections.
  std::vector<Library> libraries;
  // (7): one per I/O thread, each told it is run by one thread only.
  std::vector<std::unique_ptr<asio::io_context>> contexts = [n = std::max(1u, opts.threads)] {
    std::vector<std::unique_ptr<asio::io_context>> v;
    for (unsigned i = 0; i < n; ++i) v.push_back(std::make_unique<asio::io_context>(1));
    return v;
  }();
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> keep_running;  // until Stop()
  size_t next_context = 0;  // on accept_strand
  asio::strand<asio::io_context::executor_type> accept_strand = asio::make_strand(*contexts.front());  // (4)
  tcp::acceptor acceptor{accept_strand};
  asio::steady_timer accept_retry{accept_strand};
  std::atomic<uint64_t> accept_failures{0};
  std::atomic<uint64_t> accepted{0};
  bool accept_failing = false;  // on accept_strand: logged once per run of failures
  std::vector<std::thread> threads;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  std::mutex mu;  // guards connections
  // By address, so a closing connection (one of ten thousand) finds itself
  // in O(1).
  std::unordered_map<ConnectionBase*, std::shared_ptr<ConnectionBase>> connections;
  std::vector<asio::ssl::context> ssl;  // with TLS, one per I/O thread (8); empty: plain HTTP
  std::atomic<uint32_t> open{0};
  uint16_t bound_port = 0;
  bool started = false;
};

// What the verified client certificate says, or null without one.
std::shared_ptr<const PeerCertificate> VerifiedPeer(SSL* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return nullptr;
  pki::CertInfo info = pki::InspectCert(*cert);
  return std::make_shared<const PeerCertificate>(
      PeerCertificate{std::move(info.common_name), std::move(info.serial), std::move(info.issuer_sha256),
                      info.not_before_ns});
}

// One connection over `Stream`: the plain socket, or TLS over it.
template <typename Stream>
class Connection : public ConnectionBase {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsSocketStream>;

  template <typename... Args>
  Connection(HttpServer::Impl& server, tcp::socket socket, Args&&... args)
      : stream_(std::move(socket), std::forward<Args>(args)...), deadline_(stream_.get_executor()), server_(server) {}

  void Start() override {
    if constexpr (kTls) {
      // The handshake is bounded like a request head: a stranger who opens
      // a connection and says nothing is dropped.
      Deadline(server_.opts.header_timeout);
      stream_.async_handshake([self = Self()](beast::error_code ec) {
        if (ec) return self->Shutdown();
        self->peer_ = VerifiedPeer(self->stream_.native_handle());
        self->ReadHeader();
      });
    } else {
      ReadHeader();
    }
  }

  void Close() override {
    asio::post(stream_.get_executor(), [self = Self()] { self->Shutdown(); });
  }

 private:
  std::shared_ptr<Connection> Self() { return std::static_pointer_cast<Connection>(shared_from_this()); }

  // The connection is closed if it is still waiting on its peer at `after`
  // from now; a later Deadline or NoDeadline replaces it (9).
  void Deadline(Clock::duration after) {
    deadline_at_ = Clock::now() + after;
    if (armed_ && deadline_.expiry() <= deadline_at_) return;  // it fires first, then waits for the rest
    Arm();
  }

  void NoDeadline() { deadline_at_ = Clock::time_point::max(); }

  // Waits for deadline_at_, cancelling a wait for a later time.
  void Arm() {
    armed_ = true;
    deadline_.expires_at(deadline_at_);
    deadline_.async_wait([weak = std::weak_ptr<Connection>(Self())](beast::error_code ec) {
      auto self = weak.lock();
      if (ec || !self) return;  // cancelled: by Arm, which waits anew, or by Shutdown
      self->armed_ = false;
      if (self->deadline_at_ == Clock::time_point::max()) return;  // the next Deadline arms
      if (Clock::now() < self->deadline_at_) return self->Arm();   // moved later meanwhile
      self->Shutdown();
    });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    // The body limit is checked against Content-Length by OnHeader, so the
    // refusal can say how large the body was; it is armed before the body.
    parser_->body_limit(boost::none);
    Deadline(server_.opts.header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = Self()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec && ec.category() == http::make_error_code(http::error::bad_method).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      keep_alive_ = false;  // a malformed head: answered, then closed (6)
      return Write(ErrorResponse(400, "refused", "the request is malformed HTTP: " + ec.message()));
    }
    if (ec) return Shutdown();
    const auto& head = parser_->get();
    if (std::string problem = FramingProblem(head); !problem.empty()) {
      keep_alive_ = false;  // the rest of the connection cannot be framed (6)
      return Write(ErrorResponse(400, "refused", problem));
    }
    keep_alive_ = head.keep_alive();
    if (auto len = parser_->content_length(); len && *len > server_.opts.body_limit) {
      keep_alive_ = false;
      return Write(ErrorResponse(413, "refused",
                                 "request body of " + std::to_string(*len) + " bytes exceeds the limit of " +
                                     std::to_string(server_.opts.body_limit) + " bytes"));
    }
    parser_->body_limit(server_.opts.body_limit);
    Deadline(server_.opts.header_timeout);
    http::async_read(stream_, buffer_, *parser_, [self = Self()](beast::error_code e, size_t) { self->OnBody(e); });
  }

  void OnBody(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      return Write(ErrorResponse(413, "refused", "request body exceeds the limit"));
    }
    if (ec) return Shutdown();
    NoDeadline();  // the handler may hold this request (a long poll)
    auto msg = parser_->release();
    // A parked poll holds its connection for up to a poll window: it keeps
    // no parser and no read buffer meanwhile.
    parser_.reset();
    if (buffer_.size() == 0) buffer_.shrink_to_fit();
    HttpRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    for (const auto& field : msg) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers.emplace_back(std::move(name), std::string(field.value()));
    }
    req.body = std::move(msg.body());
    req.peer = peer_;
    req.tls = kTls;
    client_ = std::make_shared<ClientWatch>();
    req.client = client_;
    holding_ = true;
    std::weak_ptr<Connection> weak = Self();
    std::shared_ptr<Gate> gate = server_.gate;
    server_.handler.Handle(std::move(req), [weak, gate](HttpResponse resp) {
      std::unique_lock lock(gate->mu);
      std::shared_ptr<Connection> self = gate->open ? weak.lock() : nullptr;
      if (!self) {
        lock.unlock();
        if (resp.on_unsent) resp.on_unsent();
        return;
      }
      asio::post(self->stream_.get_executor(),
                 [self, r = std::move(resp)]() mutable { self->Write(std::move(r)); });
    });
    // (5); bytes already buffered are a pipelined request: its client is there.
    if (buffer_.size() == 0) Watch();
  }

  void Watch() {
    watching_ = true;
    stream_.async_read_some(asio::buffer(&peek_, 1), [self = Self()](beast::error_code ec, size_t n) {
      self->watching_ = false;
      if (ec || n == 0) return self->Shutdown();  // gone; a held request is told so
      auto space = self->buffer_.prepare(1);
      *static_cast<char*>(space.data()) = self->peek_;
      self->buffer_.commit(1);
      if (self->resume_) {
        self->resume_ = false;
        self->ReadHeader();
      }
    });
  }

  void Write(HttpResponse r) {
    std::function<void()> unsent = std::move(r.on_unsent);
    if (closed_) {
      if (unsent) unsent();
      return;
    }
    holding_ = false;
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(11);
    res->result(static_cast<http::status>(r.status));
    res->set(http::field::server, "nodeplane");
    if (!r.content_type.empty()) res->set(http::field::content_type, r.content_type);
    if (r.retry_after_seconds > 0) res->set(http::field::retry_after, std::to_string(r.retry_after_seconds));
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    Deadline(kWriteTimeout);
    http::async_write(stream_, *res, [self = Self(), res, unsent](beast::error_code ec, size_t) {
      if (ec) {
        if (unsent) unsent();
        return self->Shutdown();
      }
      if (!self->keep_alive_) return self->Shutdown();
      if (self->watching_) {
        // The watch's read is the start of the next request's head (5):
        // until its first byte the connection is idle, not slow (10).
        self->resume_ = true;
        self->Deadline(self->server_.opts.idle_timeout);
        return;
      }
      self->ReadHeader();
    });
  }

  void Shutdown() {
    if (closed_) return;
    closed_ = true;
    if (holding_ && client_) client_->MarkGone();
    beast::error_code ignored;
    deadline_.cancel();
    tcp::socket& socket = beast::get_lowest_layer(stream_);
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
    server_.Unregister(this);
  }

  Stream stream_;
  asio::steady_timer deadline_;
  // (9): the deadline in force, and whether a wait on deadline_ is pending.
  Clock::time_point deadline_at_ = Clock::time_point::max();
  bool armed_ = false;
  std::shared_ptr<const PeerCertificate> peer_;
  HttpServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = false;
  bool closed_ = false;
  // (5): on the connection's strand.
  std::shared_ptr<ClientWatch> client_;  // the held request's
  bool holding_ = false;                 // the handler holds a request
  bool watching_ = false;                // a one-byte read is pending
  bool resume_ = false;                  // answered: read the next head once the watch returns
  char peek_ = 0;
};

void HttpServer::Impl::Register(const std::shared_ptr<ConnectionBase>& c) {
  std::lock_guard lock(mu);
  connections.emplace(c.get(), c);
  open.store(static_cast<uint32_t>(connections.size()));
}

void HttpServer::Impl::Unregister(ConnectionBase* c) {
  std::shared_ptr<ConnectionBase> keep;  // destroyed after the lock is released
  std::lock_guard lock(mu);
  if (auto it = connections.find(c); it != connections.end()) {
    keep = std::move(it->second);
    connections.erase(it);
  }
  open.store(static_cast<uint32_t>(connections.size()));
}

void HttpServer::Impl::Accept() {
  const size_t thread = next_context++ % contexts.size();  // (7)
  acceptor.async_accept(*contexts[thread], [this, thread](beast::error_code ec, tcp::socket socket) {
    if (!acceptor.is_open()) return;  // Stop() closed it (4)
    if (ec) {
      ++accept_failures;
      if (!accept_failing) {
        accept_failing = true;
        log.Warn("wire.accept_failed", {{"listener", opts.name}, {"error", ec.message()}});
      }
      accept_retry.expires_after(kAcceptRetry);
      accept_retry.async_wait([this](beast::error_code e) {
        if (!e && acceptor.is_open()) Accept();
      });
      return;
    }
    accept_failing = false;
    if (open.load() >= opts.max_connections) {
      log.Warn("wire.connection_budget_exhausted", {{"listener", opts.name}, {"max_connections", opts.max_connections}});
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      std::shared_ptr<ConnectionBase> c;
      if (!ssl.empty()) {
        c = std::make_shared<Connection<TlsSocketStream>>(*this, std::move(socket), ssl[thread].native_handle());
      } else {
        c = std::make_shared<Connection<tcp::socket>>(*this, std::move(socket));
      }
      Register(c);
      ++accepted;
      c->Start();
    }
    Accept();
  });
}

// TLS 1.3 only, HTTP/1.1, the server's certificate, and, when asked, a
// client certificate demanded and verified in the handshake against every
// authority in the bundle (more than one during a rotation).
Status HttpServer::Impl::ConfigureTls() {
  for (size_t i = 0; i < contexts.size(); ++i) {  // (8)
    libraries.emplace_back(OSSL_LIB_CTX_new());
    if (!libraries.back()) return Status::Internal(opts.name + ": OpenSSL cannot make a library context");
    // Whatever the configuration parses (the certificates, the key) belongs
    // to the thread's library context too.
    OSSL_LIB_CTX* const previous = OSSL_LIB_CTX_set0_default(libraries.back().get());
    Status s = ConfigureTlsContext(libraries.back().get());
    OSSL_LIB_CTX_set0_default(previous);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status HttpServer::Impl::ConfigureTlsContext(OSSL_LIB_CTX* library) {
  const TlsOptions& t = *opts.tls;
  SSL_CTX* ctx = SSL_CTX_new_ex(library, nullptr, TLS_server_method());
  if (ctx == nullptr) return Status::Internal(opts.name + ": OpenSSL cannot make a TLS context");
  asio::ssl::context& context = ssl.emplace_back(ctx);  // owns ctx from here
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  // Memory per idle connection is what bounds a fleet (docs/performance.md):
  // OpenSSL's record buffers are given back between records, and no session
  // is cached or ticketed: nodes hold one long-lived connection, and on
  // OpenSSL 3.0 a resumed handshake costs the server as much as a full one
  // (docs/performance.md, seventh pass).
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  // A record is read in one system call rather than its header and its body
  // in two (tls_socket_stream.h lets OpenSSL read the socket itself).
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  // The certificate goes out with the chain its PEM names and nothing else.
  // Left to itself OpenSSL would build the chain on every handshake from the
  // client authorities below (verifying its own certificate each time) and
  // send the CA too, which every peer already holds as its trust anchor and
  // would parse for nothing (docs/performance.md, the restart storm).
  SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);
  beast::error_code ec;
  context.use_certificate_chain(asio::buffer(t.cert_pem), ec);
  if (!ec) context.use_private_key(asio::buffer(t.key_pem), asio::ssl::context::pem, ec);
  if (ec) return Status::Invalid(opts.name + ": the server certificate or key is unusable: " + ec.message());
  if (t.require_client_cert || t.request_client_cert) {
    if (t.client_ca_pem.empty()) return Status::Invalid(opts.name + ": client certificates need an authority");
    context.add_certificate_authority(asio::buffer(t.client_ca_pem), ec);
    if (ec) return Status::Invalid(opts.name + ": the client authority bundle is unusable: " + ec.message());
    context.set_verify_mode(t.require_client_cert ? asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert
                                                  : asio::ssl::verify_peer);
  }
  return Status::Ok();
}

HttpServer::HttpServer(ListenerOptions options, HttpHandler& handler, Logger& log)
    : impl_(std::make_unique<Impl>(std::move(options), handler, log)) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  Impl& s = *impl_;
  const std::string where = s.opts.host + ":" + std::to_string(s.opts.port);
  beast::error_code ec;
  asio::ip::address addr;
  if (s.opts.host == "localhost") {
    addr = asio::ip::make_address("127.0.0.1");
  } else {
    addr = asio::ip::make_address(s.opts.host.empty() ? "0.0.0.0" : s.opts.host, ec);
    if (ec) return Status::Invalid("cannot listen on " + where + ": not an IP address");
  }
  if (s.opts.tls) {
    if (Status st = s.ConfigureTls(); !st.ok()) return st;
  }
  tcp::endpoint ep(addr, s.opts.port);
  s.acceptor.open(ep.protocol(), ec);
  if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(ep, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::Unavailable("cannot listen on " + where + ": " + ec.message());
  s.bound_port = s.acceptor.local_endpoint().port();
  s.Accept();
  for (size_t i = 0; i < s.contexts.size(); ++i) {
    asio::io_context& ioc = *s.contexts[i];
    OSSL_LIB_CTX* library = s.libraries.empty() ? nullptr : s.libraries[i].get();
    s.keep_running.push_back(asio::make_work_guard(ioc));
    s.threads.emplace_back([&ioc, library] {
      if (library != nullptr) OSSL_LIB_CTX_set0_default(library);  // (8)
      ioc.run();
    });
  }
  s.started = true;
  return Status::Ok();
}

uint16_t HttpServer::port() const { return impl_->bound_port; }

uint32_t HttpServer::open_connections() const { return impl_->open.load(); }

uint64_t HttpServer::accept_failures() const { return impl_->accept_failures.load(); }
uint64_t HttpServer::accepted_connections() const { return impl_->accepted.load(); }

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (!s.started) return;
  s.started = false;
  {
    std::lock_guard lock(s.gate->mu);
    s.gate->open = false;
  }
  asio::post(s.accept_strand, [&s] {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    s.accept_retry.cancel();
  });
  std::vector<std::shared_ptr<ConnectionBase>> all;
  {
    std::lock_guard lock(s.mu);
    for (const auto& [raw, c] : s.connections) all.push_back(c);
  }
  for (auto& c : all) c->Close();
  all.clear();
  s.keep_running.clear();
  // Every connection is closing; run() returns once their handlers finish.
  for (std::thread& t : s.threads) t.join();
  s.threads.clear();
}

}  // namespace nodeplane::wire
