#include "config/address.h"

#include <arpa/inet.h>

#include <cstring>

namespace nodeplane::config {
namespace {

// Strict dotted quad: four decimal parts, no leading zeros, each <= 255.
bool ParseIPv4(std::string_view s, uint8_t out[4]) {
  int part = 0;
  size_t i = 0;
  while (part < 4) {
    size_t start = i;
    unsigned value = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 3) {
      value = value * 10 + static_cast<unsigned>(s[i] - '0');
      ++i;
    }
    size_t len = i - start;
    if (len == 0 || value > 255 || (len > 1 && s[start] == '0')) return false;
    out[part++] = static_cast<uint8_t>(value);
    if (part < 4) {
      if (i >= s.size() || s[i] != '.') return false;
      ++i;
    }
  }
  return i == s.size();
}

bool IsLoopbackIP(std::string_view host) {
  uint8_t v4[4];
  if (ParseIPv4(host, v4)) return v4[0] == 127;
  if (host.find(':') == std::string_view::npos || host.find('%') != std::string_view::npos) return false;
  in6_addr v6{};
  std::string copy(host);
  if (inet_pton(AF_INET6, copy.c_str(), &v6) != 1) return false;
  static const uint8_t kLoopback6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  if (std::memcmp(v6.s6_addr, kLoopback6, 16) == 0) return true;
  static const uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(v6.s6_addr, kMappedPrefix, 12) == 0 && v6.s6_addr[12] == 127;
}

}  // namespace

Result<HostPort> SplitHostPort(std::string_view addr) {
  const std::string quoted = "\"" + std::string(addr) + "\"";
  size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos) return Status::Invalid("address " + quoted + " has no port");
  std::string_view host = addr.substr(0, colon);
  std::string_view port = addr.substr(colon + 1);
  if (!host.empty() && host.front() == '[') {
    if (host.back() != ']') return Status::Invalid("address " + quoted + " has an unclosed '['");
    host = host.substr(1, host.size() - 2);
    if (host.find_first_of("[]") != std::string_view::npos) {
      return Status::Invalid("address " + quoted + " has stray brackets");
    }
  } else if (host.find_first_of(":[]") != std::string_view::npos) {
    return Status::Invalid("address " + quoted + " has too many colons; write IPv6 as [addr]:port");
  }
  if (port.find_first_of("[]") != std::string_view::npos) {
    return Status::Invalid("address " + quoted + " has stray brackets");
  }
  return HostPort{std::string(host), std::string(port)};
}

bool LoopbackOnly(std::string_view addr) {
  Result<HostPort> hp = SplitHostPort(addr);
  if (!hp.ok() || hp->host.empty()) return false;
  if (hp->host == "localhost") return true;
  return IsLoopbackIP(hp->host);
}

Result<ListenAddress> ParseListenAddress(std::string_view addr) {
  Result<HostPort> hp = SplitHostPort(addr);
  if (!hp.ok()) return hp.status();
  const std::string& port = hp->port;
  bool numeric = !port.empty() && port.size() <= 5 &&
                 port.find_first_not_of("0123456789") == std::string::npos;
  if (!numeric || std::stoul(port) > 65535) {
    return Status::Invalid("address \"" + std::string(addr) + "\" needs a numeric port from 0 to 65535");
  }
  return ListenAddress{hp->host, static_cast<uint16_t>(std::stoul(port))};
}

bool IsWildcardHost(std::string_view host) {
  return host.empty() || host == "0.0.0.0" || host == "::";
}

}  // namespace nodeplane::config
