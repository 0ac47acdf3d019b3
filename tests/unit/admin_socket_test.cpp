// The admin socket's accept loop when the process is out of descriptors: it
// pauses between tries instead of spinning on a caller poll() keeps
// reporting, serves the caller once a descriptor is free, and still stops.
// Its workers: kept for the next connection, never making one connection
// wait for another, and no more than max_connections.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>
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

// One request on a new connection; the answer's first line, "" when none.
std::string Ask(const std::string& path, const std::string& request) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string line = request + "\n";
    ::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
    timeval tv{30, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[256];
    ssize_t n;
    while (answer.find('\n') == std::string::npos && (n = ::recv(fd, buf, sizeof buf, 0)) > 0) answer.append(buf, n);
  }
  ::close(fd);
  return answer.substr(0, answer.find('\n'));
}

class AdminWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-admin-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (socket_) socket_->Stop();
    std::filesystem::remove_all(dir_);
  }
  // A socket whose handler answers with the request, after waiting for
  // `release` when the request is "hold"; records the threads it ran on.
  void Start(unsigned max_connections) {
    SocketOptions o;
    o.path = dir_ + "/admin.sock";
    o.mode = 0600;
    o.max_connections = max_connections;
    socket_ = std::make_unique<AdminSocket>(
        o,
        [this](const std::string& request, const AdminSocket::Progress&, std::stop_token) {
          {
            std::lock_guard lock(mu_);
            threads_.insert(std::this_thread::get_id());
          }
          if (request == "hold") {
            held_.set_value();
            release_.wait();
          }
          return request;
        },
        log_);
    ASSERT_TRUE(socket_->Start().ok());
  }
  // Waits, bounded, until `n` workers are idle.
  bool IdleWorkers(size_t n) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (socket_->idle_workers() != n) {
      if (std::chrono::steady_clock::now() > limit) return false;
      std::this_thread::yield();
    }
    return true;
  }
  std::string path() const { return dir_ + "/admin.sock"; }

  std::string dir_;
  Logger log_{LogLevel::kError};
  std::unique_ptr<AdminSocket> socket_;
  std::mutex mu_;
  std::set<std::thread::id> threads_;
  std::promise<void> held_;
  std::promise<void> released_;
  std::shared_future<void> release_ = released_.get_future().share();
};

// A worker whose connection ended serves the next one on the same thread.
TEST_F(AdminWorkersTest, AWorkerIsKeptForTheNextConnection) {
  Start(32);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Ask(path(), "{\"n\":" + std::to_string(i) + "}"), "{\"n\":" + std::to_string(i) + "}");
    ASSERT_TRUE(IdleWorkers(1));
  }
  std::lock_guard lock(mu_);
  EXPECT_EQ(threads_.size(), 1u);
}

// A connection held for minutes (a drain) never makes another wait.
TEST_F(AdminWorkersTest, AHeldConnectionDoesNotHoldUpAnother) {
  Start(32);
  ASSERT_EQ(Ask(path(), "first"), "first");
  ASSERT_TRUE(IdleWorkers(1));
  auto held = std::async(std::launch::async, [&] { return Ask(path(), "hold"); });
  held_.get_future().wait();  // the idle worker is serving it
  EXPECT_EQ(Ask(path(), "second"), "second");
  released_.set_value();
  EXPECT_EQ(held.get(), "hold");
  ASSERT_TRUE(IdleWorkers(2));
}

// No more workers than max_connections: past them a caller is told to try
// again, and served once a worker is free.
TEST_F(AdminWorkersTest, NoMoreThanMaxConnectionsAreServedAtOnce) {
  Start(1);
  auto held = std::async(std::launch::async, [&] { return Ask(path(), "hold"); });
  held_.get_future().wait();
  EXPECT_NE(Ask(path(), "second").find("too many admin connections"), std::string::npos);
  released_.set_value();
  EXPECT_EQ(held.get(), "hold");
  ASSERT_TRUE(IdleWorkers(1));
  EXPECT_EQ(Ask(path(), "third"), "third");
}

}  // namespace
}  // namespace nodeplane::admin
