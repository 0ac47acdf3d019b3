// The admin API: what `nodeplanectl` asks of a running host, one command per
// request line on the admin socket (admin_socket.h).
//
// Request:  {"cmd": "nodes.list", "args": {...}}
// Progress: {"progress": "..."}                       zero or more
// Final:    {"ok": true, "result": ...}
//        or {"ok": false, "code": "...", "error": "..."}
//
// The commands and their typed arguments are command_registry.h; a request
// is checked against its command before anything runs (an unknown or
// mistyped argument is refused, never ignored), and each area's handlers are
// commands_*.cpp.
//
// Codes: "invalid" (the request is malformed: fix the command line),
// "refused" (the control plane said no on the merits), "not_found",
// "no_node" (nothing can run the launch now), "unavailable" (the ledger or a
// plugin is out: try again), "internal". docs/operations.md lists every
// command. Secrets (a new join token, an offline-issued key) appear in a
// result, never in a log line.
//
// Thread-safe: each connection's request runs on its own thread.
#pragma once

#include <functional>
#include <map>
#include <stop_token>
#include <string>

#include "admin/admin_socket.h"
#include "common/lease_events.h"
#include "common/log.h"
#include "config/config.h"
#include "pki/authority.h"
#include "plane/plane.h"
#include "ports/ledger.h"

namespace nodeplane::jobs {
class JobIntake;
}

namespace nodeplane::admin {

// Everything is borrowed and must outlive the AdminApi.
struct AdminDeps {
  const config::Config* config = nullptr;
  ports::Ledger* ledger = nullptr;
  plane::Plane* plane = nullptr;
  const pki::Authority* authority = nullptr;       // null without [wire.tls]
  std::function<Result<std::string>()> init_ca;    // creates the CA files if absent; its fingerprint
  std::function<Result<std::string>()> rotate_ca;  // starts a rotation; the new CA's fingerprint
  std::function<Status()> retire_ca;               // ends it
  std::function<std::string()> metrics;            // Prometheus text
  std::function<int64_t()> now_ns;                 // null: the wall clock
  LeaseEvents* lease_events = nullptr;             // what an operator's commands do to leases
  jobs::JobIntake* intake = nullptr;               // null without scale-set tiers
  Logger* log = nullptr;
};

// One command's handler (commands.h): the result as JSON text, or why not.
struct Call;
using Handler = std::function<Result<std::string>(const Call&)>;
using Handlers = std::map<std::string, Handler, std::less<>>;

class AdminApi {
 public:
  // Throws std::logic_error naming a command the registry lists without a
  // handler, or a handler for a command it does not list: the two are one
  // set, checked at start.
  explicit AdminApi(AdminDeps deps);
  // The final line for one request line.
  std::string Handle(const std::string& request, const AdminSocket::Progress& progress, std::stop_token stop);
  // The answer to a request refused with `s`, as Handle writes it: for a
  // socket that answers before the API exists (a standby replica).
  static std::string Refusal(const Status& s);

 private:
  AdminDeps d_;
  Handlers handlers_;
};

}  // namespace nodeplane::admin
