// Enrollment, node side: fetch the deployment's CA from the bootstrap
// listener and trust it only if its fingerprint is the one the operator
// gave; make a key and CSR (kept as pending.key/pending.csr, so a restart
// asks again with the same key and spends no second token use); print the
// key's fingerprint for the operator to compare; ask until approved; then
// write node.key (0600), node.crt and ca.crt into the state directory.
#pragma once

#include <stop_token>
#include <string>

#include "common/log.h"
#include "common/status.h"

namespace nodeplane::node {

struct EnrollOptions {
  std::string name;
  std::string bootstrap_host;
  uint16_t bootstrap_port = 0;
  std::string ca_fingerprint;  // from the operator, out of band
  std::string join_token;      // SECRET
  std::string state_dir;
  Logger* log = nullptr;
};

// Ok once the certificate is written; Refused when denied or the token is
// not accepted; returns early (Unavailable) when `stop` is requested.
Status Enroll(const EnrollOptions& o, std::stop_token stop);

}  // namespace nodeplane::node
