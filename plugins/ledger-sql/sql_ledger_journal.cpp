// The job journal: a forge's jobs as the host's job intake read them
// (np_ledger_v1.h, record_forge_job and its rules J1-J4). An entry mostly
// only gains fields, so recording a redelivered message again is harmless;
// the exceptions are the forge's re-queue of a job no runner took, which
// a later assignment or start undoes, and the two latest-wins times.
#include <algorithm>

#include "sql_ledger_internal.h"

namespace nodeplane::ledger {
namespace {

constexpr const char* kForgeJobColumns =
    "tier, job_id, request_id, repository, workflow_ref, display_name, workflow_run_id, queued_at, received_at, "
    "acquired_at, started_at, completed_at, runner_name, lease_id, result, settled_at, event_name, request_labels, "
    "runner_id, assigned_at, runner_assigned_at, requeues, settle_tried_at";

// J1: a column keeps its value once it has one.
std::string Keep(const char* column, const char* empty) {
  return std::string(column) + " = CASE WHEN forge_jobs." + column + " = " + empty + " THEN excluded." + column +
         " ELSE forge_jobs." + column + " END";
}

// J2: a column keeps the latest value given.
std::string Latest(const char* column) {
  return std::string(column) + " = CASE WHEN excluded." + column + " > forge_jobs." + column + " THEN excluded." +
         column + " ELSE forge_jobs." + column + " END";
}

// J3, J4: in the merge, forge_jobs.* is the entry as it was and excluded.*
// the record given.
constexpr const char* kRunnerless = "(excluded.completed_at <> 0 AND excluded.runner_name = '')";
constexpr const char* kLands =
    "(excluded.completed_at <> 0 AND excluded.runner_name = '' AND forge_jobs.completed_at = 0 AND "
    "forge_jobs.runner_name = '' AND excluded.completed_at >= forge_jobs.assigned_at)";
constexpr const char* kReopens =
    "(forge_jobs.completed_at <> 0 AND forge_jobs.runner_name = '' AND "
    "(excluded.runner_name <> '' OR excluded.assigned_at > forge_jobs.completed_at))";

// completed_at or result under J1, J3 and J4.
std::string Completion(const char* column, const char* empty) {
  const std::string c = column;
  return c + " = CASE WHEN " + kReopens + " THEN excluded." + c + " WHEN " + kRunnerless + " THEN CASE WHEN " + kLands +
         " THEN excluded." + c + " ELSE forge_jobs." + c + " END WHEN forge_jobs." + c + " = " + empty +
         " THEN excluded." + c + " ELSE forge_jobs." + c + " END";
}

const std::string& UpsertSql() {
  static const std::string kUpsert = [] {
    std::string sql = std::string("INSERT INTO forge_jobs (") + kForgeJobColumns +
                      ") VALUES (:tier, :job, :req, :repo, :wf, :name, :run, :queued, :received, :acquired, "
                      ":started, :completed, :runner, :lease, :result, :settled, :event, :labels, :runner_id, "
                      ":assigned, :runner_assigned, :requeues, :tried) ON CONFLICT (tier, job_id) DO UPDATE SET ";
    const char* numbers[] = {"request_id", "workflow_run_id", "queued_at",  "received_at", "acquired_at",
                             "started_at", "settled_at",      "runner_id",  "runner_assigned_at"};
    const char* texts[] = {"repository", "workflow_ref", "display_name", "runner_name", "lease_id", "event_name",
                           "request_labels"};
    bool first = true;
    for (const char* c : numbers) sql += (first ? "" : ", ") + Keep(c, "0"), first = false;
    for (const char* c : texts) sql += ", " + Keep(c, "''");
    sql += ", " + Latest("assigned_at") + ", " + Latest("settle_tried_at");
    sql += ", " + Completion("completed_at", "0") + ", " + Completion("result", "''");
    sql += std::string(", requeues = forge_jobs.requeues + CASE WHEN ") + kLands + " THEN 1 ELSE 0 END";
    return sql;
  }();
  return kUpsert;
}

// SELECT <journal columns> FROM forge_jobs <tail>, binding `uses` in order.
template <typename... U>
std::vector<ForgeJobRow> SelectForgeJobs(Session& s, const std::string& tail, const U&... uses) {
  ForgeJobRow r;
  Query st(s, std::string("SELECT ") + kForgeJobColumns + " FROM forge_jobs " + tail, soci::into(r.tier),
      soci::into(r.job_id), soci::into(r.request_id), soci::into(r.repository), soci::into(r.workflow_ref),
      soci::into(r.display_name), soci::into(r.workflow_run_id), soci::into(r.queued_at), soci::into(r.received_at),
      soci::into(r.acquired_at), soci::into(r.started_at), soci::into(r.completed_at), soci::into(r.runner_name),
      soci::into(r.lease_id), soci::into(r.result), soci::into(r.settled_at), soci::into(r.event_name),
      soci::into(r.request_labels), soci::into(r.runner_id), soci::into(r.assigned_at),
      soci::into(r.runner_assigned_at), soci::into(r.requeues), soci::into(r.settle_tried_at), soci::use(uses)...);
  st->execute();
  std::vector<ForgeJobRow> out;
  while (st->fetch()) out.push_back(r);
  return out;
}

}  // namespace

void SqlLedger::RecordForgeJob(const ForgeJobRow& j) {
  if (j.tier.empty() || j.job_id.empty()) Fail(NP_INVALID, "a journalled job needs its tier and its job id");
  // A new entry whose first record is a runnerless completion counts it (J3).
  const long long requeues = j.completed_at != 0 && j.runner_name.empty() ? 1 : 0;
  Write([&](Session& s) {
    Exec(s, UpsertSql(), j.tier, j.job_id, j.request_id, j.repository, j.workflow_ref, j.display_name,
         j.workflow_run_id, j.queued_at, j.received_at, j.acquired_at, j.started_at, j.completed_at, j.runner_name,
         j.lease_id, j.result, j.settled_at, j.event_name, j.request_labels, j.runner_id, j.assigned_at,
         j.runner_assigned_at, requeues, j.settle_tried_at);
  });
}

std::vector<ForgeJobRow> SqlLedger::ListForgeJobs(const std::string& tier, int64_t since_ns, uint32_t limit) {
  return Read([&](Session& s) {
    return SelectForgeJobs(s,
                           "WHERE (:t1 = '' OR tier = :t2) AND received_at >= :s "
                           "ORDER BY received_at DESC, tier, job_id LIMIT :n",
                           tier, tier, static_cast<long long>(since_ns), static_cast<long long>(std::min<uint32_t>(limit, 1000)));
  });
}

std::vector<ForgeJobRow> SqlLedger::UnsettledForgeJobs(const std::string& tier, uint32_t limit) {
  return Read([&](Session& s) {
    return SelectForgeJobs(s,
                           "WHERE (:t1 = '' OR tier = :t2) AND completed_at <> 0 AND settled_at = 0 "
                           "AND lease_id <> '' AND runner_name <> '' "
                           "ORDER BY settle_tried_at, completed_at, tier, job_id LIMIT :n",
                           tier, tier, static_cast<long long>(std::min<uint32_t>(limit, 1000)));
  });
}

}  // namespace nodeplane::ledger
