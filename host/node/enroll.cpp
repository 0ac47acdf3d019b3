#include "node/enroll.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/file_text.h"
#include "pki/authority.h"
#include "protocol/codec.h"
#include "wire/http_client.h"

namespace nodeplane::node {
namespace {

std::string Lower(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Status Enroll(const EnrollOptions& o, std::stop_token stop) {
  Logger& log = *o.log;
  // The state directory holds the node's key: its owner's alone (a job
  // that could read it would be the node; see job_sandbox.h).
  std::error_code ec;
  if (std::filesystem::create_directories(o.state_dir, ec)) {
    std::filesystem::permissions(o.state_dir, std::filesystem::perms::owner_all, ec);
  }
  // 1. The CA, trusted only by the operator's fingerprint of its first certificate.
  wire::ClientOptions anon{o.bootstrap_host, o.bootstrap_port, wire::ClientTls{"", "", "", "", false},
                           std::chrono::seconds(30)};
  wire::HttpClient fetch(anon);
  auto r = fetch.Do("GET", "/v1/ca");
  if (!r.ok()) return r.status();
  if (r->status != 200) return Status::Unavailable("GET /v1/ca answered HTTP " + std::to_string(r->status));
  auto ca = protocol::Decode<protocol::CaReply>(r->body);
  if (!ca.ok()) return ca.status();
  auto first = pki::InspectCert(ca->ca_pem);  // reads the first certificate of the bundle
  if (!first.ok()) return Status::Invalid("the control plane's CA answer holds no certificate");
  if (Lower(first->fingerprint) != Lower(o.ca_fingerprint)) {
    return Status::Refused("the control plane's CA has fingerprint " + first->fingerprint +
                           ", not the one given; this is not the deployment you meant (or someone is in between)");
  }
  // 2. The key stays on this machine; a restart reuses it.
  const std::string pending_key = o.state_dir + "/pending.key";
  if (!std::filesystem::exists(pending_key)) {
    auto key = pki::GenerateKey();
    if (!key.ok()) return key.status();
    if (Status s = pki::WritePrivateFile(pending_key, key->private_pem); !s.ok()) return s;
  }
  auto key_pem = ReadTextFile(pending_key);
  if (!key_pem.ok()) return key_pem.status();
  auto csr = pki::MakeCSR(*key_pem, o.name);
  if (!csr.ok()) return csr.status();
  auto fp = pki::FingerprintOfCSR(*csr);
  if (!fp.ok()) return fp.status();
  log.Info("enroll.requesting", {{"node", o.name}, {"fingerprint", *fp}, {"deployment", ca->deployment}});
  std::fprintf(stderr, "enrolling %s; ask the operator to approve fingerprint %s\n", o.name.c_str(), fp->c_str());

  // 3. Ask until decided, over TLS verified against the fetched bundle.
  wire::HttpClient ask({o.bootstrap_host, o.bootstrap_port, wire::ClientTls{ca->ca_pem, "", "", "", true},
                        std::chrono::seconds(30)});
  const std::string body = protocol::Encode(protocol::EnrollBody{o.name, *csr, o.join_token});
  while (!stop.stop_requested()) {
    auto e = ask.Do("POST", "/v1/enroll", body);
    if (!e.ok()) {
      log.Warn("enroll.ask_failed", {{"error", e.status().message()}});
    } else if (e->status == 401) {
      return Status::Refused("the join token was not accepted (unknown, used up or expired)");
    } else if (e->status != 200) {
      return Status::Refused("enrollment refused: HTTP " + std::to_string(e->status) + " " + e->body.substr(0, 300));
    } else {
      auto answer = protocol::Decode<protocol::EnrollReply>(e->body);
      if (!answer.ok()) return answer.status();
      if (answer->state == ports::EnrollmentState::kDenied) return Status::Refused("an operator denied this enrollment");
      if (answer->state == ports::EnrollmentState::kApproved) {
        auto cert = pki::InspectCert(answer->cert_pem);
        if (!cert.ok() || cert->common_name != o.name || answer->ca_pem.empty()) {
          return Status::Invalid("the approved certificate is not for " + o.name);
        }
        std::ofstream(o.state_dir + "/ca.crt") << answer->ca_pem;
        std::ofstream(o.state_dir + "/node.crt") << answer->cert_pem;
        std::filesystem::rename(pending_key, o.state_dir + "/node.key");
        log.Info("enroll.approved", {{"node", o.name}, {"serial", cert->serial}});
        return Status::Ok();
      }
    }
    // Pending: ask again shortly (pacing a poll of a person's decision).
    for (int i = 0; i < 20 && !stop.stop_requested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::Unavailable("stopped while waiting for approval");
}

}  // namespace nodeplane::node
