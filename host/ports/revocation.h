// The revocation-list port: a list of taken-back certificates kept outside
// the ledger (a CRL, an existing PKI), consulted beside the ledger's own
// Revocations on every request (S11).
//
// Implemented by a plugin adapter (loader/revocation_adapter.h) or a test
// fake. Thread-safe; answers from memory, because it runs on every request.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace nodeplane::ports {

struct CertIdentity {
  std::string serial;         // lowercase hex, no leading zeros
  std::string issuer_sha256;  // hex SHA-256 of the issuer name's DER
  std::string node;           // the subject's Common Name
  int64_t not_before_ns = 0;
};

class RevocationList {
 public:
  virtual ~RevocationList() = default;
  // True when the list revokes the certificate; Unavailable when it cannot
  // tell (the wire then refuses with 503: it fails closed).
  virtual Result<bool> IsRevoked(const CertIdentity& cert) = 0;
};

}  // namespace nodeplane::ports
