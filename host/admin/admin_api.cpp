#include "admin/admin_api.h"

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <thread>

#include "common/names.h"
#include "common/units.h"
#include "jobs/launch_assigned.h"
#include "protocol/codec.h"
#include "version.h"

namespace nodeplane::admin {
namespace json = boost::json;
namespace {

// How long a finished request is remembered: a launch of the same request
// id within a day answers the lease that served it.
constexpr int64_t kRequestMemoryNs = kDayNs;

// A command's answer: the result as JSON text, or why not.
using Answer = Result<std::string>;

struct Request {
  const json::object& args;
  const AdminSocket::Progress& progress;
  std::stop_token stop;

  std::string String(const char* key, const std::string& fallback = "") const {
    const json::value* v = args.if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->as_string()) : fallback;
  }
  int64_t Int(const char* key, int64_t fallback = 0) const {
    const json::value* v = args.if_contains(key);
    return v != nullptr && v->is_int64() ? v->as_int64() : fallback;
  }
  bool Bool(const char* key) const {
    const json::value* v = args.if_contains(key);
    return v != nullptr && v->is_bool() && v->as_bool();
  }
  void Say(const std::string& text) const { progress(json::serialize(json::object{{"progress", text}})); }
};

std::string Text(const json::value& v) { return json::serialize(v); }

const char* CodeName(const Status& s) {
  if (plane::Is(s, plane::kNoNode)) return "no_node";
  switch (s.code()) {
    case Code::kInvalid: return "invalid";
    case Code::kNotFound: return "not_found";
    case Code::kUnavailable: return "unavailable";
    case Code::kConflict:
    case Code::kRefused:
    case Code::kFenced: return "refused";
    default: return "internal";
  }
}

Status NeedName(const std::string& what, const std::string& name) {
  if (IsValidName(name)) return Status::Ok();
  return Status::Invalid(what + " must be 1 to 64 of [a-zA-Z0-9._-], starting with a letter or digit");
}

json::object NodeObject(const ports::Node& n) {
  return json::object{{"name", n.name},
                      {"provider", n.provider},
                      {"site", n.site},
                      {"incarnation", n.incarnation},
                      {"epoch", n.epoch},
                      {"vcpu", n.total_vcpu},
                      {"memory", n.total_memory},
                      {"last_seen_at_ns", n.last_seen_at_ns},
                      {"wire_version", n.wire_version},
                      {"state", n.withdrawn ? "withdrawn" : n.live ? "live" : "gone"}};
}

std::string LeaseArray(const std::vector<ports::Lease>& leases) {
  std::string out = "[";
  for (size_t i = 0; i < leases.size(); ++i) out += (i ? "," : "") + protocol::EncodeValue(leases[i]);
  return out + "]";
}

}  // namespace

AdminApi::AdminApi(AdminDeps deps) : d_(std::move(deps)) {
  if (!d_.now_ns) d_.now_ns = WallNowNs;
}

