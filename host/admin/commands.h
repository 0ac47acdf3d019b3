// What the admin API's command handlers share: a request's checked
// arguments, the call they answer, and the table each area adds its
// handlers to. Internal to host/admin (it carries Boost.JSON).
//
// A handler answers the result as JSON text, or a Status saying why not; it
// runs on the connection's thread and may block on the ledger and the fleet
// until `stop`.
#pragma once

#include <boost/json.hpp>
#include <functional>
#include <map>
#include <stop_token>
#include <string>
#include <string_view>

#include "admin/admin_api.h"
#include "admin/command_registry.h"

namespace nodeplane::admin {

// A request's "args", checked against its command: every key declared and
// of its type, every required one present, choices and bounds held, and a
// declared default in place of an absent one. Nothing is read leniently:
// a misspelt or mistyped argument is refused, never ignored.
class Args {
 public:
  // `args` may be null (no "args" in the request).
  static Result<Args> Parse(const CommandSpec& spec, const boost::json::value* args);
  // A kString or kName, "" when absent without a default.
  const std::string& String(std::string_view key) const;
  // A kInt or kSeconds, 0 when absent without a default.
  int64_t Int(std::string_view key) const;
  // Whether the argument was given (or has a default).
  bool Has(std::string_view key) const;
  // A kSwitch.
  bool Switch(std::string_view key) const;

 private:
  struct Value {
    std::string text;
    int64_t number = 0;
    bool present = false;
  };
  const Value& Get(std::string_view key) const;
  std::map<std::string, Value, std::less<>> values_;
};

struct Call {
  const AdminDeps& deps;
  const Args& args;
  const AdminSocket::Progress& progress;
  std::stop_token stop;

  // Tells the operator what is happening, before the answer.
  void Say(const std::string& text) const;
  int64_t Now() const { return deps.now_ns(); }
  // The operator's commands counted on the lease events, if any.
  void Count(std::atomic<uint64_t> LeaseEvents::*event) const;
};

// Each area's handlers, one file each.
void AddCaCommands(Handlers& h);      // status, ca.*
void AddAccessCommands(Handlers& h);  // tokens.*, enrollments.*
void AddFleetCommands(Handlers& h);   // nodes.*, certs.*, upgrade, metrics
void AddLeaseCommands(Handlers& h);   // leases.*, tiers.resume, jobs.*, launch, destroy, drain, admission.*

// The refusal of a CA command on a host without [wire.tls].
Status NoCertificateAuthority();

inline std::string Text(const boost::json::value& v) { return boost::json::serialize(v); }

}  // namespace nodeplane::admin
