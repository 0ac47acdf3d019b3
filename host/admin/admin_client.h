// The operator's side of the admin socket (admin_socket.h): one request line
// out; zero or more progress lines, then one final line, back. nodeplanectl
// and the fleet benchmark speak it through this.
//
// Blocking; thread-safe (each call has its own connection).
#pragma once

#include <functional>
#include <string>

#include "common/status.h"

namespace nodeplane::admin {

// Sends `request` (one JSON object, without the newline) to the socket at
// `path`, hands each progress line to `progress` (if set) as it arrives, and
// returns the final line. Unavailable, naming the path, when the host cannot
// be reached or closes the connection without a final line.
Result<std::string> CallAdmin(const std::string& path, const std::string& request,
                              const std::function<void(const std::string& line)>& progress = {});

}  // namespace nodeplane::admin
