// The contract of jit-github's reading of GitHub's Actions service, pinned
// against fixtures written from the official client's types (actions/
// scaleset types.go: JobMessageBase and its per-type extras,
// RunnerScaleSetMessage, RunnerScaleSetStatistic), not from our decoder:
// every field name and its casing, optional fields, an empty body, a byte
// order mark, and times with offsets as Go's time.Time reads them (any RFC
// 3339 offset, fractions to the nanosecond, the zero time as "unknown").
// Also the pieces the wire comparison found wrong: the runner-registration
// URL GitHub's clients derive from the API host (D14), and which answers
// mean "the session is gone" (D2).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "actions_service.h"
#include "github_api.h"

namespace nodeplane::plugins::github {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(FIXTURE_DIR) + "/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

constexpr int64_t kS = 1'000'000'000;
// 2026-12-07T10:00:00Z, as Unix seconds.
constexpr int64_t k10h = 1796637600;

const JobEntry* Find(const QueueMessage& m, const std::string& job_id) {
  for (const JobEntry& j : m.jobs) {
    if (j.job_id == job_id) return &j;
  }
  return nullptr;
}

TEST(ActionsDecoderTest, EveryFieldOfABatchedMessageIsReadAsGithubsTypesDefineIt) {
  const QueueMessage m = DecodeQueueMessage(Fixture("batch.json"));
  ASSERT_EQ(m.decode_error, "");
  EXPECT_EQ(m.id, 41);
  EXPECT_EQ(m.statistics.available, 1);
  EXPECT_EQ(m.statistics.acquired, 2);
  EXPECT_EQ(m.statistics.assigned, 3);
  EXPECT_EQ(m.statistics.running, 4);
  EXPECT_EQ(m.statistics.registered, 5);
  EXPECT_EQ(m.statistics.busy, 6);
  EXPECT_EQ(m.statistics.idle, 7);
  ASSERT_EQ(m.jobs.size(), 5u);  // the entry of a kind added later is skipped
  const JobEntry* offered = Find(m, "j-available");
  ASSERT_NE(offered, nullptr);
  EXPECT_EQ(offered->kind, JobEntry::kAvailable);
  EXPECT_EQ(offered->runner_request_id, 4401);
  EXPECT_EQ(offered->owner, "acme");
  EXPECT_EQ(offered->repository, "widgets");
  EXPECT_EQ(offered->workflow_ref, "acme/widgets/.github/workflows/ci.yml@refs/heads/main");
  EXPECT_EQ(offered->display_name, "build (linux)");
  EXPECT_EQ(offered->workflow_run_id, 9876543210);
  EXPECT_EQ(offered->event_name, "pull_request");
  EXPECT_EQ(offered->request_labels, (std::vector<std::string>{"np-large", "self-hosted"}));
  EXPECT_EQ(offered->queued_at_ns, k10h * kS + 123456700);  // .1234567 (.NET's seven digits)
  EXPECT_EQ(offered->assigned_at_ns, (k10h + 1) * kS);       // 11:00:01+01:00 is 10:00:01Z
  EXPECT_EQ(offered->runner_assigned_at_ns, 0);              // Go's zero time: unknown
  EXPECT_EQ(offered->finished_at_ns, 0);
  const JobEntry* started = Find(m, "j-started");
  ASSERT_NE(started, nullptr);
  EXPECT_EQ(started->kind, JobEntry::kStarted);
  EXPECT_EQ(started->runner_id, 77);
  EXPECT_EQ(started->runner_name, "np-0123456789abcdef0123456789abcdef");
  EXPECT_EQ(started->runner_assigned_at_ns, (k10h + 2) * kS + 500000000);  // 05:00:02.5-05:00
  const JobEntry* done = Find(m, "j-completed");
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->kind, JobEntry::kCompleted);
  EXPECT_EQ(done->result, "failed");
  EXPECT_EQ(done->finished_at_ns, (k10h + 7 * 60 + 3) * kS);
  const JobEntry* requeued = Find(m, "j-requeued");
  ASSERT_NE(requeued, nullptr);
  EXPECT_EQ(requeued->result, "canceled");
  EXPECT_EQ(requeued->runner_name, "");  // no runner took it
  EXPECT_EQ(requeued->runner_id, 0);
}

