#include "wire/node_wire.h"

#include "common/json_text.h"

namespace nodeplane::wire {
namespace {

HttpResponse Json(int status, std::string body) {
  return HttpResponse{status, "application/json", std::move(body) + "\n"};
}

}  // namespace

void NodeWire::Handle(HttpRequest request, Responder respond) {
  std::string_view path = request.target;
  path = path.substr(0, path.find('?'));
  if (path == "/healthz") {
    if (request.method != "GET" && request.method != "HEAD") {
      return respond(Json(405, R"({"code":"refused","message":"/healthz answers GET only"})"));
    }
    // deployment_ is a validated name ([a-zA-Z0-9._-]), so it needs no escaping.
    return respond(Json(200, R"({"status":"ok","deployment":")" + deployment_ + R"("})"));
  }
  std::string what = request.method + " " + std::string(path.substr(0, 200));
  respond(Json(404, R"({"code":"not_found","message":)" + JsonQuote("no route for " + what) + "}"));
}

}  // namespace nodeplane::wire
