// The node protocol's codec: every message survives a round trip with every
// field set (so no field is written under one name and read under another,
// or written and never read: fields.h F1, F2), what nodes send is read
// strictly and what the control plane answers leniently, and each message's
// own rule refuses what it must.
#include <gtest/gtest.h>

#include "protocol/codec.h"

namespace nodeplane::protocol {
namespace {

ports::Lease SampleLease() {
  ports::Lease l;
  l.id = "lease-1";
  l.tier = "small";
  l.node = "n1";
  l.target_node = "n2";
  l.phase = ports::Phase::kBusy;
  l.epoch = 7;
  l.vcpu = 2;
  l.memory = 4096;
  l.requested_vcpu = 1;
  l.requested_memory = 2048;
  l.instance_type = "m1";
  l.run_id = 11;
  l.request_id = 12;
  l.guest_os = "linux";
  l.providers = "ceph,ebs-s3";
  l.chosen_provider = "ceph";
  l.site = "fra";
  l.failure_reason = "boom";
  l.force_release = true;
  l.expires_at_ns = 1'700'000'000'000'000'000;
  return l;
}

// One value per message with every field away from its default.
template <class M>
M Sample();
template <>
ports::Lease Sample() { return SampleLease(); }
template <>
RegisterRequest Sample() {
  return {1, 1, "n1", "ceph", "fra", "prod", "inc-1", "0.9.0", {"linux", "windows"}, 8, 16384, {"lease-1"}, true};
}
template <>
CommandResult Sample() { return {"c1", true, "went wrong", true, "barrier-1", {"lease-1", "lease-2"}}; }
template <>
EpochBody Sample() { return {5, "n1"}; }
template <>
AdvanceBody Sample() { return {5, ports::Phase::kOnline}; }
template <>
ReleaseBody Sample() { return {5, ports::Phase::kFailed}; }
template <>
FailureBody Sample() { return {5, "the image would not boot"}; }
template <>
ReconcileBody Sample() { return {{"lease-1", "lease-2"}}; }
template <>
EmptyBody Sample() { return {}; }
template <>
EnrollBody Sample() { return {"n1", "-----BEGIN CERTIFICATE REQUEST-----", "join-secret"}; }
template <>
RenewBody Sample() { return {"-----BEGIN CERTIFICATE REQUEST-----"}; }
template <>
DescribeBody Sample() { return {"small"}; }
template <>
JitBody Sample() { return {"np-lease-1", "_work"}; }
template <>
RemoveRunnerBody Sample() { return {42}; }
template <>
RegisterResponse Sample() { return {1, 1, 2, "prod", 90, 25}; }
template <>
Command Sample() {
  Command c;
  c.id = "0123456789abcdef0123456789abcdef";
  c.kind = CommandKind::kLaunch;
  c.lease = SampleLease();
  c.job = Job{12, 11, "push", "octo", "octo/repo", "octo/repo/.github/workflows/ci.yml@refs/heads/main"};
  c.tier = TierShape{"small", 2, 4096, "linux", "img:1", {"run.sh", "--once"}, "default", {"self-hosted", "x64"}, true};
  c.request_id = 12;
  c.job_result = "succeeded";
  c.barrier_id = "barrier-1";
  c.upgrade = UpgradeSpec{"1.2.3", "abc123", "rollout-1", 4};
  return c;
}
template <>
ErrorReply Sample() { return {"unavailable", "a reason a person can act on", "10.0.0.2:7717"}; }
template <>
HealthReply Sample() { return {"standby", "prod", "b", "a", "10.0.0.1:7717", 4}; }
template <>
LeaseReply Sample() { return {SampleLease()}; }
template <>
LaunchedReply Sample() { return {{"lease-1"}, {"lease-2"}}; }
template <>
FreedReply Sample() { return {3}; }
template <>
CaReply Sample() { return {"-----BEGIN CERTIFICATE-----", "sha256:ab", "prod"}; }
template <>
EnrollReply Sample() {
  return {ports::EnrollmentState::kApproved, "sha256:ab", "-----BEGIN CERTIFICATE-----", "-----BEGIN CA-----"};
}
template <>
RenewReply Sample() { return {"-----BEGIN CERTIFICATE-----", "-----BEGIN CA-----"}; }
template <>
CachePolicyReply Sample() { return {true}; }
template <>
DescribeReply Sample() { return {true, 9, "default", {"self-hosted"}}; }
template <>
JitReply Sample() { return {"base64-config", 77, "np-lease-1"}; }
template <>
RecoverReply Sample() { return {"retired"}; }

template <class M>
class EveryMessage : public ::testing::Test {};
using Messages =
    ::testing::Types<ports::Lease, RegisterRequest, CommandResult, EpochBody, AdvanceBody, ReleaseBody, FailureBody,
                     ReconcileBody, EmptyBody, EnrollBody, RenewBody, DescribeBody, JitBody, RemoveRunnerBody,
                     RegisterResponse, Command, ErrorReply, HealthReply, LeaseReply, LaunchedReply, FreedReply, CaReply,
                     EnrollReply, RenewReply, CachePolicyReply, DescribeReply, JitReply, RecoverReply>;
TYPED_TEST_SUITE(EveryMessage, Messages);

TYPED_TEST(EveryMessage, RoundTripsWithEveryFieldSet) {
  const TypeParam sent = Sample<TypeParam>();
  const std::string body = Encode(sent);
  ASSERT_EQ(body.back(), '\n');
  auto read = Decode<TypeParam>(body);
  ASSERT_TRUE(read.ok()) << read.status().message() << "\n" << body;
  EXPECT_TRUE(*read == sent) << body;
  EXPECT_EQ(EncodeValue(*read) + "\n", body);
}

// A default value round-trips too: Omit::kEmpty drops only what reads back
// the same (F2). Messages with a rule that refuses the default are skipped.
TYPED_TEST(EveryMessage, TheDefaultRoundTripsOrIsRefusedByItsRule) {
  const TypeParam sent{};
  auto read = Decode<TypeParam>(Encode(sent));
  if (read.ok()) {
    EXPECT_TRUE(*read == sent) << Encode(sent);
  }
}

TEST(ProtocolCodec, WhatANodeSendsIsReadStrictly) {
  auto r = Decode<RegisterRequest>(R"({"node":"n1","shiny":true})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "register: unknown field \"shiny\"");
  // The route names a body several routes share.
  auto h = Decode<EpochBody>(R"({"epoch":1,"extra":2})", "heartbeat");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().message(), "heartbeat: unknown field \"extra\"");
}

TEST(ProtocolCodec, WhatThePlaneAnswersIsReadLeniently) {
  auto c = Decode<Command>(
      R"({"id":"c1","kind":"sweep","from_a_newer_plane":1,"upgrade":{"version":"2","also_new":true}})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->kind, CommandKind::kSweep);
  ASSERT_TRUE(c->upgrade.has_value());
  EXPECT_EQ(c->upgrade->version, "2");
}

TEST(ProtocolCodec, WrongTypesAndRangesAreRefusedNamingTheField) {
  auto r = Decode<RegisterRequest>(R"({"version":2147483648})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "register: field \"version\" must be an integer from 0 to 2147483647");
  auto n = Decode<EpochBody>(R"({"epoch":-1})", "bind");
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("bind: field \"epoch\" must be an integer from 0 to"), std::string::npos);
  auto s = Decode<JitBody>(R"({"runner_name":7})");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "jit: field \"runner_name\" must be a string");
  auto nested = Decode<Command>(R"({"id":"c1","kind":"launch","lease":{"phase":"busy","epoch":"x"}})");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.status().message(), "command.lease: field \"epoch\" must be an integer from 0 to 9223372036854775807");
  EXPECT_FALSE(Decode<EmptyBody>("{} trailing", "withdraw").ok());
  EXPECT_FALSE(Decode<EmptyBody>("[]", "withdraw").ok());
}

