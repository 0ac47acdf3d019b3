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
// method is 405.
//
// WHO MAY READ (Access, in this order): a request naming a Host the
// listener does not answer to is 421 (a page of another site, rebound to
// this address by DNS, reads nothing); then, when a bearer token or client
// certificates are configured, every route but /healthz needs one of them
// (401). The page's assets are compiled into the binary, so the
// dashboard needs no network and no build step that fetches anything.
//
// Threading: Handle() runs on the listener's I/O thread and never blocks;
// the sources (which read the ledger) run on the handler's own workers.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/call_pool.h"
#include "wire/http_server.h"

namespace nodeplane::observe {

struct Sources {
  std::function<std::string()> metrics;   // Prometheus text
  std::function<std::string()> overview;  // JSON; read at most once per kOverviewMaxAge, however many watch
  std::function<std::string()> history;   // JSON
};

// How long one reading of the overview (a handful of ledger reads) answers
// every dashboard that asks: the ledger's load does not grow with viewers.
inline constexpr std::chrono::milliseconds kOverviewMaxAge{1000};

struct Access {
  std::string bearer_token;          // SECRET; "" : no token is accepted
  bool client_certificates = false;  // a verified client certificate suffices
  std::vector<std::string> hosts;    // Host names (lower case, no port) answered to; empty: any
};

class ObserveHandler : public wire::HttpHandler {
 public:
  explicit ObserveHandler(Sources sources, Access access = {}, unsigned workers = 2);
  void Handle(wire::HttpRequest request, wire::Responder respond) override;

 private:
  // The refusal for a request Access does not let read; nullopt when it may.
  std::optional<wire::HttpResponse> Refusal(const wire::HttpRequest& request, const std::string& path) const;

  // The overview, read again once kOverviewMaxAge old.
  std::string Overview();

  Sources sources_;
  Access access_;
  std::mutex overview_mu_;
  std::chrono::steady_clock::time_point overview_at_;  // guarded by overview_mu_
  std::string overview_;                               // guarded by overview_mu_
  std::unique_ptr<CallPool> workers_;
};

}  // namespace nodeplane::observe
