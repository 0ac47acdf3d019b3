#include "nodeplaned/tls_setup.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/file_text.h"
#include "config/address.h"
#include "pki/authority.h"

namespace nodeplane {
namespace {

// Replicas of one deployment ([ha]) may share the CA's directory: creating
// the CA, and rotating it, happen under an exclusive lock on ca.lock there,
// so two replicas starting at once end up with one CA, not two.
class CaDirLock {
 public:
  explicit CaDirLock(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    fd_ = ::open((dir + "/ca.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      error_ = "cannot open " + dir + "/ca.lock: " + std::strerror(errno);
      return;
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        error_ = "cannot lock " + dir + "/ca.lock: " + std::strerror(errno);
        return;
      }
    }
  }
  ~CaDirLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  CaDirLock(const CaDirLock&) = delete;
  CaDirLock& operator=(const CaDirLock&) = delete;
  Status status() const { return error_.empty() ? Status::Ok() : Status::Unavailable(error_); }

 private:
  int fd_ = -1;
  std::string error_;
};

}  // namespace

Result<pki::Authority> LoadOrCreateAuthority(const config::Config& cfg, int64_t now_ns) {
  const std::string dir = cfg.CaDir();
  CaDirLock lock(dir);
  if (Status s = lock.status(); !s.ok()) return s;
  const std::string cert_path = dir + "/ca.pem", key_path = dir + "/ca.key";
  if (std::filesystem::exists(cert_path)) {
    auto cert = ReadTextFile(cert_path);
    auto key = ReadTextFile(key_path);
    if (!cert.ok()) return cert.status();
    if (!key.ok()) return key.status();
    auto ca = pki::Authority::Load(*cert, *key);
    if (!ca.ok()) return ca.status();
    // A rotation in progress: the previous CA stays trusted until retired.
    const std::string prev_cert = dir + "/ca-previous.pem", prev_key = dir + "/ca-previous.key";
    if (std::filesystem::exists(prev_cert)) {
      auto pc = ReadTextFile(prev_cert);
      auto pk = ReadTextFile(prev_key);
      if (!pc.ok()) return pc.status();
      if (!pk.ok()) return pk.status();
      if (Status s = ca->AddPrevious(*pc, *pk); !s.ok()) return s;
    }
    return ca;
  }
  auto ca = pki::Authority::Create(cfg.deployment, now_ns);
  if (!ca.ok()) return ca.status();
  if (Status s = pki::WritePrivateFile(key_path, ca->key_pem()); !s.ok()) return s;
  std::ofstream(cert_path) << ca->cert_pem();
  return ca;
}

Result<std::string> RotateAuthority(const config::Config& cfg, int64_t now_ns) {
  const std::string dir = cfg.CaDir();
  CaDirLock lock(dir);
  if (Status s = lock.status(); !s.ok()) return s;
  if (!std::filesystem::exists(dir + "/ca.pem")) return Status::Refused("there is no CA to rotate yet; see ca init");
  if (std::filesystem::exists(dir + "/ca-previous.pem")) {
    return Status::Refused("a rotation is already in progress; retire the previous CA first (ca retire), once every "
                           "node has renewed");
  }
  auto ca = pki::Authority::Create(cfg.deployment, now_ns);
  if (!ca.ok()) return ca.status();
  std::error_code ec;
  std::filesystem::rename(dir + "/ca.key", dir + "/ca-previous.key", ec);
  if (!ec) std::filesystem::rename(dir + "/ca.pem", dir + "/ca-previous.pem", ec);
  if (ec) return Status::Unavailable("cannot move the current CA aside: " + ec.message());
  if (Status s = pki::WritePrivateFile(dir + "/ca.key", ca->key_pem()); !s.ok()) return s;
  std::ofstream(dir + "/ca.pem") << ca->cert_pem();
  return ca->fingerprint();
}

Status RetirePreviousAuthority(const config::Config& cfg) {
  const std::string dir = cfg.CaDir();
  CaDirLock lock(dir);
  if (Status s = lock.status(); !s.ok()) return s;
  if (!std::filesystem::exists(dir + "/ca-previous.pem")) return Status::Refused("no rotation is in progress");
  std::error_code ec;
  std::filesystem::remove(dir + "/ca-previous.key", ec);
  std::filesystem::remove(dir + "/ca-previous.pem", ec);
  if (ec) return Status::Unavailable("cannot delete the previous CA: " + ec.message());
  return Status::Ok();
}

Result<WireTls> PrepareWireTls(const config::Config& cfg, int64_t now_ns) {
  auto ca = LoadOrCreateAuthority(cfg, now_ns);
  if (!ca.ok()) return ca.status();
  wire::TlsOptions tls;
  tls.require_client_cert = true;  // the operational wire has no anonymous route (R06)
  tls.client_ca_pem = ca->trust_bundle_pem();  // both CAs during a rotation (S12)
  const config::TlsConfig& t = *cfg.wire.tls;
  if (!t.cert_file.empty()) {
    auto cert = ReadTextFile(t.cert_file);
    auto key = ReadTextFile(t.key_file);
    if (!cert.ok()) return cert.status();
    if (!key.ok()) return key.status();
    tls.cert_pem = *cert;
    tls.key_pem = *key;
    return WireTls{*ca, tls};
  }
  std::vector<std::string> names = t.server_names;
  if (names.empty()) names.push_back(config::ParseListenAddress(cfg.wire.listen)->host);  // validated non-wildcard
  auto server = ca->IssueServer(names, now_ns);
  if (!server.ok()) return server.status();
  tls.cert_pem = server->first;
  tls.key_pem = server->second.private_pem;
  return WireTls{*ca, tls};
}

}  // namespace nodeplane
