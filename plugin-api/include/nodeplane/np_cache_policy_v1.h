/*
 * nodeplane plugin C ABI: the cache policy, interface "nodeplane.cache_policy"
 * major 1.
 *
 * Answers the kill switch nodes ask before intercepting a job's Actions cache
 * traffic transparently.
 */
#ifndef NODEPLANE_NP_CACHE_POLICY_V1_H
#define NODEPLANE_NP_CACHE_POLICY_V1_H

#include "nodeplane/np_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NP_CACHE_POLICY_INTERFACE "nodeplane.cache_policy"
#define NP_CACHE_POLICY_MAJOR 1u

typedef struct np_cache_policy_v1 {
  uint32_t struct_size;
  np_code (*create)(const np_host_v1* host, const char* config_json, uint64_t config_len, uint32_t flags,
                    void** instance, np_error* err);
  void (*destroy)(void* instance);

  /* Sets *allowed to 1 when interception is allowed for owner/repository.
   * Called concurrently; answer from memory. */
  np_code (*actions_cache_allowed)(void* self, const char* owner, const char* repository, uint32_t* allowed,
                                   np_error* err);

  /* OPTIONAL (appended after the first slots; NULL or absent in an older
   * plugin, which the host checks before calling). Puts one line saying what
   * policy is in force (its source and version), for operators. Called
   * concurrently with actions_cache_allowed, from the host's pool; the line
   * is borrowed by the host until put returns. */
  np_code (*describe)(void* self, np_string_sink out, np_error* err);
} np_cache_policy_v1;

#ifdef __cplusplus
}
#endif

#endif /* NODEPLANE_NP_CACHE_POLICY_V1_H */
