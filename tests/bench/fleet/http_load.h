// Request throughput of one trivial route: `connections` keep-alive
// connections, each sending the next request as soon as the last answer is
// read (no pipelining), for `duration`, from one thread. The same generator
// measures nodeplaned and nginx, so the two figures compare.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace nodeplane::bench {

struct LoadTls {
  std::string ca_pem;
  std::string cert_pem, key_pem;  // "" : no client certificate
};

struct LoadResult {
  int64_t answered = 0;  // responses with the expected status
  int64_t failed = 0;    // anything else, or a broken connection
  double seconds = 0;
  double per_second() const { return seconds > 0 ? static_cast<double>(answered) / seconds : 0; }
};

LoadResult Hammer(const std::string& host, uint16_t port, const std::optional<LoadTls>& tls, const std::string& target,
                  int expect_status, int connections, std::chrono::seconds duration);

}  // namespace nodeplane::bench
