#include "wire/standby_wire.h"

#include "protocol/codec.h"

namespace nodeplane::wire {

std::string StandbyWire::Refusal(const ActiveReplica& active) const {
  std::string message = "replica \"" + replica_ + "\" is a standby; ";
  message += active.replica.empty()
                 ? "no replica is active yet; try again"
                 : "the active control plane is \"" + active.replica + "\" at " + active.address;
  return message;
}

StandbyWire::StandbyWire(std::string deployment, std::string replica)
    : deployment_(std::move(deployment)), replica_(std::move(replica)) {}

void StandbyWire::Set(ActiveReplica active) {
  std::lock_guard lock(mu_);
  active_ = std::move(active);
}

std::string StandbyWire::Refusal() {
  std::lock_guard lock(mu_);
  return Refusal(active_);
}

void StandbyWire::Handle(HttpRequest request, Responder respond) {
  ActiveReplica active;
  {
    std::lock_guard lock(mu_);
    active = active_;
  }
  const std::string_view path = std::string_view(request.target).substr(0, request.target.find('?'));
  const bool read = request.method == "GET" || request.method == "HEAD";
  if (read && path == "/healthz") {
    respond(HttpResponse{200, "application/json",
                         protocol::Encode(protocol::HealthReply{"standby", deployment_, replica_, active.replica,
                                                                active.address, active.generation})});
    return;
  }
  HttpResponse r{503, "application/json",
                 protocol::Encode(protocol::ErrorReply{"unavailable", Refusal(active), active.address})};
  r.retry_after_seconds = 1;
  respond(std::move(r));
}

}  // namespace nodeplane::wire
