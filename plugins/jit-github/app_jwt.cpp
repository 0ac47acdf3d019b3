#include "app_jwt.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <vector>

#include "plugin_error.h"
#include "secret_file.h"

namespace nodeplane::plugins::github {

struct AppSigner::Key {
  EVP_PKEY* pkey = nullptr;
  ~Key() { EVP_PKEY_free(pkey); }
};

std::string Base64Url(const std::string& bytes) {
  std::vector<unsigned char> out(4 * ((bytes.size() + 2) / 3) + 1);
  int n = EVP_EncodeBlock(out.data(), reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  std::string s(reinterpret_cast<const char*>(out.data()), static_cast<size_t>(n));
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return s;
}

AppSigner::AppSigner(const std::string& key_file, std::string issuer)
    : key_(std::make_unique<Key>()), issuer_(std::move(issuer)) {
  std::string pem = ReadSecretFile("jit-github", "private_key_file", key_file, /*allow_group=*/false);
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  key_->pkey = bio != nullptr ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  OPENSSL_cleanse(pem.data(), pem.size());
  const std::string where = "jit-github: private_key_file " + key_file;
  if (key_->pkey == nullptr) Fail(NP_INVALID, where + " holds no PEM private key (download it from the App's settings)");
  if (EVP_PKEY_base_id(key_->pkey) != EVP_PKEY_RSA) Fail(NP_INVALID, where + " is not an RSA key; GitHub Apps sign RS256");
  if (EVP_PKEY_get_bits(key_->pkey) < 2048) Fail(NP_INVALID, where + " is shorter than 2048 bits");
}

AppSigner::~AppSigner() = default;

std::string AppSigner::Sign(int64_t now_s) const {
  // iss is a JSON string: GitHub accepts the client ID or the numeric App ID
  // there, and config has checked that it holds no character to escape.
  const std::string header = Base64Url(R"({"alg":"RS256","typ":"JWT"})");
  const std::string claims = Base64Url("{\"iat\":" + std::to_string(now_s - 60) + ",\"exp\":" +
                                       std::to_string(now_s + 540) + ",\"iss\":\"" + issuer_ + "\"}");
  const std::string input = header + "." + claims;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t len = 0;
  std::string sig;
  bool ok = ctx != nullptr && EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key_->pkey) == 1 &&
            EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  if (ok) {
    sig.resize(len);
    ok = EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                        reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
    sig.resize(len);
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) Fail(NP_INTERNAL, "jit-github: signing the App JWT failed in OpenSSL");
  return input + "." + Base64Url(sig);
}

}  // namespace nodeplane::plugins::github
