/*
 * A revocation-list plugin in plain C99 for the host's tests: it revokes the
 * serials listed, one per line, in the file its config names
 * ({"serials_file": "/abs/path"}). A file whose first line is "unreadable"
 * makes every answer NP_UNAVAILABLE, which is how the tests see the wire fail
 * closed. Reading the file on every call keeps the test plugin small; a real
 * list answers from memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_config.h"

#include "nodeplane/np_revocation_v1.h"

typedef struct instance {
  char path[512];
} instance;

static np_code create(const np_host_v1* host, const char* config_json, uint64_t config_len, uint32_t flags,
                      void** out, np_error* err) {
  instance* self;
  char path[512];
  (void)host;
  if (!test_config_string(config_json, config_len, "serials_file", path, sizeof path)) {
    return np_error_set(err, NP_INVALID, 0, "serials_file is required");
  }
  if (flags & NP_CREATE_VALIDATE_ONLY) {
    *out = NULL;
    return NP_OK;
  }
  self = (instance*)calloc(1, sizeof *self);
  if (self == NULL) return np_error_set(err, NP_INTERNAL, 0, "out of memory");
  memcpy(self->path, path, sizeof path);
  *out = self;
  return NP_OK;
}

static void destroy(void* self) { free(self); }

static np_code is_revoked(void* self, const np_cert_identity_v1* cert, uint32_t* revoked, np_error* err) {
  instance* in = (instance*)self;
  char line[256];
  FILE* f = fopen(in->path, "r");
  *revoked = 0;
  if (f == NULL) return NP_OK; /* no file: nothing revoked */
  while (fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\r\n")] = '\0';
    if (strcmp(line, "unreadable") == 0) {
      fclose(f);
      return np_error_set(err, NP_UNAVAILABLE, 1, "the list cannot be read");
    }
    if (strcmp(line, cert->serial) == 0) *revoked = 1;
  }
  fclose(f);
  return NP_OK;
}

static const np_revocation_v1 vtable = {sizeof(np_revocation_v1), create, destroy, is_revoked};

static const np_interface_desc interfaces[] = {
    {sizeof(np_interface_desc), NP_REVOCATION_INTERFACE, NP_REVOCATION_MAJOR, "serials-file", &vtable, sizeof vtable},
};

static const np_plugin_desc plugin = {sizeof(np_plugin_desc), "test-revocation", "0.0.1", 1, interfaces};

NP_EXPORT np_code np_plugin_entry(np_negotiation* n, np_error* err) {
  if (n->host_abi_min > 1u) return np_error_set(err, NP_UNSUPPORTED, 0, "this plugin speaks ABI 1");
  n->chosen_abi = 1u;
  n->plugin = &plugin;
  return NP_OK;
}
