// A revocation-list plugin instance behind the ports::RevocationList port.
#pragma once

#include <memory>
#include <string>

#include "common/metrics.h"
#include "loader/plugin_library.h"
#include "nodeplane/np_revocation_v1.h"
#include "ports/revocation.h"

namespace nodeplane::loader {

class RevocationAdapter : public ports::RevocationList {
 public:
  // Creates the instance named `instance` from `library`'s revocation
  // interface. With validate_only the plugin only checks `config_json` and
  // the result is null.
  static Result<std::unique_ptr<RevocationAdapter>> Create(std::shared_ptr<const PluginLibrary> library,
                                                           const std::string& instance,
                                                           const std::string& config_json,
                                                           const np_host_v1* host, bool validate_only);
  ~RevocationAdapter() override;

  // Called on the asking thread: the ABI requires is_revoked to answer from
  // memory, so a pool hop would cost more than the call.
  Result<bool> IsRevoked(const ports::CertIdentity& cert) override;
  const Histogram& call_latency() const { return latency_; }
  const std::string& instance() const { return instance_; }

 private:
  RevocationAdapter(std::shared_ptr<const PluginLibrary> library, std::string instance, std::string who,
                    np_revocation_v1 vt, void* self);

  std::shared_ptr<const PluginLibrary> library_;
  std::string instance_, who_;
  np_revocation_v1 vt_;
  void* self_;
  Histogram latency_;
};

}  // namespace nodeplane::loader
