// The deployment's TLS material at start: the CA in its directory
// (wire.tls.ca_dir, or the state directory; created on first start, its key
// 0600; with ca-previous.pem/.key beside it during a rotation; replicas of
// one deployment share the directory), and the wire's server certificate,
// the operator's own or minted from the CA for the configured names.
#pragma once

#include <optional>

#include "common/status.h"
#include "config/config.h"
#include "pki/authority.h"
#include "wire/http_server.h"

namespace nodeplane {

struct WireTls {
  pki::Authority authority;
  wire::TlsOptions tls;
};

Result<WireTls> PrepareWireTls(const config::Config& cfg, int64_t now_ns);

// The deployment's CA from its directory (cfg.CaDir()), created (key 0600) when
// absent; with the previous CA beside it during a rotation.
Result<pki::Authority> LoadOrCreateAuthority(const config::Config& cfg, int64_t now_ns);

// Starts a CA rotation: the current CA becomes the previous one
// (ca-previous.pem/.key) and a new CA is created; the new fingerprint.
// Refused while a rotation is already in progress. In force from the next
// start of nodeplaned.
Result<std::string> RotateAuthority(const config::Config& cfg, int64_t now_ns);
// Ends a rotation: the previous CA's files are deleted, so certificates it
// issued stop being accepted from the next start.
Status RetirePreviousAuthority(const config::Config& cfg);

}  // namespace nodeplane
