// One GitHub job as the operator's tools show it: `nodeplanectl jobs list`
// and `jobs show`, and the dashboard's jobs view (jobs/job_status.h says
// how its state and reason are found). What a person reads first, then
// every fact the journal holds; strings are GitHub's, unescaped (each
// reader escapes for where it prints them).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>

#include "jobs/job_status.h"
#include "ports/ledger.h"

namespace nodeplane::admin {

boost::json::object JobJson(const ports::ForgeJob& job, const jobs::JobState& state, const std::string& link,
                            int64_t now_ns);

}  // namespace nodeplane::admin
