// A child process for tests and benchmarks (the GitHub doubles, Prism,
// nodeplaned), whose output is read line by line so a caller waits for the
// child's own report of readiness instead of polling for it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace nodeplane::testing {

// A child process, killed (its whole process group) when this goes away.
// Its stdout and stderr come through a pipe: a reader thread appends each
// line to the log file and wakes whoever waits for a line, so a test waits
// for the child's own report ("listening 4321") rather than polling.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log_file) : log_(log_file, std::ios::app) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ended_ = true;  // nothing will ever be read: AwaitLine answers at once
      return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawnp(&pid_, args[0], &fa, &attr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(out[1]);
    reader_ = std::thread([this, fd = out[0]] { Read(fd); });
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();  // ends at EOF, once the group is gone
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }

  // Waits for an output line containing `text` (at most `limit`); what
  // follows `text` on that line, or nullopt if the child ended or the limit
  // passed first.
  std::optional<std::string> AwaitLine(const std::string& text,
                                       std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::unique_lock lock(mu_);
    std::optional<std::string> found;
    cv_.wait_for(lock, limit, [&] {
      for (const std::string& line : lines_) {
        if (auto at = line.find(text); at != std::string::npos) {
          found = line.substr(at + text.size());
          return true;
        }
      }
      return ended_;
    });
    return found;
  }

 private:
  void Read(int fd) {
    char chunk[4096];
    std::string partial;
    for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) {
      partial.append(chunk, static_cast<size_t>(n));
      std::lock_guard lock(mu_);
      for (size_t nl; (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1)) {
        lines_.push_back(partial.substr(0, nl));
        log_ << lines_.back() << '\n' << std::flush;
      }
      cv_.notify_all();
    }
    ::close(fd);
    std::lock_guard lock(mu_);
    ended_ = true;
    cv_.notify_all();
  }

  pid_t pid_ = -1;
  std::ofstream log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  bool ended_ = false;
  std::thread reader_;
};

}  // namespace nodeplane::testing
