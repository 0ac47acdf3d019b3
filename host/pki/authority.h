// The deployment's certificate authority: the CA itself, the server's
// certificate, node certificates issued offline or signed from a CSR (the
// node's private key never leaves the node), and fingerprints.
//
// Conventions (billet-wire.md §11):
//   - keys are ECDSA P-256; certificates are X.509 v3, SHA-256 signatures;
//   - the CA lives 3650 days, a leaf 365 days capped at the CA's expiry;
//   - every NotBefore is the issue time minus one hour (clock skew);
//   - a node's identity is its certificate's Common Name, and its
//     Organization is the deployment;
//   - serials are 16 random bytes (positive), written as lowercase hex
//     without leading zeros;
//   - a fingerprint is "sha256:" and the lowercase hex SHA-256 of the DER.
//
// Rotation (S12): an authority may carry the previous CA beside the current
// one. Node certificates are then signed by the current CA, the server's by
// the previous (nodes that have not renewed yet trust only it), and the trust
// bundle, current first, holds both.
//
// OpenSSL stays inside authority.cpp; certificates cross as PEM text.
// Thread-safe after construction: an Authority is immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/units.h"

struct x509_st;  // OpenSSL's X509, for those who hold one parsed

namespace nodeplane::pki {

inline constexpr int64_t kSkewNs = kHourNs;
inline constexpr int64_t kCALifetimeNs = 3650 * kDayNs;
inline constexpr int64_t kLeafLifetimeNs = 365 * kDayNs;

struct KeyPair {
  std::string private_pem;  // SECRET: never logged
  std::string public_pem;
};

// A new P-256 key.
Result<KeyPair> GenerateKey();
// A CSR for `common_name`, signed with `private_pem`.
Result<std::string> MakeCSR(const std::string& private_pem, const std::string& common_name);
// Writes `content` to `path` with mode 0600 (created or truncated).
Status WritePrivateFile(const std::string& path, const std::string& content);

// What a certificate says about itself.
struct CertInfo {
  std::string common_name;
  std::string organization;
  std::string serial;       // lowercase hex, no leading zeros
  std::string fingerprint;  // "sha256:<hex of DER>"
  std::string issuer_sha256;  // hex SHA-256 of the issuer name's DER
  int64_t not_before_ns = 0;
  int64_t not_after_ns = 0;
  bool is_ca = false;
};
Result<CertInfo> InspectCert(const std::string& cert_pem);
// The same of a certificate OpenSSL has already parsed (a TLS peer's): no
// PEM round trip, which would cost a handshake a quarter of a millisecond.
CertInfo InspectCert(const ::x509_st& cert);
std::string FingerprintOfDER(const std::string& der);
// The fingerprint an operator compares before approving an enrollment: of
// the CSR's public key (so the node can print it from its own key).
Result<std::string> FingerprintOfCSR(const std::string& csr_pem);
// How a join token is stored: hex SHA-256 of the lower-cased, trimmed secret.
std::string JoinTokenHash(const std::string& token);
// A new join token: 20 random bytes, base32 (RFC 4648 alphabet, no padding),
// lower-cased: 32 characters. SECRET: shown to the operator once.
Result<std::string> NewJoinToken();

class Authority {
 public:
  // A new CA for `deployment`.
  static Result<Authority> Create(const std::string& deployment, int64_t now_ns);
  // The CA from its certificate and key.
  static Result<Authority> Load(const std::string& cert_pem, const std::string& key_pem);
  // During a rotation: the CA being retired, which must belong to the same
  // deployment. It keeps signing the server's certificate until retired.
  Status AddPrevious(const std::string& cert_pem, const std::string& key_pem);

  const std::string& cert_pem() const { return cert_pem_; }
  const std::string& key_pem() const { return key_pem_; }  // SECRET
  const std::string& deployment() const { return deployment_; }
  // The fingerprint of the current CA (the first in the bundle).
  std::string fingerprint() const;
  // Every CA a node must accept: the current one first, then the previous.
  std::string trust_bundle_pem() const { return cert_pem_ + previous_cert_pem_; }
  bool rotating() const { return !previous_cert_pem_.empty(); }

  // The server's certificate for `names` (DNS names or IP literals), with
  // its new key, signed by the previous CA while rotating.
  Result<std::pair<std::string, KeyPair>> IssueServer(const std::vector<std::string>& names, int64_t now_ns) const;
  // A node certificate for the key in `csr_pem`, named `node` whatever the
  // CSR asks for (the operator approved the name, not the CSR's subject).
  Result<std::string> SignNodeCSR(const std::string& csr_pem, const std::string& node, int64_t now_ns) const;
  // Offline issue: a new key and its certificate, for an operator to copy.
  Result<std::pair<std::string, KeyPair>> IssueNode(const std::string& node, int64_t now_ns) const;
  // Whether `cert_pem` was signed by a CA of the trust bundle.
  Status Verify(const std::string& cert_pem) const;

 private:
  std::string cert_pem_, key_pem_, deployment_;
  std::string previous_cert_pem_, previous_key_pem_;  // "" unless rotating
};

// A renewal is due when less than a third of the lifetime remains.
bool RenewalDue(const CertInfo& cert, int64_t now_ns);

}  // namespace nodeplane::pki
