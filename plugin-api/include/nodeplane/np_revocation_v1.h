/*
 * nodeplane plugin C ABI: a revocation list, interface "nodeplane.revocation"
 * major 1.
 *
 * Consulted on every authenticated request in addition to the ledger's own
 * record of revocations: a certificate revoked by either is refused. A list
 * that cannot answer (unreadable, or past its validity under a refusing
 * policy) answers NP_UNAVAILABLE, which the host treats as "refuse", never as
 * "not revoked".
 */
#ifndef NODEPLANE_NP_REVOCATION_V1_H
#define NODEPLANE_NP_REVOCATION_V1_H

#include "nodeplane/np_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NP_REVOCATION_INTERFACE "nodeplane.revocation"
#define NP_REVOCATION_MAJOR 1u

/* The certificate being checked. */
typedef struct np_cert_identity_v1 {
  uint32_t struct_size;
  const char* serial;            /* lowercase hex, no leading zeros */
  const char* issuer_der_sha256; /* hex SHA-256 of the issuer name's DER */
  const char* node;              /* the subject CN */
  int64_t not_before_ns;
} np_cert_identity_v1;

typedef struct np_revocation_v1 {
  uint32_t struct_size;
  np_code (*create)(const np_host_v1* host, const char* config_json, uint64_t config_len, uint32_t flags,
                    void** instance, np_error* err);
  void (*destroy)(void* instance);

  /* Sets *revoked to 1 when the list revokes the certificate. Called
   * concurrently, on every request: answer from memory. */
  np_code (*is_revoked)(void* self, const np_cert_identity_v1* cert, uint32_t* revoked, np_error* err);
} np_revocation_v1;

#ifdef __cplusplus
}
#endif

#endif /* NODEPLANE_NP_REVOCATION_V1_H */
