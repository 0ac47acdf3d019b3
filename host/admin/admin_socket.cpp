#include "admin/admin_socket.h"

#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <utility>

namespace nodeplane::admin {

struct AdminSocket::Worker {
  std::condition_variable_any wake;
  int fd = -1;          // guarded by mu_: the connection handed over, -1 while none
  std::jthread thread;  // last: joined before the rest is destroyed
};

namespace {

constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

bool WriteAll(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::send(fd, text.data() + off, text.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

Status Errno(const std::string& what) { return Status::Unavailable(what + ": " + std::strerror(errno)); }

// Whether something answers on the socket file at `path`.
bool Live(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return live;
}

}  // namespace

AdminSocket::AdminSocket(SocketOptions options, Handler handler, Logger& log)
    : o_(std::move(options)), handler_(std::move(handler)), log_(log) {}

AdminSocket::~AdminSocket() { Stop(); }

Status AdminSocket::Start() {
  sockaddr_un addr{};
  if (o_.path.size() >= sizeof addr.sun_path) {
    return Status::Invalid("admin socket path " + o_.path + " is longer than the " +
                           std::to_string(sizeof addr.sun_path - 1) + " bytes a Unix socket allows");
  }
  struct stat st{};
  if (::lstat(o_.path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Status::Invalid(o_.path + " exists and is not a socket; refusing to replace it");
    if (Live(o_.path)) return Status::Conflict(o_.path + " is served by another running host");
    ::unlink(o_.path.c_str());  // stale, from a host that did not stop cleanly
  }
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Errno("admin socket");
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, o_.path.c_str(), sizeof addr.sun_path - 1);
  // Created with no rights for anyone until the mode is applied.
  mode_t old = ::umask(0777);
  int rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (rc != 0) return Errno("cannot bind the admin socket " + o_.path);
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  if (!o_.owner.empty()) {
    const passwd* pw = ::getpwnam(o_.owner.c_str());
    if (pw == nullptr) return Status::Invalid("admin.owner: no user named \"" + o_.owner + "\"");
    uid = pw->pw_uid;
  }
  if (!o_.group.empty()) {
    const group* gr = ::getgrnam(o_.group.c_str());
    if (gr == nullptr) return Status::Invalid("admin.group: no group named \"" + o_.group + "\"");
    gid = gr->gr_gid;
  }
  if ((uid != static_cast<uid_t>(-1) || gid != static_cast<gid_t>(-1)) && ::chown(o_.path.c_str(), uid, gid) != 0) {
    return Errno("cannot set the admin socket's owner");
  }
  if (::chmod(o_.path.c_str(), o_.mode) != 0) return Errno("cannot set the admin socket's mode");
  if (::listen(listen_fd_, 16) != 0) return Errno("cannot listen on the admin socket");
  acceptor_ = std::jthread([this](std::stop_token stop) { Accept(stop); });
  return Status::Ok();
}

void AdminSocket::Accept(std::stop_token stop) {
  bool failing = false;
  while (!stop.stop_requested()) {
    pollfd p{listen_fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, 200);  // wakes to notice a stop
    if (ready <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors, most often: the caller stays in the backlog and
      // poll() reports it again at once, so pause instead of spinning (as
      // the wire's listener does), and say so once per run of failures.
      ++accept_failures_;
      if (!failing) {
        failing = true;
        log_.Warn("admin.accept_failed", {{"path", o_.path}, {"error", std::strerror(errno)}});
      }
      std::this_thread::sleep_for(kAcceptRetry);  // a stop waits no longer than a poll() round
      continue;
    }
    failing = false;
    if (!HandOver(fd)) {
      WriteAll(fd, R"({"ok":false,"code":"unavailable","error":"too many admin connections; try again"})" "\n");
      ::close(fd);
    }
  }
}

bool AdminSocket::HandOver(int fd) {
  std::lock_guard lock(mu_);
  if (!idle_.empty()) {
    Worker* w = idle_.back();
    idle_.pop_back();
    w->fd = fd;
    w->wake.notify_one();
    return true;
  }
  if (workers_.size() >= o_.max_connections) return false;  // every worker is serving
  auto w = std::make_unique<Worker>();
  w->fd = fd;
  Worker* raw = w.get();
  w->thread = std::jthread([this, raw](std::stop_token stop) { Work(*raw, stop); });
  workers_.push_back(std::move(w));
  return true;
}

size_t AdminSocket::idle_workers() {
  std::lock_guard lock(mu_);
  return idle_.size();
}

void AdminSocket::Work(Worker& w, std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (w.wake.wait(lock, stop, [&] { return w.fd >= 0; })) {
    const int fd = std::exchange(w.fd, -1);
    lock.unlock();
    Serve(fd, stop);  // closes fd
    lock.lock();
    idle_.push_back(&w);
  }
}

void AdminSocket::Serve(int fd, std::stop_token stop) {
  std::string request;
  char buf[4096];
  while (request.find('\n') == std::string::npos && request.size() <= o_.max_request && !stop.stop_requested()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    request.append(buf, static_cast<size_t>(n));
  }
  size_t nl = request.find('\n');
  if (nl == std::string::npos) {
    if (request.size() > o_.max_request) {
      WriteAll(fd, R"({"ok":false,"code":"invalid","error":"the request is larger than 64 KiB"})" "\n");
    }
    ::close(fd);
    return;
  }
  request.resize(nl);
  bool open = true;
  std::string final_line = handler_(
      request, [&](const std::string& line) { open = open && WriteAll(fd, line + "\n"); }, stop);
  if (open) WriteAll(fd, final_line + "\n");
  ::close(fd);
}

void AdminSocket::Stop() {
  if (acceptor_.joinable()) {
    acceptor_.request_stop();
    acceptor_.join();
  }
  std::list<std::unique_ptr<Worker>> workers;
  {
    std::lock_guard lock(mu_);
    workers.swap(workers_);
  }
  workers.clear();  // jthread: request stop, then join
  {
    std::lock_guard lock(mu_);
    idle_.clear();
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    ::unlink(o_.path.c_str());
  }
}

}  // namespace nodeplane::admin
