#include "node/process_provider.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

namespace nodeplane::node {

ProcessProvider::ProcessProvider(std::string state_dir) : jobs_dir_(std::move(state_dir) + "/jobs") {
  std::filesystem::create_directories(jobs_dir_);
}

std::string ProcessProvider::PidFile(const std::string& lease) const { return jobs_dir_ + "/" + lease + ".pid"; }

std::vector<std::string> ProcessProvider::StopLeftovers() {
  std::vector<std::string> stopped;
  for (const auto& entry : std::filesystem::directory_iterator(jobs_dir_)) {
    if (entry.path().extension() != ".pid") continue;
    pid_t pid = 0;
    std::ifstream(entry.path()) >> pid;
    if (pid > 1 && ::kill(-pid, 0) == 0) ::kill(-pid, SIGKILL);
    std::filesystem::remove(entry.path());
    stopped.push_back(entry.path().stem().string());
  }
  return stopped;
}

Status ProcessProvider::Start(const std::string& lease, const std::vector<std::string>& argv, int64_t request_id,
                              const std::string& jit_config) {
  if (argv.empty()) return Status::Invalid("the tier has no command to run");
  std::lock_guard lock(mu_);
  if (running_.count(lease) != 0) return Status::Ok();  // a redelivered launch: already running
  const std::string log = jobs_dir_ + "/" + lease + ".log";
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls.
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "NODEPLANE_", 10) != 0) env_store.emplace_back(*e);
  }
  env_store.push_back("NODEPLANE_LEASE_ID=" + lease);
  env_store.push_back("NODEPLANE_REQUEST_ID=" + std::to_string(request_id));
  if (!jit_config.empty()) env_store.push_back("NODEPLANE_JIT_CONFIG=" + jit_config);
  std::vector<char*> envp, args;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store = argv;
  for (auto& a : argv_store) args.push_back(a.data());
  args.push_back(nullptr);
  int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (out < 0) return Status::Unavailable("cannot open " + log + ": " + std::strerror(errno));
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    ::close(out);
    return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  // The job starts as a fresh program would: this process blocks SIGTERM and
  // SIGINT in every thread (to take them with sigwait), and a blocked or
  // ignored signal survives exec, so a destroy's SIGTERM would never reach it.
  sigset_t none;
  sigemptyset(&none);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out);
    return Status::Unavailable(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setsid();  // its own process group: destroying it reaches its children too
    ::dup2(out, 1);
    ::dup2(out, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execvpe(args[0], args.data(), envp.data());
    int err = errno;
    (void)!::write(ready[1], &err, sizeof err);  // tell the parent why
    ::_exit(127);
  }
  ::close(out);
  ::close(ready[1]);
  int err = 0;
  ssize_t n = ::read(ready[0], &err, sizeof err);  // EOF when exec succeeded
  ::close(ready[0]);
  if (n == sizeof err) {
    ::waitpid(pid, nullptr, 0);
    return Status::Invalid("cannot run " + argv[0] + ": " + std::strerror(err));
  }
  running_[lease] = pid;
  std::ofstream(PidFile(lease)) << pid << "\n";
  return Status::Ok();
}

Status ProcessProvider::Stop(const std::string& lease, std::chrono::milliseconds grace) {
  pid_t pid = 0;
  {
    std::lock_guard lock(mu_);
    auto it = running_.find(lease);
    if (it == running_.end()) return Status::Ok();
    pid = it->second;
  }
  ::kill(-pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline && ::kill(-pid, 0) == 0) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // waiting for a process to exit
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, nullptr, WNOHANG);
  std::lock_guard lock(mu_);
  running_.erase(lease);
  std::filesystem::remove(PidFile(lease));
  return Status::Ok();
}

std::vector<Exit> ProcessProvider::Reap() {
  std::vector<Exit> exits;
  std::lock_guard lock(mu_);
  for (auto it = running_.begin(); it != running_.end();) {
    int status = 0;
    if (::waitpid(it->second, &status, WNOHANG) == it->second) {
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      exits.push_back({it->first, code});
      std::filesystem::remove(PidFile(it->first));
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return exits;
}

std::vector<std::string> ProcessProvider::Running() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [lease, pid] : running_) out.push_back(lease);
  return out;
}

}  // namespace nodeplane::node
