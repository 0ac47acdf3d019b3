// Calling into a plugin: the host-owned error buffer, and the translation of
// an np_code into a Status that names the plugin instance.
#pragma once

#include <cstring>
#include <string>

#include "common/status.h"
#include "nodeplane/np_plugin.h"
#include "ports/verdict.h"

namespace nodeplane::loader {

// One call's error, with its message buffer. Not shared between calls.
class PluginError {
 public:
  PluginError() : err_{sizeof(np_error), NP_OK, 0, sizeof buf_, buf_, 0} { buf_[0] = '\0'; }
  PluginError(const PluginError&) = delete;
  PluginError& operator=(const PluginError&) = delete;

  np_error* c() { return &err_; }
  // The Status for `rc` (Ok for NP_OK), its message prefixed with `who`.
  Status ToStatus(np_code rc, const std::string& who) const;

 private:
  char buf_[1024];
  np_error err_;
};

// Maps a stable ABI code onto the host's Status codes. A code this host does
// not know is Internal, as the ABI's versioning policy requires.
Code CodeOf(np_code rc);
// Maps a stable ABI code onto the ports' verdicts (ports/verdict.h): the one
// place the host reads NP_* numbers as reasons. Codes that say no more than
// their Status code (invalid, unavailable, refused, internal) are kNone.
ports::Verdict VerdictOf(np_code rc);

// A string a plugin put, or "" for NULL.
inline std::string TextOf(const char* s) { return s != nullptr ? s : ""; }

// Copies a record a plugin put to a sink by the size it declared: an older
// plugin's shorter record reads as having the newer fields absent (zero).
template <typename T>
T CopyRecord(const T* in) {
  T out{};
  size_t n = in->struct_size < sizeof(T) ? in->struct_size : sizeof(T);
  std::memcpy(&out, in, n);
  return out;
}

// Creates an instance through a vtable's create slot. With validate_only the
// plugin only checks its config and the result is nullptr.
template <typename VT>
Result<void*> CreateInstance(const VT& vt, const np_host_v1* host, const std::string& config_json,
                             bool validate_only, const std::string& who) {
  PluginError err;
  void* instance = nullptr;
  np_code rc = vt.create(host, config_json.data(), config_json.size(),
                         validate_only ? NP_CREATE_VALIDATE_ONLY : 0u, &instance, err.c());
  if (rc != NP_OK) return err.ToStatus(rc, who);
  if (!validate_only && instance == nullptr) return Status::Internal(who + ": create returned no instance");
  return instance;
}

}  // namespace nodeplane::loader
