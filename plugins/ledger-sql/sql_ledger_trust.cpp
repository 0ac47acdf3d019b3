// Join tokens, enrollments, issued certificates and revocations.
#include "sql_ledger_internal.h"

#include "plugin_time.h"

namespace nodeplane::ledger {
namespace {

int64_t TruncateToSecond(int64_t ns) {
  constexpr int64_t kS = plugins::kSecondNs;
  return ns - (((ns % kS) + kS) % kS);
}

const char* EnrollmentStateName(int32_t state) {
  switch (state) {
    case NP_ENROLLMENT_PENDING: return "pending";
    case NP_ENROLLMENT_APPROVED: return "approved";
    case NP_ENROLLMENT_DENIED: return "denied";
    default: return "";
  }
}

std::vector<EnrollmentRow> SelectEnrollments(Session& s, const std::string& where, const std::string& arg) {
  EnrollmentRow e;
  Query st(Query::kUnbound, s,
           "SELECT name, fingerprint, csr_pem, cert_pem, state, requested_at, decided_at, source "
           "FROM node_enrollments " +
               where + " ORDER BY name");
  Exchange(*st, soci::into(e.name), soci::into(e.fingerprint), soci::into(e.csr_pem), soci::into(e.cert_pem),
           soci::into(e.state), soci::into(e.requested_at), soci::into(e.decided_at), soci::into(e.source));
  if (!arg.empty()) st->exchange(soci::use(arg));
  st.Bind();
  st->execute();
  std::vector<EnrollmentRow> out;
  while (st->fetch()) out.push_back(e);
  return out;
}

// The one spelling of a serial (np_ledger_v1.h, SERIALS), or NP_INVALID.
std::string Serial(const std::string& raw, const char* what) {
  char out[NP_SERIAL_MAX_DIGITS + 1];
  if (np_serial_normalize(raw.c_str(), out, sizeof out) != NP_OK) {
    Fail(NP_INVALID, std::string(what) + " \"" + raw.substr(0, 60) +
                         "\" is not a certificate serial (hex digits, as openssl x509 -serial prints them)");
  }
  return out;
}

bool RevokedBySerialOrCutoff(Session& s, const std::string& node, const std::string& serial,
                             int64_t issued_at) {
  long long n = 0;
  FetchOne(s, "SELECT COUNT(*) FROM revoked_certs WHERE serial = :s", soci::into(n), soci::use(serial));
  if (n > 0) return true;
  long long cutoff = 0;
  return FetchOne(s, "SELECT revoked_before FROM node_revocations WHERE node = :n", soci::into(cutoff),
                  soci::use(node)) &&
         TruncateToSecond(issued_at) < cutoff;
}

}  // namespace

void SqlLedger::CreateJoinToken(const std::string& hash, int64_t uses, int64_t expires_at, const std::string& note) {
  if (hash.size() != 64) Fail(NP_INVALID, "a join token is stored as its SHA-256 in hex (64 characters)");
  if (uses <= 0) Fail(NP_INVALID, "a join token needs at least one use");
  Write([&](Session& s) {
    const long long now = Now(), u = uses, e = expires_at;
    if (e <= now) Fail(NP_INVALID, "the join token would already be expired");
    long long exists = 0;
    s << "SELECT COUNT(*) FROM join_tokens WHERE token_sha256 = :h", soci::into(exists), soci::use(hash);
    if (exists > 0) Fail(NP_CONFLICT, "that join token exists already");
    Exec(s,
         "INSERT INTO join_tokens (token_sha256, note, uses_remaining, created_at, expires_at) "
         "VALUES (:h, :n, :u, :c, :e)",
         hash, note, u, now, e);
  });
}

std::vector<TokenRow> SqlLedger::ListJoinTokens() {
  return Read([&](Session& s) {
    TokenRow t;
    Query st(s,
             "SELECT token_sha256, note, uses_remaining, created_at, expires_at "
             "FROM join_tokens ORDER BY created_at, token_sha256",
             soci::into(t.token_sha256), soci::into(t.note), soci::into(t.uses_remaining),
             soci::into(t.created_at), soci::into(t.expires_at));
    st->execute();
    std::vector<TokenRow> out;
    while (st->fetch()) out.push_back(t);
    return out;
  });
}

void SqlLedger::RevokeJoinToken(const std::string& hash) {
  Write([&](Session& s) {
    if (Exec(s, "DELETE FROM join_tokens WHERE token_sha256 = :h", hash) == 0) {
      Fail(NP_NOT_FOUND, "no join token has that hash");
    }
  });
}

EnrollmentRow SqlLedger::RequestEnrollmentWithToken(const std::string& name, const std::string& fingerprint,
                                                    const std::string& csr_pem, const std::string& token_hash) {
  if (name.empty() || fingerprint.empty()) Fail(NP_INVALID, "an enrollment needs a name and a fingerprint");
  return Write([&](Session& s) {
    std::vector<EnrollmentRow> existing = SelectEnrollments(s, "WHERE name = :n", name);
    if (!existing.empty() && existing.front().fingerprint == fingerprint) return existing.front();  // a poll
    const long long now = Now();
    if (token_hash.empty() ||
        Exec(s,
             "UPDATE join_tokens SET uses_remaining = uses_remaining - 1 WHERE token_sha256 = :h "
             "AND uses_remaining > 0 AND expires_at > :now",
             token_hash, now) == 0) {
      Fail(NP_BAD_JOIN_TOKEN, "the join token is unknown, used up or expired");
    }
    if (!existing.empty() && existing.front().state != "denied") {
      // Throwing rolls the transaction back, so the token use is not spent.
      Fail(NP_ENROLLMENT_CONFLICT, "the name " + name + " is held by another key (" + existing.front().state + ")");
    }
    Exec(s,
         "INSERT INTO node_enrollments (name, fingerprint, csr_pem, cert_pem, state, requested_at, decided_at, source) "
         "VALUES (:n, :f, :c, '', 'pending', :t, 0, 'enrolled') ON CONFLICT (name) DO UPDATE SET "
         "fingerprint = excluded.fingerprint, csr_pem = excluded.csr_pem, cert_pem = '', state = 'pending', "
         "requested_at = excluded.requested_at, decided_at = 0, source = 'enrolled'",
         name, fingerprint, csr_pem, now);
    return SelectEnrollments(s, "WHERE name = :n", name).front();
  });
}

std::vector<EnrollmentRow> SqlLedger::LookupEnrollment(const std::string& name) {
  return Read([&](Session& s) { return SelectEnrollments(s, "WHERE name = :n", name); });
}

std::vector<EnrollmentRow> SqlLedger::ListEnrollments(int32_t state) {
  const char* name = EnrollmentStateName(state);
  if (state != 0 && name[0] == '\0') Fail(NP_INVALID, "unknown enrollment state " + std::to_string(state));
  return Read([&](Session& s) {
    return state == 0 ? SelectEnrollments(s, "", "") : SelectEnrollments(s, "WHERE state = :s", name);
  });
}

void SqlLedger::DecideEnrollment(const std::string& name, const std::string& fingerprint, int32_t state,
                                 const std::string& cert_pem) {
  if (state != NP_ENROLLMENT_APPROVED && state != NP_ENROLLMENT_DENIED) {
    Fail(NP_INVALID, "an enrollment is decided as approved or denied");
  }
  if (state == NP_ENROLLMENT_APPROVED && cert_pem.empty()) Fail(NP_INVALID, "an approval carries the certificate");
  Write([&](Session& s) {
    std::vector<EnrollmentRow> existing = SelectEnrollments(s, "WHERE name = :n", name);
    if (existing.empty()) Fail(NP_NOT_FOUND, "no enrollment request for " + name);
    if (fingerprint.empty() || existing.front().fingerprint != fingerprint) {
      Fail(NP_CONFLICT, "the fingerprint does not match the one " + name + " asked with");
    }
    const long long now = Now();
    Exec(s, "UPDATE node_enrollments SET state = :s, cert_pem = :c, decided_at = :t WHERE name = :n",
         std::string(EnrollmentStateName(state)), cert_pem, now, name);
  });
}

void SqlLedger::RecordIssuedCert(const CertRow& c) {
  if (c.serial.empty() || c.node.empty()) Fail(NP_INVALID, "an issued certificate needs a serial and a node");
  const std::string serial = Serial(c.serial, "the issued certificate's serial");
  Write([&](Session& s) {
    const long long now = Now();
    Exec(s,
         "INSERT INTO issued_certs (serial, node, source, not_after, issued_at) VALUES (:s, :n, :src, :na, :t) "
         "ON CONFLICT (serial) DO NOTHING",
         serial, c.node, c.source, c.not_after, now);
  });
}

void SqlLedger::RecordRenewedCert(const CertRow& c, const std::string& raw_parent, int64_t parent_issued_at) {
  if (c.serial.empty() || c.node.empty()) Fail(NP_INVALID, "a renewed certificate needs a serial and a node");
  const std::string serial = Serial(c.serial, "the renewed certificate's serial");
  const std::string parent = Serial(raw_parent, "the parent certificate's serial");
  Write([&](Session& s) {
    if (RevokedBySerialOrCutoff(s, c.node, parent, parent_issued_at)) {
      Fail(NP_PARENT_REVOKED, "the certificate being renewed (serial " + parent + ") has been revoked");
    }
    const long long now = Now();
    const std::string source = "renewed";
    Exec(s,
         "INSERT INTO issued_certs (serial, node, source, not_after, issued_at) VALUES (:s, :n, :src, :na, :t) "
         "ON CONFLICT (serial) DO NOTHING",
         serial, c.node, source, c.not_after, now);
  });
}

bool SqlLedger::CertRevokedFor(const std::string& node, const std::string& raw, int64_t issued_at) {
  const std::string serial = Serial(raw, "serial");
  return Read([&](Session& s) { return RevokedBySerialOrCutoff(s, node, serial, issued_at); });
}

void SqlLedger::RevokeCert(const std::string& raw, const std::string& node, const std::string& reason) {
  const std::string serial = Serial(raw, "serial");
  Write([&](Session& s) {
    const long long now = Now();
    Exec(s,
         "INSERT INTO revoked_certs (serial, node, reason, revoked_at) VALUES (:s, :n, :r, :t) "
         "ON CONFLICT (serial) DO NOTHING",
         serial, node, reason, now);
  });
}

std::vector<std::string> SqlLedger::RevokeNode(const std::string& node, const std::string& reason) {
  if (node.empty()) Fail(NP_INVALID, "revocation needs a node name");
  return Write([&](Session& s) {
    const long long now = Now();
    std::vector<std::string> serials;
    {
      std::string serial;
      Query st(s,
               "SELECT serial FROM issued_certs WHERE node = :n AND not_after > :t AND "
               "serial NOT IN (SELECT serial FROM revoked_certs) ORDER BY serial",
               soci::into(serial), soci::use(node), soci::use(now));
      st->execute();
      while (st->fetch()) serials.push_back(serial);
    }
    for (const std::string& serial : serials) {
      Exec(s, "INSERT INTO revoked_certs (serial, node, reason, revoked_at) VALUES (:s, :n, :r, :t)", serial, node,
           reason, now);
    }
    // Every certificate minted before the next whole second is refused,
    // recorded or not.
    const long long cutoff = TruncateToSecond(now) + plugins::kSecondNs;
    Exec(s,
         "INSERT INTO node_revocations (node, revoked_before, reason, revoked_at) VALUES (:n, :c, :r, :t) "
         "ON CONFLICT (node) DO UPDATE SET revoked_before = excluded.revoked_before, reason = excluded.reason, "
         "revoked_at = excluded.revoked_at",
         node, cutoff, reason, now);
    return serials;
  });
}

std::vector<CertRow> SqlLedger::ListCerts(const std::string& node) {
  return Read([&](Session& s) {
    CertRow c;
    std::string sql =
        "SELECT i.serial, i.node, i.source, i.not_after, i.issued_at, "
        "CASE WHEN r.serial IS NULL THEN 0 ELSE 1 END FROM issued_certs i "
        "LEFT JOIN revoked_certs r ON r.serial = i.serial ";
    if (!node.empty()) sql += "WHERE i.node = :n ";
    sql += "ORDER BY i.issued_at, i.serial";
    Query st(Query::kUnbound, s, sql);
    Exchange(*st, soci::into(c.serial), soci::into(c.node), soci::into(c.source), soci::into(c.not_after),
             soci::into(c.issued_at), soci::into(c.revoked));
    if (!node.empty()) st->exchange(soci::use(node));
    st.Bind();
    st->execute();
    std::vector<CertRow> out;
    while (st->fetch()) out.push_back(c);
    return out;
  });
}

}  // namespace nodeplane::ledger
