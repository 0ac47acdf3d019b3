#include "wire/bootstrap_wire.h"

#include "common/names.h"
#include "protocol/codec.h"

namespace nodeplane::wire {
namespace {

std::string ErrorBody(std::string code, std::string message) {
  return protocol::Encode(protocol::ErrorReply{std::move(code), std::move(message), {}});
}

}  // namespace

BootstrapWire::BootstrapWire(const pki::Authority& authority, ports::Enrollments& enrollments, Logger& log,
                             uint32_t max_enrollments_in_flight)
    : authority_(authority), enrollments_(enrollments), log_(log), max_in_flight_(max_enrollments_in_flight) {}

void BootstrapWire::Handle(HttpRequest req, Responder respond) {
  auto json = [&respond](int status, std::string body) {
    respond(HttpResponse{status, "application/json", std::move(body)});
  };
  std::string_view path = req.target;
  path = path.substr(0, path.find('?'));
  if (path == "/v1/ca" && req.method == "GET") {
    return json(200, protocol::Encode(
                           protocol::CaReply{authority_.trust_bundle_pem(), authority_.fingerprint(), authority_.deployment()}));
  }
  if (path != "/v1/enroll" || req.method != "POST") {
    return json(404, ErrorBody("not_found", "this listener serves GET /v1/ca and POST /v1/enroll only"));
  }
  // The slot is taken before parsing: a flood of enrollments waits, the fleet does not.
  if (in_flight_.fetch_add(1) >= max_in_flight_) {
    in_flight_--;
    return json(503, ErrorBody("unavailable", "this control plane is already handling as many enrollments as "
                                                "it will at once; ask again in a moment"));
  }
  workers_.Post([this, body = std::move(req.body), respond = std::move(respond)] {
    auto reply = [&](int status, std::string text) {
      in_flight_--;
      respond(HttpResponse{status, "application/json", std::move(text)});
    };
    auto enroll = protocol::Decode<protocol::EnrollBody>(body);
    if (!enroll.ok()) return reply(400, ErrorBody("refused", enroll.status().message()));
    if (!IsValidName(enroll->node)) {
      return reply(400, ErrorBody("refused", "invalid node name; expected 1 to 64 of [a-zA-Z0-9._-]"));
    }
    auto fingerprint = pki::FingerprintOfCSR(enroll->csr_pem);
    if (!fingerprint.ok()) return reply(400, ErrorBody("refused", fingerprint.status().message()));
    // Only the token's hash reaches the ledger; the secret is never stored or logged.
    auto e = enrollments_.RequestEnrollmentWithToken(enroll->node, *fingerprint, enroll->csr_pem,
                                                     pki::JoinTokenHash(enroll->join_token));
    if (!e.ok()) {
      if (ports::Is(e.status(), ports::Verdict::kBadJoinToken)) {
        return reply(401, ErrorBody("unauthenticated", "enrolling requires a valid join token"));
      }
      if (ports::Is(e.status(), ports::Verdict::kEnrollmentConflict)) {
        return reply(409, ErrorBody("refused", "the name " + enroll->node + " is claimed by another key"));
      }
      return reply(503, ErrorBody("unavailable", e.status().message()));
    }
    if (e->state == ports::EnrollmentState::kPending) {
      log_.Info("enroll.pending", {{"node", enroll->node}, {"fingerprint", *fingerprint}});
    }
    const bool approved = e->state == ports::EnrollmentState::kApproved;
    reply(200, protocol::Encode(protocol::EnrollReply{e->state, e->fingerprint, approved ? e->cert_pem : "",
                                                      approved ? authority_.trust_bundle_pem() : ""}));
  });
}

}  // namespace nodeplane::wire
