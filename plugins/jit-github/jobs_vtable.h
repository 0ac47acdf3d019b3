// The job source vtable of jit-github ("nodeplane.jobs" 1): the C ABI
// around actions_service.h. Its config is the JIT source's, so one
// [plugins.NAME] table serves both with the same App credential.
#pragma once

#include "nodeplane/np_jobs_v1.h"

namespace nodeplane::plugins::github {

extern const np_jobs_v1 kJobsVtable;

}  // namespace nodeplane::plugins::github
