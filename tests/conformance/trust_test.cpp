// Join tokens, enrollments, issued certificates and revocation (C62–C69).
#include <thread>

#include "ledger_fixture.h"

namespace nodeplane::conformance {
namespace {

using TrustTest = LedgerTest;
const std::string kToken(64, 'a');
const std::string kOther(64, 'b');

int64_t UsesLeft(loader::LedgerAdapter& l, const std::string& hash) {
  auto tokens = l.ListJoinTokens();
  if (!tokens.ok()) return -1;
  for (const auto& t : *tokens) {
    if (t.token_sha256 == hash) return t.uses_remaining;
  }
  return -1;
}

// C62
TEST_F(TrustTest, C62_AJoinTokenIsSpentOnce) {
  ASSERT_OK(ledger_->CreateJoinToken(kToken, 1, Now() + kMinute, "n1"));
  auto e = ledger_->RequestEnrollmentWithToken("n1", "fp1", "csr", kToken);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->state, ports::EnrollmentState::kPending);
  EXPECT_NP(ledger_->RequestEnrollmentWithToken("n2", "fp2", "csr", kToken).status(), NP_BAD_JOIN_TOKEN);
  EXPECT_NP(ledger_->RequestEnrollmentWithToken("n3", "fp3", "csr", kOther).status(), NP_BAD_JOIN_TOKEN);
  EXPECT_NP(ledger_->RequestEnrollmentWithToken("n4", "fp4", "csr", "").status(), NP_BAD_JOIN_TOKEN);
}

TEST_F(TrustTest, C62_AnExpiredJoinTokenIsRefused) {
  ASSERT_OK(ledger_->CreateJoinToken(kToken, 5, Now() + kMinute, ""));
  Advance(kMinute);
  EXPECT_NP(ledger_->RequestEnrollmentWithToken("n1", "fp1", "csr", kToken).status(), NP_BAD_JOIN_TOKEN);
}

TEST_F(TrustTest, C62_ASingleUseTokenRacedByEightAdmitsOne) {
  ASSERT_OK(ledger_->CreateJoinToken(kToken, 1, Now() + kMinute, ""));
  std::atomic<int> admitted{0}, refused{0};
  std::vector<std::thread> racers;
  for (int i = 0; i < 8; ++i) {
    racers.emplace_back([&, i] {
      auto e = ledger_->RequestEnrollmentWithToken("n" + std::to_string(i), "fp" + std::to_string(i), "csr", kToken);
      (e.ok() ? admitted : refused)++;
    });
  }
  for (auto& t : racers) t.join();
  EXPECT_EQ(admitted.load(), 1);
  EXPECT_EQ(refused.load(), 7);
}

// C63
TEST_F(TrustTest, C63_ATokenIsStoredOnlyAsItsHash) {
  EXPECT_NP(ledger_->CreateJoinToken("plain-secret", 1, Now() + kMinute, ""), NP_INVALID);
  ASSERT_OK(ledger_->CreateJoinToken(kToken, 2, Now() + kMinute, "rack 4"));
  auto tokens = ledger_->ListJoinTokens();
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 1u);
  EXPECT_EQ((*tokens)[0].token_sha256, kToken);
  EXPECT_EQ((*tokens)[0].note, "rack 4");
  EXPECT_EQ((*tokens)[0].uses_remaining, 2);
  ASSERT_OK(ledger_->RevokeJoinToken(kToken));
  EXPECT_NP(ledger_->RevokeJoinToken(kToken), NP_NOT_FOUND);
}

// C64
TEST_F(TrustTest, C64_ARefusedEnrollmentDoesNotSpendTheToken) {
  ASSERT_OK(ledger_->CreateJoinToken(kToken, 2, Now() + kMinute, ""));
  ASSERT_TRUE(ledger_->RequestEnrollmentWithToken("n1", "fp1", "csr", kToken).ok());
  EXPECT_EQ(UsesLeft(*ledger_, kToken), 1);
  EXPECT_NP(ledger_->RequestEnrollmentWithToken("n1", "fp-other", "csr", kToken).status(), NP_ENROLLMENT_CONFLICT);
  EXPECT_EQ(UsesLeft(*ledger_, kToken), 1);
}

