// The node protocol's JSON, snake_case, from the field lists in
// protocol/fields.h. Boost.JSON stays inside codec.cpp.
//
// Every function is pure and thread-safe. Every message of messages.h is
// instantiated (codec.cpp); another type fails to link.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "protocol/messages.h"

namespace nodeplane::protocol {

// One JSON object and a newline: a whole HTTP body.
template <class M>
std::string Encode(const M& message);
// The bare object, no newline, for a caller that embeds it (the admin API's
// lease list).
template <class M>
std::string EncodeValue(const M& message);

// Reads a body. What a node sends is read strictly (an unknown field, a wrong
// type, a number out of its field's range or trailing bytes is refused); what
// the control plane answers, leniently (unknown fields are skipped). Refusals
// are Invalid with a message a person can act on, prefixed with `name` (the
// route, for the bodies several routes share) or else the message's own name.
template <class M>
Result<M> Decode(std::string_view body, const char* name = nullptr);

// The "code" of an error body; "" when it carries none.
std::string ErrorCodeOf(std::string_view body);

}  // namespace nodeplane::protocol
