#include "sim_fleet.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <netinet/in.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "protocol/messages.h"
#include "protocol/codec.h"

namespace nodeplane::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::use_awaitable;
using namespace std::chrono_literals;

// One TLS connection of a node; counted while open.
struct SimFleet::Conn {
  beast::ssl_stream<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  std::atomic<int>* counter = nullptr;
  Conn(const asio::any_io_executor& ex, asio::ssl::context& ctx) : stream(ex, ctx) {}
  ~Conn() {
    if (counter != nullptr) --*counter;
  }
};
using Conn = SimFleet::Conn;

struct SimFleet::Node {
  std::string name, incarnation;
  std::optional<asio::ip::address_v4> source;  // the loopback address this node dials from
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  bool registered = false;
  int round_seen = -1;
  std::chrono::seconds ttl{90}, poll{50};
  // Where this node's clocks stand in their cycles, as in a fleet that has
  // run a while: nodeplane-node reconciles about once a TTL from its
  // registration and heartbeats every TTL/3 from its start, whenever a job
  // began. Fractions of a cycle, drawn once per node.
  double reconcile_phase = 0, beat_phase = 0;
  std::optional<Clock::time_point> reconcile_due;
  std::set<std::string> running;  // leases held
  // Open connections no job is using: a node keeps its lease connection
  // alive between jobs, as nodeplane-node's heartbeat client does.
  std::vector<std::unique_ptr<Conn>> spare;
  ~Node() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

struct SimFleet::Impl {
  FleetOptions o;
  asio::io_context ioc;
  asio::ssl::context ctx{asio::ssl::context::tls_client};
  tcp::endpoint endpoint;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<std::thread> threads;
  std::atomic<bool> stopping{false};
  std::atomic<int> parked{0}, connected{0}, round{0}, round_count{0}, held{0};
  std::atomic<int64_t> registrations{0}, failures{0}, open_failures{0};
  std::mutex mu;
  std::condition_variable launched_cv;
  std::map<int64_t, Clock::time_point> launched;
  std::condition_variable state_cv;  // with mu: a counter above moved

  void Changed() {
    { std::lock_guard lock(mu); }  // a waiter is either before its check or waiting
    state_cv.notify_all();
  }
};

namespace {

constexpr uint32_t kSourceAddresses = 64;

struct Reply {
  int status = 0;
  std::string body;
};

Clock::duration Fraction(Clock::duration d, double f) {
  return std::chrono::duration_cast<Clock::duration>(d * f);
}

asio::awaitable<std::unique_ptr<Conn>> Open(SimFleet::Impl& im, SimFleet::Node& n) {
  auto c = std::make_unique<Conn>(co_await asio::this_coro::executor, im.ctx);
  if (n.source) {
    // The port is picked at connect, for the whole 4-tuple: a node's address
    // has its own 28,000 ports toward the control plane.
    tcp::socket& s = beast::get_lowest_layer(c->stream).socket();
    s.open(tcp::v4());
    const int yes = 1;
    ::setsockopt(s.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &yes, sizeof yes);
    s.bind(tcp::endpoint(*n.source, 0));
  }
  SSL* ssl = c->stream.native_handle();
  SSL_use_certificate(ssl, n.cert);
  SSL_use_PrivateKey(ssl, n.key);
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), im.o.host.c_str());
  beast::get_lowest_layer(c->stream).expires_after(30s);
  try {
    co_await beast::get_lowest_layer(c->stream).async_connect(im.endpoint, use_awaitable);
    co_await c->stream.async_handshake(asio::ssl::stream_base::client, use_awaitable);
  } catch (...) {
    ++im.open_failures;  // also counted as a failure by whichever loop asked
    throw;
  }
  c->counter = &im.connected;
  ++im.connected;
  co_return c;
}