// C65
TEST_F(TrustTest, C65_PollingWithTheSameKeyNeverSpendsAgain) {
  ASSERT_OK(ledger_->CreateJoinToken(kToken, 1, Now() + kMinute, ""));
  ASSERT_TRUE(ledger_->RequestEnrollmentWithToken("n1", "fp1", "csr", kToken).ok());
  ASSERT_TRUE(ledger_->RequestEnrollmentWithToken("n1", "fp1", "csr", kToken).ok());
  ASSERT_OK(ledger_->DecideEnrollment("n1", "fp1", ports::EnrollmentState::kApproved, "CERT"));
  auto polled = ledger_->RequestEnrollmentWithToken("n1", "fp1", "csr", kToken);
  ASSERT_TRUE(polled.ok());
  EXPECT_EQ(polled->state, ports::EnrollmentState::kApproved);
  EXPECT_EQ(polled->cert_pem, "CERT");
  EXPECT_EQ(UsesLeft(*ledger_, kToken), 0);
}

// C66
TEST_F(TrustTest, C66_ADeniedEnrollmentFreesTheNameAndAClaimedOneDoesNot) {
  ASSERT_OK(ledger_->CreateJoinToken(kToken, 5, Now() + kMinute, ""));
  ASSERT_TRUE(ledger_->RequestEnrollmentWithToken("n1", "fp1", "csr", kToken).ok());
  EXPECT_NP(ledger_->DecideEnrollment("n1", "fp-wrong", ports::EnrollmentState::kDenied, ""), NP_CONFLICT);
  EXPECT_NP(ledger_->DecideEnrollment("ghost", "fp1", ports::EnrollmentState::kDenied, ""), NP_NOT_FOUND);
  ASSERT_OK(ledger_->DecideEnrollment("n1", "fp1", ports::EnrollmentState::kDenied, ""));
  auto again = ledger_->RequestEnrollmentWithToken("n1", "fp2", "csr2", kToken);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->state, ports::EnrollmentState::kPending);
  EXPECT_EQ(again->fingerprint, "fp2");
  ASSERT_OK(ledger_->DecideEnrollment("n1", "fp2", ports::EnrollmentState::kApproved, "CERT"));
  EXPECT_NP(ledger_->RequestEnrollmentWithToken("n1", "fp3", "csr3", kToken).status(), NP_ENROLLMENT_CONFLICT);
  auto pending = ledger_->ListEnrollments(ports::EnrollmentState::kPending);
  ASSERT_TRUE(pending.ok());
  EXPECT_TRUE(pending->empty());
  auto found = ledger_->LookupEnrollment("n1");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->fingerprint, "fp2");
  EXPECT_FALSE(ledger_->LookupEnrollment("ghost")->has_value());
}

ports::IssuedCert Cert(const std::string& serial, const std::string& node, int64_t not_after) {
  return ports::IssuedCert{serial, node, "enrolled", not_after, 0, false};
}

// C67
TEST_F(TrustTest, C67_RevokingANodeTakesBackEveryLiveCredential) {
  ASSERT_OK(ledger_->RecordIssuedCert(Cert("a1", "n1", Now() + 365 * 24 * 60 * kMinute)));
  ASSERT_OK(ledger_->RecordIssuedCert(Cert("a2", "n1", Now() + kMinute)));
  ASSERT_OK(ledger_->RecordIssuedCert(Cert("a3", "n1", Now() - kMinute)));  // already expired
  ASSERT_OK(ledger_->RecordIssuedCert(Cert("a4", "n2", Now() + kMinute)));
  const int64_t issued = Now();
  Advance(2 * kSecond);
  auto revoked = ledger_->RevokeNode("n1", "decommissioned");
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(*revoked, (std::vector<std::string>{"a1", "a2"}));
  EXPECT_TRUE(*ledger_->CertRevokedFor("n1", "a1", issued));
  EXPECT_TRUE(*ledger_->CertRevokedFor("n1", "ffee01", issued));  // the cut-off
  EXPECT_FALSE(*ledger_->CertRevokedFor("n2", "a4", issued));
  auto certs = ledger_->ListCerts("n1");
  ASSERT_TRUE(certs.ok());
  EXPECT_EQ(certs->size(), 3u);
}

