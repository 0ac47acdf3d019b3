#include "admin/admin_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>

namespace nodeplane::admin {
namespace {

enum class LineKind { kNoise, kProgress, kFinal };

// A progress line is an object with a "progress" member; any other object is
// the final answer; what is no object is skipped.
LineKind KindOf(const std::string& line) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(line, ec);
  if (ec || !v.is_object()) return LineKind::kNoise;
  return v.as_object().contains("progress") ? LineKind::kProgress : LineKind::kFinal;
}

}  // namespace

Result<std::string> CallAdmin(const std::string& path, const std::string& request,
                              const std::function<void(const std::string& line)>& progress) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return Status::Unavailable("cannot reach the host at " + path + ": " + why + " (is nodeplaned running?)");
  }
  const std::string text = request + "\n";
  if (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size())) {
    ::close(fd);
    return Status::Unavailable("the host at " + path + " closed the connection");
  }
  std::string buffer;
  char chunk[8192];
  for (ssize_t n; (n = ::recv(fd, chunk, sizeof chunk, 0)) > 0;) {
    buffer.append(chunk, static_cast<size_t>(n));
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      const LineKind kind = KindOf(line);
      if (kind == LineKind::kFinal) {
        ::close(fd);
        return line;
      }
      if (kind == LineKind::kProgress && progress) progress(line);
    }
  }
  ::close(fd);
  return Status::Unavailable("the host at " + path + " closed the connection without an answer");
}

}  // namespace nodeplane::admin
