#include "common/json_text.h"

#include <cstdio>

namespace nodeplane {

void AppendJsonEscaped(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out.append(buf);
        } else {
          out.push_back(c);
        }
    }
  }
}

void AppendJsonString(std::string& out, std::string_view v) {
  out.push_back('"');
  AppendJsonEscaped(out, v);
  out.push_back('"');
}

}  // namespace nodeplane
