// The JIT source port: mints just-in-time runner registrations with the
// credentials of one GitHub target. The host holds one per target and picks
// it from the lease's tier, never from what a node asks (WithTargetJIT).
//
// Implemented by a plugin adapter (loader/jit_adapter.h) or a test fake.
// Thread-safe; every call may block on the network.
//
// SECRETS: JitRegistration::encoded_config is a runner credential. It goes
// to the entitled node and nowhere else: never into a log line or an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace nodeplane::ports {

// A runner group as GitHub describes it.
struct RunnerSet {
  int64_t id = 0;
  std::string name;
  std::vector<std::string> labels;
};

struct JitRequest {
  int64_t set_id = 0;
  std::string runner_name;
  std::vector<std::string> labels;
  std::string work_folder;
};

struct JitRegistration {
  int64_t runner_id = 0;
  std::string runner_name;
  std::string encoded_config;  // SECRET
};

struct RunnerState {
  int64_t runner_id = 0;
  bool present = false;
  bool busy = false;
};

class JitSource {
 public:
  virtual ~JitSource() = default;
  // The runner group `group` ("" for the default); NotFound when absent.
  virtual Result<RunnerSet> Describe(const std::string& group) = 0;
  // Registers a JIT runner in the set, with the request's name and labels; its config is SECRET.
  virtual Result<JitRegistration> MintJitConfig(const JitRequest& request) = 0;
  // The runner named exactly `runner_name`: found by that name (runner_id
  // 0), or by id when the source confirms the id carries that name
  // (Conflict otherwise); a runner already gone is Ok.
  virtual Status RemoveRunner(int64_t runner_id, const std::string& runner_name) = 0;
  // Whether GitHub still has a runner of that name, its id, and whether it runs a job.
  virtual Result<RunnerState> RecoverRunner(const std::string& runner_name) = 0;
};

}  // namespace nodeplane::ports
