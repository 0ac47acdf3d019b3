#include "admin/admin_api.h"

#include <stdexcept>

#include "admin/commands.h"

namespace nodeplane::admin {
namespace json = boost::json;
namespace {

const char* CodeName(const Status& s) {
  if (plane::Is(s, plane::kNoNode)) return "no_node";
  switch (s.code()) {
    case Code::kInvalid: return "invalid";
    case Code::kNotFound: return "not_found";
    case Code::kUnavailable: return "unavailable";
    case Code::kConflict:
    case Code::kRefused:
    case Code::kFenced: return "refused";
    default: return "internal";
  }
}

std::string Fail(const Status& s) {
  return Text(json::object{{"ok", false}, {"code", CodeName(s)}, {"error", s.message()}});
}

}  // namespace

std::string AdminApi::Refusal(const Status& s) { return Fail(s); }

AdminApi::AdminApi(AdminDeps deps) : d_(std::move(deps)) {
  if (!d_.now_ns) d_.now_ns = WallNowNs;
  AddCaCommands(handlers_);
  AddAccessCommands(handlers_);
  AddFleetCommands(handlers_);
  AddLeaseCommands(handlers_);
  for (const CommandSpec& c : Commands()) {
    if (!handlers_.contains(c.name)) throw std::logic_error("admin command " + std::string(c.name) + " has no handler");
  }
  for (const auto& [name, handler] : handlers_) {
    if (FindCommand(name) == nullptr) throw std::logic_error("admin handler " + name + " is not in the command registry");
  }
}

std::string AdminApi::Handle(const std::string& request, const AdminSocket::Progress& progress, std::stop_token stop) {
  boost::system::error_code ec;
  json::value parsed = json::parse(request, ec);
  const json::object* req = !ec && parsed.is_object() ? &parsed.as_object() : nullptr;
  const json::value* cmd = req != nullptr ? req->if_contains("cmd") : nullptr;
  if (cmd == nullptr || !cmd->is_string()) {
    return Fail(Status::Invalid("a request is one JSON object {\"cmd\": \"...\", \"args\": {...}} on one line"));
  }
  const std::string name(cmd->as_string());
  const CommandSpec* spec = FindCommand(name);
  if (spec == nullptr) return Fail(Status::Invalid("unknown command \"" + name.substr(0, 60) + "\""));
  auto args = Args::Parse(*spec, req->if_contains("args"));
  if (!args.ok()) return Fail(args.status());
  const Call call{d_, *args, progress, stop};
  Result<std::string> answer = Status::Internal("unanswered");
  try {
    answer = handlers_.find(name)->second(call);
  } catch (const std::logic_error& e) {
    answer = Status::Internal("admin command " + name + " " + e.what());
  }
  if (!answer.ok()) return Fail(answer.status());
  return "{\"ok\":true,\"result\":" + *answer + "}";
}

}  // namespace nodeplane::admin
