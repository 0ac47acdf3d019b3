#include "protocol/codec.h"

#include <array>
#include <boost/json.hpp>
#include <set>

#include "protocol/fields.h"

namespace nodeplane::protocol {
namespace json = boost::json;

std::span<const Named<ports::Phase>> PhaseNames() {
  static const auto kNames = [] {
    std::array<Named<ports::Phase>, 10> a{};
    for (int32_t n = 1; n <= 10; ++n) a[n - 1] = {ports::PhaseName(static_cast<ports::Phase>(n)), static_cast<ports::Phase>(n)};
    return a;
  }();
  return kNames;
}

std::span<const Named<CommandKind>> CommandKindNames() {
  static constexpr auto kNames = [] {
    std::array<Named<CommandKind>, std::size(kCommandKinds)> a{};
    for (size_t i = 0; i < a.size(); ++i) a[i] = {CommandKindName(kCommandKinds[i]), kCommandKinds[i]};
    return a;
  }();
  return kNames;
}

std::span<const Named<ports::EnrollmentState>> EnrollmentStateNames() {
  static const auto kNames = [] {
    std::array<Named<ports::EnrollmentState>, 3> a{};
    const ports::EnrollmentState states[] = {ports::EnrollmentState::kPending, ports::EnrollmentState::kApproved,
                                             ports::EnrollmentState::kDenied};
    for (size_t i = 0; i < a.size(); ++i) a[i] = {ports::EnrollmentStateName(states[i]), states[i]};
    return a;
  }();
  return kNames;
}

namespace {

// The name and strictness a message declares, before its body is read.
struct Header {
  std::string name;
  bool strict = false;
  void Message(const char* n, Sender s) {
    name = n;
    strict = s == Sender::kNode;
  }
  template <class... A>
  void Field(A&&...) {}
  template <class... A>
  void Enum(A&&...) {}
  template <class... A>
  void CommaList(A&&...) {}
  template <class... A>
  void Check(A&&...) {}
};

template <class M>
Header HeaderOf() {
  Header h;
  M probe;
  Describe(h, probe);
  return h;
}

class Encoder {
 public:
  void Message(const char*, Sender) {}
  void Field(const char* key, const std::string& s, Omit omit = Omit::kNever) {
    if (omit == Omit::kNever || !s.empty()) obj_[key] = s;
  }
  void Field(const char* key, int64_t n, Omit omit = Omit::kNever) {
    if (omit == Omit::kNever || n != 0) obj_[key] = n;
  }
  void Field(const char* key, int32_t n, Omit omit = Omit::kNever) {
    if (omit == Omit::kNever || n != 0) obj_[key] = n;
  }
  void Field(const char* key, bool b, Omit omit = Omit::kNever) {
    if (omit == Omit::kNever || b) obj_[key] = b;
  }
  void Field(const char* key, const std::vector<std::string>& v, Omit omit = Omit::kNever) {
    if (omit == Omit::kEmpty && v.empty()) return;
    json::array a;
    for (const std::string& s : v) a.emplace_back(s);
    obj_[key] = std::move(a);
  }
  template <class T>
  void Field(const char* key, const std::optional<T>& nested, Omit = Omit::kNever) {
    if (nested) obj_[key] = ObjectOf(*nested);
  }
  template <class E>
  void Enum(const char* key, E value, std::span<const Named<E>> names) {
    for (const Named<E>& n : names) {
      if (n.value == value) obj_[key] = n.name;
    }
  }
  void CommaList(const char* key, const std::string& list) {
    Field(key, ports::ProvidersOf(list));
  }
  void Check(bool, const char*) {}

  // Describe takes the message by non-const reference so that one list
  // serves both directions; the encoder only reads it.
  template <class M>
  static json::object ObjectOf(const M& message) {
    Encoder e;
    Describe(e, const_cast<M&>(message));
    return std::move(e.obj_);
  }

