#include "admin/job_json.h"

#include "common/units.h"

namespace nodeplane::admin {
namespace json = boost::json;

json::object JobJson(const ports::ForgeJob& j, const jobs::JobState& s, const std::string& link, int64_t now) {
  json::array runs_on;
  for (const std::string& l : j.request_labels) runs_on.emplace_back(l);
  const jobs::WorkflowRef workflow = jobs::ParseWorkflowRef(j.workflow_ref);
  return json::object{{"job_id", j.job_id},
                      {"tier", j.tier},
                      {"repository", j.repository},
                      {"job", j.display_name},
                      {"state", s.state},
                      {"for_s", s.since_ns ? (now - s.since_ns) / kSecondNs : 0},
                      {"node", s.node},
                      {"why", s.text},
                      {"reason", s.reason},
                      {"link", link},
                      {"workflow", workflow.file},
                      {"ref", workflow.ref},
                      {"workflow_ref", j.workflow_ref},
                      {"event", j.event_name},
                      {"runs_on", std::move(runs_on)},
                      {"run_id", j.workflow_run_id},
                      {"request_id", j.request_id},
                      {"runner_id", j.runner_id},
                      {"runner", j.runner_name},
                      {"lease", j.lease_id},
                      {"result", j.result.empty() ? s.state : j.result},
                      {"requeues", j.requeues},
                      {"settled", j.settled_at_ns != 0},
                      // GitHub's times, then the control plane's.
                      {"queued_at_ns", j.queued_at_ns},
                      {"assigned_at_ns", j.assigned_at_ns},
                      {"runner_assigned_at_ns", j.runner_assigned_at_ns},
                      {"completed_at_ns", j.completed_at_ns},
                      {"received_at_ns", j.received_at_ns},
                      {"acquired_at_ns", j.acquired_at_ns},
                      {"started_at_ns", j.started_at_ns},
                      {"settled_at_ns", j.settled_at_ns}};
}

}  // namespace nodeplane::admin
