// The node wire of a standby replica ([ha]): it serves no operational
// route, only says who is active so nodes and load balancers find it.
//
//   GET|HEAD /healthz         200 {"status":"standby", the active replica}
//   GET|HEAD /healthz/active  503: this replica is not the active one
//   anything else             503 {"code":"unavailable", "active":"host:port"}
//                             with Retry-After: 1, a refusal that heals
//
// Threading: Handle() runs on the listener's I/O threads and never blocks;
// Set() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "wire/http_server.h"

namespace nodeplane::wire {

// Who leads, as the ledger last said.
struct ActiveReplica {
  std::string replica;  // "" when nobody leads yet
  std::string address;  // the node wire it advertises
  int64_t generation = 0;
};

class StandbyWire : public HttpHandler {
 public:
  StandbyWire(std::string deployment, std::string replica);
  void Set(ActiveReplica active);
  // Why this replica does not act, naming the active one.
  std::string Refusal();
  void Handle(HttpRequest request, Responder respond) override;

 private:
  std::string Refusal(const ActiveReplica& active) const;

  const std::string deployment_, replica_;
  std::mutex mu_;
  ActiveReplica active_;
};

// A listener's handler that can be swapped while it serves: a replica's
// wire answers as a standby until it takes over, then as the node wire.
// The handler passed to Use() must outlive the switch's use.
class HandlerSwitch : public HttpHandler {
 public:
  explicit HandlerSwitch(HttpHandler& first) : current_(&first) {}
  void Use(HttpHandler& next) { current_.store(&next); }
  void Handle(HttpRequest request, Responder respond) override {
    current_.load()->Handle(std::move(request), std::move(respond));
  }

 private:
  std::atomic<HttpHandler*> current_;
};

}  // namespace nodeplane::wire