 private:
  json::object obj_;
};

// Reads one JSON object: every key the list names, with the right type;
// strictly, every other key is refused.
class Decoder {
 public:
  Decoder(const json::object& obj, std::string name, bool strict)
      : obj_(obj), name_(std::move(name)), strict_(strict) {}

  void Message(const char*, Sender) {}  // the caller read the header already

  void Field(const char* key, std::string& out, Omit = Omit::kNever) {
    const json::value* v = Get(key);
    if (v == nullptr || v->is_null()) return;
    if (v->is_string()) {
      out = std::string(v->as_string());
    } else {
      Bad(key, "a string");
    }
  }
  void Field(const char* key, int64_t& out, Omit = Omit::kNever) { out = Int(key, INT64_MAX); }
  void Field(const char* key, int32_t& out, Omit = Omit::kNever) { out = static_cast<int32_t>(Int(key, INT32_MAX)); }
  void Field(const char* key, bool& out, Omit = Omit::kNever) {
    const json::value* v = Get(key);
    if (v == nullptr || v->is_null()) return;
    if (v->is_bool()) {
      out = v->as_bool();
    } else {
      Bad(key, "true or false");
    }
  }
  void Field(const char* key, std::vector<std::string>& out, Omit = Omit::kNever) {
    const json::value* v = Get(key);
    if (v == nullptr || v->is_null()) return;  // null is absent
    if (!v->is_array()) return Bad(key, "an array of strings");
    for (const json::value& e : v->as_array()) {
      if (!e.is_string()) return Bad(key, "an array of strings");
    }
    for (const json::value& e : v->as_array()) out.emplace_back(e.as_string());
  }
  template <class T>
  void Field(const char* key, std::optional<T>& out, Omit = Omit::kNever) {
    const json::value* v = Get(key);
    if (v == nullptr || v->is_null()) return;
    if (!v->is_object()) return Bad(key, "an object");
    Decoder nested(v->as_object(), name_ + "." + key, strict_);
    T message;
    Describe(nested, message);
    if (Status s = nested.Finish(); !s.ok()) return Fail(std::move(s));
    out = std::move(message);
  }
  template <class E>
  void Enum(const char* key, E& out, std::span<const Named<E>> names) {
    const json::value* v = Get(key);
    if (v != nullptr && v->is_string()) {
      for (const Named<E>& n : names) {
        if (v->as_string() == n.name) {
          out = n.value;
          return;
        }
      }
    }
    std::string expected = "one of";
    for (size_t i = 0; i < names.size(); ++i) expected += std::string(i ? ", " : " ") + names[i].name;
    if (v == nullptr) expected += " (it is required)";
    Bad(key, expected.c_str());
  }
  void CommaList(const char* key, std::string& out) {
    std::vector<std::string> items;
    Field(key, items);
    for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  }
  void Check(bool holds, const char* problem) {
    if (!holds && check_.ok()) check_ = Status::Invalid(name_ + ": " + problem);
  }

  // The first problem: a field's, then (strictly) an unknown field, then a
  // failed Check.
  Status Finish() const {
    if (!status_.ok()) return status_;
    if (strict_) {
      for (const auto& kv : obj_) {
        if (known_.count(kv.key()) == 0) {
          return Status::Invalid(name_ + ": unknown field \"" + std::string(kv.key()) + "\"");
        }
      }
    }
    return check_;
  }

 private:
  const json::value* Get(const char* key) {
    known_.insert(key);
    return obj_.if_contains(key);
  }
  void Fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
  }
  void Bad(const char* key, const char* expected) {
    Fail(Status::Invalid(name_ + ": field \"" + key + "\" must be " + expected));
  }
  // An integer in [0, hi]; anything else (a fraction, a number out of the
  // field's range, a string) refuses the message, never wraps or truncates.
  // Every integer of this protocol is a count, a size, an id or an epoch:
  // none is negative.
  int64_t Int(const char* key, int64_t hi) {
    const json::value* v = Get(key);
    if (v == nullptr || v->is_null()) return 0;
    if (v->is_int64() && v->as_int64() >= 0 && v->as_int64() <= hi) return v->as_int64();
    Bad(key, ("an integer from 0 to " + std::to_string(hi)).c_str());
    return 0;
  }

