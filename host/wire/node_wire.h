// The node wire's routing table.
//
// Today it serves the health route an operator (and the README's main
// command) uses to see that the control plane is up; the operational node
// routes join this table, each wrapped in its guard, as they are built.
#pragma once

#include <string>

#include "wire/http_server.h"

namespace nodeplane::wire {

class NodeWire : public HttpHandler {
 public:
  explicit NodeWire(std::string deployment) : deployment_(std::move(deployment)) {}
  void Handle(HttpRequest request, Responder respond) override;

 private:
  std::string deployment_;
};

}  // namespace nodeplane::wire
