// status and the deployment CA: ca.init, ca.show, ca.issue, ca.rotate, ca.retire.
#include "admin/commands.h"
#include "version.h"

namespace nodeplane::admin {
namespace json = boost::json;
namespace {

Result<std::string> StatusOf(const Call& c) {
  auto admission = c.deps.ledger->AdmissionGeneration();
  if (!admission.ok()) return admission.status();
  const pki::Authority* ca = c.deps.authority;
  std::string paused;  // "tier: why; ...", "" when none is
  for (const auto& [tier, why] : c.deps.plane->PausedTiers()) paused += (paused.empty() ? "" : "; ") + tier + ": " + why;
  return Text(json::object{{"deployment", c.deps.config->deployment},
                           {"paused_tiers", paused},
                           {"version", NODEPLANE_VERSION},
                           {"nodes", c.deps.plane->GetStats().nodes},
                           {"tls", ca != nullptr},
                           {"ca_fingerprint", ca != nullptr ? ca->fingerprint() : ""},
                           {"admission", admission->second ? "sealed" : "open"}});
}

Result<std::string> Init(const Call& c) {
  if (const pki::Authority* ca = c.deps.authority; ca != nullptr) {
    return Text(json::object{{"fingerprint", ca->fingerprint()}, {"created", false}});
  }
  auto fp = c.deps.init_ca();
  if (!fp.ok()) return fp.status();
  return Text(json::object{{"fingerprint", *fp}, {"created", true}});
}

Result<std::string> Show(const Call& c) {
  const pki::Authority* ca = c.deps.authority;
  if (ca == nullptr) return NoCertificateAuthority();
  return Text(json::object{{"fingerprint", ca->fingerprint()}, {"ca_pem", ca->trust_bundle_pem()}, {"rotating", ca->rotating()}});
}

Result<std::string> Issue(const Call& c) {
  const std::string& node = c.args.String("node");
  const pki::Authority* ca = c.deps.authority;
  if (ca == nullptr) return NoCertificateAuthority();
  auto issued = ca->IssueNode(node, c.Now());
  if (!issued.ok()) return issued.status();
  auto info = pki::InspectCert(issued->first);
  if (!info.ok()) return info.status();
  // Recorded before it is handed out, so it can always be revoked (R40).
  if (Status s = c.deps.ledger->RecordIssuedCert({info->serial, node, "issued", info->not_after_ns, c.Now(), false});
      !s.ok()) {
    return s;
  }
  c.deps.log->Info("admin.cert_issued", {{"node", node}, {"serial", info->serial}});
  return Text(json::object{{"node", node},
                           {"serial", info->serial},
                           {"cert_pem", issued->first},
                           {"key_pem", issued->second.private_pem},
                           {"ca_pem", ca->trust_bundle_pem()}});
}

Result<std::string> Rotate(const Call& c) {
  auto fp = c.deps.rotate_ca();
  if (!fp.ok()) return fp.status();
  c.deps.log->Info("admin.ca_rotated", {{"fingerprint", *fp}});
  return Text(json::object{{"fingerprint", *fp},
                           {"next", "restart nodeplaned; nodes take the new CA when they renew; then ca retire"}});
}

Result<std::string> Retire(const Call& c) {
  if (Status s = c.deps.retire_ca(); !s.ok()) return s;
  c.deps.log->Info("admin.ca_retired");
  return Text(json::object{{"retired", true}, {"next", "restart nodeplaned"}});
}

}  // namespace

Status NoCertificateAuthority() {
  return Status::Refused("this host has no certificate authority: it serves the loopback wire; add [wire.tls] "
                         "(and run `nodeplanectl ca init`)");
}

void AddCaCommands(Handlers& h) {
  h["status"] = StatusOf;
  h["ca.init"] = Init;
  h["ca.show"] = Show;
  h["ca.issue"] = Issue;
  h["ca.rotate"] = Rotate;
  h["ca.retire"] = Retire;
}

}  // namespace nodeplane::admin
