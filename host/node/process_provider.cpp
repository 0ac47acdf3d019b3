#include "node/process_provider.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace nodeplane::node {
namespace {

std::string BootId() {
  std::string id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> id;
  return id;
}

// The process's start time in clock ticks since boot (/proc/<pid>/stat
// field 22), "" when there is no such process.
std::string StartTimeOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return "";
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  for (int i = 3; i <= 22 && fields >> f; ++i) {
  }
  return f;
}

// What a child that never reached its command reports, before its errno.
enum Step : int { kTakeUid = 1, kEnterWorkDir = 2, kExec = 3 };

}  // namespace

ProcessProvider::ProcessProvider(std::string state_dir, JobSandbox& sandbox)
    : jobs_dir_(std::move(state_dir) + "/jobs"), sandbox_(sandbox) {
  std::filesystem::create_directories(jobs_dir_);
}

std::string ProcessProvider::PidFile(const std::string& lease) const { return jobs_dir_ + "/" + lease + ".pid"; }

void ProcessProvider::StopRecorded(const std::string& pid_file) {
  pid_t pid = 0;
  std::string started, boot;
  std::ifstream(pid_file) >> pid >> started >> boot;
  // Only the very process the file names: after a reboot, or once it has
  // exited, the pid may be anybody's.
  if (pid > 1 && boot == BootId() && !started.empty() && StartTimeOf(pid) == started) ::kill(-pid, SIGKILL);
}

Recovered ProcessProvider::Recover() {
  Recovered r;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(jobs_dir_, ec)) {
    if (entry.path().extension() != ".pid") continue;
    StopRecorded(entry.path().string());
    std::filesystem::remove(entry.path(), ec);
    r.stopped.push_back(entry.path().stem().string());
  }
  // Then whatever else runs under the leases' uids, and their work
  // directories (a crash between the two leaves one without a pid file).
  for (const auto& [lease, uid] : sandbox_.Leftovers()) {
    if (sandbox_.Enter(lease, uid).ok()) sandbox_.Leave(lease);
    if (std::find(r.stopped.begin(), r.stopped.end(), lease) == r.stopped.end()) r.stopped.push_back(lease);
  }
  return r;
}

Status ProcessProvider::Start(const LaunchSpec& spec) {
  const std::vector<std::string>& argv = spec.tier.command;
  if (argv.empty()) return Status::Invalid("the tier has no command to run");
  std::lock_guard lock(mu_);
  if (running_.count(spec.lease) != 0) return Status::Ok();  // a redelivered launch: already running
  auto who = sandbox_.Enter(spec.lease);
  if (!who.ok()) return who.status();
  const std::string log = jobs_dir_ + "/" + spec.lease + ".log";
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls.
  std::vector<std::string> env_store = sandbox_.Environment(*who, spec.lease, spec.request_id, spec.jit_config);
  std::vector<char*> envp, args;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store = argv;
  for (auto& a : argv_store) args.push_back(a.data());
  args.push_back(nullptr);
  const std::optional<uid_t> uid = who->uid;
  const std::string work_dir = who->work_dir;
  int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out < 0) {
    sandbox_.Leave(spec.lease);
    return Status::Unavailable("cannot open " + log + ": " + std::strerror(errno));
  }
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    ::close(out);
    sandbox_.Leave(spec.lease);
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
    sandbox_.Leave(spec.lease);
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
    // Nothing of the agent's passes exec: not its sockets, not its files.
    ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
    int failed[2] = {0, 0};  // the step that failed (Step), and its errno
    if (uid && !BecomeUid(*uid)) failed[0] = kTakeUid;
    if (failed[0] == 0 && ::chdir(work_dir.c_str()) != 0) failed[0] = kEnterWorkDir;
    if (failed[0] == 0) {
      ::umask(077);
      ::execvpe(args[0], args.data(), envp.data());
      failed[0] = kExec;
    }
    failed[1] = errno;
    (void)!::write(ready[1], failed, sizeof failed);  // tell the parent why
    ::_exit(127);
  }
  ::close(out);
  ::close(ready[1]);
  int failed[2] = {0, 0};
  ssize_t n = ::read(ready[0], failed, sizeof failed);  // EOF when exec succeeded
  ::close(ready[0]);
  if (n == sizeof failed) {
    ::waitpid(pid, nullptr, 0);
    sandbox_.Leave(spec.lease);
    const std::string as = uid ? " as uid " + std::to_string(*uid) : "";
    const std::string why = std::strerror(failed[1]);
    if (failed[0] == kTakeUid) return Status::Unavailable("cannot take uid" + as + ": " + why);
    if (failed[0] == kEnterWorkDir) return Status::Invalid("cannot enter the work directory " + work_dir + as + ": " + why);
    return Status::Invalid("cannot run " + argv[0] + as + ": " + why);
  }
  running_[spec.lease] = pid;
  std::ofstream(PidFile(spec.lease)) << pid << " " << StartTimeOf(pid) << " " << BootId() << "\n";
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
  // Until it exits, or Reap on the other thread has collected it (ECHILD).
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    const pid_t w = ::waitpid(pid, nullptr, WNOHANG);
    gone = w == pid || (w < 0 && errno == ECHILD);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // waiting for a process to exit
  }
  ::kill(-pid, SIGKILL);
  if (!gone) ::waitpid(pid, nullptr, 0);
  sandbox_.Leave(lease);
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
      exits.push_back({it->first, code, ""});
      sandbox_.Leave(it->first);  // and whatever the job left running
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