// C68
TEST_F(TrustTest, C68_TheCutoffIsTheNextWholeSecond) {
  clock_ = 1'900'000'000LL * kSecond + 400'000'000;  // x.4 s
  ASSERT_TRUE(ledger_->RevokeNode("n1", "").ok());
  const int64_t next_second = 1'900'000'001LL * kSecond;
  EXPECT_TRUE(*ledger_->CertRevokedFor("n1", "c1", next_second - 1));
  EXPECT_FALSE(*ledger_->CertRevokedFor("n1", "c2", next_second));  // issued after the cut-off
  ASSERT_OK(ledger_->RevokeCert("c2", "n1", "leaked"));
  EXPECT_TRUE(*ledger_->CertRevokedFor("n1", "c2", next_second));  // by serial, whenever issued
  ASSERT_OK(ledger_->RevokeCert("c2", "n1", "leaked"));             // idempotent
}

// C69
TEST_F(TrustTest, C69_ARenewalIsRefusedWhenItsParentWasRevoked) {
  const int64_t parent_issued = Now();
  ASSERT_OK(ledger_->RecordIssuedCert(Cert("10", "n1", Now() + kMinute)));
  ASSERT_OK(ledger_->RecordRenewedCert(Cert("11", "n1", Now() + 2 * kMinute), "10", parent_issued));
  auto certs = ledger_->ListCerts("n1");
  ASSERT_TRUE(certs.ok());
  ASSERT_EQ(certs->size(), 2u);
  EXPECT_EQ((*certs)[1].source, "renewed");
  ASSERT_OK(ledger_->RevokeCert("11", "n1", ""));
  EXPECT_NP(ledger_->RecordRenewedCert(Cert("12", "n1", Now()), "11", parent_issued), NP_PARENT_REVOKED);
  Advance(kSecond);
  ASSERT_TRUE(ledger_->RevokeNode("n1", "").ok());
  // An unrecorded parent minted before the cut-off cannot renew either.
  EXPECT_NP(ledger_->RecordRenewedCert(Cert("13", "n1", Now()), "dead01", parent_issued), NP_PARENT_REVOKED);
  Advance(5 * kSecond);
  EXPECT_TRUE(ledger_->RecordRenewedCert(Cert("14", "n1", Now() + kMinute), "f00d", Now()).ok());
}

// C89 (nodeplane's own, issue 22 #1): a serial has one spelling. Every
// spelling an operator pastes names the same certificate, everywhere a
// serial is taken; what is not a serial is refused, never stored.
TEST_F(TrustTest, C89_EverySpellingOfASerialNamesTheSameCertificate) {
  ASSERT_OK(ledger_->RecordIssuedCert(Cert("00AB:CD", "n1", Now() + kMinute)));
  auto certs = ledger_->ListCerts("n1");
  ASSERT_TRUE(certs.ok() && certs->size() == 1);
  EXPECT_EQ(certs->front().serial, "abcd");  // stored in the one spelling
  ASSERT_OK(ledger_->RevokeCert("serial=00ABCD", "n1", "pasted from openssl x509 -serial"));
  for (const char* spelling : {"abcd", "ABCD", "0xabcd", "00:ab:cd", "AB:CD", "serial=ABCD"}) {
    auto revoked = ledger_->CertRevokedFor("n2", spelling, Now());
    ASSERT_TRUE(revoked.ok()) << spelling << ": " << revoked.status().ToString();
    EXPECT_TRUE(*revoked) << spelling;
  }
  certs = ledger_->ListCerts("n1");
  EXPECT_TRUE(certs->front().revoked);
  ASSERT_OK(ledger_->RecordRenewedCert(Cert("EF", "n1", Now() + kMinute), "0X00ef", Now()));  // a renewal of itself
  for (const char* junk : {"", "xyz", "ab:", ":ab", "ab::cd", "12 34", "serial=", "0x"}) {
    EXPECT_NP(ledger_->RevokeCert(junk, "n1", ""), NP_INVALID);
    EXPECT_NP(ledger_->CertRevokedFor("n1", junk, Now()).status(), NP_INVALID);
    EXPECT_NP(ledger_->RecordIssuedCert(Cert(junk, "n1", Now())), NP_INVALID);
  }
  EXPECT_NP(ledger_->RevokeCert(std::string(41, 'f'), "n1", ""), NP_INVALID);  // longer than 20 octets
  ASSERT_OK(ledger_->RevokeCert("000" + std::string(40, 'f'), "n1", ""));       // leading zeros do not count
}

}  // namespace
}  // namespace nodeplane::conformance