TEST(ProtocolCodec, EnumsAreRequiredAndNamed) {
  auto a = Decode<AdvanceBody>(R"({"epoch":1,"phase":"flying"})");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(),
            "advance: field \"phase\" must be one of capacity, assigned, launching, online, busy, custody, teardown, "
            "quarantine, done, failed");
  auto k = Decode<Command>(R"({"id":"c1"})");
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("command: field \"kind\" must be one of launch, destroy, sweep"),
            std::string::npos);
  EXPECT_NE(k.status().message().find("(it is required)"), std::string::npos);
}

TEST(ProtocolCodec, EachMessagesRuleRefusesWhatItMust) {
  auto expect_refused = [](auto result, const std::string& message) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().message(), message);
  };
  expect_refused(Decode<CommandResult>(R"({"ok":true})"), "result: field \"id\" names the command being answered");
  expect_refused(Decode<AdvanceBody>(R"({"epoch":1,"phase":"quarantine"})"),
                 "advance: field \"phase\" must not be quarantine: only the control plane quarantines");
  expect_refused(Decode<ReleaseBody>(R"({"epoch":1,"outcome":"busy"})"),
                 "release: field \"outcome\" must be \"done\" or \"failed\"");
  expect_refused(Decode<RenewBody>("{}"), "renew: field \"csr_pem\" must name the new key's certificate request");
  expect_refused(Decode<DescribeBody>("{}"), "describe: field \"tier\" must name a tier of the catalogue");
  expect_refused(Decode<Command>(R"({"id":"c1","kind":"launch"})"), "command: a launch without its lease or tier");
  expect_refused(Decode<JitReply>(R"({"runner_id":1})"), "jit reply: no config");
  expect_refused(Decode<RenewReply>(R"({"cert_pem":"x"})"), "renew reply: no certificate");
  expect_refused(Decode<LeaseReply>("{}"), "lease reply: no lease");
  expect_refused(Decode<EnrollReply>(R"({"state":"approved","fingerprint":"f"})"),
                 "enroll reply: approved without the certificate and the CA");
  // A field's own problem is named before an unknown field, and that before
  // a rule (fields.h F3).
  expect_refused(Decode<CommandResult>(R"({"zzz":1})"), "result: unknown field \"zzz\"");
}

