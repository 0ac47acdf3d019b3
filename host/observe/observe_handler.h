// The metrics listener's routes: the Prometheus scrape, and a read-only
// dashboard of the fleet with the small JSON API its page fetches.
//
//   GET /metrics         the text exposition format (version 0.0.4)
//   GET / , /dashboard   the dashboard page; /dashboard.js, /dashboard.css
//   GET /api/overview    nodes, leases, pending enrollments, recent jobs,
//                        GitHub jobs with their state and reason, scale sets
//   GET /api/history     the last hour, a sample every ten seconds
//   GET /healthz         200 {"status":"ok"}
//
// NOTHING HERE CHANGES STATE: every route is a GET (or HEAD); any other
// method is 405. The page's assets are compiled into the binary, so the
// dashboard needs no network and no build step that fetches anything.
//
// Threading: Handle() runs on the listener's I/O thread and never blocks;
// the sources (which read the ledger) run on the handler's own workers.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/call_pool.h"
#include "wire/http_server.h"

namespace nodeplane::observe {

struct Sources {
  std::function<std::string()> metrics;   // Prometheus text
  std::function<std::string()> overview;  // JSON
  std::function<std::string()> history;   // JSON
};

class ObserveHandler : public wire::HttpHandler {
 public:
  explicit ObserveHandler(Sources sources, unsigned workers = 2);
  void Handle(wire::HttpRequest request, wire::Responder respond) override;

 private:
  Sources sources_;
  std::unique_ptr<CallPool> workers_;
};

}  // namespace nodeplane::observe
