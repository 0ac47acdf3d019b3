#include "pki/authority.h"

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/units.h"

namespace nodeplane::pki {
namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using PKey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Req = std::unique_ptr<X509_REQ, Deleter<X509_REQ, X509_REQ_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using Bn = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using Store = std::unique_ptr<X509_STORE, Deleter<X509_STORE, X509_STORE_free>>;
using StoreCtx = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX, X509_STORE_CTX_free>>;


Bio MemBio(const std::string& text) { return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))); }

std::string Drain(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

PKey ReadKey(const std::string& pem) {
  Bio b = MemBio(pem);
  return PKey(PEM_read_bio_PrivateKey(b.get(), nullptr, nullptr, nullptr));
}

Cert ReadCert(const std::string& pem) {
  Bio b = MemBio(pem);
  return Cert(PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr));
}

std::string CertPEM(X509* x) {
  Bio b(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(b.get(), x);
  return Drain(b.get());
}

std::string NameEntry(X509_NAME* name, int nid) {
  int i = X509_NAME_get_index_by_NID(name, nid, -1);
  if (i < 0) return {};
  ASN1_STRING* s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, s);
  if (n < 0) return {};
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

std::string Hex(const unsigned char* bytes, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 15]);
  }
  return out;
}

int64_t TimeNs(const ASN1_TIME* t) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<int64_t>(timegm(&tm)) * kSecondNs;
}

bool AddExt(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A new certificate for `key` named (cn, o), signed by (issuer, issuer_key);
// a self-signed CA when issuer is null.
Result<Cert> Build(EVP_PKEY* key, const std::string& cn, const std::string& o, X509* issuer, EVP_PKEY* issuer_key,
                   int64_t now_ns, int64_t lifetime_ns, const std::vector<std::string>& extensions_by_kind,
                   const std::vector<std::string>& server_names) {
  Cert x(X509_new());
  X509_set_version(x.get(), 2);
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof raw) != 1) return Status::Internal("the system random source failed");
  raw[0] &= 0x7f;  // positive
  Bn serial(BN_bin2bn(raw, sizeof raw, nullptr));
  BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(x.get()));
  int64_t not_after = now_ns + lifetime_ns;
  if (issuer != nullptr) not_after = std::min(not_after, TimeNs(X509_get0_notAfter(issuer)));
  ASN1_TIME_set(X509_getm_notBefore(x.get()), static_cast<time_t>((now_ns - kSkewNs) / kSecondNs));
  ASN1_TIME_set(X509_getm_notAfter(x.get()), static_cast<time_t>(not_after / kSecondNs));
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(o.c_str()), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(x.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509_set_pubkey(x.get(), key);
  X509* signer = issuer != nullptr ? issuer : x.get();
  bool ok = AddExt(x.get(), signer, NID_subject_key_identifier, "hash") &&
            AddExt(x.get(), signer, NID_authority_key_identifier, "keyid:always");
  for (size_t i = 0; ok && i + 1 < extensions_by_kind.size(); i += 2) {
    int nid = OBJ_txt2nid(extensions_by_kind[i].c_str());
    ok = AddExt(x.get(), signer, nid, extensions_by_kind[i + 1]);
  }
  if (ok && !server_names.empty()) {
    std::string san;
    for (const std::string& n : server_names) {
      bool ip = n.find_first_not_of("0123456789.") == std::string::npos || n.find(':') != std::string::npos;
      san += (san.empty() ? "" : ",") + std::string(ip ? "IP:" : "DNS:") + n;
    }
    ok = AddExt(x.get(), signer, NID_subject_alt_name, san);
  }
  if (!ok) return Status::Internal("could not add the certificate's extensions");
  if (X509_sign(x.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    return Status::Internal("could not sign the certificate");
  }
  return x;
}

}  // namespace

