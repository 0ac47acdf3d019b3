// Writing a JSON string literal by hand, for the few places (log lines, fixed
// replies) that do not go through a JSON library.
#pragma once

#include <string>
#include <string_view>

namespace nodeplane {

// Appends `v` escaped for the inside of a JSON string (quotes, backslashes,
// control characters), without the surrounding quotes.
void AppendJsonEscaped(std::string& out, std::string_view v);

// Appends `v` as a quoted JSON string, escaping quotes, backslashes and
// control characters. Bytes >= 0x80 pass through (UTF-8 stays UTF-8).
void AppendJsonString(std::string& out, std::string_view v);

}  // namespace nodeplane
