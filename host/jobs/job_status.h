// Why a GitHub job is where it is: each journalled job's state with a
// reason an operator can act on, computed from the job journal, the open
// leases, the paused tiers and what each tier's listener knows
// (TierStatus). What `nodeplanectl jobs list`, the dashboard and the
// wait metrics show; docs/operations.md, "Why is my job waiting?", walks
// through every reason.
//
// THE MODEL (scale_set_listener.h): runners are not tied to jobs. GitHub
// hands each assigned job to whichever runner of the scale set asks next,
// so a waiting job's reason is its tier's: the waiting jobs, oldest first,
// are matched with the tier's idle runners, then its booting ones (oldest
// first), and the jobs left over wait for what keeps the next runner from
// being launched.
//
// Pure functions; no locks, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "jobs/scale_set_listener.h"
#include "ports/ledger.h"

namespace nodeplane::jobs {

// The closed vocabulary of JobState::reason, in the order they are tried
// for a waiting job. Metrics label with these.
inline constexpr const char* kReasonPaused = "tier_paused";            // GitHub refused the tier's runner as outdated
inline constexpr const char* kReasonSessionDown = "session_down";      // no message session with GitHub
inline constexpr const char* kReasonRateLimited = "rate_limited";      // GitHub refuses registrations until a time
inline constexpr const char* kReasonRunnerIdle = "runner_idle";        // a runner waits; GitHub has not handed it the job
inline constexpr const char* kReasonRunnerBooting = "runner_booting";  // a runner for it is starting on a node
inline constexpr const char* kReasonCeiling = "ceiling";               // the tier runs as many runners as it may
inline constexpr const char* kReasonNoNode = "no_node";                // no live node has room
inline constexpr const char* kReasonLaunching = "launching";           // the next reconcile launches its runner
inline constexpr const char* kReasonUnknownTier = "unknown_tier";      // no listener for its tier here
inline constexpr const char* kReasonRunning = "running";
inline constexpr const char* kReasonFinished = "finished";

struct JobState {
  std::string state;   // "waiting", "running" or "finished"
  std::string reason;  // one of the kReason* above
  std::string text;    // the reason in words, naming what to act on
  int64_t since_ns = 0;  // when the job entered this state (waiting: since GitHub queued it)
  std::string node;      // the node of its runner (booting, running, finished), when known
};

// What is known beyond the journal, read once for many jobs.
struct Fleet {
  std::map<std::string, TierStatus> tiers;             // by tier
  std::vector<ports::Lease> leases;                    // every open lease
  std::map<std::string, std::string> paused;           // tier -> why (Plane::PausedTiers)
  std::map<std::string, std::string> ended_lease_node; // lease -> node, for jobs whose lease has ended
  int64_t now_ns = 0;
};

// The state of each of `jobs` (any order; the result is in the same order).
// A runner is idle unless one of `jobs` started on it, so `jobs` holds
// every job that may be running (JobIntake::Explain passes the last day's).
std::vector<JobState> ExplainJobs(const std::vector<ports::ForgeJob>& jobs, const Fleet& fleet);

// A job's workflow file and the git ref it ran for, from GitHub's
// jobWorkflowRef ("owner/repo/.github/workflows/ci.yml@refs/heads/main" ->
// "ci.yml", "refs/heads/main"); both "" when it is not of that form.
struct WorkflowRef {
  std::string file, ref;
};
WorkflowRef ParseWorkflowRef(const std::string& workflow_ref);

// A job's link at GitHub: {web}/{owner}/{repo}/actions/runs/{run id}, ""
// without a run id or repository. `web` is the forge's web root
// (https://github.com, or https://HOST for GHES).
std::string RunLink(const std::string& web, const ports::ForgeJob& job);

}  // namespace nodeplane::jobs