asio::awaitable<Reply> Exchange(Conn& c, const SimFleet::Node& n, http::verb verb, const std::string& target,
                                std::string body, std::chrono::seconds timeout = 30s) {
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set("Nodeplane-Incarnation", n.incarnation);
  if (!body.empty() || verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
  }
  req.keep_alive(true);
  req.prepare_payload();
  beast::get_lowest_layer(c.stream).expires_after(timeout);
  co_await http::async_write(c.stream, req, use_awaitable);
  http::response<http::string_body> res;
  co_await http::async_read(c.stream, c.buffer, res, use_awaitable);
  if (!res.keep_alive()) throw std::runtime_error("the server closed the connection");
  co_return Reply{static_cast<int>(res.result_int()), std::move(res.body())};
}

std::string RegisterBody(const SimFleet::Impl& im, const SimFleet::Node& n) {
  protocol::RegisterRequest q;
  q.min_version = protocol::kMinProtocol;
  q.version = protocol::kMaxProtocol;
  q.node = n.name;
  q.provider = "process";
  q.deployment = im.o.deployment;
  q.incarnation = n.incarnation;
  q.release = "fleet-bench";
  q.vcpu = im.o.vcpu;
  q.memory = int64_t{8} << 30;
  q.instances.assign(n.running.begin(), n.running.end());
  q.inventory_known = true;
  return protocol::Encode(q);
}

// A launched job: heartbeats at TTL/3 on a lease connection while the
// node's first connection goes back to polling, then the release. The lease
// connection is kept for the node's next job; one the server has closed
// meanwhile (idle past its header timeout) is replaced at once.
asio::awaitable<void> Hold(SimFleet::Impl& im, SimFleet::Node& n, ports::Lease lease) {
  const std::string base = "/v1/nodes/" + n.name + "/leases/" + lease.id;
  // Bodies are encoded here, not inside a co_await: GCC 12 destroys a
  // braced temporary with a string member twice in a coroutine's
  // co_await expression (free(): invalid pointer).
  const std::string heartbeat = protocol::Encode(protocol::EpochBody{lease.epoch, {}});
  const std::string release = protocol::Encode(protocol::ReleaseBody{lease.epoch, ports::Phase::kDone});
  const auto end = Clock::now() + im.o.job_duration;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  // The first heartbeat comes at the node's next beat, not at the launch.
  timer.expires_after(std::min(Fraction(n.ttl / 3, n.beat_phase), std::max<Clock::duration>(end - Clock::now(), 0s)));
  co_await timer.async_wait(use_awaitable);
  std::unique_ptr<Conn> c;
  bool reused = !n.spare.empty();
  if (reused) {
    c = std::move(n.spare.back());
    n.spare.pop_back();
  }
  bool released = false;
  ++im.held;
  while (!released && !im.stopping) {
    const bool done = Clock::now() >= end;
    bool failed = false;
    try {
      if (!c) c = co_await Open(im, n);
      if (done) {
        Reply r = co_await Exchange(*c, n, http::verb::post, base + "/release", release);
        released = true;  // 204, or the lease is gone anyway
        (void)r;
      } else {
        co_await Exchange(*c, n, http::verb::post, base + "/heartbeat", heartbeat);
      }
    } catch (const std::exception&) {
      failed = true;
      c.reset();
    }
    if (failed && reused) {
      reused = false;
      continue;
    }
    reused = false;
    if (failed) ++im.failures;
    if (!released) {
      timer.expires_after(std::min<Clock::duration>(n.ttl / 3, std::max<Clock::duration>(end - Clock::now(), 0s)));
      co_await timer.async_wait(use_awaitable);
    }
  }
  n.running.erase(lease.id);
  if (c && !im.stopping) n.spare.push_back(std::move(c));
  --im.held;
  im.Changed();
}

