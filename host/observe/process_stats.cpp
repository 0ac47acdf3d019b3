#include "observe/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace nodeplane::observe {
namespace {

void One(std::string& out, const char* name, const char* type, const char* help, double value) {
  char num[40];
  std::snprintf(num, sizeof num, "%.17g", value);
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + num + "\n";
}

// The fields of /proc/self/stat after the command name, numbered as in
// proc(5) from field 3 (state) on; empty when unreadable.
std::vector<std::string> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> fields{"", "", ""};  // fields 0..2: none, pid, comm
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

double BootTimeSeconds() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double t = 0;
      in >> t;
      return t;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

void RenderProcessMetrics(std::string& out) {
  const std::vector<std::string> f = StatFields();
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  if (f.size() > 24 && ticks > 0) {
    One(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
        (std::stod(f[14]) + std::stod(f[15])) / ticks);
    One(out, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
        BootTimeSeconds() + std::stod(f[22]) / ticks);
    One(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", std::stod(f[23]));
    One(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", std::stod(f[24]) * page);
  }
  std::error_code ec;
  size_t fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++fds;
  if (!ec) One(out, "process_open_fds", "gauge", "Number of open file descriptors.", static_cast<double>(fds));
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    One(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.", static_cast<double>(limit.rlim_cur));
  }
}

}  // namespace nodeplane::observe
