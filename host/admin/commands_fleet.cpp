// The fleet: nodes.list, nodes.revoke, certs.list, certs.revoke, upgrade, metrics.
#include "admin/commands.h"

namespace nodeplane::admin {
namespace json = boost::json;
namespace {

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

Result<std::string> ListNodes(const Call& c) {
  auto nodes = c.deps.ledger->ListNodes();
  if (!nodes.ok()) return nodes.status();
  const std::map<std::string, int64_t> seen = c.deps.plane->LastSeen();
  json::array out;
  for (ports::Node n : *nodes) {
    if (auto it = seen.find(n.name); it != seen.end()) n.last_seen_at_ns = it->second;  // every request counts
    out.push_back(NodeObject(n));
  }
  return Text(out);
}

Result<std::string> RevokeNode(const Call& c) {
  const std::string& node = c.args.String("node");
  auto serials = c.deps.ledger->RevokeNode(node, c.args.String("reason"));
  if (!serials.ok()) return serials.status();
  // The plane hears it now: no parked poll carries another command to the
  // node, and placement stops aiming at it.
  c.deps.plane->Evict(node, "its certificates were revoked");
  c.deps.log->Info("admin.node_revoked", {{"node", node}, {"certificates", serials->size()}});
  json::array out;
  for (const auto& s : *serials) out.emplace_back(s);
  return Text(json::object{{"node", node}, {"revoked_serials", out}});
}

Result<std::string> ListCerts(const Call& c) {
  auto certs = c.deps.ledger->ListCerts(c.args.String("node"));
  if (!certs.ok()) return certs.status();
  json::array out;
  for (const auto& cert : *certs) {
    out.push_back(json::object{{"serial", cert.serial},
                               {"node", cert.node},
                               {"source", cert.source},
                               {"not_after_ns", cert.not_after_ns},
                               {"revoked", cert.revoked}});
  }
  return Text(out);
}

Result<std::string> RevokeCert(const Call& c) {
  const std::string& typed = c.args.String("serial");
  const std::optional<std::string> serial = ports::NormalizeSerial(typed);
  if (!serial) {
    return Status::Invalid("\"" + typed.substr(0, 60) +
                           "\" is not a certificate serial (hex digits, as openssl x509 -serial prints them)");
  }
  ports::Ledger& ledger = *c.deps.ledger;
  auto certs = ledger.ListCerts("");
  if (!certs.ok()) return certs.status();
  std::string node = c.args.String("node");
  bool issued = false;
  for (const ports::IssuedCert& cert : *certs) {
    if (cert.serial != *serial) continue;
    issued = true;
    if (node.empty()) node = cert.node;
  }
  if (!issued && !c.args.Switch("force")) {
    return Status::NotFound("no certificate with serial " + *serial +
                            " was issued by this deployment, so nothing was revoked (--force records the "
                            "revocation anyway)");
  }
  if (Status s = ledger.RevokeCert(*serial, node, c.args.String("reason")); !s.ok()) return s;
  if (!node.empty()) c.deps.plane->Evict(node, "certificate " + *serial + " was revoked");
  c.deps.log->Info("admin.cert_revoked", {{"serial", *serial}, {"node", node}, {"issued", issued}});
  return Text(json::object{{"serial", *serial}, {"node", node}, {"revoked", true}, {"issued", issued}});
}

Result<std::string> Upgrade(const Call& c) {
  const std::string& node = c.args.String("node");
  protocol::UpgradeSpec spec{c.args.String("version"), c.args.String("manifest_sha256"), c.args.String("rollout_id"),
                             c.args.Int("generation")};
  if (Status s = c.deps.plane->runner().Upgrade(node, spec, c.stop); !s.ok()) return s;
  return Text(json::object{{"node", node}, {"version", spec.version}, {"started", true}});
}

Result<std::string> Metrics(const Call& c) { return Text(json::object{{"text", c.deps.metrics()}}); }

}  // namespace

void AddFleetCommands(Handlers& h) {
  h["nodes.list"] = ListNodes;
  h["nodes.revoke"] = RevokeNode;
  h["certs.list"] = ListCerts;
  h["certs.revoke"] = RevokeCert;
  h["upgrade"] = Upgrade;
  h["metrics"] = Metrics;
}

}  // namespace nodeplane::admin
