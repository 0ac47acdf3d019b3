// The GitHub App's JSON Web Token: RS256 over {"iat","exp","iss"}, with iat
// 60 s in the past (GitHub's advice, for clock drift) and exp 9 minutes
// ahead of now (GitHub refuses more than 10). It authenticates the App
// itself, to look up its installation and mint installation tokens.
//
// The private key is read once, at construction, and lives only in this
// object. Thread-safe: Sign may be called from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace nodeplane::plugins::github {

class AppSigner {
 public:
  // Reads an RSA private key (PEM, PKCS#1 or PKCS#8) from `key_file`, which
  // must not be accessible to group or others. Throws PluginError(NP_INVALID)
  // naming the file (never its content) when it is missing, too open, not
  // RSA, or shorter than 2048 bits.
  AppSigner(const std::string& key_file, std::string issuer);
  ~AppSigner();
  AppSigner(const AppSigner&) = delete;
  AppSigner& operator=(const AppSigner&) = delete;

  // A JWT valid from now_s - 60 to now_s + 540. SECRET: a bearer credential.
  std::string Sign(int64_t now_s) const;

 private:
  struct Key;
  std::unique_ptr<Key> key_;
  std::string issuer_;
};

// Base64url without padding (RFC 7515 §2).
std::string Base64Url(const std::string& bytes);

}  // namespace nodeplane::plugins::github
