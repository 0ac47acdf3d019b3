// The revocation list of the revocation-crl plugin: standard X.509 CRL files
// (PEM or DER, as `openssl ca -gencrl` writes them), each verified against
// the configured CA certificates, answered from memory.
//
// Design notes:
//   C1. A file is reloaded when its stamp (inode, size, mtime) changed, which
//       every call checks: a replaced CRL is in force from the next request.
//   C2. A CRL that does not parse, names an issuer no configured CA has, or
//       whose signature does not verify never replaces the one in force: the
//       previous stays and the log says why. At creation there is no
//       previous, so creation fails instead.
//   C3. A CRL speaks for its issuer only: a certificate is revoked when a
//       CRL of the same issuer (by the SHA-256 of the issuer name's DER)
//       lists its serial.
//   C4. Past its nextUpdate a CRL may be missing revocations. With
//       on_expired = "refuse" (the default) the list then cannot vouch for
//       any certificate of that issuer: the call fails as unavailable, which
//       the wire answers 503 (it heals when a fresh CRL is installed). With
//       "warn" it keeps answering and logs, once per file, that it is stale.
//
// Thread-safe: one mutex; the work under it is a stat per file and a set
// lookup, or a reload when a file changed.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "file_watch.h"
#include "nodeplane/np_revocation_v1.h"

namespace nodeplane::plugins {

struct CrlConfig {
  std::vector<std::string> crl_files;
  std::vector<std::string> ca_files;
  bool refuse_expired = true;
};

class CrlList {
 public:
  // Loads and verifies every file; throws PluginError(NP_INVALID) naming
  // the file when one cannot be used.
  CrlList(const np_host_v1* host, CrlConfig config);

  // Sets *revoked; NP_UNAVAILABLE under C4's refuse policy.
  np_code IsRevoked(const np_cert_identity_v1& cert, uint32_t* revoked, std::string* why);

 private:
  struct Crl {
    std::string issuer_sha256;
    std::set<std::string> serials;
    int64_t next_update_ns = 0;  // 0: none given
  };
  struct File {
    std::string path;
    FileStamp stamp;
    std::shared_ptr<const Crl> crl;
    bool warned_expired = false;
  };
  // Reads and verifies one file; throws PluginError.
  Crl Load(const std::string& path) const;
  void RefreshLocked(File& f);
  void Log(int32_t level, const char* event, const std::string& path, const std::string& detail) const;

  const np_host_v1* host_;
  CrlConfig config_;
  std::string ca_pem_;  // every configured CA, concatenated
  std::mutex mu_;
  std::vector<File> files_;
};

}  // namespace nodeplane::plugins
