/*
 * An example nodeplane plugin in plain C: a cache policy that denies one
 * owner ({"deny_owner": "NAME"}) and allows everyone else. Build it with the
 * installed SDK alone:
 *
 *   cc -std=c99 -fPIC -fvisibility=hidden $(pkg-config --cflags nodeplane-plugin) \
 *      -o deny-owner.so deny_owner.c $(pkg-config --libs nodeplane-plugin)
 *
 * then name it in the config ([plugins.cache] library = "/path/deny-owner.so",
 * provides = ["cache_policy"]) and check it with policy-conformance.
 */
#include <stdlib.h>
#include <string.h>

#include "nodeplane/np_cache_policy_v1.h"

typedef struct policy {
  char deny_owner[128];
} policy;

/* The value of "deny_owner" in a flat JSON object; a real plugin parses JSON properly. */
static int read_owner(const char* json, uint64_t len, char* out, size_t cap) {
  const char* key = "\"deny_owner\"";
  size_t klen = strlen(key), n = 0;
  const char* end = json + len;
  const char* p;
  for (p = json; p + klen <= end; ++p) {
    if (memcmp(p, key, klen) == 0) {
      p += klen;
      while (p < end && (*p == ' ' || *p == ':')) ++p;
      if (p >= end || *p != '"') return 0;
      for (++p; p < end && *p != '"' && n + 1 < cap; ++p) out[n++] = *p;
      out[n] = '\0';
      return 1;
    }
  }
  return 0;
}

/* Refuses any key but "deny_owner", naming it (a key: a string followed by a colon). */
static int only_known_keys(const char* json, uint64_t len, np_error* err) {
  uint64_t i = 0, start;
  char message[200];
  while (i < len) {
    if (json[i] != '"') {
      ++i;
      continue;
    }
    start = ++i;
    while (i < len && json[i] != '"') ++i;
    if (i >= len) break;
    {
      uint64_t klen = i - start, j = i + 1;
      while (j < len && json[j] == ' ') ++j;
      if (j < len && json[j] == ':' && !(klen == 10 && memcmp(json + start, "deny_owner", 10) == 0)) {
        strcpy(message, "deny-owner: unknown config key \"");
        strncat(message, json + start, klen < 100 ? (size_t)klen : 100);
        strcat(message, "\"");
        np_error_set(err, NP_INVALID, 0, message);
        return 0;
      }
    }
    ++i;
  }
  return 1;
}

static np_code create(const np_host_v1* host, const char* config, uint64_t len, uint32_t flags, void** out,
                      np_error* err) {
  policy* self;
  char owner[128];
  (void)host;
  if (!read_owner(config, len, owner, sizeof owner)) {
    return np_error_set(err, NP_INVALID, 0, "deny-owner: config key \"deny_owner\" is required");
  }
  if (!only_known_keys(config, len, err)) return NP_INVALID;
  if (flags & NP_CREATE_VALIDATE_ONLY) {
    *out = NULL;
    return NP_OK;
  }
  self = (policy*)calloc(1, sizeof *self);
  if (self == NULL) return np_error_set(err, NP_INTERNAL, 0, "out of memory");
  memcpy(self->deny_owner, owner, sizeof owner);
  *out = self;
  return NP_OK;
}

static void destroy(void* self) { free(self); }

static np_code allowed(void* self, const char* owner, const char* repository, uint32_t* out, np_error* err) {
  (void)repository;
  (void)err;
  *out = strcmp(owner, ((policy*)self)->deny_owner) != 0;
  return NP_OK;
}

static np_code describe(void* self, np_string_sink out, np_error* err) {
  (void)err;
  out.put(out.ctx, ((policy*)self)->deny_owner);
  return NP_OK;
}

static const np_cache_policy_v1 vtable = {sizeof(np_cache_policy_v1), create, destroy, allowed, describe};

static const np_interface_desc interfaces[] = {
    {sizeof(np_interface_desc), NP_CACHE_POLICY_INTERFACE, NP_CACHE_POLICY_MAJOR, "deny-owner", &vtable,
     sizeof vtable},
};

static const np_plugin_desc plugin = {sizeof(np_plugin_desc), "deny-owner", "1.0.0", 1, interfaces};

NP_EXPORT np_code np_plugin_entry(np_negotiation* n, np_error* err) {
  if (n->host_abi_min > NP_ABI_VERSION || n->host_abi_max < NP_ABI_VERSION) {
    return np_error_set(err, NP_UNSUPPORTED, 0, "deny-owner is built for plugin ABI 1");
  }
  n->chosen_abi = NP_ABI_VERSION;
  n->plugin = &plugin;
  return NP_OK;
}