asio::awaitable<void> Execute(SimFleet::Impl& im, SimFleet::Node& n, Conn& c, const std::string& body) {
  auto cmd = protocol::Decode<protocol::Command>(body);
  if (!cmd.ok()) co_return;
  protocol::CommandResult result;
  result.id = cmd->id;
  result.ok = true;
  const std::string nodes = "/v1/nodes/" + n.name;
  std::optional<ports::Lease> launched;
  switch (cmd->kind) {
    case protocol::CommandKind::kLaunch: {
      {
        std::lock_guard lock(im.mu);
        im.launched[cmd->RequestId()] = Clock::now();
      }
      im.launched_cv.notify_all();
      const ports::Lease& lease = *cmd->lease;
      const std::string base = nodes + "/leases/" + lease.id;
      const std::pair<std::string, std::string> steps[] = {
          {"/bind", protocol::Encode(protocol::EpochBody{lease.epoch, {}})},
          {"/advance", protocol::Encode(protocol::AdvanceBody{lease.epoch, ports::Phase::kLaunching})},
          {"/advance", protocol::Encode(protocol::AdvanceBody{lease.epoch, ports::Phase::kOnline})},
          {"/advance", protocol::Encode(protocol::AdvanceBody{lease.epoch, ports::Phase::kBusy})}};
      for (const auto& [path, step] : steps) {
        Reply r = co_await Exchange(c, n, http::verb::post, base + path, step);
        if (r.status != 204) {
          result.ok = false;
          result.error = path + " answered " + std::to_string(r.status);
          break;
        }
      }
      if (result.ok) {
        n.running.insert(lease.id);
        launched = lease;
      }
      break;
    }
    case protocol::CommandKind::kSweep:
      co_await Exchange(c, n, http::verb::get, nodes + "/launched", "");
      break;
    case protocol::CommandKind::kInventory:
      result.barrier_id = cmd->barrier_id;
      result.instances.assign(n.running.begin(), n.running.end());
      break;
    case protocol::CommandKind::kUpgrade:
      result.ok = false;
      result.error = "a simulated node does not upgrade";
      break;
    case protocol::CommandKind::kDestroy:
    case protocol::CommandKind::kTend:
      break;  // a held job heartbeats and releases on its own schedule
  }
  co_await Exchange(c, n, http::verb::post, nodes + "/result", protocol::Encode(result));
  if (launched) {
    if (im.o.job_duration == 0ms) {
      co_await Exchange(c, n, http::verb::post, nodes + "/leases/" + launched->id + "/release",
                        protocol::Encode(protocol::ReleaseBody{launched->epoch, ports::Phase::kDone}));
      n.running.erase(launched->id);
    } else {
      asio::co_spawn(co_await asio::this_coro::executor, Hold(im, n, *launched), asio::detached);
    }
  }
}

// What nodeplane-node's poll loop does, with its backoff: 500 ms doubling
// to 5 s after a failure.
asio::awaitable<void> RunNode(SimFleet::Impl& im, SimFleet::Node& n) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  std::unique_ptr<Conn> c;
  auto backoff = 500ms;
  const std::string poll = "/v1/nodes/" + n.name + "/poll";
  while (!im.stopping) {
    bool failed = false;
    try {
      if (!c) c = co_await Open(im, n);
      if (!n.registered) {
        Reply r = co_await Exchange(*c, n, http::verb::post, "/v1/register", RegisterBody(im, n));
        if (r.status != 200) throw std::runtime_error("registration answered " + std::to_string(r.status));
        auto reply = protocol::Decode<protocol::RegisterResponse>(r.body);
        if (reply.ok() && reply->lease_ttl_seconds > 0) n.ttl = std::chrono::seconds(reply->lease_ttl_seconds);
        if (reply.ok() && reply->poll_seconds > 0) n.poll = std::chrono::seconds(reply->poll_seconds);
        n.registered = true;
        // nodeplane-node counts its reconcile from each registration; the
        // first one here is placed as in a fleet already running.
        const Clock::duration ttl = n.ttl;
        n.reconcile_due = Clock::now() + (n.reconcile_due ? ttl : Fraction(ttl, n.reconcile_phase));
        ++im.registrations;
        const int round = im.round.load();
        if (n.round_seen != round) {
          n.round_seen = round;
          ++im.round_count;
        }
      }
      ++im.parked;
      im.Changed();
      Reply r;
      try {
        r = co_await Exchange(*c, n, http::verb::post, poll, "", n.poll + 30s);
      } catch (...) {
        --im.parked;
        throw;
      }
      --im.parked;
      im.Changed();
      backoff = 500ms;
      if (r.status == 401) {
        n.registered = false;  // the control plane forgot this node (a restart)
      } else if (r.status == 200) {
        co_await Execute(im, n, *c, r.body);
      } else if (r.status != 204) {
        failed = true;
      }
      // Between polls, on the poll's connection, about once a TTL.
      if (!failed && n.registered && Clock::now() >= *n.reconcile_due) {
        n.reconcile_due = Clock::now() + n.ttl;
        protocol::ReconcileBody body;
        body.instances.assign(n.running.begin(), n.running.end());
        const std::string encoded = protocol::Encode(body);
        Reply rr = co_await Exchange(*c, n, http::verb::post, "/v1/nodes/" + n.name + "/reconcile", encoded);
        if (rr.status != 200) failed = true;
      }
    } catch (const std::exception&) {
      failed = true;
      c.reset();
    }
    if (failed) {
      ++im.failures;
      im.Changed();
      timer.expires_after(backoff);
      co_await timer.async_wait(use_awaitable);
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, 5000ms);
    }
  }
}

}  // namespace

