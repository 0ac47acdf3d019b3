// The node wire's JSON: strict decoding of what nodes send (an unknown
// field, a wrong type or trailing bytes is a refusal naming the problem) and
// encoding of what the control plane answers. snake_case throughout.
//
// Boost.JSON stays inside codec.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "plane/protocol.h"
#include "ports/jit.h"
#include "ports/ledger.h"

namespace nodeplane::wire {

// Lease-operation bodies.
struct EpochBody {
  int64_t epoch = 0;
};
struct AdvanceBody {
  int64_t epoch = 0;
  ports::Phase phase = ports::Phase::kCapacity;
};
struct FailureBody {
  int64_t epoch = 0;
  std::string reason;
};
struct ReconcileBody {
  std::vector<std::string> instances;
};

struct EnrollBody {
  std::string node, csr_pem, join_token;  // join_token: SECRET
};

// JIT bodies. The runner name carries the lease (plane::RunnerNameFor).
struct JitBody {
  std::string runner_name, work_folder;
};
struct RemoveRunnerBody {
  int64_t runner_id = 0;  // 0: by the lease's runner name
};

// Each returns Invalid with a message a person can act on.
Result<plane::RegisterRequest> DecodeRegister(std::string_view body);
Result<plane::CommandResult> DecodeResult(std::string_view body);
Result<EpochBody> DecodeEpoch(std::string_view body, const char* type);  // bind, heartbeat
Result<AdvanceBody> DecodeAdvance(std::string_view body);                // advance
Result<AdvanceBody> DecodeRelease(std::string_view body);                // release: {epoch, outcome}
Result<FailureBody> DecodeFailure(std::string_view body);
Result<ReconcileBody> DecodeReconcile(std::string_view body);
Status DecodeEmpty(std::string_view body, const char* type);             // withdraw: {}
Result<EnrollBody> DecodeEnroll(std::string_view body);
Result<std::string> DecodeRenew(std::string_view body);     // {csr_pem}
Result<std::string> DecodeDescribe(std::string_view body);  // {tier}
Result<JitBody> DecodeJit(std::string_view body);
Result<RemoveRunnerBody> DecodeRemoveRunner(std::string_view body);

std::string Encode(const plane::RegisterResponse& r);
std::string Encode(const plane::Command& c);
std::string EncodeLease(const ports::Lease& l);  // {"lease": {...}}
std::string EncodeLeaseObject(const ports::Lease& l);  // the bare object, no newline (the admin API embeds it)
std::string EncodeLaunched(const std::vector<std::string>& launched, const std::vector<std::string>& quarantined);
std::string EncodeFreed(int64_t freed);
std::string EncodeError(std::string_view code, std::string_view message);
std::string EncodeHealth(const std::string& deployment);
std::string EncodeCA(const std::string& ca_pem, const std::string& fingerprint, const std::string& deployment);
std::string EncodeEnrollReply(ports::EnrollmentState state, const std::string& fingerprint,
                              const std::string& cert_pem, const std::string& ca_pem);
std::string EncodeRenewReply(const std::string& cert_pem, const std::string& ca_pem);
std::string EncodeCachePolicy(bool allowed);
// found=false answers with nothing else.
std::string EncodeDescribe(const std::optional<ports::RunnerSet>& set);
std::string EncodeJit(const ports::JitRegistration& r);  // carries a SECRET
std::string EncodeRecover(std::string_view state);       // "busy" or "retired"

// ---- The node's side: requests it sends, answers it reads leniently ----
struct JitAnswer {
  std::string config;  // SECRET
  int64_t runner_id = 0;
  std::string runner_name;
};
struct CaAnswer {
  std::string ca_pem, fingerprint, deployment;
};
struct EnrollAnswer {
  std::string state, fingerprint, cert_pem, ca_pem;
};
struct RenewAnswer {
  std::string cert_pem, ca_pem;
};
struct LaunchedAnswer {
  std::vector<std::string> launched;     // may have compute here
  std::vector<std::string> quarantined;  // expired while compute may exist: never an orphan
};
std::string Encode(const plane::RegisterRequest& q);
std::string Encode(const plane::CommandResult& r);
std::string EncodeEnroll(const EnrollBody& b);
std::string EncodeRenew(const std::string& csr_pem);
std::string EncodeJitRequest(const JitBody& b);
std::string EncodeEpochBody(int64_t epoch);                       // bind, heartbeat
std::string EncodeAdvanceBody(int64_t epoch, ports::Phase phase);
std::string EncodeReleaseBody(int64_t epoch, ports::Phase outcome);
std::string EncodeFailureBody(int64_t epoch, const std::string& reason);
std::string EncodeReconcileBody(const std::vector<std::string>& instances);
Result<plane::RegisterResponse> DecodeRegisterReply(std::string_view body);
Result<plane::Command> DecodeCommand(std::string_view body);
Result<JitAnswer> DecodeJitReply(std::string_view body);
Result<CaAnswer> DecodeCAReply(std::string_view body);
Result<EnrollAnswer> DecodeEnrollReply(std::string_view body);
Result<RenewAnswer> DecodeRenewReply(std::string_view body);
Result<LaunchedAnswer> DecodeLaunchedReply(std::string_view body);
// The lease's id, node, epoch and phase from a lease GET.
Result<ports::Lease> DecodeLeaseReply(std::string_view body);
// The "code" of an error body; "" when the body carries none.
std::string DecodeErrorCode(std::string_view body);

// Phase names on the wire; quarantine is never accepted from a node.
Result<ports::Phase> ParseWirePhase(std::string_view name);

}  // namespace nodeplane::wire
