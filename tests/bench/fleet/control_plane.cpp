#include "control_plane.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "admin/admin_client.h"

namespace nodeplane::bench {

ControlPlane::ControlPlane(std::string nodeplaned, std::string plugin_dir, std::string config, std::string state_dir,
                           std::string log_file)
    : nodeplaned_(std::move(nodeplaned)),
      plugin_dir_(std::move(plugin_dir)),
      config_(std::move(config)),
      state_dir_(std::move(state_dir)),
      log_file_(std::move(log_file)) {}

ControlPlane::~ControlPlane() { Kill(); }

bool ControlPlane::Start() {
  child_ = std::make_unique<testing::Child>(
      std::vector<std::string>{nodeplaned_, "--config", config_, "--plugin-dir", plugin_dir_}, log_file_);
  if (child_->AwaitLine("event=host.healthy")) return true;
  child_.reset();
  return false;
}

void ControlPlane::Kill() { child_.reset(); }

int64_t ControlPlane::RssBytes() const {
  std::ifstream in("/proc/" + std::to_string(pid()) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

double ControlPlane::CpuSeconds() const {
  std::ifstream in("/proc/" + std::to_string(pid()) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) start after ')'.
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::string ControlPlane::Admin(const std::string& request) const {
  auto reply = admin::CallAdmin(state_dir_ + "/admin.sock", request);
  return reply.ok() ? *reply : "";
}

std::string ControlPlane::MetricsText() const {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(Admin(R"({"cmd":"metrics","args":{}})"), ec);
  if (ec || !v.is_object() || !v.as_object().contains("result")) return "";
  return std::string(v.at("result").at("text").as_string());
}

double ControlPlane::Metric(const std::string& name) const {
  std::istringstream text(MetricsText());
  double sum = 0;
  bool found = false;
  for (std::string line; std::getline(text, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != ' ' && next != '{') continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
    found = true;
  }
  return found ? sum : -1;
}

double HistogramQuantile(const std::string& metrics, const std::string& name, double q) {
  std::vector<std::pair<double, double>> buckets;  // upper bound, cumulative count
  std::istringstream in(metrics);
  const std::regex line("^" + name + "_bucket\\{le=\"([^\"]+)\"\\} ([0-9.e+]+)$");
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    const double le = m[1] == "+Inf" ? 1e300 : std::stod(m[1]);
    buckets.emplace_back(le, std::stod(m[2]));
  }
  if (buckets.empty() || buckets.back().second == 0) return -1;
  const double rank = q * buckets.back().second;
  double lo = 0, below = 0;
  for (const auto& [le, count] : buckets) {
    if (count >= rank) {
      if (le == 1e300) return lo;
      return lo + (le - lo) * (rank - below) / std::max(count - below, 1.0);
    }
    lo = le;
    below = count;
  }
  return lo;
}

}  // namespace nodeplane::bench
