#include "crl_list.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include <cctype>
#include <ctime>
#include <fstream>
#include <sstream>

#include "plugin_error.h"
#include "plugin_time.h"

namespace nodeplane::plugins {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(NP_INVALID, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Hex(const unsigned char* p, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[p[i] >> 4]);
    out.push_back(kHex[p[i] & 15]);
  }
  return out;
}

std::string NameSha256(const X509_NAME* name) {
  const unsigned char* der = nullptr;
  size_t len = 0;
  X509_NAME_get0_der(const_cast<X509_NAME*>(name), &der, &len);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(der, len, digest);
  return Hex(digest, sizeof digest);
}

// Lowercase hex without leading zeros, as the host writes serials.
std::string SerialText(const ASN1_INTEGER* serial) {
  BIGNUM* bn = ASN1_INTEGER_to_BN(serial, nullptr);
  char* hex = BN_bn2hex(bn);
  std::string s = hex;
  OPENSSL_free(hex);
  BN_free(bn);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  s.erase(0, std::min(s.find_first_not_of('0'), s.size() - 1));
  return s;
}

int64_t TimeNs(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<int64_t>(timegm(&tm)) * plugins::kSecondNs;
}

}  // namespace

CrlList::CrlList(const np_host_v1* host, CrlConfig config) : host_(host), config_(std::move(config)) {
  for (const std::string& f : config_.ca_files) ca_pem_ += ReadFile(f);
  for (const std::string& path : config_.crl_files) {
    File f{path, StampOf(path), nullptr, false};
    f.crl = std::make_shared<const Crl>(Load(path));  // C2: no previous to keep, so this throws
    files_.push_back(std::move(f));
  }
}

CrlList::Crl CrlList::Load(const std::string& path) const {
  const std::string bytes = ReadFile(path);
  BIO* bio = BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size()));
  X509_CRL* crl = PEM_read_bio_X509_CRL(bio, nullptr, nullptr, nullptr);
  if (crl == nullptr) {  // not PEM: DER
    BIO_free(bio);
    bio = BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size()));
    crl = d2i_X509_CRL_bio(bio, nullptr);
  }
  BIO_free(bio);
  if (crl == nullptr) Fail(NP_INVALID, path + " is not a CRL (PEM or DER)");
  // The issuer must be a configured CA, and the CRL signed by its key.
  bool verified = false, issuer_known = false;
  BIO* cas = BIO_new_mem_buf(ca_pem_.data(), static_cast<int>(ca_pem_.size()));
  while (X509* ca = PEM_read_bio_X509(cas, nullptr, nullptr, nullptr)) {
    if (X509_NAME_cmp(X509_get_subject_name(ca), X509_CRL_get_issuer(crl)) == 0) {
      issuer_known = true;
      if (X509_CRL_verify(crl, X509_get0_pubkey(ca)) == 1) verified = true;
    }
    X509_free(ca);
  }
  BIO_free(cas);
  if (!issuer_known || !verified) {
    X509_CRL_free(crl);
    Fail(NP_INVALID, path + (issuer_known ? ": the CRL's signature does not verify against its CA"
                                          : ": the CRL's issuer is none of the configured CAs"));
  }
  Crl out;
  out.issuer_sha256 = NameSha256(X509_CRL_get_issuer(crl));
  out.next_update_ns = TimeNs(X509_CRL_get0_nextUpdate(crl));
  STACK_OF(X509_REVOKED)* revoked = X509_CRL_get_REVOKED(crl);
  for (int i = 0; i < sk_X509_REVOKED_num(revoked); ++i) {
    out.serials.insert(SerialText(X509_REVOKED_get0_serialNumber(sk_X509_REVOKED_value(revoked, i))));
  }
  X509_CRL_free(crl);
  return out;
}

void CrlList::Log(int32_t level, const char* event, const std::string& path, const std::string& detail) const {
  const char* keys[] = {"file", "detail"};
  const char* values[] = {path.c_str(), detail.c_str()};
  host_->log(host_->ctx, level, event, keys, values, 2);
}

void CrlList::RefreshLocked(File& f) {
  FileStamp now = StampOf(f.path);
  if (now == f.stamp) return;
  f.stamp = now;
  try {
    auto crl = std::make_shared<const Crl>(Load(f.path));
    Log(NP_LOG_INFO, "crl.loaded", f.path, std::to_string(crl->serials.size()) + " revoked serial(s)");
    f.crl = std::move(crl);
    f.warned_expired = false;
  } catch (const PluginError& e) {
    Log(NP_LOG_WARN, "crl.rejected", f.path, std::string(e.what()) + "; the previous CRL stays in force");
  }
}

np_code CrlList::IsRevoked(const np_cert_identity_v1& cert, uint32_t* revoked, std::string* why) {
  *revoked = 0;
  const std::string serial = cert.serial != nullptr ? cert.serial : "";
  const std::string issuer = cert.issuer_der_sha256 != nullptr ? cert.issuer_der_sha256 : "";
  const int64_t now = host_->wall_clock_ns(host_->ctx);
  std::lock_guard lock(mu_);
  for (File& f : files_) {
    RefreshLocked(f);
    const Crl& crl = *f.crl;
    if (crl.issuer_sha256 != issuer) continue;  // C3
    if (crl.next_update_ns != 0 && crl.next_update_ns < now) {  // C4
      if (config_.refuse_expired) {
        *why = f.path + " is past its nextUpdate; install a fresh CRL";
        return NP_UNAVAILABLE;
      }
      if (!f.warned_expired) {
        f.warned_expired = true;
        Log(NP_LOG_WARN, "crl.expired", f.path, "past its nextUpdate; answering from it anyway (on_expired = warn)");
      }
    }
    if (crl.serials.count(serial) != 0) *revoked = 1;
  }
  return NP_OK;
}

}  // namespace nodeplane::plugins
