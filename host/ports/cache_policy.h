// The cache-policy port: the kill switch for transparent Actions caching.
//
// Implemented by a plugin adapter (loader/cache_policy_adapter.h) or by a
// test fake. Thread-safe: called concurrently from the wire.
#pragma once

#include <string>

#include "common/status.h"

namespace nodeplane::ports {

class CachePolicy {
 public:
  virtual ~CachePolicy() = default;
  // Whether runs of `owner`/`repository` may use the transparent Actions cache.
  virtual Result<bool> ActionsCacheAllowed(const std::string& owner, const std::string& repository) = 0;
};

}  // namespace nodeplane::ports
