// How the project's plugins report a failure internally: thrown inside the
// plugin only and turned into an np_code at its vtable; nothing C++ crosses
// the ABI.
#pragma once

#include <stdexcept>
#include <string>

#include "nodeplane/np_plugin.h"

namespace nodeplane::plugins {

class PluginError : public std::runtime_error {
 public:
  PluginError(np_code code, const std::string& message) : std::runtime_error(message), code_(code) {}
  np_code code() const { return code_; }

 private:
  np_code code_;
};

[[noreturn]] inline void Fail(np_code code, const std::string& message) { throw PluginError(code, message); }

}  // namespace nodeplane::plugins