std::string AdminApi::Handle(const std::string& request, const AdminSocket::Progress& progress, std::stop_token stop) {
  auto fail = [](const Status& s) {
    return Text(json::object{{"ok", false}, {"code", CodeName(s)}, {"error", s.message()}});
  };
  boost::system::error_code ec;
  json::value parsed = json::parse(request, ec);
  if (ec || !parsed.is_object() || !parsed.as_object().contains("cmd") || !parsed.as_object().at("cmd").is_string()) {
    return fail(Status::Invalid("a request is one JSON object {\"cmd\": \"...\", \"args\": {...}} on one line"));
  }
  const std::string cmd(parsed.as_object().at("cmd").as_string());
  static const json::object kNoArgs;
  const json::value* args = parsed.as_object().if_contains("args");
  const Request r{args != nullptr && args->is_object() ? args->as_object() : kNoArgs, progress, stop};
  ports::Ledger& ledger = *d_.ledger;
  const pki::Authority* ca = d_.authority;
  auto count = [this](std::atomic<uint64_t> LeaseEvents::*event) {
    if (d_.lease_events != nullptr) ++(d_.lease_events->*event);
  };
  auto no_ca = [] {
    return Status::Refused("this host has no certificate authority: it serves the loopback wire; add [wire.tls] "
                           "(and run `nodeplanectl ca init`)");
  };

  // Each command answers JSON text, or a Status saying why not.
  using Command = std::function<Answer()>;
  const std::map<std::string, Command> commands = {
      {"status",
       [&]() -> Answer {
         auto admission = ledger.AdmissionGeneration();
         if (!admission.ok()) return admission.status();
         plane::Plane::Stats st = d_.plane->GetStats();
         return Text(json::object{{"deployment", d_.config->deployment},
                                  {"version", NODEPLANE_VERSION},
                                  {"nodes", st.nodes},
                                  {"tls", ca != nullptr},
                                  {"ca_fingerprint", ca != nullptr ? ca->fingerprint() : ""},
                                  {"admission", admission->second ? "sealed" : "open"}});
       }},
      {"ca.init",
       [&]() -> Answer {
         if (ca != nullptr) return Text(json::object{{"fingerprint", ca->fingerprint()}, {"created", false}});
         auto fp = d_.init_ca();
         if (!fp.ok()) return fp.status();
         return Text(json::object{{"fingerprint", *fp}, {"created", true}});
       }},
      {"ca.rotate",
       [&]() -> Answer {
         auto fp = d_.rotate_ca();
         if (!fp.ok()) return fp.status();
         d_.log->Info("admin.ca_rotated", {{"fingerprint", *fp}});
         return Text(json::object{{"fingerprint", *fp},
                                  {"next", "restart nodeplaned; nodes take the new CA when they renew; then ca retire"}});
       }},
      {"ca.retire",
       [&]() -> Answer {
         if (Status s = d_.retire_ca(); !s.ok()) return s;
         d_.log->Info("admin.ca_retired");
         return Text(json::object{{"retired", true}, {"next", "restart nodeplaned"}});
       }},
      {"ca.show",
       [&]() -> Answer {
         if (ca == nullptr) return no_ca();
         return Text(json::object{
             {"fingerprint", ca->fingerprint()}, {"ca_pem", ca->trust_bundle_pem()}, {"rotating", ca->rotating()}});
       }},
      {"ca.issue",
       [&]() -> Answer {
         const std::string node = r.String("node");
         if (Status s = NeedName("node", node); !s.ok()) return s;
         if (ca == nullptr) return no_ca();
         auto issued = ca->IssueNode(node, d_.now_ns());
         if (!issued.ok()) return issued.status();
         auto info = pki::InspectCert(issued->first);
         if (!info.ok()) return info.status();
         // Recorded before it is handed out, so it can always be revoked (R40).
         if (Status s = ledger.RecordIssuedCert({info->serial, node, "issued", info->not_after_ns, d_.now_ns(), false});
             !s.ok()) {
           return s;
         }
         d_.log->Info("admin.cert_issued", {{"node", node}, {"serial", info->serial}});
         return Text(json::object{{"node", node},
                                  {"serial", info->serial},
                                  {"cert_pem", issued->first},
                                  {"key_pem", issued->second.private_pem},
                                  {"ca_pem", ca->trust_bundle_pem()}});
       }},
      {"tokens.create",
       [&]() -> Answer {
         const int64_t uses = r.Int("uses", 1), ttl = r.Int("ttl_seconds", 3600);
         if (uses < 1) return Status::Invalid("uses must be at least 1");
         if (ttl < 1) return Status::Invalid("ttl_seconds must be at least 1");
         auto token = pki::NewJoinToken();
         if (!token.ok()) return token.status();
         const std::string hash = pki::JoinTokenHash(*token);
         const int64_t expires = d_.now_ns() + ttl * kSecondNs;
         if (Status s = ledger.CreateJoinToken(hash, uses, expires, r.String("note")); !s.ok()) return s;
         d_.log->Info("admin.token_created", {{"id", hash.substr(0, 12)}, {"uses", uses}});
         return Text(json::object{{"token", *token}, {"id", hash.substr(0, 12)}, {"uses", uses}, {"expires_at_ns", expires}});
       }},
      {"tokens.list",
       [&]() -> Answer {
         auto tokens = ledger.ListJoinTokens();
         if (!tokens.ok()) return tokens.status();
         json::array out;
         for (const auto& t : *tokens) {
           out.push_back(json::object{{"id", t.token_sha256.substr(0, 12)},
                                      {"uses_remaining", t.uses_remaining},
                                      {"expires_at_ns", t.expires_at_ns},
                                      {"note", t.note}});
         }
         return Text(out);
       }},
      {"tokens.revoke",
       [&]() -> Answer {
         const std::string id = r.String("id");
         if (id.size() < 6) return Status::Invalid("name the token by its id (at least 6 characters of it)");
         auto tokens = ledger.ListJoinTokens();
         if (!tokens.ok()) return tokens.status();
         std::string match;
         for (const auto& t : *tokens) {
           if (t.token_sha256.rfind(id, 0) != 0) continue;
           if (!match.empty()) return Status::Invalid("more than one token starts with " + id + "; give more of it");
           match = t.token_sha256;
         }
         if (match.empty()) return Status::NotFound("no join token has the id " + id);
         if (Status s = ledger.RevokeJoinToken(match); !s.ok()) return s;
         return Text(json::object{{"id", match.substr(0, 12)}, {"revoked", true}});
       }},
      {"enrollments.list",
       [&]() -> Answer {
         std::optional<ports::EnrollmentState> state;
         const std::string want = r.String("state", "pending");
         if (want == "pending") state = ports::EnrollmentState::kPending;
         if (want == "approved") state = ports::EnrollmentState::kApproved;
         if (want == "denied") state = ports::EnrollmentState::kDenied;
         if (!state && want != "all") return Status::Invalid("state is one of pending, approved, denied, all");
         auto list = ledger.ListEnrollments(state);
         if (!list.ok()) return list.status();
         json::array out;
         for (const auto& e : *list) {
           out.push_back(json::object{{"node", e.name},
                                      {"fingerprint", e.fingerprint},
                                      {"state", ports::EnrollmentStateName(e.state)},
                                      {"requested_at_ns", e.requested_at_ns},
                                      {"decided_at_ns", e.decided_at_ns}});
         }
         return Text(out);
       }},
      {"enrollments.approve",
       [&]() -> Answer {
         const std::string node = r.String("node"), fp = r.String("fingerprint");
         if (Status s = NeedName("node", node); !s.ok()) return s;
         if (fp.empty()) return Status::Invalid("approving needs the fingerprint the node printed");
         if (ca == nullptr) return no_ca();
         auto e = ledger.LookupEnrollment(node);
         if (!e.ok()) return e.status();
         if (!e->has_value()) return Status::NotFound("no enrollment request from " + node);
         const ports::Enrollment& req = **e;
         if (req.state != ports::EnrollmentState::kPending) {
           return Status::Refused("the request from " + node + " is already " + ports::EnrollmentStateName(req.state));
         }
         // An exact comparison: approving a similar-looking key is how a stranger gets in.
         if (req.fingerprint != fp) {
           return Status::Refused("the request from " + node + " has fingerprint " + req.fingerprint +
                                  ", not the one given; ask the node's operator which is right");
         }
         auto cert = ca->SignNodeCSR(req.csr_pem, node, d_.now_ns());
         if (!cert.ok()) return cert.status();
         auto info = pki::InspectCert(*cert);
         if (!info.ok()) return info.status();
         if (Status s = ledger.RecordIssuedCert({info->serial, node, "enrolled", info->not_after_ns, d_.now_ns(), false});
             !s.ok()) {
           return s;
         }
         if (Status s = ledger.DecideEnrollment(node, fp, ports::EnrollmentState::kApproved, *cert); !s.ok()) return s;
         d_.log->Info("admin.enrollment_approved", {{"node", node}, {"fingerprint", fp}, {"serial", info->serial}});
         return Text(json::object{{"node", node}, {"serial", info->serial}, {"state", "approved"}});
       }},
      {"enrollments.deny",
       [&]() -> Answer {
         const std::string node = r.String("node"), fp = r.String("fingerprint");
         if (Status s = NeedName("node", node); !s.ok()) return s;
         if (Status s = ledger.DecideEnrollment(node, fp, ports::EnrollmentState::kDenied, ""); !s.ok()) return s;
         d_.log->Info("admin.enrollment_denied", {{"node", node}, {"fingerprint", fp}});
         return Text(json::object{{"node", node}, {"state", "denied"}});
       }},
      {"nodes.list",
       [&]() -> Answer {
         auto nodes = ledger.ListNodes();
         if (!nodes.ok()) return nodes.status();
         const std::map<std::string, int64_t> seen = d_.plane->LastSeen();
         json::array out;
         for (ports::Node n : *nodes) {
           if (auto it = seen.find(n.name); it != seen.end()) n.last_seen_at_ns = it->second;  // every request counts
           out.push_back(NodeObject(n));
         }
         return Text(out);
       }},
      {"nodes.revoke",
       [&]() -> Answer {
         const std::string node = r.String("node");
         if (Status s = NeedName("node", node); !s.ok()) return s;
         auto serials = ledger.RevokeNode(node, r.String("reason", "revoked by an operator"));
         if (!serials.ok()) return serials.status();
         // The plane hears it now: no parked poll carries another command
         // to the node, and placement stops aiming at it.
         d_.plane->Evict(node, "its certificates were revoked");
         d_.log->Info("admin.node_revoked", {{"node", node}, {"certificates", serials->size()}});
         json::array out;
         for (const auto& s : *serials) out.emplace_back(s);
         return Text(json::object{{"node", node}, {"revoked_serials", out}});
       }},
      {"leases.list",
       [&]() -> Answer {
         auto leases = ledger.ListLeases(r.String("node"));
         if (!leases.ok()) return leases.status();
         return LeaseArray(*leases);
       }},
      {"leases.show",
       [&]() -> Answer {
         const std::string id = r.String("lease");
         auto lease = ledger.GetLease(id);
         if (lease.ok()) return protocol::EncodeValue(*lease);
         if (!ports::Is(lease.status(), ports::Verdict::kNotFound)) return lease.status();
         // Ended: the job history still knows how.
         auto job = ledger.JobForLease(id);
         if (!job.ok()) return job.status();
         if (!job->has_value()) return Status::NotFound("no lease " + id);
         const ports::Job& j = **job;
         return Text(json::object{{"id", id},
                                  {"tier", j.tier},
                                  {"node", j.node},
                                  {"phase", j.conclusion ? ports::PhaseName(*j.conclusion) : "unknown"},
                                  {"request_id", j.request_id},
                                  {"failure_reason", j.failure_reason},
                                  {"finished_at_ns", j.finished_at_ns}});
       }},
      {"jobs.list",
       [&]() -> Answer {
         const int64_t since = r.Int("since_seconds", 24 * 3600), limit = r.Int("limit", 50);
         if (since < 1) return Status::Invalid("since_seconds must be at least 1");
         if (limit < 1 || limit > 1000) return Status::Invalid("limit is between 1 and 1000");
         auto jobs = ledger.ListForgeJobs(r.String("tier"), d_.now_ns() - since * kSecondNs,
                                          static_cast<uint32_t>(limit));
         if (!jobs.ok()) return jobs.status();
         json::array out;
         for (const ports::ForgeJob& j : *jobs) {
           std::string node;
           if (!j.lease_id.empty()) {
             if (auto lease = ledger.JobForLease(j.lease_id); lease.ok() && lease->has_value()) node = (*lease)->node;
           }
           out.push_back(json::object{{"job_id", j.job_id},
                                      {"tier", j.tier},
                                      {"repository", j.repository},
                                      {"workflow", j.display_name},
                                      {"request_id", j.request_id},
                                      {"lease", j.lease_id},
                                      {"node", node},
                                      {"queued_at_ns", j.queued_at_ns},
                                      {"received_at_ns", j.received_at_ns},
                                      {"started_at_ns", j.started_at_ns},
                                      {"completed_at_ns", j.completed_at_ns},
                                      {"result", j.result.empty() ? (j.started_at_ns ? "running" : "queued") : j.result},
                                      {"settled", j.settled_at_ns != 0}});
         }
         return Text(out);
       }},
      {"leases.release",
       [&]() -> Answer {
         const std::string id = r.String("lease");
         if (Status s = ledger.ForceRelease(id); !s.ok()) return s;
         count(&LeaseEvents::force_released);
         d_.log->Info("admin.lease_force_released", {{"lease", id}});
         return Text(json::object{{"lease", id}, {"force_release", true}});
       }},
      {"certs.list",
       [&]() -> Answer {
         auto certs = ledger.ListCerts(r.String("node"));
         if (!certs.ok()) return certs.status();
         json::array out;
         for (const auto& c : *certs) {
           out.push_back(json::object{{"serial", c.serial},
                                      {"node", c.node},
                                      {"source", c.source},
                                      {"not_after_ns", c.not_after_ns},
                                      {"revoked", c.revoked}});
         }
         return Text(out);
       }},
      {"certs.revoke",
       [&]() -> Answer {
         const std::string typed = r.String("serial");
         if (typed.empty()) return Status::Invalid("name the certificate by its serial");
         const std::optional<std::string> serial = ports::NormalizeSerial(typed);
         if (!serial) {
           return Status::Invalid("\"" + typed.substr(0, 60) +
                                  "\" is not a certificate serial (hex digits, as openssl x509 -serial prints them)");
         }
         auto certs = ledger.ListCerts("");
         if (!certs.ok()) return certs.status();
         std::string node = r.String("node");
         bool issued = false;
         for (const ports::IssuedCert& c : *certs) {
           if (c.serial != *serial) continue;
           issued = true;
           if (node.empty()) node = c.node;
         }
         if (!issued && !r.Bool("force")) {
           return Status::NotFound("no certificate with serial " + *serial +
                                   " was issued by this deployment, so nothing was revoked (--force records the "
                                   "revocation anyway)");
         }
         if (Status s = ledger.RevokeCert(*serial, node, r.String("reason", "revoked by an operator")); !s.ok()) {
           return s;
         }
         if (!node.empty()) d_.plane->Evict(node, "certificate " + *serial + " was revoked");
         d_.log->Info("admin.cert_revoked", {{"serial", *serial}, {"node", node}, {"issued", issued}});
         return Text(json::object{{"serial", *serial}, {"node", node}, {"revoked", true}, {"issued", issued}});
       }},
      {"launch",
       [&]() -> Answer {
         const std::string tier = r.String("tier");
         const int64_t request_id = r.Int("request_id"), run_id = r.Int("run_id", r.Int("request_id"));
         if (tier.empty()) return Status::Invalid("launch needs --tier");
         if (request_id <= 0) return Status::Invalid("launch needs a positive --request-id");
         // Follows a lease until it ends, saying each phase it reaches; the
         // phase it was last seen in.
         auto follow = [&](const std::string& id, std::string phase) {
           while (!r.stop.stop_requested()) {
             auto now = ledger.GetLease(id);
             if (!now.ok() && ports::Is(now.status(), ports::Verdict::kNotFound)) {
               auto j = ledger.JobForLease(id);
               phase = j.ok() && j->has_value() && (*j)->conclusion ? ports::PhaseName(*(*j)->conclusion) : "ended";
               r.Say("lease " + id + " is " + phase);
               break;
             }
             if (now.ok() && phase != ports::PhaseName(now->phase)) {
               phase = ports::PhaseName(now->phase);
               r.Say("lease " + id + " is " + phase);
             }
             std::this_thread::sleep_for(std::chrono::milliseconds(200));  // pacing a display, not a test
           }
           return phase;
         };
         // Idempotent per request id: a request an open lease serves, or one
         // that finished within a day, is answered with that lease, so a
         // client that retries after losing its answer never runs a job twice.
         auto served = [&]() -> Result<std::optional<std::string>> {
           auto job = ledger.JobForRequest(request_id);
           if (!job.ok() && ports::Is(job.status(), ports::Verdict::kUnsupported)) return std::optional<std::string>();
           if (!job.ok()) return job.status();
           if (!job->has_value()) return std::optional<std::string>();
           const ports::Job& j = **job;
           if (j.conclusion && j.finished_at_ns < d_.now_ns() - kRequestMemoryNs) return std::optional<std::string>();
           std::string phase = j.conclusion ? ports::PhaseName(*j.conclusion) : "open";
           if (!j.conclusion) {
             if (auto l = ledger.GetLease(j.lease_id); l.ok()) phase = ports::PhaseName(l->phase);
           }
           r.Say("request " + std::to_string(request_id) + " is already served by lease " + j.lease_id + " (" + phase +
                 "); nothing new was escrowed");
           if (r.Bool("wait") && !j.conclusion) phase = follow(j.lease_id, phase);
           return std::optional<std::string>(Text(json::object{{"lease", j.lease_id},
                                                               {"node", j.node},
                                                               {"request_id", request_id},
                                                               {"outcome", phase},
                                                               {"existing", true}}));
         };
         if (auto prior = served(); !prior.ok() || prior->has_value()) {
           if (!prior.ok()) return prior.status();
           return **prior;
         }
         auto escrowed = ledger.Escrow(tier, 1);
         if (!escrowed.ok()) return escrowed.status();
         if (escrowed->empty()) return ports::WithVerdict(Status::Refused("no capacity for tier " + tier + " now"), ports::Verdict::kNoCapacity);
         ports::Lease lease = escrowed->front();
         count(&LeaseEvents::escrowed);
         if (Status s = ledger.Assign(lease.id, lease.epoch, run_id, request_id); !s.ok()) {
           // Another launch of the same request won the race: ours is given
           // back and theirs answered.
           if (ledger.Release(lease.id, lease.epoch, ports::Phase::kFailed).ok()) count(&LeaseEvents::released_failed);
           if (!ports::Is(s, ports::Verdict::kConflict)) return s;
           auto prior = served();
           if (!prior.ok()) return prior.status();
           if (!prior->has_value()) return s;
           return **prior;
         }
         r.Say("escrowed lease " + lease.id + " for tier " + tier);
         protocol::Job job{request_id, run_id, "nodeplanectl", "", "", ""};
         // Nothing runs after a clean failure: nothing was sent (S01), or the
         // node said it started nothing, so the lease was released (R43).
         Status launched = jobs::LaunchAssigned(ledger, d_.plane->runner(), d_.lease_events, lease, job, r.stop);
         const bool custody = plane::Is(launched, plane::kCustody);
         if (!launched.ok() && !custody) return launched;
         r.Say("lease " + lease.id + (custody ? " is in the custody of node " : " launched on node ") + lease.node);
         std::string phase = custody ? "custody" : "launched";
         if (r.Bool("wait")) phase = follow(lease.id, phase);
         return Text(json::object{{"lease", lease.id}, {"node", lease.node}, {"request_id", request_id}, {"outcome", phase}});
       }},
      {"destroy",
       [&]() -> Answer {
         const int64_t request_id = r.Int("request_id");
         if (request_id <= 0) return Status::Invalid("destroy needs a positive --request-id");
         if (Status s = d_.plane->runner().Destroy(request_id, r.stop); !s.ok()) return s;
         return Text(json::object{{"request_id", request_id}, {"destroyed", true}});
       }},
      {"drain",
       [&]() -> Answer {
         auto admission = ledger.AdmissionGeneration();
         if (!admission.ok()) return admission.status();
         if (!admission->second) {
           auto sealed = ledger.SetAdmission(true, admission->first, "drain", "nodeplanectl");
           if (!sealed.ok()) return sealed.status();
           r.Say("admission sealed: no new work is placed");
         }
         auto barrier = ledger.RequestComputeBarrier("nodeplanectl");
         if (!barrier.ok()) return barrier.status();
         r.Say("compute barrier " + barrier->id + " requested; waiting for the fleet to prove it runs nothing");
         const int64_t deadline = r.Int("timeout_seconds") > 0 ? d_.now_ns() + r.Int("timeout_seconds") * kSecondNs : 0;
         size_t last = SIZE_MAX;
         while (!r.stop.stop_requested()) {
           auto clear = ledger.ComputeClear();
           if (clear.ok() && *clear) return Text(json::object{{"barrier", barrier->id}, {"clear", true}});
           auto q = ledger.GetQuiescence();
           if (q.ok() && q->outstanding.size() != last) {
             last = q->outstanding.size();
             r.Say(std::to_string(last) + " lease(s) still open; " + std::to_string(d_.plane->GetStats().nodes) +
                   " node(s) registered");
           }
           if (deadline != 0 && d_.now_ns() > deadline) {
             return Status::Unavailable("the fleet has not proved it is empty yet; the barrier stays requested");
           }
           std::this_thread::sleep_for(std::chrono::milliseconds(500));  // pacing a wait for people
         }
         return Status::Unavailable("stopped while draining; the barrier stays requested");
       }},
      {"admission.open",
       [&]() -> Answer {
         auto admission = ledger.AdmissionGeneration();
         if (!admission.ok()) return admission.status();
         if (!admission->second) return Text(json::object{{"admission", "open"}});
         auto g = ledger.SetAdmission(false, admission->first, r.String("reason", "opened"), "nodeplanectl");
         if (!g.ok()) return g.status();
         return Text(json::object{{"admission", "open"}, {"generation", *g}});
       }},
      {"upgrade",
       [&]() -> Answer {
         const std::string node = r.String("node");
         if (Status s = NeedName("node", node); !s.ok()) return s;
         protocol::UpgradeSpec spec{r.String("version"), r.String("manifest_sha256"), r.String("rollout_id"), r.Int("generation")};
         if (spec.version.empty()) return Status::Invalid("upgrade needs --version");
         if (Status s = d_.plane->runner().Upgrade(node, spec, r.stop); !s.ok()) return s;
         return Text(json::object{{"node", node}, {"version", spec.version}, {"started", true}});
       }},
      {"metrics", [&]() -> Answer { return Text(json::object{{"text", d_.metrics()}}); }},
  };
  auto it = commands.find(cmd);
  if (it == commands.end()) return fail(Status::Invalid("unknown command \"" + cmd + "\""));
  Answer a = it->second();
  if (!a.ok()) return fail(a.status());
  return "{\"ok\":true,\"result\":" + *a + "}";
}

}  // namespace nodeplane::admin
