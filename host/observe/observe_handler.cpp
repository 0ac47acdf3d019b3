#include "observe/observe_handler.h"

#include "observe/dashboard_assets.h"

namespace nodeplane::observe {

ObserveHandler::ObserveHandler(Sources sources, unsigned workers)
    : sources_(std::move(sources)), workers_(std::make_unique<CallPool>(workers)) {}

void ObserveHandler::Handle(wire::HttpRequest request, wire::Responder respond) {
  if (request.method != "GET" && request.method != "HEAD") {
    return respond(wire::HttpResponse(405, "application/json",
                                      R"({"code":"refused","message":"this listener only reads: GET or HEAD"})"));
  }
  const std::string path = request.target.substr(0, request.target.find('?'));
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
    source = &sources_.overview;
  } else if (path == "/api/history") {
    source = &sources_.history;
  }
  if (source == nullptr) {
    return respond(wire::HttpResponse(404, "application/json",
                                      R"({"code":"not_found","message":"no such page; see /dashboard or /metrics"})"));
  }
  workers_->Post([source, type, respond = std::move(respond)] { respond(wire::HttpResponse(200, type, (*source)())); });
}

}  // namespace nodeplane::observe
