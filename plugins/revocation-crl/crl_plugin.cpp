// revocation-crl: the revocation interface answered from X.509 CRL files.
// The list itself (loading, verification, reload, expiry) is crl_list.h.
//
// Config ([plugins.NAME.config]):
//   crl_files   the CRL files, PEM or DER (at least one)
//   ca_files    PEM files holding the CAs that sign them (at least one)
//   on_expired  "refuse" (default) or "warn": what a CRL past its nextUpdate means
#include "crl_list.h"
#include "plugin_config.h"
#include "plugin_entry.h"
#include "plugin_error.h"

namespace nodeplane::plugins {
namespace {

constexpr const char* kName = "revocation-crl";

np_code Create(const np_host_v1* host, const char* json, uint64_t len, uint32_t flags, void** instance,
               np_error* err) {
  return GuardedCall(kName, err, [&] {
    PluginConfig cfg(json, len, kName);
    CrlConfig c;
    c.crl_files = cfg.Strings("crl_files", true);
    c.ca_files = cfg.Strings("ca_files", true);
    const std::string policy = cfg.String("on_expired", "refuse");
    cfg.Finish();
    if (policy != "refuse" && policy != "warn") {
      Fail(NP_INVALID, std::string(kName) + ": config key \"on_expired\" must be \"refuse\" or \"warn\"");
    }
    c.refuse_expired = policy == "refuse";
    if (flags & NP_CREATE_VALIDATE_ONLY) {  // the config's shape only: no file is opened
      *instance = nullptr;
      return;
    }
    *instance = new CrlList(host, std::move(c));  // loads and verifies: a bad file fails here
  });
}

void Destroy(void* self) { delete static_cast<CrlList*>(self); }

np_code IsRevoked(void* self, const np_cert_identity_v1* cert, uint32_t* revoked, np_error* err) {
  return GuardedCall(kName, err, [&] {
    std::string why;
    const np_code rc = static_cast<CrlList*>(self)->IsRevoked(*cert, revoked, &why);
    if (rc != NP_OK) Fail(rc, std::string(kName) + ": " + why);
  });
}

const np_revocation_v1 kVtable = {sizeof(np_revocation_v1), &Create, &Destroy, &IsRevoked};

const np_interface_desc kInterfaces[] = {
    {sizeof(np_interface_desc), NP_REVOCATION_INTERFACE, NP_REVOCATION_MAJOR, "x509-crl", &kVtable, sizeof kVtable},
};

const np_plugin_desc kPlugin = {sizeof(np_plugin_desc), kName, NODEPLANE_PLUGIN_VERSION, 1, kInterfaces};

}  // namespace
}  // namespace nodeplane::plugins

extern "C" NP_EXPORT np_code np_plugin_entry(np_negotiation* n, np_error* err) {
  return nodeplane::plugins::ChooseAbi(n, err, nodeplane::plugins::kPlugin);
}
