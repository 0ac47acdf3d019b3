// The admin socket's accept loop when the process is out of descriptors: it
// pauses between tries instead of spinning on a caller poll() keeps
// reporting, serves the caller once a descriptor is free, and still stops.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "admin/admin_socket.h"
#include "descriptor_limit.h"

namespace nodeplane::admin {
namespace {

TEST(AdminSocket, OutOfDescriptorsItPausesInsteadOfSpinningThenServes) {
  std::string tmpl = ::testing::TempDir() + "/np-admin-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  Logger log(LogLevel::kError);
  SocketOptions o;
  o.path = tmpl + "/admin.sock";
  o.mode = 0600;
  AdminSocket socket(o, [](const std::string&, const AdminSocket::Progress&, std::stop_token) { return "{\"ok\":true}"; },
                     log);
  ASSERT_TRUE(socket.Start().ok());
  testing::DescriptorLimit descriptors;
  // A socket takes the lowest free descriptor, so with the limit just above
  // it the process has none left for the accept.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_TRUE(descriptors.ExhaustAbove(fd));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, o.path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);  // the backlog takes it

  const auto t0 = std::chrono::steady_clock::now();
  const auto limit = t0 + std::chrono::seconds(30);
  while (socket.accept_failures() < 3 && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  const uint64_t failures = socket.accept_failures();
  ASSERT_GE(failures, 3u);
  // Paused 100 ms after each failure: the third cannot come sooner than
  // 200 ms after the first. A loop that spun would have failed thousands
  // of times by then.
  EXPECT_GE(elapsed, std::chrono::milliseconds(150)) << failures << " failed accepts";

  ASSERT_TRUE(descriptors.Restore());
  const char request[] = "{}\n";
  ASSERT_EQ(::send(fd, request, sizeof request - 1, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof request - 1));
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char answer[64] = {};
  EXPECT_GT(::recv(fd, answer, sizeof answer - 1, 0), 0) << "the caller was not served once a descriptor was free";
  EXPECT_STREQ(answer, "{\"ok\":true}\n");
  ::close(fd);
  socket.Stop();
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace nodeplane::admin