// Go's encoding/json matches field names without regard to case.
TEST(ActionsDecoderTest, FieldNamesMatchWithoutRegardToCaseAsGoReadsThem) {
  const QueueMessage m = DecodeQueueMessage(Fixture("casing.json"));
  ASSERT_EQ(m.decode_error, "");
  EXPECT_EQ(m.id, 42);
  EXPECT_EQ(m.statistics.assigned, 3);
  EXPECT_EQ(m.statistics.idle, 7);
  ASSERT_EQ(m.jobs.size(), 2u);
  EXPECT_EQ(m.jobs[0].kind, JobEntry::kAssigned);
  EXPECT_EQ(m.jobs[0].job_id, "j-assigned");
  EXPECT_EQ(m.jobs[1].runner_name, "np-0123456789abcdef0123456789abcdef");
  EXPECT_EQ(m.jobs[1].request_labels.size(), 2u);
}

// S client.go: len(body) == 0 is no jobs; the statistics still count.
TEST(ActionsDecoderTest, AnEmptyOrNullBodyIsNoJobs) {
  const QueueMessage empty = DecodeQueueMessage(Fixture("empty_body.json"));
  EXPECT_EQ(empty.decode_error, "");
  EXPECT_EQ(empty.id, 43);
  EXPECT_TRUE(empty.jobs.empty());
  EXPECT_EQ(empty.statistics.assigned, 3);
  const QueueMessage null = DecodeQueueMessage(Fixture("null_body.json"));
  EXPECT_EQ(null.decode_error, "");
  EXPECT_TRUE(null.jobs.empty());
}

TEST(ActionsDecoderTest, OptionalFieldsMayBeAbsent) {
  const QueueMessage m = DecodeQueueMessage(Fixture("sparse.json"));
  ASSERT_EQ(m.decode_error, "");
  EXPECT_EQ(m.statistics.assigned, 0);
  ASSERT_EQ(m.jobs.size(), 1u);
  EXPECT_EQ(m.jobs[0].job_id, "j-sparse");
  EXPECT_EQ(m.jobs[0].queued_at_ns, 0);
  EXPECT_TRUE(m.jobs[0].request_labels.empty());
}

// S common_client.go trims a UTF-8 byte order mark from every body.
TEST(ActionsDecoderTest, AByteOrderMarkBeforeTheEnvelopeOrTheBodyIsSkipped) {
  const QueueMessage m = DecodeQueueMessage(Fixture("bom.json"));
  ASSERT_EQ(m.decode_error, "");
  EXPECT_EQ(m.id, 46);
  ASSERT_EQ(m.jobs.size(), 1u);
  EXPECT_EQ(m.jobs[0].job_id, "j-assigned");
}

