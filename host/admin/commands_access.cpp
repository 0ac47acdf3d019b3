// Who may join: tokens.create, tokens.list, tokens.revoke, enrollments.list,
// enrollments.approve, enrollments.deny.
#include "admin/commands.h"
#include "common/units.h"

namespace nodeplane::admin {
namespace json = boost::json;
namespace {

Result<std::string> CreateToken(const Call& c) {
  const int64_t uses = c.args.Int("uses"), ttl = c.args.Int("ttl_seconds");
  auto token = pki::NewJoinToken();
  if (!token.ok()) return token.status();
  const std::string hash = pki::JoinTokenHash(*token);
  const int64_t expires = c.Now() + ttl * kSecondNs;
  if (Status s = c.deps.ledger->CreateJoinToken(hash, uses, expires, c.args.String("note")); !s.ok()) return s;
  c.deps.log->Info("admin.token_created", {{"id", hash.substr(0, 12)}, {"uses", uses}});
  return Text(json::object{{"token", *token}, {"id", hash.substr(0, 12)}, {"uses", uses}, {"expires_at_ns", expires}});
}

Result<std::string> ListTokens(const Call& c) {
  auto tokens = c.deps.ledger->ListJoinTokens();
  if (!tokens.ok()) return tokens.status();
  json::array out;
  for (const auto& t : *tokens) {
    out.push_back(json::object{{"id", t.token_sha256.substr(0, 12)},
                               {"uses_remaining", t.uses_remaining},
                               {"expires_at_ns", t.expires_at_ns},
                               {"note", t.note}});
  }
  return Text(out);
}

Result<std::string> RevokeToken(const Call& c) {
  const std::string& id = c.args.String("id");
  if (id.size() < 6) return Status::Invalid("name the token by its id (at least 6 characters of it)");
  auto tokens = c.deps.ledger->ListJoinTokens();
  if (!tokens.ok()) return tokens.status();
  std::string match;
  for (const auto& t : *tokens) {
    if (t.token_sha256.rfind(id, 0) != 0) continue;
    if (!match.empty()) return Status::Invalid("more than one token starts with " + id + "; give more of it");
    match = t.token_sha256;
  }
  if (match.empty()) return Status::NotFound("no join token has the id " + id);
  if (Status s = c.deps.ledger->RevokeJoinToken(match); !s.ok()) return s;
  return Text(json::object{{"id", match.substr(0, 12)}, {"revoked", true}});
}

Result<std::string> ListEnrollments(const Call& c) {
  std::optional<ports::EnrollmentState> state;  // "all": none
  const std::string& want = c.args.String("state");
  if (want == "pending") state = ports::EnrollmentState::kPending;
  if (want == "approved") state = ports::EnrollmentState::kApproved;
  if (want == "denied") state = ports::EnrollmentState::kDenied;
  auto list = c.deps.ledger->ListEnrollments(state);
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
}

Result<std::string> Approve(const Call& c) {
  const std::string &node = c.args.String("node"), &fp = c.args.String("fingerprint");
  const pki::Authority* ca = c.deps.authority;
  if (ca == nullptr) return NoCertificateAuthority();
  ports::Ledger& ledger = *c.deps.ledger;
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
  auto cert = ca->SignNodeCSR(req.csr_pem, node, c.Now());
  if (!cert.ok()) return cert.status();
  auto info = pki::InspectCert(*cert);
  if (!info.ok()) return info.status();
  if (Status s = ledger.RecordIssuedCert({info->serial, node, "enrolled", info->not_after_ns, c.Now(), false}); !s.ok()) {
    return s;
  }
  if (Status s = ledger.DecideEnrollment(node, fp, ports::EnrollmentState::kApproved, *cert); !s.ok()) return s;
  c.deps.log->Info("admin.enrollment_approved", {{"node", node}, {"fingerprint", fp}, {"serial", info->serial}});
  return Text(json::object{{"node", node}, {"serial", info->serial}, {"state", "approved"}});
}

Result<std::string> Deny(const Call& c) {
  const std::string &node = c.args.String("node"), &fp = c.args.String("fingerprint");
  if (Status s = c.deps.ledger->DecideEnrollment(node, fp, ports::EnrollmentState::kDenied, ""); !s.ok()) return s;
  c.deps.log->Info("admin.enrollment_denied", {{"node", node}, {"fingerprint", fp}});
  return Text(json::object{{"node", node}, {"state", "denied"}});
}

}  // namespace

void AddAccessCommands(Handlers& h) {
  h["tokens.create"] = CreateToken;
  h["tokens.list"] = ListTokens;
  h["tokens.revoke"] = RevokeToken;
  h["enrollments.list"] = ListEnrollments;
  h["enrollments.approve"] = Approve;
  h["enrollments.deny"] = Deny;
}

}  // namespace nodeplane::admin
