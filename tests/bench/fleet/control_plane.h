// nodeplaned as the fleet benchmark runs it: a child process on a generated
// config, watched through /proc (resident memory, CPU time) and driven
// through its admin socket, as an operator's nodeplanectl would.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "child_process.h"

namespace nodeplane::bench {

class ControlPlane {
 public:
  // `nodeplaned` and `plugin_dir` as built; `config` a TOML file whose
  // state_dir holds the admin socket "admin.sock".
  ControlPlane(std::string nodeplaned, std::string plugin_dir, std::string config, std::string state_dir,
               std::string log_file);
  ~ControlPlane();

  // Starts it and waits for its own report that it serves (the
  // host.healthy log line); false on failure.
  bool Start();
  // SIGKILL, then reaps it: a crash, as far as the nodes can tell.
  void Kill();
  pid_t pid() const { return child_ ? child_->pid() : -1; }

  // /proc/<pid>: resident set size in bytes, and user+system CPU seconds.
  int64_t RssBytes() const;
  double CpuSeconds() const;

  // One admin request ({"cmd":..,"args":{..}} as JSON text); the final line
  // of the answer, "" when the socket is unreachable.
  std::string Admin(const std::string& request) const;
  // The metrics text, "" when the socket is unreachable.
  std::string MetricsText() const;
  // A gauge from the metrics text: the sum of `name`'s samples over their
  // labels; -1 if absent.
  double Metric(const std::string& name) const;

 private:
  std::string nodeplaned_, plugin_dir_, config_, state_dir_, log_file_;
  std::unique_ptr<testing::Child> child_;
};

// The q-quantile of a Prometheus histogram family in `metrics`, interpolated
// within its bucket as histogram_quantile does; -1 when it has no samples.
double HistogramQuantile(const std::string& metrics, const std::string& name, double q);

}  // namespace nodeplane::bench