Result<KeyPair> GenerateKey() {
  PKey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) return Status::Internal("could not generate a P-256 key");
  Bio priv(BIO_new(BIO_s_mem())), pub(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(priv.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  PEM_write_bio_PUBKEY(pub.get(), key.get());
  return KeyPair{Drain(priv.get()), Drain(pub.get())};
}

Result<std::string> MakeCSR(const std::string& private_pem, const std::string& common_name) {
  PKey key = ReadKey(private_pem);
  if (!key) return Status::Invalid("the private key is not a PEM key");
  Req req(X509_REQ_new());
  X509_NAME* name = X509_REQ_get_subject_name(req.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(common_name.c_str()),
                             -1, -1, 0);
  X509_REQ_set_pubkey(req.get(), key.get());
  if (X509_REQ_sign(req.get(), key.get(), EVP_sha256()) == 0) return Status::Internal("could not sign the CSR");
  Bio b(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509_REQ(b.get(), req.get());
  return Drain(b.get());
}

Status WritePrivateFile(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable("cannot write " + path + ": " + std::strerror(errno));
  bool ok = ::fchmod(fd, 0600) == 0;  // an existing file keeps no looser mode
  size_t done = 0;
  while (ok && done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  if (!ok) return Status::Unavailable("cannot write " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

std::string FingerprintOfDER(const std::string& der) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(der.data()), der.size(), digest);
  return "sha256:" + Hex(digest, sizeof digest);
}

Result<std::string> FingerprintOfCSR(const std::string& csr_pem) {
  if (csr_pem.find("-----BEGIN CERTIFICATE REQUEST-----") == std::string::npos) {
    return Status::Invalid("csr_pem is not a PEM certificate request");
  }
  Bio b = MemBio(csr_pem);
  Req req(PEM_read_bio_X509_REQ(b.get(), nullptr, nullptr, nullptr));
  if (!req) return Status::Invalid("csr_pem is not a readable certificate request");
  PKey pub(X509_REQ_get_pubkey(req.get()));
  if (!pub) return Status::Invalid("the certificate request carries no public key");
  unsigned char* der = nullptr;
  int n = i2d_PUBKEY(pub.get(), &der);
  if (n <= 0) return Status::Invalid("the certificate request's key cannot be encoded");
  std::string fp = FingerprintOfDER(std::string(reinterpret_cast<char*>(der), static_cast<size_t>(n)));
  OPENSSL_free(der);
  return fp;
}

std::string JoinTokenHash(const std::string& token) {
  std::string t = token;
  t.erase(0, t.find_first_not_of(" \t\r\n"));
  t.erase(t.find_last_not_of(" \t\r\n") + 1);
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return FingerprintOfDER(t).substr(7);  // the hex digest alone
}

Result<std::string> NewJoinToken() {
  unsigned char raw[20];
  if (RAND_bytes(raw, sizeof raw) != 1) return Status::Internal("the system random source failed");
  static const char* kAlphabet = "abcdefghijklmnopqrstuvwxyz234567";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char b : raw) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kAlphabet[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  return out;  // 160 bits: exactly 32 characters, no padding
}

Result<CertInfo> InspectCert(const std::string& cert_pem) {
  Cert x = ReadCert(cert_pem);
  if (!x) return Status::Invalid("not a PEM certificate");
  return InspectCert(*x);
}

CertInfo InspectCert(const X509& cert) {
  X509* x = const_cast<X509*>(&cert);  // X509_check_ca's signature lacks the const; nothing is changed
  CertInfo info;
  info.common_name = NameEntry(X509_get_subject_name(x), NID_commonName);
  info.organization = NameEntry(X509_get_subject_name(x), NID_organizationName);
  Bn serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), nullptr));
  char* hex = BN_bn2hex(serial.get());
  info.serial = hex;
  OPENSSL_free(hex);
  for (char& c : info.serial) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  info.serial.erase(0, std::min(info.serial.find_first_not_of('0'), info.serial.size() - 1));
  unsigned char* der = nullptr;
  int n = i2d_X509(x, &der);
  info.fingerprint = FingerprintOfDER(std::string(reinterpret_cast<char*>(der), static_cast<size_t>(n)));
  OPENSSL_free(der);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  const unsigned char* issuer_der = nullptr;
  size_t issuer_len = 0;
  X509_NAME_get0_der(X509_get_issuer_name(x), &issuer_der, &issuer_len);
  SHA256(issuer_der, issuer_len, digest);
  info.issuer_sha256 = Hex(digest, sizeof digest);
  info.not_before_ns = TimeNs(X509_get0_notBefore(x));
  info.not_after_ns = TimeNs(X509_get0_notAfter(x));
  info.is_ca = X509_check_ca(x) != 0;
  return info;
}

Result<Authority> Authority::Create(const std::string& deployment, int64_t now_ns) {
  auto keys = GenerateKey();
  if (!keys.ok()) return keys.status();
  PKey key = ReadKey(keys->private_pem);
  auto cert = Build(key.get(), "nodeplane " + deployment + " CA", deployment, nullptr, nullptr, now_ns, kCALifetimeNs,
                    {"basicConstraints", "critical,CA:TRUE,pathlen:0", "keyUsage", "critical,keyCertSign,cRLSign"},
                    {});
  if (!cert.ok()) return cert.status();
  Authority a;
  a.cert_pem_ = CertPEM(cert->get());
  a.key_pem_ = keys->private_pem;
  a.deployment_ = deployment;
  return a;
}

