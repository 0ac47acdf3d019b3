// Reading the Actions service's message queue: the envelope, its statistics
// and the job entries its body holds, as actions/scaleset's types.go defines
// them (RunnerScaleSetMessage, RunnerScaleSetStatistic, JobMessageBase and
// its per-type extras). The body is a JSON string holding the array of
// entries; an empty (or null) body is a message with no jobs (client.go).
#include <string>

#include "actions_service.h"
#include "github_api.h"
#include "github_json.h"

namespace nodeplane::plugins::github {
namespace {

namespace json = boost::json;
using gjson::Int;
using gjson::Member;
using gjson::Str;

// A time of an entry; 0 when absent, malformed, or the zero time GitHub's
// .NET and Go serializers write for "not yet" (0001-01-01).
int64_t Time(const json::object& o, const char* key) {
  const int64_t t = ParseTimestamp(Str(o, key));
  return t > 0 ? t : 0;
}

bool KindOf(const std::string& type, JobEntry::Kind* kind) {
  if (type == "JobAvailable") *kind = JobEntry::kAvailable;
  else if (type == "JobAssigned") *kind = JobEntry::kAssigned;
  else if (type == "JobStarted") *kind = JobEntry::kStarted;
  else if (type == "JobCompleted") *kind = JobEntry::kCompleted;
  else return false;  // entry types added later are not ours to act on
  return true;
}

JobEntry EntryOf(const json::object& j, JobEntry::Kind kind) {
  JobEntry job;
  job.kind = kind;
  job.runner_request_id = Int(j, "runnerRequestId");
  job.workflow_run_id = Int(j, "workflowRunId");
  job.runner_id = Int(j, "runnerId");
  job.job_id = Str(j, "jobId");
  job.owner = Str(j, "ownerName");
  job.repository = Str(j, "repositoryName");
  job.workflow_ref = Str(j, "jobWorkflowRef");
  job.display_name = Str(j, "jobDisplayName");
  job.event_name = Str(j, "eventName");
  job.request_labels = gjson::Strings(j, "requestLabels");
  job.runner_name = Str(j, "runnerName");
  job.result = Str(j, "result");
  job.queued_at_ns = Time(j, "queueTime");
  job.assigned_at_ns = Time(j, "scaleSetAssignTime");
  job.runner_assigned_at_ns = Time(j, "runnerAssignTime");
  job.finished_at_ns = Time(j, "finishTime");
  return job;
}

}  // namespace

QueueStatistics StatisticsOf(const json::value* v) {
  QueueStatistics s;
  if (v == nullptr || !v->is_object()) return s;
  const json::object& o = v->as_object();
  s.available = Int(o, "totalAvailableJobs");
  s.acquired = Int(o, "totalAcquiredJobs");
  s.assigned = Int(o, "totalAssignedJobs");
  s.running = Int(o, "totalRunningJobs");
  s.registered = Int(o, "totalRegisteredRunners");
  s.busy = Int(o, "totalBusyRunners");
  s.idle = Int(o, "totalIdleRunners");
  return s;
}

QueueMessage DecodeQueueMessage(const std::string& body) {
  QueueMessage m;
  const json::value v = gjson::Parse(body);
  if (!v.is_object()) {
    m.decode_error = "the message is not a JSON object";
    return m;
  }
  const json::object& o = v.as_object();
  m.id = Int(o, "messageId");
  m.statistics = StatisticsOf(Member(o, "statistics"));
  if (m.id <= 0) {
    m.decode_error = "the message has no messageId";
    return m;
  }
  if (Str(o, "messageType") != "RunnerScaleSetJobMessages") {
    m.decode_error = "unknown messageType \"" + Str(o, "messageType").substr(0, 60) + "\"";
    return m;
  }
  const json::value* text = Member(o, "body");
  if (text == nullptr || text->is_null() || (text->is_string() && text->as_string().empty())) return m;  // no jobs
  if (!text->is_string()) {
    m.decode_error = "the message body is not a string";
    return m;
  }
  const json::value entries = gjson::Parse(std::string_view(text->as_string()));
  if (!entries.is_array()) {
    m.decode_error = "the message body is not a JSON array";
    return m;
  }
  for (const json::value& e : entries.as_array()) {
    JobEntry::Kind kind;
    if (e.is_object() && KindOf(Str(e.as_object(), "messageType"), &kind)) m.jobs.push_back(EntryOf(e.as_object(), kind));
  }
  return m;
}

}  // namespace nodeplane::plugins::github