TEST(ActionsDecoderTest, AnUndecodableMessageKeepsItsIdAndSaysWhy) {
  const QueueMessage m = DecodeQueueMessage(R"({"messageId":47,"messageType":"RunnerScaleSetJobMessages","body":"[{not"})");
  EXPECT_EQ(m.id, 47);
  EXPECT_NE(m.decode_error.find("not a JSON array"), std::string::npos) << m.decode_error;
  EXPECT_NE(DecodeQueueMessage(R"({"messageId":48,"messageType":"Other","body":""})").decode_error, "");
}

TEST(ActionsDecoderTest, Rfc3339TimesWithAnyOffsetAreTheirInstant) {
  EXPECT_EQ(ParseTimestamp("2026-12-07T10:00:00Z"), k10h * kS);
  EXPECT_EQ(ParseTimestamp("2026-12-07T10:00:00z"), k10h * kS);
  EXPECT_EQ(ParseTimestamp("2026-12-07T12:30:00+02:30"), k10h * kS);
  EXPECT_EQ(ParseTimestamp("2026-12-07T09:00:00.000000001-01:00"), k10h * kS + 1);
  EXPECT_EQ(ParseTimestamp("2026-12-07T10:00:00+00:00"), k10h * kS);
  EXPECT_EQ(ParseTimestamp("2026-12-07T10:00:00"), -1);  // no zone: not RFC 3339
  EXPECT_EQ(ParseTimestamp("2026-12-07T10:00:00+0200"), -1);
  EXPECT_EQ(ParseTimestamp("yesterday"), -1);
}

// D14: GitHub's clients derive the URL runners know a target by from the
// host: github.com, *.ghe.com and github.localhost have an api. host; any
// other host is GHES at /api/v3 (S config.go).
TEST(ActionsDecoderTest, D14_TheRegistrationUrlIsDerivedFromTheHostAsGithubsClientsDoIt) {
  auto url = [](const std::string& api, Scope scope, const std::string& owner) {
    GithubConfig c;
    c.api = ParseApiBase("jit-github", "api_url", api);
    c.scope = scope;
    c.owner = owner;
    return RunnerConfigUrl(c);
  };
  EXPECT_EQ(url("https://api.github.com", Scope::kOrg, "acme"), "https://github.com/acme");
  EXPECT_EQ(url("https://api.github.com", Scope::kRepo, "acme/widgets"), "https://github.com/acme/widgets");
  EXPECT_EQ(url("https://api.github.com", Scope::kEnterprise, "big-co"), "https://github.com/enterprises/big-co");
  EXPECT_EQ(url("https://api.octo.ghe.com", Scope::kOrg, "acme"), "https://octo.ghe.com/acme");
  EXPECT_EQ(url("https://ghes.example.com/api/v3", Scope::kOrg, "acme"), "https://ghes.example.com/acme");
  // A GHES whose own name starts with "api." keeps it.
  EXPECT_EQ(url("https://api.corp.example/api/v3", Scope::kOrg, "acme"), "https://api.corp.example/acme");
  EXPECT_EQ(url("http://127.0.0.1:8080/api/v3", Scope::kOrg, "acme"), "http://127.0.0.1:8080/acme");
}

// D2: what GitHub has been seen to answer for a session it dropped.
TEST(ActionsDecoderTest, D2_EverySessionIsGoneAnswerIsRecognised) {
  auto reply = [](int status, const std::string& type) {
    HttpReply r;
    r.status = status;
    r.body = type.empty() ? "" : R"({"typeName":"GitHub.Actions.Runtime.WebApi.)" + type +
                                     R"(, GitHub.Actions.Runtime.WebApi","message":"x"})";
    return r;
  };
  EXPECT_TRUE(SessionGone(reply(404, "")));
  EXPECT_TRUE(SessionGone(reply(404, "RunnerAdminException")));
  EXPECT_TRUE(SessionGone(reply(400, "RunnerScaleSetSessionExpiredException")));
  EXPECT_TRUE(SessionGone(reply(400, "RunnerScaleSetSessionNotFoundException")));
  EXPECT_TRUE(SessionGone(reply(403, "RunnerScaleSetSessionExpiredException")));
  EXPECT_FALSE(SessionGone(reply(400, "ArgumentException")));
  EXPECT_FALSE(SessionGone(reply(409, "RunnerScaleSetSessionConflictException")));
  EXPECT_FALSE(SessionGone(reply(500, "")));
  EXPECT_EQ(GithubError(reply(400, "RunnerScaleSetSessionExpiredException")).type,
            "RunnerScaleSetSessionExpiredException");
}

}  // namespace
}  // namespace nodeplane::plugins::github
