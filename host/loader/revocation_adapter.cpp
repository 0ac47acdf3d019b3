#include "loader/revocation_adapter.h"

#include <chrono>
#include <cstddef>

#include "loader/plugin_call.h"

namespace nodeplane::loader {

Result<std::unique_ptr<RevocationAdapter>> RevocationAdapter::Create(std::shared_ptr<const PluginLibrary> library,
                                                                     const std::string& instance,
                                                                     const std::string& config_json,
                                                                     const np_host_v1* host, bool validate_only) {
  const std::string who = "plugin instance \"" + instance + "\" (" + library->path() + ")";
  auto desc = library->Find(NP_REVOCATION_INTERFACE, NP_REVOCATION_MAJOR);
  if (!desc.ok()) return desc.status();
  auto vt = CopyVtable<np_revocation_v1>(**desc, library->path(),
                                         {{offsetof(np_revocation_v1, create), "create"},
                                          {offsetof(np_revocation_v1, destroy), "destroy"},
                                          {offsetof(np_revocation_v1, is_revoked), "is_revoked"}});
  if (!vt.ok()) return vt.status();
  auto self = CreateInstance(*vt, host, config_json, validate_only, who);
  if (!self.ok()) return self.status();
  if (validate_only) return std::unique_ptr<RevocationAdapter>();
  return std::unique_ptr<RevocationAdapter>(new RevocationAdapter(std::move(library), instance, who, *vt, *self));
}

RevocationAdapter::RevocationAdapter(std::shared_ptr<const PluginLibrary> library, std::string instance,
                                     std::string who, np_revocation_v1 vt, void* self)
    : library_(std::move(library)), instance_(std::move(instance)), who_(std::move(who)), vt_(vt), self_(self) {}

RevocationAdapter::~RevocationAdapter() { vt_.destroy(self_); }

Result<bool> RevocationAdapter::IsRevoked(const ports::CertIdentity& cert) {
  np_cert_identity_v1 id{sizeof(np_cert_identity_v1), cert.serial.c_str(), cert.issuer_sha256.c_str(),
                         cert.node.c_str(), cert.not_before_ns};
  PluginError err;
  uint32_t revoked = 0;
  const auto start = std::chrono::steady_clock::now();
  np_code rc = vt_.is_revoked(self_, &id, &revoked, err.c());
  latency_.Observe(std::chrono::steady_clock::now() - start);
  if (rc != NP_OK) return err.ToStatus(rc, who_);
  return revoked != 0;
}

}  // namespace nodeplane::loader
