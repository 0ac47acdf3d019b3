/* nodeplane plugin C ABI: everything a plugin author includes. */
#ifndef NODEPLANE_PLUGIN_H
#define NODEPLANE_PLUGIN_H

#include "nodeplane/np_plugin.h"
#include "nodeplane/np_ledger_v1.h"
#include "nodeplane/np_jit_v1.h"
#include "nodeplane/np_revocation_v1.h"
#include "nodeplane/np_cache_policy_v1.h"
#include "nodeplane/np_jobs_v1.h"

#endif /* NODEPLANE_PLUGIN_H */
