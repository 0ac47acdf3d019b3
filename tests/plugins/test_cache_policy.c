/*
 * A minimal cache-policy plugin in plain C99, built with clang while the host
 * is built with g++: proof that the ABI is C and only C. Its config may name
 * one owner to deny: {"deny_owner": "NAME"}; any key "bogus" is refused.
 *
 * Built in variants (compile definitions) that misbehave on purpose:
 *   TEST_ABI_MIN/TEST_ABI_MAX  the ABI range it knows (default 1..1)
 *   TEST_OMIT_REQUIRED_SLOT    leaves actions_cache_allowed NULL
 *   TEST_FROZEN_V1_0           built against the frozen v1.0 headers, which
 *                              predate the optional describe slot
 */
#include <stdlib.h>
#include <string.h>

#include "test_config.h"

#include "nodeplane/np_cache_policy_v1.h"

#ifndef TEST_ABI_MIN
#define TEST_ABI_MIN 1u
#endif
#ifndef TEST_ABI_MAX
#define TEST_ABI_MAX 1u
#endif

typedef struct instance {
  const np_host_v1* host;
  char deny_owner[128];
} instance;

/* Whether `needle` occurs in the first len bytes of json (not NUL-terminated). */
static int contains(const char* json, uint64_t len, const char* needle) {
  uint64_t n = strlen(needle), i;
  for (i = 0; i + n <= len; ++i) {
    if (memcmp(json + i, needle, n) == 0) return 1;
  }
  return 0;
}

static np_code create(const np_host_v1* host, const char* config_json, uint64_t config_len, uint32_t flags,
                      void** out, np_error* err) {
  instance* self;
  const char* keys[1] = {"validate_only"};
  const char* values[1];
  if (contains(config_json, config_len, "\"bogus\"")) {
    return np_error_set(err, NP_INVALID, 0, "unknown key \"bogus\" in the cache policy config");
  }
  values[0] = (flags & NP_CREATE_VALIDATE_ONLY) ? "true" : "false";
  host->log(host->ctx, NP_LOG_INFO, "test_cache_policy.create", keys, values, 1);
  if (flags & NP_CREATE_VALIDATE_ONLY) {
    *out = NULL;
    return NP_OK;
  }
  self = (instance*)calloc(1, sizeof *self);
  if (self == NULL) return np_error_set(err, NP_INTERNAL, 0, "out of memory");
  self->host = host;
  test_config_string(config_json, config_len, "deny_owner", self->deny_owner, sizeof self->deny_owner);
  *out = self;
  return NP_OK;
}

static void destroy(void* self) { free(self); }

#ifndef TEST_OMIT_REQUIRED_SLOT
static np_code allowed(void* self, const char* owner, const char* repository, uint32_t* out, np_error* err) {
  instance* in = (instance*)self;
  (void)repository;
  (void)err;
  *out = strcmp(owner, in->deny_owner) != 0;
  return NP_OK;
}
#endif

#ifndef TEST_FROZEN_V1_0
static np_code describe(void* self, np_string_sink out, np_error* err) {
  instance* in = (instance*)self;
  (void)err;
  out.put(out.ctx, in->deny_owner[0] != '\0' ? "deny one owner" : "allow everything");
  return NP_OK;
}
#endif

/* Built against tests/abi/frozen/v1.0 (TEST_FROZEN_V1_0) the vtable has no
 * describe slot, and sizeof says so. */
static const np_cache_policy_v1 vtable = {
    sizeof(np_cache_policy_v1), create, destroy,
#ifdef TEST_OMIT_REQUIRED_SLOT
    NULL,
#else
    allowed,
#endif
#ifndef TEST_FROZEN_V1_0
    describe,
#endif
};

static const np_interface_desc interfaces[] = {
    {sizeof(np_interface_desc), NP_CACHE_POLICY_INTERFACE, NP_CACHE_POLICY_MAJOR, "deny-one-owner", &vtable,
     sizeof vtable},
};

static const np_plugin_desc plugin = {sizeof(np_plugin_desc), "test-cache-policy", "0.0.1", 1, interfaces};

NP_EXPORT np_code np_plugin_entry(np_negotiation* n, np_error* err) {
  if (n->host_abi_max < TEST_ABI_MIN || n->host_abi_min > TEST_ABI_MAX) {
    return np_error_set(err, NP_UNSUPPORTED, 0, "this plugin was built for other ABI versions");
  }
  n->chosen_abi = n->host_abi_max < TEST_ABI_MAX ? n->host_abi_max : TEST_ABI_MAX;
  n->plugin = &plugin;
  return NP_OK;
}
