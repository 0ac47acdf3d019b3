#include "node/job_sandbox.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace nodeplane::node {
namespace fs = std::filesystem;
namespace {

constexpr const char* kJobPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The index of the first of `paths` that `uid` can open with `flags`
// (O_RDONLY: read; O_PATH: reach), or -1; -2 when it could not be asked.
// A forked child takes the uid and lets the kernel answer.
int FirstOpenableBy(uid_t uid, const std::vector<std::string>& paths, int flags) {
  pid_t pid = ::fork();
  if (pid < 0) return -2;
  if (pid == 0) {
    if (!BecomeUid(uid)) ::_exit(255);
    for (size_t i = 0; i < paths.size() && i < 250; ++i) {
      int fd = ::open(paths[i].c_str(), flags | O_CLOEXEC | O_NONBLOCK);
      if (fd >= 0) ::_exit(static_cast<int>(i) + 1);
    }
    ::_exit(0);
  }
  int status = 0;
  pid_t waited;
  do {
    waited = ::waitpid(pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  if (waited != pid || !WIFEXITED(status) || WEXITSTATUS(status) == 255) return -2;
  return WEXITSTATUS(status) - 1;
}

Status CheckNoAccountIn(const UidRange& r) {
  ::setpwent();
  Status s = Status::Ok();
  while (const passwd* p = ::getpwent()) {
    if (p->pw_uid >= r.first && p->pw_uid <= r.last) {
      s = Status::Invalid("--job-uids " + std::to_string(r.first) + "-" + std::to_string(r.last) +
                          " includes uid " + std::to_string(p->pw_uid) + " of account \"" + p->pw_name +
                          "\": choose a range no account uses");
      break;
    }
  }
  ::endpwent();
  return s;
}

// The state directory: created 0700 when missing; refused when a job uid
// can open it or anything in it (its key above all).
Status CheckStateDir(const std::string& state_dir, uid_t probe_uid) {
  std::error_code ec;
  std::vector<std::string> paths{state_dir};
  for (const auto& e : fs::directory_iterator(state_dir, ec)) paths.push_back(e.path().string());
  const int readable = FirstOpenableBy(probe_uid, paths, O_RDONLY);
  if (readable == -2) return Status::Internal("cannot check the state directory's permissions as uid " +
                                              std::to_string(probe_uid));
  if (readable >= 0) {
    return Status::Invalid("a job (uid " + std::to_string(probe_uid) + ") could read " + paths[readable] +
                           " in the node's state directory, which holds its private key: chmod 700 " + state_dir);
  }
  return Status::Ok();
}

}  // namespace

// Raw syscalls: this runs in a forked child of a threaded process, where
// glibc's wrappers would try to reach threads that are gone.
bool BecomeUid(uid_t uid) {
  return ::syscall(SYS_setgroups, 0, nullptr) == 0 && ::syscall(SYS_setresgid, uid, uid, uid) == 0 &&
         ::syscall(SYS_setresuid, uid, uid, uid) == 0;
}

Result<std::optional<UidRange>> ParseUidRange(const std::string& text) {
  if (text == "none") return std::optional<UidRange>();
  const size_t dash = text.find('-');
  char* end = nullptr;
  UidRange r;
  if (dash != std::string::npos) {
    const unsigned long first = std::strtoul(text.substr(0, dash).c_str(), &end, 10);
    const bool first_ok = *end == '\0' && dash > 0;
    const unsigned long last = std::strtoul(text.substr(dash + 1).c_str(), &end, 10);
    if (first_ok && *end == '\0' && dash + 1 < text.size() && first >= 1000 && last >= first &&
        last < 0xFFFFFFFFul) {
      r.first = static_cast<uid_t>(first);
      r.last = static_cast<uid_t>(last);
      return std::optional<UidRange>(r);
    }
  }
  return Status::Invalid("--job-uids \"" + text + "\": expected FIRST-LAST (uids from 1000 up, FIRST <= LAST) or none");
}

Result<std::unique_ptr<JobSandbox>> JobSandbox::Open(SandboxOptions options, const std::string& state_dir) {
  std::error_code ec;
  if (options.uids) {
    if (::geteuid() != 0) {
      return Status::Invalid("--job-uids needs the agent to run as root (it gives each job a uid of its own); "
                             "run it as root, or pass --job-uids none to run jobs as this user, unisolated");
    }
    if (Status s = CheckNoAccountIn(*options.uids); !s.ok()) return s;
    fs::create_directories(options.claims_dir, ec);
    if (ec) return Status::Invalid("cannot create " + options.claims_dir + ": " + ec.message());
  }
  if (!fs::exists(state_dir, ec)) {
    fs::create_directories(state_dir, ec);
    if (ec) return Status::Invalid("cannot create the state directory " + state_dir + ": " + ec.message());
    fs::permissions(state_dir, fs::perms::owner_all, ec);
  }
  fs::create_directories(options.work_root, ec);
  if (ec) return Status::Invalid("cannot create the work root " + options.work_root + ": " + ec.message());
  // Traversable, not listable: a job reaches its own directory by name only.
  fs::permissions(options.work_root,
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
  if (ec) return Status::Invalid("cannot set the mode of " + options.work_root + ": " + ec.message());
  std::unique_ptr<JobSandbox> sandbox(new JobSandbox(std::move(options)));
  if (sandbox->o_.uids) {
    if (Status s = sandbox->CheckReach(state_dir); !s.ok()) return s;
  }
  return sandbox;
}

// The probes run as a job uid claimed as a job's is: another agent on the
// host stopping its job's leftovers kills every process of that job's uid,
// and so never a probe of this one's.
Status JobSandbox::CheckReach(const std::string& state_dir) {
  constexpr const char* kProbe = "(the start's probe)";  // never a lease id
  auto uid = Claim(kProbe, std::nullopt);
  if (!uid.ok()) return uid.status();
  Status s = CheckStateDir(state_dir, *uid);
  if (s.ok()) {
    const int reached = FirstOpenableBy(*uid, {o_.work_root}, O_PATH | O_DIRECTORY);
    if (reached == -2) {
      s = Status::Internal("cannot check the work root's permissions as uid " + std::to_string(*uid));
    } else if (reached != 0) {
      s = Status::Invalid("a job (uid " + std::to_string(*uid) + ") cannot reach the work root " + o_.work_root +
                          ": every directory above it must be searchable by others (chmod o+x), "
                          "or choose another with --work-root");
    }
  }
  Leave(kProbe);
  return s;
}

JobSandbox::~JobSandbox() {
  for (auto& [lease, claim] : claims_) ::close(claim.second);
}

Result<uid_t> JobSandbox::Claim(const std::string& lease, std::optional<uid_t> wanted) {
  const UidRange r = wanted ? UidRange{*wanted, *wanted} : *o_.uids;
  for (uid_t uid = r.first;; ++uid) {
    const std::string path = o_.claims_dir + "/" + std::to_string(uid);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return Status::Unavailable("cannot open " + path + ": " + std::strerror(errno));
    // A uid another agent holds, or one a crashed agent's job still runs
    // as (until its leftovers are stopped), is not this lease's to take.
    // (An flock conflicts with every other open of the file, this
    // process's own included, so one lock settles agents and threads.)
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && (wanted || !AnyProcessOf(uid))) {
      std::lock_guard lock(mu_);
      claims_[lease] = {uid, fd};  // the lock is this descriptor's: it stays open until Leave
      return uid;
    }
    ::close(fd);
    if (uid == r.last) break;
  }
  return Status::Unavailable("every job uid of " + std::to_string(r.first) + "-" + std::to_string(r.last) +
                             " is in use: widen --job-uids");
}

Result<JobIdentity> JobSandbox::Enter(const std::string& lease, std::optional<uid_t> uid) {
  JobIdentity who;
  who.work_dir = o_.work_root + "/" + lease;
  if (o_.uids) {
    {
      std::lock_guard lock(mu_);
      if (auto it = claims_.find(lease); it != claims_.end()) {
        who.uid = it->second.first;
        return who;
      }
    }
    auto claimed = Claim(lease, uid);
    if (!claimed.ok()) return claimed.status();
    who.uid = *claimed;
  }
  if (::mkdir(who.work_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    Leave(lease);
    return Status::Unavailable("cannot create the work directory " + who.work_dir + ": " + std::strerror(errno));
  }
  if (who.uid && ::chown(who.work_dir.c_str(), *who.uid, *who.uid) != 0) {
    Leave(lease);
    return Status::Unavailable("cannot give " + who.work_dir + " to uid " + std::to_string(*who.uid));
  }
  return who;
}

void JobSandbox::Leave(const std::string& lease) {
  std::optional<std::pair<uid_t, int>> claim;
  {
    std::lock_guard lock(mu_);
    if (auto it = claims_.find(lease); it != claims_.end()) {
      claim = it->second;
      claims_.erase(it);
    }
  }
  // Every process first, so nothing can swap a directory for a symlink
  // while it is removed (remove_all never follows one either).
  if (claim) KillAllOf(claim->first);
  std::error_code ec;
  fs::remove_all(o_.work_root + "/" + lease, ec);
  if (claim) ::close(claim->second);  // the uid is free once its processes are gone
}

std::vector<std::pair<std::string, std::optional<uid_t>>> JobSandbox::Leftovers() const {
  std::vector<std::pair<std::string, std::optional<uid_t>>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(o_.work_root, ec)) {
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    std::optional<uid_t> uid;
    if (o_.uids && st.st_uid >= o_.uids->first && st.st_uid <= o_.uids->last) uid = st.st_uid;
    out.emplace_back(e.path().filename().string(), uid);
  }
  return out;
}

std::vector<std::string> JobSandbox::Environment(const JobIdentity& who, const std::string& lease,
                                                 int64_t request_id, const std::string& jit_config) const {
  std::vector<std::string> env{std::string("PATH=") + kJobPath, "HOME=" + who.work_dir, "LANG=C.UTF-8"};
  for (std::string& v : LeaseVariables(o_.pass_env, lease, request_id, jit_config)) env.push_back(std::move(v));
  return env;
}

std::vector<std::string> LeaseVariables(const std::vector<std::string>& pass_env, const std::string& lease,
                                        int64_t request_id, const std::string& jit_config) {
  std::vector<std::string> env;
  for (const std::string& name : pass_env) {
    if (const char* v = std::getenv(name.c_str())) env.push_back(name + "=" + v);
  }
  env.push_back("NODEPLANE_LEASE_ID=" + lease);
  env.push_back("NODEPLANE_REQUEST_ID=" + std::to_string(request_id));
  // A runner older than GitHub's window exits 7 instead of updating itself
  // in place (actions/runner: ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE).
  env.push_back("ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1");
  if (!jit_config.empty()) env.push_back("ACTIONS_RUNNER_INPUT_JITCONFIG=" + jit_config);
  return env;
}

void KillAllOf(uid_t uid) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::syscall(SYS_setresuid, uid, uid, uid) != 0) ::_exit(1);
    // kill(-1) reaches every process the caller may signal (those of this
    // uid), never itself; repeated while a fork races it.
    for (int i = 0; i < 1000 && ::kill(-1, SIGKILL) == 0; ++i) {
    }
    ::_exit(0);
  }
  if (pid > 0) ::waitpid(pid, nullptr, 0);
}

bool AnyProcessOf(uid_t uid) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) == 0 && st.st_uid == uid) return true;
  }
  return false;
}

}  // namespace nodeplane::node