  const json::object& obj_;
  std::string name_;
  bool strict_;
  Status status_, check_;
  std::set<std::string, std::less<>> known_;
};

}  // namespace

template <class M>
std::string Encode(const M& message) {
  return json::serialize(Encoder::ObjectOf(message)) + "\n";
}

template <class M>
std::string EncodeValue(const M& message) {
  return json::serialize(Encoder::ObjectOf(message));
}

template <class M>
Result<M> Decode(std::string_view body, const char* name) {
  Header header = HeaderOf<M>();
  if (name != nullptr) header.name = name;
  json::parse_options opts;
  opts.max_depth = 16;
  boost::system::error_code ec;
  const json::value v = json::parse(json::string_view(body.data(), body.size()), ec, {}, opts);
  if (ec) return Status::Invalid(header.name + ": the body is not one JSON value: " + ec.message());
  if (!v.is_object()) return Status::Invalid(header.name + ": the body must be a JSON object");
  Decoder decoder(v.as_object(), header.name, header.strict);
  M message;
  Describe(decoder, message);
  if (Status s = decoder.Finish(); !s.ok()) return s;
  return message;
}

std::string ErrorCodeOf(std::string_view body) {
  auto reply = Decode<ErrorReply>(body);
  return reply.ok() ? reply->code : std::string();
}

// Every message, once: Encode, EncodeValue and Decode.
#define NODEPLANE_PROTOCOL_MESSAGE(M)                    \
  template std::string Encode<M>(const M&);              \
  template std::string EncodeValue<M>(const M&);         \
  template Result<M> Decode<M>(std::string_view, const char*);
NODEPLANE_PROTOCOL_MESSAGE(ports::Lease)
NODEPLANE_PROTOCOL_MESSAGE(RegisterRequest)
NODEPLANE_PROTOCOL_MESSAGE(CommandResult)
NODEPLANE_PROTOCOL_MESSAGE(EpochBody)
NODEPLANE_PROTOCOL_MESSAGE(AdvanceBody)
NODEPLANE_PROTOCOL_MESSAGE(ReleaseBody)
NODEPLANE_PROTOCOL_MESSAGE(FailureBody)
NODEPLANE_PROTOCOL_MESSAGE(ReconcileBody)
NODEPLANE_PROTOCOL_MESSAGE(EmptyBody)
NODEPLANE_PROTOCOL_MESSAGE(EnrollBody)
NODEPLANE_PROTOCOL_MESSAGE(RenewBody)
NODEPLANE_PROTOCOL_MESSAGE(DescribeBody)
NODEPLANE_PROTOCOL_MESSAGE(JitBody)
NODEPLANE_PROTOCOL_MESSAGE(RemoveRunnerBody)
NODEPLANE_PROTOCOL_MESSAGE(RegisterResponse)
NODEPLANE_PROTOCOL_MESSAGE(Command)
NODEPLANE_PROTOCOL_MESSAGE(ErrorReply)
NODEPLANE_PROTOCOL_MESSAGE(HealthReply)
NODEPLANE_PROTOCOL_MESSAGE(LeaseReply)
NODEPLANE_PROTOCOL_MESSAGE(LaunchedReply)
NODEPLANE_PROTOCOL_MESSAGE(FreedReply)
NODEPLANE_PROTOCOL_MESSAGE(CaReply)
NODEPLANE_PROTOCOL_MESSAGE(EnrollReply)
NODEPLANE_PROTOCOL_MESSAGE(RenewReply)
NODEPLANE_PROTOCOL_MESSAGE(CachePolicyReply)
NODEPLANE_PROTOCOL_MESSAGE(DescribeReply)
NODEPLANE_PROTOCOL_MESSAGE(JitReply)
NODEPLANE_PROTOCOL_MESSAGE(RecoverReply)
#undef NODEPLANE_PROTOCOL_MESSAGE

}  // namespace nodeplane::protocol
