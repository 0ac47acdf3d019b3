// Status and Result: how failures cross module lines inside the host.
//
// No exception crosses from one layer of the host to another (config, plane,
// wire, plugin adapters). A function that can fail returns a Status, or a
// Result<T> that holds either a value or a non-ok Status. The codes are the
// broad classes every layer shares (the plugin ABI's NP_* codes map onto
// them in the loader); a layer's finer reasons are its verdicts, detail().
//
// Thread safety: Status and Result are values; distinct objects may be used
// from distinct threads freely.
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace nodeplane {

enum class Code {
  kOk = 0,
  kInvalid,      // the request or input is malformed; permanent
  kNotFound,     // the thing asked about does not exist
  kConflict,     // the request collides with current state
  kFenced,       // a stale epoch: the caller no longer holds what it acts on
  kUnavailable,  // an outage (store, network, plugin); retryable
  kRefused,      // understood and rejected on its merits; permanent
  kInternal,     // a bug: an invariant did not hold
};

const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Invalid(std::string msg) { return Status(Code::kInvalid, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status Conflict(std::string msg) { return Status(Code::kConflict, std::move(msg)); }
  static Status Fenced(std::string msg) { return Status(Code::kFenced, std::move(msg)); }
  static Status Unavailable(std::string msg) { return Status(Code::kUnavailable, std::move(msg)); }
  static Status Refused(std::string msg) { return Status(Code::kRefused, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }

  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // Only an outage may heal by trying again; every other failure is a verdict.
  bool retryable() const { return code_ == Code::kUnavailable; }
  // "code: message", for logs and error replies.
  std::string ToString() const;
  // The verdict of the layer that failed, finer than code(), for callers
  // that branch on why: a ports::Verdict (ports/verdict.h, from 101) or a
  // plane::PlaneError (plane/errors.h, from 1001); 0 when none. Asked
  // through each layer's Is(status, verdict), never by number.
  int32_t detail() const { return detail_; }
  Status WithDetail(int32_t detail) && {
    detail_ = detail;
    return std::move(*this);
  }
  // For an outage: how long the failing party asked callers to wait (a
  // GitHub rate limit's Retry-After, say), in ns; 0 when it named no time.
  int64_t retry_after_ns() const { return retry_after_ns_; }
  Status WithRetryAfter(int64_t ns) && {
    retry_after_ns_ = ns > 0 ? ns : 0;
    return std::move(*this);
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
  int32_t detail_ = 0;
  int64_t retry_after_ns_ = 0;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace nodeplane
