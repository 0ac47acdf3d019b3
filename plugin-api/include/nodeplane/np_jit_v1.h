/*
 * nodeplane plugin C ABI: the JIT source, interface "nodeplane.jit" major 1.
 *
 * A JIT source mints just-in-time runner registrations with the credentials
 * of ONE GitHub target (an organisation, repository or enterprise). It is the
 * only component that holds that target's App key; the host keeps one
 * instance per target and chooses it from the lease's tier, never from what
 * a node asks.
 *
 * SECRETS: the encoded JIT config is a credential. A plugin never logs it,
 * never puts it in an error message, and hands it to the host only through
 * np_jit_registration_v1.encoded_jit_config.
 *
 * Rate limits, 5xx and timeouts are NP_UNAVAILABLE with retryable = 1 and,
 * when known, retry_after_ns; a misconfigured target (404/422) is
 * NP_INVALID with a message naming the target.
 *
 * THREADS AND OWNERSHIP: create and destroy as np_plugin.h states. Every
 * other function is called from the host's pool for this instance, never
 * from an I/O thread, and concurrently with any other of them; each may
 * block on the network. Every pointer argument is borrowed for the call
 * only (an out-parameter such as recover_runner's `state` is the host's, and
 * the plugin fills it). What a plugin passes to a sink's put is borrowed by
 * the host until put returns (the host copies it), so the plugin may free or
 * wipe it afterwards.
 */
#ifndef NODEPLANE_NP_JIT_V1_H
#define NODEPLANE_NP_JIT_V1_H

#include "nodeplane/np_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NP_JIT_INTERFACE "nodeplane.jit"
#define NP_JIT_MAJOR 1u

/* A runner group (or scale set) as the wire needs it. */
typedef struct np_jit_set_v1 {
  uint32_t struct_size;
  int64_t id;
  const char* name;
  const char* const* labels;
  uint32_t n_labels;
} np_jit_set_v1;

typedef struct np_jit_set_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_jit_set_v1* set);
} np_jit_set_sink;

typedef struct np_jit_request_v1 {
  uint32_t struct_size;
  int64_t set_id;                /* from describe */
  const char* runner_name;       /* carries the lease id */
  const char* const* labels;     /* from the tier */
  uint32_t n_labels;
  const char* work_folder;       /* "" for the default */
} np_jit_request_v1;

typedef struct np_jit_registration_v1 {
  uint32_t struct_size;
  int64_t runner_id;
  const char* runner_name;
  const char* encoded_jit_config; /* SECRET */
} np_jit_registration_v1;

typedef struct np_jit_registration_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_jit_registration_v1* registration);
} np_jit_registration_sink;

typedef struct np_runner_state_v1 {
  uint32_t struct_size;
  int64_t runner_id;
  uint32_t present;
  uint32_t busy;
} np_runner_state_v1;

typedef struct np_jit_v1 {
  uint32_t struct_size;
  np_code (*create)(const np_host_v1* host, const char* config_json, uint64_t config_len, uint32_t flags,
                    void** instance, np_error* err);
  void (*destroy)(void* instance);

  /* Finds the runner group `group` ("" for the default) and puts it once;
   * may be cached by the plugin. NP_NOT_FOUND when the group does not
   * exist. */
  np_code (*describe)(void* self, const char* group, np_jit_set_sink out, np_error* err);
  /* Generates a JIT config for one runner and puts the registration once.
   * The host calls it again with a fresh set_id after NP_NOT_FOUND (a
   * recreated group); a runner name already registered by an earlier,
   * unanswered attempt is the plugin's to resolve. */
  np_code (*jit_config)(void* self, const np_jit_request_v1* request, np_jit_registration_sink out,
                        np_error* err);
  /* Removes the runner named exactly `runner_name`. runner_id 0 finds it by
   * that name; any other id is only what the caller believes: the plugin
   * removes that runner only if the forge names it `runner_name`, and answers
   * NP_CONFLICT (removing nothing) when it is named otherwise, so an id can
   * never remove another runner. A runner that is already gone is NP_OK. */
  np_code (*remove_runner)(void* self, int64_t runner_id, const char* runner_name, np_error* err);
  /* Whether the runner named exactly `runner_name` is registered, and busy. */
  np_code (*recover_runner)(void* self, const char* runner_name, np_runner_state_v1* state, np_error* err);
} np_jit_v1;

#ifdef __cplusplus
}
#endif

#endif /* NODEPLANE_NP_JIT_V1_H */