SimFleet::SimFleet(FleetOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->o = std::move(options);
  impl_->endpoint = tcp::endpoint(asio::ip::make_address(impl_->o.host), impl_->o.port);
  SSL_CTX* ctx = impl_->ctx.native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);  // 10,000 idle connections in one process
  SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);     // as nodeplane-node's client (http_client.cpp)
  impl_->ctx.add_certificate_authority(asio::buffer(impl_->o.ca_pem));
  impl_->ctx.set_verify_mode(asio::ssl::verify_peer);
}

SimFleet::~SimFleet() { Stop(); }

void SimFleet::AddNode(const std::string& name, const std::string& cert_pem, const std::string& key_pem) {
  auto n = std::make_unique<Node>();
  n->name = name;
  // Ten thousand hosts do not share one address. Dialled from one, every
  // connect searches the ephemeral ports among all the others toward the same
  // listener (the kernel's __inet_check_established was 64% of this
  // generator's CPU in a restart storm), so nodes dial a loopback listener
  // from 127.0.0.1 through 127.0.0.64.
  if (impl_->endpoint.address().is_loopback() && impl_->endpoint.address().is_v4()) {
    n->source = asio::ip::address_v4(0x7F000001u + static_cast<uint32_t>(impl_->nodes.size() % kSourceAddresses));
  }
  std::random_device rd;
  n->incarnation = name + "-" + std::to_string(rd());
  n->reconcile_phase = std::uniform_real_distribution<double>(0, 1)(rd);
  n->beat_phase = std::uniform_real_distribution<double>(0, 1)(rd);
  BIO* b = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  n->cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  b = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  n->key = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  impl_->nodes.push_back(std::move(n));
}

void SimFleet::Start() {
  for (auto& n : impl_->nodes) asio::co_spawn(impl_->ioc, RunNode(*impl_, *n), asio::detached);
  impl_->threads.emplace_back([this] { impl_->ioc.run(); });
}

void SimFleet::Stop() {
  impl_->stopping = true;
  impl_->ioc.stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
  for (auto& n : impl_->nodes) n->spare.clear();
}

size_t SimFleet::size() const { return impl_->nodes.size(); }
int SimFleet::parked() const { return impl_->parked.load(); }
int SimFleet::connected() const { return impl_->connected.load(); }
int64_t SimFleet::registrations() const { return impl_->registrations.load(); }
int64_t SimFleet::failures() const { return impl_->failures.load(); }
int64_t SimFleet::open_failures() const { return impl_->open_failures.load(); }
int SimFleet::RegisteredThisRound() const { return impl_->round_count.load(); }
int SimFleet::held() const { return impl_->held.load(); }

bool SimFleet::AwaitState(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  std::unique_lock lock(impl_->mu);
  return impl_->state_cv.wait_for(lock, limit, done);
}

void SimFleet::BeginRound() {
  impl_->round_count = 0;
  ++impl_->round;
}

std::optional<Clock::time_point> SimFleet::AwaitLaunch(int64_t request_id, std::chrono::milliseconds limit) {
  std::unique_lock lock(impl_->mu);
  if (!impl_->launched_cv.wait_for(lock, limit, [&] { return impl_->launched.count(request_id) > 0; })) {
    return std::nullopt;
  }
  return impl_->launched[request_id];
}

}  // namespace nodeplane::bench