Result<Authority> Authority::Load(const std::string& cert_pem, const std::string& key_pem) {
  Cert x = ReadCert(cert_pem);
  PKey key = ReadKey(key_pem);
  if (!x || !key) return Status::Invalid("the CA certificate or key is not readable PEM");
  if (X509_check_private_key(x.get(), key.get()) != 1) return Status::Invalid("the CA key does not match its certificate");
  if (X509_check_ca(x.get()) == 0) return Status::Invalid("the certificate is not a CA");
  Authority a;
  a.cert_pem_ = cert_pem;
  a.key_pem_ = key_pem;
  a.deployment_ = NameEntry(X509_get_subject_name(x.get()), NID_organizationName);
  return a;
}

Status Authority::AddPrevious(const std::string& cert_pem, const std::string& key_pem) {
  auto previous = Load(cert_pem, key_pem);
  if (!previous.ok()) return Status::Invalid("the previous CA: " + previous.status().message());
  if (previous->deployment_ != deployment_) {
    return Status::Invalid("the previous CA belongs to deployment \"" + previous->deployment_ + "\", not \"" +
                           deployment_ + "\"");
  }
  previous_cert_pem_ = cert_pem;
  previous_key_pem_ = key_pem;
  return Status::Ok();
}

std::string Authority::fingerprint() const {
  auto info = InspectCert(cert_pem_);
  return info.ok() ? info->fingerprint : std::string();
}

Result<std::pair<std::string, KeyPair>> Authority::IssueServer(const std::vector<std::string>& names,
                                                               int64_t now_ns) const {
  if (names.empty()) return Status::Invalid("a server certificate needs at least one name");
  auto keys = GenerateKey();
  if (!keys.ok()) return keys.status();
  PKey key = ReadKey(keys->private_pem);
  Cert ca = ReadCert(rotating() ? previous_cert_pem_ : cert_pem_);
  PKey ca_key = ReadKey(rotating() ? previous_key_pem_ : key_pem_);
  auto cert = Build(key.get(), names.front(), deployment_, ca.get(), ca_key.get(), now_ns, kLeafLifetimeNs,
                    {"basicConstraints", "critical,CA:FALSE", "keyUsage", "critical,digitalSignature",
                     "extendedKeyUsage", "serverAuth"},
                    names);
  if (!cert.ok()) return cert.status();
  return std::make_pair(CertPEM(cert->get()), *keys);
}

Result<std::string> Authority::SignNodeCSR(const std::string& csr_pem, const std::string& node, int64_t now_ns) const {
  Bio b = MemBio(csr_pem);
  Req req(PEM_read_bio_X509_REQ(b.get(), nullptr, nullptr, nullptr));
  if (!req) return Status::Invalid("the certificate request is not PEM");
  PKey pub(X509_REQ_get_pubkey(req.get()));
  if (!pub || X509_REQ_verify(req.get(), pub.get()) != 1) {
    return Status::Invalid("the certificate request is not signed by its own key");
  }
  Cert ca = ReadCert(cert_pem_);
  PKey ca_key = ReadKey(key_pem_);
  auto cert = Build(pub.get(), node, deployment_, ca.get(), ca_key.get(), now_ns, kLeafLifetimeNs,
                    {"basicConstraints", "critical,CA:FALSE", "keyUsage", "critical,digitalSignature",
                     "extendedKeyUsage", "clientAuth"},
                    {});
  if (!cert.ok()) return cert.status();
  return CertPEM(cert->get());
}

Result<std::pair<std::string, KeyPair>> Authority::IssueNode(const std::string& node, int64_t now_ns) const {
  auto keys = GenerateKey();
  if (!keys.ok()) return keys.status();
  auto csr = MakeCSR(keys->private_pem, node);
  if (!csr.ok()) return csr.status();
  auto cert = SignNodeCSR(*csr, node, now_ns);
  if (!cert.ok()) return cert.status();
  return std::make_pair(*cert, *keys);
}

Status Authority::Verify(const std::string& cert_pem) const {
  Cert leaf = ReadCert(cert_pem);
  if (!leaf) return Status::Invalid("not a PEM certificate");
  Store store(X509_STORE_new());
  for (const std::string* pem : {&cert_pem_, &previous_cert_pem_}) {
    if (Cert ca = ReadCert(*pem)) X509_STORE_add_cert(store.get(), ca.get());
  }
  StoreCtx ctx(X509_STORE_CTX_new());
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), nullptr);
  if (X509_verify_cert(ctx.get()) != 1) {
    return Status::Refused(std::string("the certificate does not verify against this authority: ") +
                           X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())));
  }
  return Status::Ok();
}

bool RenewalDue(const CertInfo& cert, int64_t now_ns) {
  const int64_t lifetime = cert.not_after_ns - cert.not_before_ns;
  return cert.not_after_ns - now_ns < lifetime / 3;
}

}  // namespace nodeplane::pki
