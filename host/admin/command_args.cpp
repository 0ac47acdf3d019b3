#include <stdexcept>

#include "admin/commands.h"
#include "common/names.h"

namespace nodeplane::admin {
namespace json = boost::json;
namespace {

// How a person would type the argument: "--uses" or "NODE".
std::string Spelling(const ArgSpec& a) { return std::string(a.flag.empty() ? a.meta : a.flag); }

std::string Words(std::string_view name) {
  std::string out(name);
  for (char& c : out) c = c == '.' ? ' ' : c;
  return out;
}

std::string Declared(const CommandSpec& spec) {
  std::string out;
  for (const ArgSpec& a : spec.args) {
    if (a.local) continue;
    out += (out.empty() ? "" : ", ") + std::string(a.key);
  }
  return out.empty() ? "none" : out;
}

std::string Choices(std::string_view c) {
  std::string out(c);
  for (size_t i = out.find('|'); i != std::string::npos; i = out.find('|', i)) out.replace(i, 1, ", ");
  return out;
}

bool IsChoice(std::string_view choices, std::string_view v) {
  while (!choices.empty()) {
    const size_t bar = choices.find('|');
    if (choices.substr(0, bar) == v) return true;
    if (bar == std::string_view::npos) break;
    choices.remove_prefix(bar + 1);
  }
  return false;
}

Status Bounds(const ArgSpec& a, int64_t v) {
  if (v >= a.min && v <= a.max) return Status::Ok();
  const std::string key(a.key);
  if (a.max == std::numeric_limits<int64_t>::max()) {
    return Status::Invalid(key + " must be at least " + std::to_string(a.min));
  }
  return Status::Invalid(key + " is between " + std::to_string(a.min) + " and " + std::to_string(a.max));
}

}  // namespace

Result<Args> Args::Parse(const CommandSpec& spec, const json::value* args) {
  static const json::object kNone;
  if (args != nullptr && !args->is_object()) return Status::Invalid("\"args\" must be a JSON object");
  const json::object& given = args != nullptr ? args->as_object() : kNone;
  for (const auto& kv : given) {
    const ArgSpec* a = FindArg(spec, kv.key());
    if (a == nullptr || a->local) {
      return Status::Invalid(Words(spec.name) + " takes no argument \"" + std::string(kv.key()).substr(0, 40) +
                             "\" (it takes: " + Declared(spec) + ")");
    }
  }
  Args out;
  for (const ArgSpec& a : spec.args) {
    if (a.local) continue;
    const std::string key(a.key);
    Value v;
    const json::value* x = given.if_contains(a.key);
    switch (a.type) {
      case ArgType::kString:
      case ArgType::kName:
        if (x != nullptr && !x->is_string()) return Status::Invalid(key + " must be a string");
        v.present = x != nullptr || !a.fallback.empty();
        v.text = x != nullptr ? std::string(x->as_string()) : std::string(a.fallback);
        if (a.required && v.text.empty()) return Status::Invalid(Words(spec.name) + " needs " + Spelling(a));
        if (a.type == ArgType::kName && !v.text.empty() && !IsValidName(v.text)) {
          return Status::Invalid(key + " must be 1 to 64 of [a-zA-Z0-9._-], starting with a letter or digit");
        }
        if (!a.choices.empty() && !IsChoice(a.choices, v.text)) {
          return Status::Invalid(key + " is one of " + Choices(a.choices));
        }
        break;
      case ArgType::kInt:
      case ArgType::kSeconds:
        if (x != nullptr && !x->is_int64() && !(x->is_uint64() && x->as_uint64() <= INT64_MAX)) {
          return Status::Invalid(key + " must be a whole number" + (a.type == ArgType::kSeconds ? " of seconds" : ""));
        }
        if (x == nullptr && a.required) return Status::Invalid(Words(spec.name) + " needs " + Spelling(a));
        v.present = x != nullptr || !a.fallback.empty();
        v.number = x != nullptr ? x->to_number<int64_t>() : a.fallback.empty() ? 0 : std::stoll(std::string(a.fallback));
        if (v.present) {
          if (Status s = Bounds(a, v.number); !s.ok()) return s;
        }
        break;
      case ArgType::kSwitch:
        if (x != nullptr && !x->is_bool()) return Status::Invalid(key + " must be true or false");
        v.present = x != nullptr;
        v.number = x != nullptr && x->as_bool() ? 1 : 0;
        break;
    }
    out.values_.emplace(key, std::move(v));
  }
  return out;
}

const Args::Value& Args::Get(std::string_view key) const {
  auto it = values_.find(key);
  // A handler reading an argument its command does not declare is a bug:
  // AdminApi::Handle answers it "internal", naming the key.
  if (it == values_.end()) throw std::logic_error("reads the undeclared argument \"" + std::string(key) + "\"");
  return it->second;
}

const std::string& Args::String(std::string_view key) const { return Get(key).text; }
int64_t Args::Int(std::string_view key) const { return Get(key).number; }
bool Args::Has(std::string_view key) const { return Get(key).present; }
bool Args::Switch(std::string_view key) const { return Get(key).number != 0; }

void Call::Say(const std::string& text) const { progress(json::serialize(json::object{{"progress", text}})); }

void Call::Count(std::atomic<uint64_t> LeaseEvents::*event) const {
  if (deps.lease_events != nullptr) ++(deps.lease_events->*event);
}

}  // namespace nodeplane::admin
