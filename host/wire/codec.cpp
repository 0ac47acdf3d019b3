#include "wire/codec.h"

#include <boost/json.hpp>
#include <set>

namespace nodeplane::wire {
namespace json = boost::json;
namespace {

// Reads one JSON object strictly: every key must be asked for, with the
// right type.
class Reader {
 public:
  Reader(std::string_view body, const char* type) : type_(type) {
    json::parse_options opts;
    opts.max_depth = 16;
    boost::system::error_code ec;
    json::value v = json::parse(json::string_view(body.data(), body.size()), ec, {}, opts);
    if (ec) {
      status_ = Status::Invalid(std::string(type_) + ": the body is not one JSON value: " + ec.message());
    } else if (!v.is_object()) {
      status_ = Status::Invalid(std::string(type_) + ": the body must be a JSON object");
    } else {
      obj_ = v.as_object();
    }
  }

  // A nested object (a command's lease, tier, job) read with the same rules.
  Reader(const json::object& obj, const char* type) : type_(type), obj_(obj) {}

  bool ok() const { return status_.ok(); }
  Status status() const { return status_; }
  const json::object* Object(const char* key) {
    const json::value* v = Get(key);
    if (v == nullptr || v->is_null()) return nullptr;
    if (v->is_object()) return &v->as_object();
    Bad(key, "an object");
    return nullptr;
  }

  const json::value* Get(const char* key) {
    known_.insert(key);
    return obj_.if_contains(key);
  }
  void Bad(const char* key, const char* expected) {
    if (status_.ok()) {
      status_ = Status::Invalid(std::string(type_) + ": field \"" + key + "\" must be " + expected);
    }
  }
  // An integer in [lo, hi]; anything else (a fraction, a number out of the
  // field's range, a string) refuses the message, never wraps or truncates.
  // Absent is 0. Every field of this protocol is a count, a size, an id or
  // an epoch: none is negative.
  int64_t Int(const char* key, int64_t hi = INT64_MAX) {
    const json::value* v = Get(key);
    if (v == nullptr || v->is_null()) return 0;
    if (v->is_int64() && v->as_int64() >= 0 && v->as_int64() <= hi) return v->as_int64();
    if (status_.ok()) {
      status_ = Status::Invalid(std::string(type_) + ": field \"" + key + "\" must be an integer from 0 to " +
                                std::to_string(hi));
    }
    return 0;
  }
  int32_t Int32(const char* key) { return static_cast<int32_t>(Int(key, INT32_MAX)); }
  bool Bool(const char* key) {
    const json::value* v = Get(key);
    if (v == nullptr || v->is_null()) return false;
    if (v->is_bool()) return v->as_bool();
    Bad(key, "true or false");
    return false;
  }
  std::string String(const char* key) {
    const json::value* v = Get(key);
    if (v == nullptr || v->is_null()) return {};
    if (v->is_string()) return std::string(v->as_string());
    Bad(key, "a string");
    return {};
  }
  std::vector<std::string> Strings(const char* key) {
    const json::value* v = Get(key);
    std::vector<std::string> out;
    if (v == nullptr || v->is_null()) return out;  // null is absent
    if (!v->is_array()) {
      Bad(key, "an array of strings");
      return out;
    }
    for (const json::value& e : v->as_array()) {
      if (!e.is_string()) {
        Bad(key, "an array of strings");
        return {};
      }
      out.emplace_back(e.as_string());
    }
    return out;
  }
  // Refuses every field nobody asked for: a newer node's extra field is a
  // version mismatch, not something to ignore.
  Status Finish() {
    if (!status_.ok()) return status_;
    for (const auto& kv : obj_) {
      std::string key(kv.key());
      if (known_.count(key) == 0) {
        return Status::Invalid(std::string(type_) + ": unknown field \"" + key + "\"");
      }
    }
    return Status::Ok();
  }

