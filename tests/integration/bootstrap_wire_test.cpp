// The bootstrap routes over the real SQLite ledger: the authority, and
// enrollment by join token, pending until an operator approves the
// fingerprint (S07, S10).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <filesystem>

#include "common/units.h"
#include "loader/host_services.h"
#include "loader/ledger_adapter.h"
#include "loader/plugin_library.h"
#include "pki/authority.h"
#include "raw_http.h"
#include "wire/bootstrap_wire.h"
#include "wire/http_server.h"

namespace nodeplane::wire {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '"') out += "\\\"";
    else out += c;
  }
  return out + "\"";
}

class BootstrapWireTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/np-boot-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    host_ = std::make_unique<loader::HostServices>(log_, dir_);
    auto lib = loader::PluginLibrary::Open(std::string(PLUGIN_DIR) + "/ledger-sqlite.so", "", host_->c());
    ASSERT_TRUE(lib.ok());
    auto ledger = loader::LedgerAdapter::Create(*lib, "ledger", R"({"path": "ledger.db"})", host_->c(), false);
    ASSERT_TRUE(ledger.ok());
    ledger_ = std::move(*ledger);
    auto ca = pki::Authority::Create("acme", WallNowNs());
    ASSERT_TRUE(ca.ok());
    ca_ = std::make_unique<pki::Authority>(*ca);
    routes_ = std::make_unique<BootstrapWire>(*ca_, *ledger_, log_, 8);
    ListenerOptions o;
    o.name = "bootstrap";
    o.host = "127.0.0.1";
    o.body_limit = BootstrapWire::kEnrollBodyLimit;
    server_ = std::make_unique<HttpServer>(o, *routes_, log_);
    ASSERT_TRUE(server_->Start().ok());
    auto key = pki::GenerateKey();
    csr_ = *pki::MakeCSR(key->private_pem, "n1");
  }
  void TearDown() override {
    server_.reset();
    routes_.reset();
    ledger_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::pair<int, std::string> Send(const std::string& method, const std::string& path, const std::string& body) {
    testing::RawConnection c(server_->port());
    EXPECT_TRUE(c.Send(method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body));
    std::string raw = c.ReadResponse();
    int status = raw.size() > 12 ? std::stoi(raw.substr(9, 3)) : 0;
    size_t head = raw.find("\r\n\r\n");
    return {status, head == std::string::npos ? "" : raw.substr(head + 4)};
  }
  std::string Enroll(const std::string& node, const std::string& token) {
    return R"({"node":")" + node + R"(","csr_pem":)" + JsonString(csr_) + R"(,"join_token":")" + token + R"("})";
  }

  std::string dir_, csr_;
  Logger log_{LogLevel::kError};
  std::unique_ptr<loader::HostServices> host_;
  std::unique_ptr<loader::LedgerAdapter> ledger_;
  std::unique_ptr<pki::Authority> ca_;
  std::unique_ptr<BootstrapWire> routes_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(BootstrapWireTest, TheAuthorityIsServedWithItsFingerprint) {
  auto [status, body] = Send("GET", "/v1/ca", "");
  ASSERT_EQ(status, 200);
  EXPECT_NE(body.find(ca_->fingerprint()), std::string::npos) << body;
  EXPECT_NE(body.find(R"("deployment":"acme")"), std::string::npos);
  EXPECT_NE(body.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_EQ(Send("POST", "/v1/nodes/n1/poll", "").first, 404);  // nothing else is served here
}

// S10: asking grants nothing until an operator compares the fingerprint.
TEST_F(BootstrapWireTest, S10_S07_AnEnrollmentIsPendingUntilApprovedAndSpendsItsTokenOnce) {
  const std::string token = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  ASSERT_TRUE(ledger_->CreateJoinToken(pki::JoinTokenHash(token), 1, WallNowNs() + 3'600'000'000'000, "n1").ok());
  auto [s1, b1] = Send("POST", "/v1/enroll", Enroll("n1", " " + token + " "));  // trimmed, case-folded
  ASSERT_EQ(s1, 200) << b1;
  EXPECT_NE(b1.find(R"("state":"pending")"), std::string::npos) << b1;
  EXPECT_EQ(b1.find("cert_pem"), std::string::npos);
  const std::string fingerprint = *pki::FingerprintOfCSR(csr_);
  EXPECT_NE(b1.find(fingerprint), std::string::npos);
  // Asking again with the same key is a poll: the single use is not spent again.
  EXPECT_EQ(Send("POST", "/v1/enroll", Enroll("n1", token)).first, 200);
  // Another machine cannot use the spent token.
  EXPECT_EQ(Send("POST", "/v1/enroll", Enroll("n2", token)).first, 401);
  // The operator approves by name and fingerprint; the CSR is signed under the approved name.
  auto cert = ca_->SignNodeCSR(csr_, "n1", WallNowNs());
  ASSERT_TRUE(ledger_->DecideEnrollment("n1", fingerprint, ports::EnrollmentState::kApproved, *cert).ok());
  auto [s2, b2] = Send("POST", "/v1/enroll", Enroll("n1", token));
  ASSERT_EQ(s2, 200);
  EXPECT_NE(b2.find(R"("state":"approved")"), std::string::npos) << b2;
  EXPECT_NE(b2.find("cert_pem"), std::string::npos);
  EXPECT_NE(b2.find("ca_pem"), std::string::npos);
}

TEST_F(BootstrapWireTest, BadRequestsAreRefusedWithAReason) {
  EXPECT_EQ(Send("POST", "/v1/enroll", Enroll("n1", "nope")).first, 401);
  EXPECT_EQ(Send("POST", "/v1/enroll", Enroll("-bad", "nope")).first, 400);
  EXPECT_EQ(Send("POST", "/v1/enroll", R"({"node":"n1","csr_pem":"x","join_token":"t"})").first, 400);
  EXPECT_EQ(Send("POST", "/v1/enroll", R"({"node":"n1","extra":1})").first, 400);
  auto [status, body] = Send("POST", "/v1/enroll", std::string(16 * 1024 + 1, ' '));
  EXPECT_EQ(status, 413) << body;
}

TEST_F(BootstrapWireTest, ANameClaimedByAnotherKeyIsRefused) {
  const std::string token = "tok-two-uses";
  ASSERT_TRUE(ledger_->CreateJoinToken(pki::JoinTokenHash(token), 2, WallNowNs() + 3'600'000'000'000, "").ok());
  ASSERT_EQ(Send("POST", "/v1/enroll", Enroll("n1", token)).first, 200);
  auto other = pki::GenerateKey();
  csr_ = *pki::MakeCSR(other->private_pem, "n1");
  auto [status, body] = Send("POST", "/v1/enroll", Enroll("n1", token));
  EXPECT_EQ(status, 409);
  EXPECT_NE(body.find("claimed by another key"), std::string::npos);
}

// An enrollment store that holds every request until released.
class HeldEnrollments : public ports::Enrollments {
 public:
  Result<ports::Enrollment> RequestEnrollmentWithToken(const std::string& name, const std::string& fp,
                                                       const std::string&, const std::string&) override {
    std::unique_lock l(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(l, [&] { return released_; });
    return ports::Enrollment{name, fp, "", "", ports::EnrollmentState::kPending, 0, 0, "enrolled"};
  }
  Result<std::optional<ports::Enrollment>> LookupEnrollment(const std::string&) override {
    return std::optional<ports::Enrollment>();
  }
  void WaitForWaiting(int n) {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return waiting_ >= n; });
  }
  void Release() {
    std::lock_guard l(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool released_ = false;
};

// The number of enrollments in flight is bounded: past it, a machine is told
// to ask again, and the slot is taken before its body is parsed.
TEST_F(BootstrapWireTest, EnrollmentsInFlightAreBounded) {
  HeldEnrollments held;
  BootstrapWire bounded(*ca_, held, log_, 1);
  ListenerOptions o;
  o.name = "bootstrap";
  o.host = "127.0.0.1";
  HttpServer server(o, bounded, log_);
  ASSERT_TRUE(server.Start().ok());
  const std::string body = Enroll("n1", "token");
  auto send = [&] {
    testing::RawConnection c(server.port());
    EXPECT_TRUE(c.Send("POST /v1/enroll HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body));
    return c.ReadResponse();
  };
  auto first = std::async(std::launch::async, send);
  held.WaitForWaiting(1);  // the one slot is taken
  std::string second = send();
  EXPECT_NE(second.find("HTTP/1.1 503"), std::string::npos) << second;
  EXPECT_NE(second.find("as many enrollments as it will at once"), std::string::npos);
  held.Release();
  EXPECT_NE(first.get().find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(send().find("HTTP/1.1 200"), std::string::npos);  // the slot came back
}

// Issue 22 #2: the bootstrap listener frames requests as strictly as the
// wire: an enrollment hidden behind an ambiguous Transfer-Encoding never runs.
TEST_F(BootstrapWireTest, AnAmbiguouslyFramedRequestIsRefusedAndClosed) {
  const std::string token = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  ASSERT_TRUE(ledger_->CreateJoinToken(pki::JoinTokenHash(token), 1, WallNowNs() + 3'600'000'000'000, "n1").ok());
  const std::string body = Enroll("n1", token);
  testing::RawConnection c(server_->port());
  ASSERT_TRUE(c.Send("GET /v1/ca HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\nPOST /v1/enroll HTTP/1.1\r\n"
                     "Host: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
  bool closed = false;
  std::string answer = c.ReadUntilClose(&closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
  EXPECT_EQ(answer.find("HTTP/1.1", 1), std::string::npos) << answer;
  auto pending = ledger_->LookupEnrollment("n1");
  ASSERT_TRUE(pending.ok());
  EXPECT_FALSE(pending->has_value()) << "the smuggled enrollment was recorded";
}

}  // namespace
}  // namespace nodeplane::wire
