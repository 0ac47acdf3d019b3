#include "observe/observe_handler.h"

#include <algorithm>
#include <cctype>

#include "observe/dashboard_assets.h"

namespace nodeplane::observe {
namespace {

// The Host header's name, lower case, without its port.
std::string HostName(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    host = host.substr(0, host.find(']') + 1);  // [::1]:9717
  } else if (host.find(':') == host.rfind(':')) {
    host = host.substr(0, host.find(':'));
  }
  std::string out(host);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Without an early exit, so the time taken says nothing of the token.
bool SameSecret(std::string_view given, std::string_view secret) {
  if (secret.empty()) return false;
  unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ secret[i % secret.size()]);
  return diff == 0;
}

wire::HttpResponse Refused(int status, const char* code, const char* message) {
  return wire::HttpResponse(status, "application/json",
                            std::string(R"({"code":")") + code + R"(","message":")" + message + R"("})");
}

}  // namespace

ObserveHandler::ObserveHandler(Sources sources, Access access, unsigned workers)
    : sources_(std::move(sources)), access_(std::move(access)), workers_(std::make_unique<CallPool>(workers)) {}

std::optional<wire::HttpResponse> ObserveHandler::Refusal(const wire::HttpRequest& request,
                                                          const std::string& path) const {
  if (!access_.hosts.empty()) {
    const std::string host = HostName(request.Header("host"));
    if (std::find(access_.hosts.begin(), access_.hosts.end(), host) == access_.hosts.end()) {
      return Refused(421, "misdirected",
                     "this listener does not answer to the Host this request names; add it to [metrics] hosts");
    }
  }
  const bool guarded = !access_.bearer_token.empty() || access_.client_certificates;
  if (!guarded || path == "/healthz") return std::nullopt;
  if (access_.client_certificates && request.peer) return std::nullopt;
  constexpr std::string_view kBearer = "Bearer ";
  const std::string_view auth = request.Header("authorization");
  if (!access_.bearer_token.empty() && auth.substr(0, kBearer.size()) == kBearer &&
      SameSecret(auth.substr(kBearer.size()), access_.bearer_token)) {
    return std::nullopt;
  }
  return Refused(401, "unauthenticated",
                 "this listener answers clients with a certificate of [metrics.tls] client_ca or the bearer token of "
                 "[metrics] bearer_token_file");
}

void ObserveHandler::Handle(wire::HttpRequest request, wire::Responder respond) {
  if (request.method != "GET" && request.method != "HEAD") {
    return respond(wire::HttpResponse(405, "application/json",
                                      R"({"code":"refused","message":"this listener only reads: GET or HEAD"})"));
  }
  const std::string path = request.target.substr(0, request.target.find('?'));
  if (auto refused = Refusal(request, path)) return respond(std::move(*refused));
  auto asset = [&](const char* type, std::string_view body) {
    respond(wire::HttpResponse(200, type, std::string(body)));
  };
  if (path == "/" || path == "/dashboard") return asset("text/html; charset=utf-8", kDashboardHtml);
  if (path == "/dashboard.js") return asset("text/javascript; charset=utf-8", kDashboardJs);
  if (path == "/dashboard.css") return asset("text/css; charset=utf-8", kDashboardCss);
  if (path == "/healthz") return asset("application/json", R"({"status":"ok"})");
  const std::function<std::string()>* source = nullptr;
  const char* type = "application/json";
  if (path == "/metrics") {
    source = &sources_.metrics;
    type = "text/plain; version=0.0.4; charset=utf-8";
  } else if (path == "/api/overview") {
    return workers_->Post([this, respond = std::move(respond)] {
      respond(wire::HttpResponse(200, "application/json", Overview()));
    });
  } else if (path == "/api/history") {
    source = &sources_.history;
  }
  if (source == nullptr) {
    return respond(wire::HttpResponse(404, "application/json",
                                      R"({"code":"not_found","message":"no such page; see /dashboard or /metrics"})"));
  }
  workers_->Post([source, type, respond = std::move(respond)] { respond(wire::HttpResponse(200, type, (*source)())); });
}

std::string ObserveHandler::Overview() {
  // Held while reading: a second viewer waits for the first's reading
  // rather than making one of its own.
  std::lock_guard lock(overview_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (overview_.empty() || now - overview_at_ >= kOverviewMaxAge) {
    overview_ = sources_.overview();
    overview_at_ = now;
  }
  return overview_;
}

}  // namespace nodeplane::observe
