#include "replica_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "ledger_error.h"

namespace nodeplane::ledger {
namespace {

struct FileLock {
  int fd = -1;
  ~FileLock() {
    if (fd >= 0) ::close(fd);  // drops the record lock
  }
};

std::mutex& Mu() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::weak_ptr<FileLock>>& Held() {
  static std::map<std::string, std::weak_ptr<FileLock>> held;
  return held;
}

}  // namespace

std::shared_ptr<const void> LockForThisProcess(const std::string& database) {
  const std::string path = database + "-replica.lock";
  std::lock_guard lock(Mu());
  if (auto held = Held()[path].lock()) return held;
  auto file = std::make_shared<FileLock>();
  file->fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (file->fd < 0) Fail(NP_UNAVAILABLE, "ledger-sqlite: cannot open " + path + ": " + std::strerror(errno));
  struct flock want = {};
  want.l_type = F_WRLCK;
  want.l_whence = SEEK_SET;
  if (::fcntl(file->fd, F_SETLK, &want) != 0) {
    const int why = errno;
    struct flock other = want;
    const bool known = ::fcntl(file->fd, F_GETLK, &other) == 0 && other.l_type != F_UNLCK;
    if (why == EAGAIN || why == EACCES) {
      Fail(NP_CONFLICT, "ledger-sqlite: " + database + " is open in another process" +
                            (known ? " (pid " + std::to_string(other.l_pid) + ")" : std::string()) +
                            "; a SQLite ledger serves one nodeplaned. Stop that one first, or run replicas "
                            "([ha]) on the PostgreSQL ledger");
    }
    Fail(NP_UNAVAILABLE, "ledger-sqlite: cannot lock " + path + ": " + std::strerror(why));
  }
  Held()[path] = file;
  return file;
}

}  // namespace nodeplane::ledger
