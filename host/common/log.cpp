#include "common/log.h"

#include <chrono>
#include <ctime>
#include <span>

#include "common/json_text.h"

namespace nodeplane {
namespace {

// logfmt: bare when the value is a plain token, else quoted and escaped as a
// JSON string, so one event stays one line whatever the value holds.
void AppendLogfmtValue(std::string& out, std::string_view v) {
  bool bare = !v.empty();
  for (char c : v) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) >= 0x7f) {
      bare = false;
      break;
    }
  }
  if (bare) {
    out.append(v);
    return;
  }
  out.push_back('"');
  AppendJsonEscaped(out, v);
  out.push_back('"');
}

std::string NowRfc3339() {
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::time_point_cast<std::chrono::seconds>(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now - secs).count();
  std::time_t t = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return buf;
}

}  // namespace

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  return std::nullopt;
}

std::optional<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "logfmt") return LogFormat::kLogfmt;
  if (name == "json") return LogFormat::kJson;
  return std::nullopt;
}

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "error";
}

Logger::Logger(LogLevel min, LogFormat format, std::FILE* out)
    : min_(min), format_(format), out_(out) {}

std::string Logger::FormatSpan(LogLevel level, std::string_view timestamp, std::string_view event,
                               const LogField* fields, size_t n) const {
  std::string line;
  line.reserve(128);
  if (format_ == LogFormat::kJson) {
    line.append("{\"ts\":");
    AppendJsonString(line, timestamp);
    line.append(",\"level\":");
    AppendJsonString(line, LogLevelName(level));
    line.append(",\"event\":");
    AppendJsonString(line, event);
    for (const LogField& f : std::span(fields, n)) {
      line.push_back(',');
      AppendJsonString(line, f.key);
      line.push_back(':');
      AppendJsonString(line, f.value);
    }
    line.append("}\n");
  } else {
    line.append("ts=").append(timestamp);
    line.append(" level=").append(LogLevelName(level));
    line.append(" event=");
    AppendLogfmtValue(line, event);
    for (const LogField& f : std::span(fields, n)) {
      line.push_back(' ');
      line.append(f.key);
      line.push_back('=');
      AppendLogfmtValue(line, f.value);
    }
    line.push_back('\n');
  }
  return line;
}

void Logger::LogSpan(LogLevel level, std::string_view event, const LogField* fields, size_t n) {
  if (!Enabled(level)) return;
  std::string line = FormatSpan(level, NowRfc3339(), event, fields, n);
  std::lock_guard lock(mu_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace nodeplane
