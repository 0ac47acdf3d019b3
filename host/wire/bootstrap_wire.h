// The bootstrap listener's handler: the two routes a machine that has never
// enrolled needs, and nothing else (R04). It admits strangers, so it runs on
// a listener of its own with its own connection budget, and the authority is
// a constructor parameter: without one neither route could answer (R05).
//
//   GET  /v1/ca      the trust bundle (current CA first), its fingerprint, the deployment
//   POST /v1/enroll  {node, csr_pem, join_token}: records a pending request and
//                    spends one use of the token, in one transaction; asking
//                    again with the same key is a poll that spends nothing; an
//                    approved request answers with the certificate (S10)
//
// Threading: Handle() runs on an I/O thread; ledger work runs on a pool.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/call_pool.h"
#include "common/log.h"
#include "pki/authority.h"
#include "ports/ledger.h"
#include "wire/http_server.h"

namespace nodeplane::wire {

class BootstrapWire : public HttpHandler {
 public:
  static constexpr size_t kEnrollBodyLimit = 16 * 1024;

  // Everything is borrowed and must outlive the handler.
  BootstrapWire(const pki::Authority& authority, ports::Enrollments& enrollments, Logger& log,
                uint32_t max_enrollments_in_flight);
  void Handle(HttpRequest request, Responder respond) override;

 private:
  const pki::Authority& authority_;
  ports::Enrollments& enrollments_;
  Logger& log_;
  const uint32_t max_in_flight_;
  std::atomic<uint32_t> in_flight_{0};
  CallPool workers_{4};
};

}  // namespace nodeplane::wire
