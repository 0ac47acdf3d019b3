// The operator's socket: a Unix stream socket where each connection carries
// one request line (JSON) and receives zero or more progress lines, then one
// final line, then the connection closes. Only local users whom the
// socket's mode, owner and group admit can connect: that is the admin API's
// whole authentication, as it is for the Docker and containerd sockets.
//
// Threading: one accept thread, and one worker thread per connection being
// served (operators are few, but a drain may hold its connection for
// minutes, so no connection ever waits for another). A worker whose
// connection ended is kept, idle, for the next one: starting a thread costs
// 36 µs at the median on a paravirtualised guest but up to 3 ms at p99,
// which was most of the admin socket's share of a launch's tail
// (docs/performance.md). Workers are at most max_connections, the most ever
// served at once. Stop() asks every handler to stop through its stop_token
// and joins them.
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/status.h"

namespace nodeplane::admin {

struct SocketOptions {
  std::string path;
  uint32_t mode = 0660;
  std::string owner;  // "" : the process's own
  std::string group;
  size_t max_request = 64 * 1024;
  unsigned max_connections = 32;
};

class AdminSocket {
 public:
  // Writes one progress line to the client.
  using Progress = std::function<void(const std::string& line)>;
  // Answers a request line with the final line; may call `progress` first,
  // and should return early when `stop` is requested.
  using Handler = std::function<std::string(const std::string& request, const Progress& progress, std::stop_token stop)>;

  AdminSocket(SocketOptions options, Handler handler, Logger& log);
  ~AdminSocket();
  AdminSocket(const AdminSocket&) = delete;
  AdminSocket& operator=(const AdminSocket&) = delete;

  // Binds (replacing a stale socket file, never a live one or another kind
  // of file), applies mode/owner/group, and starts accepting.
  Status Start();
  void Stop();
  // Accepts that failed, each followed by a pause (a test hook).
  uint64_t accept_failures() const { return accept_failures_.load(); }
  // Workers waiting for a connection (a test hook).
  size_t idle_workers();

 private:
  struct Worker;
  void Accept(std::stop_token stop);
  // Hands `fd` to an idle worker, or to a new one; false when max_connections are being served.
  bool HandOver(int fd);
  void Work(Worker& w, std::stop_token stop);
  void Serve(int fd, std::stop_token stop);

  SocketOptions o_;
  Handler handler_;
  Logger& log_;
  int listen_fd_ = -1;
  std::atomic<uint64_t> accept_failures_{0};
  std::jthread acceptor_;
  std::mutex mu_;
  std::list<std::unique_ptr<Worker>> workers_;  // guarded by mu_
  std::vector<Worker*> idle_;                   // guarded by mu_: workers waiting for a connection
};

}  // namespace nodeplane::admin
