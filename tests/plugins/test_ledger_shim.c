/*
 * A ledger plugin in plain C99 for the host's tests of the call model
 * (np_ledger_v1.call_model): it loads the real SQLite ledger
 * (TEST_INNER_LEDGER, a path) and offers its vtable as its own, with two
 * changes:
 *
 *   - get_lease first logs the event "test_ledger.call" through the host,
 *     on the thread the host called it on, so a test whose host records the
 *     thread of each log call sees where the host made the call;
 *   - the call model is the build's: TEST_CALL_MODEL=<bits> answers those
 *     bits; TEST_LEGACY declares a vtable_size that ends before the
 *     call_model slot, as a plugin built before the slot does, while the
 *     bytes past it still say NP_CALLS_ANY_THREAD (a host must not read
 *     them).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "nodeplane/np_ledger_v1.h"

static const np_host_v1* g_host;
static np_ledger_v1 g_vtable;
static np_code (*g_inner_get_lease)(void* self, const char* lease_id, np_lease_sink out, np_error* err);

static np_code get_lease(void* self, const char* lease_id, np_lease_sink out, np_error* err) {
  g_host->log(g_host->ctx, NP_LOG_INFO, "test_ledger.call", NULL, NULL, 0);
  return g_inner_get_lease(self, lease_id, out, err);
}

#ifdef TEST_CALL_MODEL
static uint32_t call_model(void* self) {
  (void)self;
  return TEST_CALL_MODEL;
}
#endif

static np_interface_desc g_interface;
static np_plugin_desc g_plugin;

NP_EXPORT np_code np_plugin_entry(np_negotiation* negotiation, np_error* err) {
  void* inner = dlopen(TEST_INNER_LEDGER, RTLD_NOW | RTLD_LOCAL);
  np_plugin_entry_fn inner_entry;
  const np_plugin_desc* inner_plugin;
  uint32_t i;
  if (inner == NULL) return np_error_set(err, NP_INTERNAL, 0, "test-ledger-shim: cannot load the SQLite ledger");
  /* POSIX's way from dlsym's object pointer to a function pointer. */
  *(void**)(&inner_entry) = dlsym(inner, NP_PLUGIN_ENTRY_SYMBOL);
  if (inner_entry == NULL || inner_entry(negotiation, err) != NP_OK) return NP_INTERNAL;
  inner_plugin = negotiation->plugin;
  for (i = 0; i < inner_plugin->n_interfaces; ++i) {
    const np_interface_desc* d = &inner_plugin->interfaces[i];
    if (strcmp(d->interface, NP_LEDGER_INTERFACE) != 0) continue;
    memcpy(&g_vtable, d->vtable, d->vtable_size < sizeof g_vtable ? d->vtable_size : sizeof g_vtable);
    g_host = negotiation->host;
    g_inner_get_lease = g_vtable.get_lease;
    g_vtable.get_lease = &get_lease;
#ifdef TEST_CALL_MODEL
    g_vtable.call_model = &call_model;
#endif
    g_interface = *d;
    g_interface.implementation = "shim";
    g_interface.vtable = &g_vtable;
#ifdef TEST_LEGACY
    g_interface.vtable_size = (uint32_t)offsetof(np_ledger_v1, call_model);
#else
    g_interface.vtable_size = (uint32_t)sizeof g_vtable;
#endif
    g_vtable.struct_size = g_interface.vtable_size;
    g_plugin = *inner_plugin;
    g_plugin.name = "test-ledger-shim";
    g_plugin.n_interfaces = 1;
    g_plugin.interfaces = &g_interface;
    negotiation->plugin = &g_plugin;
    return NP_OK;
  }
  return np_error_set(err, NP_INTERNAL, 0, "test-ledger-shim: the SQLite ledger offers no ledger");
}