 private:
  const char* type_;
  Status status_;
  json::object obj_;
  std::set<std::string> known_;
};

json::array Array(const std::vector<std::string>& v) {
  json::array a;
  for (const std::string& s : v) a.emplace_back(s);
  return a;
}

std::string Serialize(const json::value& v) { return json::serialize(v) + "\n"; }

json::object LeaseObject(const ports::Lease& l) {
  json::object o;
  o["id"] = l.id;
  o["tier"] = l.tier;
  o["node"] = l.node;
  o["target_node"] = l.target_node;
  o["phase"] = ports::PhaseName(l.phase);
  o["epoch"] = l.epoch;
  o["vcpu"] = l.vcpu;
  o["memory"] = l.memory;
  o["requested_vcpu"] = l.requested_vcpu;
  o["requested_memory"] = l.requested_memory;
  o["instance_type"] = l.instance_type;
  o["run_id"] = l.run_id;
  o["request_id"] = l.request_id;
  o["guest_os"] = l.guest_os;
  json::array providers;
  for (const std::string& p : ports::ProvidersOf(l)) providers.emplace_back(p);
  o["providers"] = std::move(providers);
  o["chosen_provider"] = l.chosen_provider;
  o["site"] = l.site;
  o["failure_reason"] = l.failure_reason;
  o["force_release"] = l.force_release;
  o["expires_at_ns"] = l.expires_at_ns;
  return o;
}

}  // namespace

Result<ports::Phase> ParseWirePhase(std::string_view name) {
  static const std::pair<const char*, ports::Phase> kPhases[] = {
      {"capacity", ports::Phase::kCapacity}, {"assigned", ports::Phase::kAssigned},
      {"launching", ports::Phase::kLaunching}, {"online", ports::Phase::kOnline},
      {"busy", ports::Phase::kBusy},           {"custody", ports::Phase::kCustody},
      {"teardown", ports::Phase::kTeardown},   {"done", ports::Phase::kDone},
      {"failed", ports::Phase::kFailed}};
  for (const auto& [n, p] : kPhases) {
    if (name == n) return p;
  }
  return Status::Invalid("unknown lease phase \"" + std::string(name) + "\"");
}

Result<plane::RegisterRequest> DecodeRegister(std::string_view body) {
  Reader r(body, "register");
  plane::RegisterRequest q;
  q.min_version = r.Int32("min_version");
  q.version = r.Int32("version");
  q.node = r.String("node");
  q.provider = r.String("provider");
  q.site = r.String("site");
  q.deployment = r.String("deployment");
  q.incarnation = r.String("incarnation");
  q.release = r.String("release");
  q.guest_os = r.Strings("guest_os");
  q.vcpu = r.Int("vcpu");
  q.memory = r.Int("memory");
  q.instances = r.Strings("instances");
  q.inventory_known = r.Bool("inventory_known");
  if (Status s = r.Finish(); !s.ok()) return s;
  return q;
}

Result<plane::CommandResult> DecodeResult(std::string_view body) {
  Reader r(body, "result");
  plane::CommandResult c;
  c.id = r.String("id");
  c.ok = r.Bool("ok");
  c.error = r.String("error");
  c.custody = r.Bool("custody");
  c.barrier_id = r.String("barrier_id");
  c.instances = r.Strings("instances");
  if (Status s = r.Finish(); !s.ok()) return s;
  if (c.id.empty()) return Status::Invalid("result: field \"id\" names the command being answered");
  return c;
}

Result<EpochBody> DecodeEpoch(std::string_view body, const char* type) {
  Reader r(body, type);
  EpochBody b;
  b.epoch = r.Int("epoch");
  r.String("node");  // bind's node is ignored: the path (or certificate) decides
  if (Status s = r.Finish(); !s.ok()) return s;
  return b;
}

Result<AdvanceBody> DecodeAdvance(std::string_view body) {
  Reader r(body, "advance");
  AdvanceBody b;
  b.epoch = r.Int("epoch");
  std::string phase = r.String("phase");
  if (Status s = r.Finish(); !s.ok()) return s;
  auto p = ParseWirePhase(phase);
  if (!p.ok()) return p.status();
  b.phase = *p;
  return b;
}

Result<AdvanceBody> DecodeRelease(std::string_view body) {
  Reader r(body, "release");
  AdvanceBody b;
  b.epoch = r.Int("epoch");
  std::string outcome = r.String("outcome");
  if (Status s = r.Finish(); !s.ok()) return s;
  if (outcome != "done" && outcome != "failed") {
    return Status::Invalid("release: outcome must be \"done\" or \"failed\", got \"" + outcome + "\"");
  }
  b.phase = outcome == "done" ? ports::Phase::kDone : ports::Phase::kFailed;
  return b;
}

Result<FailureBody> DecodeFailure(std::string_view body) {
  Reader r(body, "failure");
  FailureBody b;
  b.epoch = r.Int("epoch");
  b.reason = r.String("reason");
  if (Status s = r.Finish(); !s.ok()) return s;
  return b;
}

Result<ReconcileBody> DecodeReconcile(std::string_view body) {
  Reader r(body, "reconcile");
  ReconcileBody b;
  b.instances = r.Strings("instances");
  if (Status s = r.Finish(); !s.ok()) return s;
  return b;
}

Status DecodeEmpty(std::string_view body, const char* type) {
  Reader r(body, type);
  return r.Finish();
}

Result<EnrollBody> DecodeEnroll(std::string_view body) {
  Reader r(body, "enroll");
  EnrollBody b;
  b.node = r.String("node");
  b.csr_pem = r.String("csr_pem");
  b.join_token = r.String("join_token");
  if (Status s = r.Finish(); !s.ok()) return s;
  return b;
}

Result<std::string> DecodeRenew(std::string_view body) {
  Reader r(body, "renew");
  std::string csr = r.String("csr_pem");
  if (Status s = r.Finish(); !s.ok()) return s;
  if (csr.empty()) return Status::Invalid("renew: field \"csr_pem\" must name the new key's certificate request");
  return csr;
}

Result<std::string> DecodeDescribe(std::string_view body) {
  Reader r(body, "describe");
  std::string tier = r.String("tier");
  if (Status s = r.Finish(); !s.ok()) return s;
  if (tier.empty()) return Status::Invalid("describe: field \"tier\" must name a tier of the catalogue");
  return tier;
}

Result<JitBody> DecodeJit(std::string_view body) {
  Reader r(body, "jit");
  JitBody b;
  b.runner_name = r.String("runner_name");
  b.work_folder = r.String("work_folder");
  if (Status s = r.Finish(); !s.ok()) return s;
  return b;
}

Result<RemoveRunnerBody> DecodeRemoveRunner(std::string_view body) {
  Reader r(body, "runner_remove");
  RemoveRunnerBody b;
  b.runner_id = r.Int("runner_id");
  if (Status s = r.Finish(); !s.ok()) return s;
  if (b.runner_id < 0) return Status::Invalid("runner_remove: field \"runner_id\" must not be negative");
  return b;
}

std::string EncodeRenewReply(const std::string& cert_pem, const std::string& ca_pem) {
  return Serialize(json::object{{"cert_pem", cert_pem}, {"ca_pem", ca_pem}});
}

std::string EncodeCachePolicy(bool allowed) { return Serialize(json::object{{"allowed", allowed}}); }

std::string EncodeDescribe(const std::optional<ports::RunnerSet>& set) {
  if (!set) return Serialize(json::object{{"found", false}});
  json::array labels;
  for (const std::string& l : set->labels) labels.emplace_back(l);
  return Serialize(json::object{{"found", true}, {"id", set->id}, {"name", set->name}, {"labels", labels}});
}

std::string EncodeJit(const ports::JitRegistration& r) {
  return Serialize(json::object{{"config", r.encoded_config}, {"runner_id", r.runner_id}, {"runner_name", r.runner_name}});
}

std::string EncodeRecover(std::string_view state) {
  return Serialize(json::object{{"state", json::string_view(state.data(), state.size())}});
}

std::string EncodeHealth(const std::string& deployment) {
  return Serialize(json::object{{"status", "ok"}, {"deployment", deployment}});
}

std::string EncodeCA(const std::string& ca_pem, const std::string& fingerprint, const std::string& deployment) {
  return Serialize(json::object{{"ca_pem", ca_pem}, {"fingerprint", fingerprint}, {"deployment", deployment}});
}

std::string EncodeEnrollReply(ports::EnrollmentState state, const std::string& fingerprint,
                              const std::string& cert_pem, const std::string& ca_pem) {
  const char* name = state == ports::EnrollmentState::kApproved ? "approved"
                     : state == ports::EnrollmentState::kDenied ? "denied"
                                                                : "pending";
  json::object o{{"state", name}, {"fingerprint", fingerprint}};
  if (!cert_pem.empty()) o["cert_pem"] = cert_pem;
  if (!ca_pem.empty()) o["ca_pem"] = ca_pem;
  return Serialize(o);
}

std::string Encode(const plane::RegisterResponse& r) {
  json::object o;
  o["version"] = r.version;
  o["min_version"] = r.min_version;
  o["max_version"] = r.max_version;
  o["deployment"] = r.deployment;
  o["lease_ttl_seconds"] = r.lease_ttl_seconds;
  o["poll_seconds"] = r.poll_seconds;
  return Serialize(o);
}

std::string Encode(const plane::Command& c) {
  json::object o;
  o["id"] = c.id;
  o["kind"] = plane::CommandKindName(c.kind);
  if (c.lease) o["lease"] = LeaseObject(*c.lease);
  if (c.job) {
    o["job"] = json::object{{"request_id", c.job->request_id}, {"run_id", c.job->run_id},
                            {"event", c.job->event},           {"owner", c.job->owner},
                            {"repository", c.job->repository}, {"workflow_ref", c.job->workflow_ref}};
  }
  if (c.tier) {
    o["tier"] = json::object{{"label", c.tier->label},
                             {"vcpu", c.tier->vcpu},
                             {"memory", c.tier->memory},
                             {"guest_os", c.tier->guest_os},
                             {"image", c.tier->image},
                             {"command", Array(c.tier->command)},
                             {"runner_group", c.tier->runner_group},
                             {"labels", Array(c.tier->labels)},
                             {"has_target", c.tier->has_target}};
  }
  if (c.request_id != 0) o["request_id"] = c.request_id;
  if (!c.job_result.empty()) o["job_result"] = c.job_result;
  if (!c.barrier_id.empty()) o["barrier_id"] = c.barrier_id;
  if (c.upgrade) {
    o["upgrade"] = json::object{{"version", c.upgrade->version},
                                {"manifest_sha256", c.upgrade->manifest_sha256},
                                {"rollout_id", c.upgrade->rollout_id},
                                {"generation", c.upgrade->generation}};
  }
  return Serialize(o);
}

std::string EncodeLease(const ports::Lease& l) { return Serialize(json::object{{"lease", LeaseObject(l)}}); }

std::string EncodeLeaseObject(const ports::Lease& l) { return json::serialize(LeaseObject(l)); }

std::string EncodeLaunched(const std::vector<std::string>& launched, const std::vector<std::string>& quarantined) {
  return Serialize(json::object{{"lease_ids", Array(launched)}, {"quarantined", Array(quarantined)}});
}

std::string EncodeFreed(int64_t freed) { return Serialize(json::object{{"freed", freed}}); }

std::string EncodeError(std::string_view code, std::string_view message) {
  return Serialize(json::object{{"code", json::string(code)}, {"message", json::string(message)}});
}

// ---- The node's side ----
// A node reads the control plane's answers leniently: a newer control plane
// may add fields, and the negotiated version says what the node may rely on.

std::string Encode(const plane::RegisterRequest& q) {
  json::object o;
  o["min_version"] = q.min_version;
  o["version"] = q.version;
  o["node"] = q.node;
  o["provider"] = q.provider;
  if (!q.site.empty()) o["site"] = q.site;
  o["deployment"] = q.deployment;
  o["incarnation"] = q.incarnation;
  o["release"] = q.release;
  if (!q.guest_os.empty()) o["guest_os"] = Array(q.guest_os);
  o["vcpu"] = q.vcpu;
  o["memory"] = q.memory;
  o["instances"] = Array(q.instances);
  o["inventory_known"] = q.inventory_known;
  return Serialize(o);
}

std::string Encode(const plane::CommandResult& r) {
  json::object o;
  o["id"] = r.id;
  o["ok"] = r.ok;
  if (!r.error.empty()) o["error"] = r.error;
  if (r.custody) o["custody"] = true;
  if (!r.barrier_id.empty()) {
    o["barrier_id"] = r.barrier_id;
    o["instances"] = Array(r.instances);
  }
  return Serialize(o);
}

Result<plane::RegisterResponse> DecodeRegisterReply(std::string_view body) {
  Reader r(body, "register reply");
  plane::RegisterResponse out;
  out.version = r.Int32("version");
  out.min_version = r.Int32("min_version");
  out.max_version = r.Int32("max_version");
  out.deployment = r.String("deployment");
  out.lease_ttl_seconds = r.Int("lease_ttl_seconds");
  out.poll_seconds = r.Int("poll_seconds");
  if (!r.ok()) return r.status();
  return out;
}

Result<plane::Command> DecodeCommand(std::string_view body) {
  Reader r(body, "command");
  plane::Command c;
  c.id = r.String("id");
  const std::string kind = r.String("kind");
  bool known = false;
  for (plane::CommandKind k : {plane::CommandKind::kLaunch, plane::CommandKind::kDestroy, plane::CommandKind::kSweep,
                               plane::CommandKind::kTend, plane::CommandKind::kInventory, plane::CommandKind::kUpgrade}) {
    if (kind == plane::CommandKindName(k)) {
      c.kind = k;
      known = true;
    }
  }
  if (const json::object* l = r.Object("lease")) {
    Reader lr(*l, "command.lease");
    ports::Lease lease;
    lease.id = lr.String("id");
    lease.tier = lr.String("tier");
    lease.node = lr.String("node");
    lease.epoch = lr.Int("epoch");
    lease.vcpu = lr.Int("vcpu");
    lease.memory = lr.Int("memory");
    lease.request_id = lr.Int("request_id");
    lease.run_id = lr.Int("run_id");
    if (!lr.ok()) return lr.status();
    c.lease = lease;
  }
  if (const json::object* j = r.Object("job")) {
    Reader jr(*j, "command.job");
    c.job = plane::Job{jr.Int("request_id"), jr.Int("run_id"), jr.String("event"),
                       jr.String("owner"), jr.String("repository"), jr.String("workflow_ref")};
    if (!jr.ok()) return jr.status();
  }
  if (const json::object* t = r.Object("tier")) {
    Reader tr(*t, "command.tier");
    plane::TierShape tier;
    tier.label = tr.String("label");
    tier.vcpu = tr.Int("vcpu");
    tier.memory = tr.Int("memory");
    tier.guest_os = tr.String("guest_os");
    tier.image = tr.String("image");
    tier.command = tr.Strings("command");
    tier.runner_group = tr.String("runner_group");
    tier.labels = tr.Strings("labels");
    tier.has_target = tr.Bool("has_target");
    if (!tr.ok()) return tr.status();
    c.tier = tier;
  }
  c.request_id = r.Int("request_id");
  c.job_result = r.String("job_result");
  c.barrier_id = r.String("barrier_id");
  if (const json::object* u = r.Object("upgrade")) {
    Reader ur(*u, "command.upgrade");
    c.upgrade = plane::UpgradeSpec{ur.String("version"), ur.String("manifest_sha256"), ur.String("rollout_id"),
                                   ur.Int("generation")};
    if (!ur.ok()) return ur.status();
  }
  if (!r.ok()) return r.status();
  if (!known) return Status::Invalid("command: unknown kind \"" + kind + "\"");
  if (c.kind == plane::CommandKind::kLaunch && (!c.lease || !c.tier)) {
    return Status::Invalid("command: a launch without its lease or tier");
  }
  return c;
}

Result<JitAnswer> DecodeJitReply(std::string_view body) {
  Reader r(body, "jit reply");
  JitAnswer a;
  a.config = r.String("config");
  a.runner_id = r.Int("runner_id");
  a.runner_name = r.String("runner_name");
  if (!r.ok()) return r.status();
  if (a.config.empty()) return Status::Invalid("jit reply: no config");
  return a;
}

Result<CaAnswer> DecodeCAReply(std::string_view body) {
  Reader r(body, "ca reply");
  CaAnswer a;
  a.ca_pem = r.String("ca_pem");
  a.fingerprint = r.String("fingerprint");
  a.deployment = r.String("deployment");
  if (!r.ok()) return r.status();
  return a;
}

Result<EnrollAnswer> DecodeEnrollReply(std::string_view body) {
  Reader r(body, "enroll reply");
  EnrollAnswer a;
  a.state = r.String("state");
  a.fingerprint = r.String("fingerprint");
  a.cert_pem = r.String("cert_pem");
  a.ca_pem = r.String("ca_pem");
  if (!r.ok()) return r.status();
  return a;
}

Result<RenewAnswer> DecodeRenewReply(std::string_view body) {
  Reader r(body, "renew reply");
  RenewAnswer a;
  a.cert_pem = r.String("cert_pem");
  a.ca_pem = r.String("ca_pem");
  if (!r.ok()) return r.status();
  if (a.cert_pem.empty() || a.ca_pem.empty()) return Status::Invalid("renew reply: no certificate");
  return a;
}

Result<LaunchedAnswer> DecodeLaunchedReply(std::string_view body) {
  Reader r(body, "launched reply");
  LaunchedAnswer a{r.Strings("lease_ids"), r.Strings("quarantined")};
  if (!r.ok()) return r.status();
  return a;
}

Result<ports::Lease> DecodeLeaseReply(std::string_view body) {
  Reader r(body, "lease reply");
  const json::object* l = r.Object("lease");
  if (!r.ok()) return r.status();
  if (l == nullptr) return Status::Invalid("lease reply: no lease");
  Reader lr(*l, "lease reply.lease");
  ports::Lease lease;
  lease.id = lr.String("id");
  lease.node = lr.String("node");
  lease.epoch = lr.Int("epoch");
  const std::string phase = lr.String("phase");
  if (!lr.ok()) return lr.status();
  for (int32_t n = 1; n <= 10; ++n) {
    if (phase == ports::PhaseName(static_cast<ports::Phase>(n))) {
      lease.phase = static_cast<ports::Phase>(n);
      return lease;
    }
  }
  return Status::Invalid("lease reply: unknown phase \"" + phase.substr(0, 40) + "\"");
}

std::string DecodeErrorCode(std::string_view body) {
  Reader r(body, "error");
  std::string code = r.String("code");
  return r.ok() ? code : std::string();
}

std::string EncodeEnroll(const EnrollBody& b) {
  return Serialize(json::object{{"node", b.node}, {"csr_pem", b.csr_pem}, {"join_token", b.join_token}});
}
std::string EncodeRenew(const std::string& csr_pem) { return Serialize(json::object{{"csr_pem", csr_pem}}); }
std::string EncodeJitRequest(const JitBody& b) {
  return Serialize(json::object{{"runner_name", b.runner_name}, {"work_folder", b.work_folder}});
}
std::string EncodeEpochBody(int64_t epoch) { return Serialize(json::object{{"epoch", epoch}}); }
std::string EncodeAdvanceBody(int64_t epoch, ports::Phase phase) {
  return Serialize(json::object{{"epoch", epoch}, {"phase", ports::PhaseName(phase)}});
}
std::string EncodeReleaseBody(int64_t epoch, ports::Phase outcome) {
  return Serialize(json::object{{"epoch", epoch}, {"outcome", ports::PhaseName(outcome)}});
}
std::string EncodeReconcileBody(const std::vector<std::string>& instances) {
  return Serialize(json::object{{"instances", Array(instances)}});
}
std::string EncodeFailureBody(int64_t epoch, const std::string& reason) {
  return Serialize(json::object{{"epoch", epoch}, {"reason", reason}});
}

}  // namespace nodeplane::wire
