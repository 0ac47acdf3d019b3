/*
 * A JIT source in plain C99 for the host's tests. Its config names the App
 * it stands for ({"app": "A"}); every registration it mints says so
 * ("jit:<app>:<runner name>:<labels>"), which is how a test proves that a
 * tier of target A was never minted with B's credentials.
 *
 *   describe(group)   id 7 and labels [self-hosted]; NP_NOT_FOUND for "missing"
 *   jit_config        runner id 1000 + the number minted so far
 *   remove_runner     counts the removals in "removed=<n>" of the next config
 *   recover_runner    present and idle, id 55; busy when the name ends "-busy"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_config.h"

#include "nodeplane/np_jit_v1.h"

typedef struct instance {
  char app[64];
  int minted;
  int removed;
} instance;

static np_code create(const np_host_v1* host, const char* config_json, uint64_t config_len, uint32_t flags,
                      void** out, np_error* err) {
  instance* self;
  char app[64];
  (void)host;
  if (!test_config_string(config_json, config_len, "app", app, sizeof app)) {
    return np_error_set(err, NP_INVALID, 0, "app is required");
  }
  if (flags & NP_CREATE_VALIDATE_ONLY) {
    *out = NULL;
    return NP_OK;
  }
  self = (instance*)calloc(1, sizeof *self);
  if (self == NULL) return np_error_set(err, NP_INTERNAL, 0, "out of memory");
  memcpy(self->app, app, sizeof app);
  *out = self;
  return NP_OK;
}

static void destroy(void* self) { free(self); }

static np_code describe(void* self, const char* group, np_jit_set_sink out, np_error* err) {
  static const char* const labels[] = {"self-hosted"};
  np_jit_set_v1 set;
  (void)self;
  if (strcmp(group, "missing") == 0) return np_error_set(err, NP_NOT_FOUND, 0, "no runner group \"missing\"");
  set.struct_size = sizeof set;
  set.id = 7;
  set.name = group[0] != '\0' ? group : "Default";
  set.labels = labels;
  set.n_labels = 1;
  out.put(out.ctx, &set);
  return NP_OK;
}

static np_code jit_config(void* self, const np_jit_request_v1* request, np_jit_registration_sink out,
                          np_error* err) {
  instance* in = (instance*)self;
  char config[512];
  size_t used;
  uint32_t i;
  np_jit_registration_v1 reg;
  (void)err;
  used = (size_t)snprintf(config, sizeof config, "jit:%s:%s:set%d:removed=%d:", in->app, request->runner_name,
                          (int)request->set_id, in->removed);
  for (i = 0; i < request->n_labels && used < sizeof config; ++i) {
    used += (size_t)snprintf(config + used, sizeof config - used, "%s%s", i ? "," : "", request->labels[i]);
  }
  in->minted++;
  reg.struct_size = sizeof reg;
  reg.runner_id = 1000 + in->minted;
  reg.runner_name = request->runner_name;
  reg.encoded_jit_config = config;
  out.put(out.ctx, &reg);
  return NP_OK;
}

static np_code remove_runner(void* self, int64_t runner_id, const char* runner_name, np_error* err) {
  (void)runner_id;
  (void)runner_name;
  (void)err;
  ((instance*)self)->removed++;
  return NP_OK;
}

static np_code recover_runner(void* self, const char* runner_name, np_runner_state_v1* state, np_error* err) {
  size_t n = strlen(runner_name);
  (void)self;
  (void)err;
  state->runner_id = 55;
  state->present = 1;
  state->busy = n >= 5 && strcmp(runner_name + n - 5, "-busy") == 0;
  return NP_OK;
}

static const np_jit_v1 vtable = {sizeof(np_jit_v1), create,        destroy,       describe,
                                 jit_config,        remove_runner, recover_runner};

static const np_interface_desc interfaces[] = {
    {sizeof(np_interface_desc), NP_JIT_INTERFACE, NP_JIT_MAJOR, "test-app", &vtable, sizeof vtable},
};

static const np_plugin_desc plugin = {sizeof(np_plugin_desc), "test-jit", "0.0.1", 1, interfaces};

NP_EXPORT np_code np_plugin_entry(np_negotiation* n, np_error* err) {
  if (n->host_abi_min > 1u) return np_error_set(err, NP_UNSUPPORTED, 0, "this plugin speaks ABI 1");
  n->chosen_abi = 1u;
  n->plugin = &plugin;
  return NP_OK;
}
