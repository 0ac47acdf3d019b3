// The GitHub test doubles as child processes of a test: the stateful fake
// (tests/github/fake_github.mjs) and Prism serving GitHub's own OpenAPI
// description, plus App key pairs for them. The npm packages are installed
// by packaging/setup-test-doubles.sh into tests/github/node_modules.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "child_process.h"
#include "wire/http_client.h"

namespace nodeplane::testing {

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void WriteText(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

// An App's RSA key pair: the private key written 0600 to `key_file` (the
// plugin's private_key_file), the public key to `pub_file` (the fake's).
inline void MakeAppKey(const std::string& key_file, const std::string& pub_file) {
  EVP_PKEY* pkey = EVP_RSA_gen(2048);
  if (pkey == nullptr) throw std::runtime_error("RSA key generation failed");
  FILE* f = std::fopen(key_file.c_str(), "w");
  PEM_write_PrivateKey(f, pkey, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  ::chmod(key_file.c_str(), 0600);
  f = std::fopen(pub_file.c_str(), "w");
  PEM_write_PUBKEY(f, pkey);
  std::fclose(f);
  EVP_PKEY_free(pkey);
}

// Base64 (the encoding of a JIT config) decoded.
inline std::string Base64Decode(const std::string& encoded) {
  std::string raw(encoded.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                          reinterpret_cast<const unsigned char*>(encoded.data()), static_cast<int>(encoded.size()));
  raw.resize(n > 0 ? static_cast<size_t>(n) : 0);
  const size_t pad = encoded.size() - encoded.find_last_not_of('=') - 1;
  raw.resize(raw.size() >= pad ? raw.size() - pad : 0);
  return raw;
}

// The stateful fake, with its Apps' keys in `dir`: App A (id 11, client id
// Iv1.aaa, key app-a.pem) is installed on acme (installation 101), App B
// (id 22, client id Iv1.bbb, key app-b.pem) on globex (202); the enterprise
// big-co takes the token in enterprise-token. Every organisation has the
// groups Default (1, the default), group-0.. (10..), builders (98) and
// builders-<org> (99).
class GithubFake {
 public:
  GithubFake(std::string doubles_dir, std::string dir) : doubles_(std::move(doubles_dir)), dir_(std::move(dir)) {}

  // Returns "" once it serves, else what went wrong.
  // `extra_spec` adds keys to the fake's SPEC (",\"poll_hold_ms\":30000").
  std::string Start(int runner_groups = 3, const std::string& extra_spec = "") {
    if (std::system("command -v node >/dev/null") != 0) return "Node.js is needed for the GitHub fake";
    if (!std::ifstream(doubles_ + "/node_modules/jose/package.json")) {
      return "run packaging/setup-test-doubles.sh to install the GitHub test doubles";
    }
    MakeAppKey(dir_ + "/app-a.pem", dir_ + "/app-a.pub");
    MakeAppKey(dir_ + "/app-b.pem", dir_ + "/app-b.pub");
    WriteText(dir_ + "/enterprise-token", enterprise_token() + "\n");
    WriteText(dir_ + "/fake.json", R"({"apps":[
      {"app_id":11,"client_id":"Iv1.aaa","public_key_file":")" + dir_ + R"(/app-a.pub",
       "installations":[{"id":101,"account":"acme"}]},
      {"app_id":22,"client_id":"Iv1.bbb","public_key_file":")" + dir_ + R"(/app-b.pub",
       "installations":[{"id":202,"account":"globex"}]}],
      "enterprise_tokens":{")" + enterprise_token() + R"(":"big-co"},
      "runner_groups":)" + std::to_string(runner_groups) + extra_spec + "}");
    child_ = std::make_unique<Child>(std::vector<std::string>{"node", doubles_ + "/fake_github.mjs", dir_ + "/fake.json"},
                                     dir_ + "/fake.log");
    const auto port = child_->AwaitLine("listening ");
    if (!port) return "the fake did not start: " + ReadAll(dir_ + "/fake.log");
    port_ = static_cast<uint16_t>(std::stoi(*port));
    control_ = std::make_unique<wire::HttpClient>(wire::ClientOptions{"127.0.0.1", port_, std::nullopt, {}});
    return "";
  }

  uint16_t port() const { return port_; }
  static std::string enterprise_token() { return "ghp_enterprise_" + std::string(60, 'x'); }

  // A control route's JSON answer (null for none or on failure).
  boost::json::value Control(const std::string& method, const std::string& path, const std::string& body = "") {
    auto r = control_->Do(method, path, body);
    if (!r.ok() || r->body.empty()) return nullptr;
    return boost::json::parse(r->body);
  }
  // The API requests the fake served whose "METHOD path" matches `pattern`.
  std::vector<boost::json::object> Requests(const std::string& pattern) {
    std::vector<boost::json::object> out;
    const boost::json::value log = Control("GET", "/_fake/log");
    for (const boost::json::value& e : log.as_array()) {
      const std::string line =
          std::string(e.at("method").as_string()) + " " + std::string(e.at("path").as_string());
      if (std::regex_search(line, std::regex(pattern))) out.push_back(e.as_object());
    }
    return out;
  }
  // The next `times` requests matching `match` get `status` and `headers`
  // (a JSON object), after `delay_ms`.
  void Fault(const std::string& match, int status, int times, const std::string& headers = "{}", int delay_ms = 0) {
    Control("POST", "/_fake/fault",
            R"({"match":")" + match + R"(","status":)" + std::to_string(status) + R"(,"times":)" +
                std::to_string(times) + R"(,"headers":)" + headers + R"(,"delay_ms":)" + std::to_string(delay_ms) +
                "}");
  }

 private:
  std::string doubles_, dir_;
  std::unique_ptr<Child> child_;
  uint16_t port_ = 0;
  std::unique_ptr<wire::HttpClient> control_;
};

}  // namespace nodeplane::testing
