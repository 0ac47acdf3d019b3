// Listener addresses, and the one rule that decides whether plain HTTP is safe.
//
// LoopbackOnly is the seed's rule (billet-wire.md §1.2), and config validation
// uses this same function, so "may this listener run without TLS" has exactly
// one answer in the codebase:
//   1. the address must split as host:port ("[v6]:port" for IPv6), else false;
//   2. an empty host (":7717", every interface) is false;
//   3. the host "localhost" exactly is true; no other name is resolved;
//   4. otherwise the host must be an IP literal in 127.0.0.0/8, ::1, or
//      IPv4-mapped ::ffff:127.x.y.z.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace nodeplane::config {

struct HostPort {
  std::string host;  // without brackets
  std::string port;  // as written; ParseListenAddress checks it is numeric
};

// Splits like Go's net.SplitHostPort: "h:p", "[v6]:p"; an unbracketed host
// with a colon in it is an error.
Result<HostPort> SplitHostPort(std::string_view addr);

bool LoopbackOnly(std::string_view addr);

struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};

// A listener address as config accepts it: host:port with a numeric port in
// 0..65535 (0 lets the kernel choose, which tests use).
Result<ListenAddress> ParseListenAddress(std::string_view addr);

// True for "", "0.0.0.0" and "::": addresses that name no single interface,
// so no server certificate can be minted for them without explicit names.
bool IsWildcardHost(std::string_view host);

}  // namespace nodeplane::config