TEST(ProtocolCodec, OmitEmptyMatchesTheReferenceShapes) {
  EXPECT_EQ(Encode(CommandResult{"c1", true, "", false, "", {}}), "{\"id\":\"c1\",\"ok\":true}\n");
  EXPECT_EQ(Encode(DescribeReply{}), "{\"found\":false}\n");
  EXPECT_EQ(Encode(EpochBody{3, ""}), "{\"epoch\":3}\n");
  EXPECT_EQ(Encode(EnrollReply{ports::EnrollmentState::kPending, "f", "", ""}), "{\"state\":\"pending\",\"fingerprint\":\"f\"}\n");
  // A lease's providers are stored comma-joined and sent as an array.
  EXPECT_NE(EncodeValue(SampleLease()).find("\"providers\":[\"ceph\",\"ebs-s3\"]"), std::string::npos);
}

// The keys themselves: a round trip cannot see a field renamed in both
// directions, and the reference node and peers read these names.
TEST(ProtocolCodec, TheKeysAreTheWiresNames) {
  EXPECT_EQ(Encode(Sample<RegisterRequest>()),
            R"({"min_version":1,"version":1,"node":"n1","provider":"ceph","site":"fra","deployment":"prod",)"
            R"("incarnation":"inc-1","release":"0.9.0","guest_os":["linux","windows"],"vcpu":8,"memory":16384,)"
            R"("instances":["lease-1"],"inventory_known":true})"
            "\n");
  EXPECT_EQ(Encode(Sample<CommandResult>()),
            R"({"id":"c1","ok":true,"error":"went wrong","custody":true,"barrier_id":"barrier-1",)"
            R"("instances":["lease-1","lease-2"]})"
            "\n");
  EXPECT_EQ(EncodeValue(SampleLease()),
            R"({"id":"lease-1","tier":"small","node":"n1","target_node":"n2","phase":"busy","epoch":7,"vcpu":2,)"
            R"("memory":4096,"requested_vcpu":1,"requested_memory":2048,"instance_type":"m1","run_id":11,)"
            R"("request_id":12,"guest_os":"linux","providers":["ceph","ebs-s3"],"chosen_provider":"ceph",)"
            R"("site":"fra","failure_reason":"boom","force_release":true,"expires_at_ns":1700000000000000000})");
  const std::string command = Encode(Sample<Command>());
  for (const char* key : {R"("kind":"launch")", R"("job":{"request_id":12,"run_id":11,"event":"push")",
                          R"("tier":{"label":"small","vcpu":2)", R"("has_target":true)", R"("request_id":12,"job_result")",
                          R"("upgrade":{"version":"1.2.3","manifest_sha256":"abc123","rollout_id":"rollout-1")"}) {
    EXPECT_NE(command.find(key), std::string::npos) << key << " in " << command;
  }
}

TEST(ProtocolCodec, AnErrorBodysCode) {
  EXPECT_EQ(ErrorCodeOf(Encode(ErrorReply{"fenced", "the epoch moved", {}})), "fenced");
  EXPECT_EQ(ErrorCodeOf("not json"), "");
}

}  // namespace
}  // namespace nodeplane::protocol
