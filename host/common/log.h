// Structured logging: one event per line, as logfmt or JSON.
//
// Every line carries a timestamp, a level and an event name, then the fields
// the caller gives. Events are short stable identifiers ("wire.listening"),
// so a log can be searched without parsing prose.
//
// No secret is ever a field: tokens, JIT configs and private keys are not
// passed to a Logger, and error messages that reach one never embed them.
//
// Thread safety: a Logger may be used from any number of threads at once;
// each line is written whole, under one mutex, with a single write.
#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace nodeplane {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kLogfmt, kJson };

std::optional<LogLevel> ParseLogLevel(std::string_view name);
std::optional<LogFormat> ParseLogFormat(std::string_view name);
const char* LogLevelName(LogLevel level);

// One key=value pair. The value is rendered to text when the field is made.
struct LogField {
  LogField(std::string_view k, std::string_view v) : key(k), value(v) {}
  LogField(std::string_view k, const char* v) : key(k), value(v) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(v) {}
  LogField(std::string_view k, bool v) : key(k), value(v ? "true" : "false") {}
  LogField(std::string_view k, int v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, long v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, long long v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, unsigned v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, unsigned long v) : key(k), value(std::to_string(v)) {}
  LogField(std::string_view k, unsigned long long v) : key(k), value(std::to_string(v)) {}
  std::string_view key;
  std::string value;
};

using LogFields = std::initializer_list<LogField>;

class Logger {
 public:
  // `out` is borrowed and must outlive the Logger.
  explicit Logger(LogLevel min = LogLevel::kInfo, LogFormat format = LogFormat::kLogfmt,
                  std::FILE* out = stderr);

  bool Enabled(LogLevel level) const { return level >= min_; }
  void Log(LogLevel level, std::string_view event, LogFields fields = {}) {
    LogSpan(level, event, fields.begin(), fields.size());
  }
  // The same, for a list whose length is known only at run time.
  void LogSpan(LogLevel level, std::string_view event, const LogField* fields, size_t n);
  void Debug(std::string_view event, LogFields fields = {}) { Log(LogLevel::kDebug, event, fields); }
  void Info(std::string_view event, LogFields fields = {}) { Log(LogLevel::kInfo, event, fields); }
  void Warn(std::string_view event, LogFields fields = {}) { Log(LogLevel::kWarn, event, fields); }
  void Error(std::string_view event, LogFields fields = {}) { Log(LogLevel::kError, event, fields); }

  // Renders one line without writing it (the format is tested byte for byte).
  std::string Format(LogLevel level, std::string_view timestamp, std::string_view event,
                     LogFields fields) const {
    return FormatSpan(level, timestamp, event, fields.begin(), fields.size());
  }
  std::string FormatSpan(LogLevel level, std::string_view timestamp, std::string_view event,
                         const LogField* fields, size_t n) const;

 private:
  LogLevel min_;
  LogFormat format_;
  std::FILE* out_;
  std::mutex mu_;
};

}  // namespace nodeplane
