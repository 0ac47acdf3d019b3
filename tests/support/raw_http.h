// A blocking loopback TCP client for tests that need to misbehave on purpose
// (send headers slowly, hold connections open, announce oversized bodies).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace nodeplane::testing {

class RawConnection {
 public:
  // Connects to 127.0.0.1:port; reads give up after `read_timeout_ms`, which
  // bounds a failing test rather than pacing a passing one.
  explicit RawConnection(uint16_t port, int read_timeout_ms = 10000) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{read_timeout_ms / 1000, (read_timeout_ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads until the peer closes or the read timeout passes.
  std::string ReadUntilClose(bool* closed = nullptr) {
    std::string out;
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (closed != nullptr) *closed = (n == 0 || errno == ECONNRESET);
      return out;
    }
  }

  // Reads one response whose body length is given by Content-Length.
  std::string ReadResponse() {
    std::string out;
    char buf[4096];
    for (;;) {
      size_t head_end = out.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t want = head_end + 4 + ContentLength(out.substr(0, head_end));
        if (out.size() >= want) return out.substr(0, want);
      }
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  static size_t ContentLength(const std::string& head) {
    std::string lower;
    for (char c : head) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    size_t p = lower.find("content-length:");
    if (p == std::string::npos) return 0;
    return std::stoul(head.substr(p + 15));
  }

  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace nodeplane::testing
