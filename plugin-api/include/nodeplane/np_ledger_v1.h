/*
 * nodeplane plugin C ABI: the ledger, interface "nodeplane.ledger" major 1.
 *
 * The ledger is the durable record of capacity: leases and their fencing
 * epochs, registered nodes, job history, admission and the compute barrier,
 * join tokens, enrollments, issued certificates and revocations. The host's
 * Plane, wire and admin API use it through this vtable only.
 *
 * CONTRACT (the conformance suite, tests/conformance, checks every clause):
 *   - Every operation is ONE ATOMIC TRANSACTION. Writes are serialized with
 *     every other writer of the same ledger (across processes, too): escrow
 *     measures headroom and inserts in one write, so two callers can never
 *     escrow the same capacity.
 *   - Reads come from one consistent snapshot and never wait on the writer.
 *   - Lease writes are FENCED on the lease's epoch: a caller holding an older
 *     epoch gets NP_FENCED, checked before anything else about the lease
 *     (including whether it is terminal). MarkDeregistered is the exception:
 *     monotonic and unfenced.
 *   - A stale fence on NodeGone, ResolveQuarantineFor and the barrier
 *     operations is a silent no-op (NP_OK), never an error.
 *   - "now" is always host->wall_clock_ns(); no operation reads another clock.
 *   - A failure to reach or write the store is NP_UNAVAILABLE with
 *     retryable = 1, never a verdict code.
 *   - Calls may arrive concurrently on one instance from the host's pool,
 *     or from any of the host's blocking threads when call_model says so.
 *
 * Strings are NUL-terminated UTF-8; "" means absent for optional strings.
 * Every record below is borrowed by its sink until the sink returns.
 *
 * SERIALS. A certificate serial is a number; its one spelling here is
 * lower-case hex without leading zeros ("0" for zero), as np_serial_normalize
 * writes it. Every function that takes a serial accepts what operators paste
 * (`openssl x509 -serial` prints "serial=0A1B...", others print colon-
 * separated bytes or a 0x prefix, in either case) and normalizes it before
 * storing or comparing, so each spelling names the same certificate; one that
 * is not a serial at all is NP_INVALID. Every serial a store puts is
 * normalized.
 */
#ifndef NODEPLANE_NP_LEDGER_V1_H
#define NODEPLANE_NP_LEDGER_V1_H

#include "nodeplane/np_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NP_LEDGER_INTERFACE "nodeplane.ledger"

/* Hex digits a serial may have: X.509 serials are at most 20 octets. */
#define NP_SERIAL_MAX_DIGITS 40u

/* Writes the normalized spelling of serial `in` (see SERIALS above) into
 * `out`, `out_size` bytes with its NUL (NP_SERIAL_MAX_DIGITS + 1 always
 * suffices). Accepts an optional "serial=" and then an optional "0x" prefix,
 * hex digits of either case, and a colon between any two digits. NP_INVALID
 * (with `out` set to "") for anything else, or for more than
 * NP_SERIAL_MAX_DIGITS significant digits. For stores and hosts alike, so
 * every party spells serials the same way. */
static inline np_code np_serial_normalize(const char* in, char* out, uint32_t out_size) {
  uint32_t n = 0;
  int32_t digits = 0;
  int32_t colon_ok = 0;
  if (out == NULL || out_size == 0) return NP_INVALID;
  out[0] = '\0';
  if (in == NULL) return NP_INVALID;
  if (in[0] == 's' && in[1] == 'e' && in[2] == 'r' && in[3] == 'i' && in[4] == 'a' && in[5] == 'l' && in[6] == '=') {
    in += 7;
  }
  if (in[0] == '0' && (in[1] == 'x' || in[1] == 'X')) in += 2;
  for (; *in != '\0'; ++in) {
    char c = *in;
    if (c == ':') {
      if (!colon_ok) return NP_INVALID;
      colon_ok = 0;
      continue;
    }
    if (c >= 'A' && c <= 'F') c = (char)(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      out[0] = '\0';
      return NP_INVALID;
    }
    ++digits;
    colon_ok = 1;
    if (c == '0' && n == 0) continue; /* a leading zero */
    if (n + 2 > out_size || n >= NP_SERIAL_MAX_DIGITS) {
      out[0] = '\0';
      return NP_INVALID;
    }
    out[n++] = c;
  }
  if (digits == 0 || !colon_ok) {
    out[0] = '\0';
    return NP_INVALID;
  }
  if (n == 0) out[n++] = '0';
  out[n] = '\0';
  return NP_OK;
}
#define NP_LEDGER_MAJOR 1u

/* Lease phases (stable numbers). done and failed are terminal. */
#define NP_PHASE_CAPACITY 1   /* escrowed, not yet assigned a job */
#define NP_PHASE_ASSIGNED 2   /* a job is assigned */
#define NP_PHASE_LAUNCHING 3  /* a node is starting the runner */
#define NP_PHASE_ONLINE 4     /* the runner is up */
#define NP_PHASE_BUSY 5       /* the runner runs the job */
#define NP_PHASE_CUSTODY 6    /* the node holds compute the plane stopped waiting for */
#define NP_PHASE_TEARDOWN 7   /* being destroyed */
#define NP_PHASE_QUARANTINE 8 /* expired while compute may still exist; capacity stays charged */
#define NP_PHASE_DONE 9
#define NP_PHASE_FAILED 10

#define NP_PLACEMENT_PACK 0
#define NP_PLACEMENT_SPREAD 1

#define NP_ENROLLMENT_PENDING 1
#define NP_ENROLLMENT_APPROVED 2
#define NP_ENROLLMENT_DENIED 3

/* ---- The catalogue: what the server's config says ----------------------- */

typedef struct np_tier_v1 {
  uint32_t struct_size;
  const char* label;
  int64_t vcpu;
  int64_t memory;                /* bytes */
  const char* const* providers;  /* preference order */
  uint32_t n_providers;
  const char* guest_os;          /* "linux", "macos", "windows" */
  const char* node;              /* pin, "" for any */
  const char* site;              /* confine, "" for any */
  uint32_t max_concurrent;       /* 0: uncapped */
  uint32_t reserved;             /* floor */
} np_tier_v1;

typedef struct np_node_policy_v1 {
  uint32_t struct_size;
  const char* name;
  const char* provider;          /* "" : any */
  const char* const* guest_os;   /* empty: every OS */
  uint32_t n_guest_os;
  uint32_t macos_vm_limit;
  int64_t max_vcpu;              /* 0: the node's claim */
  int64_t max_memory;
} np_node_policy_v1;

/* Arrays are arrays of pointers, so each element carries its own
 * struct_size and may grow independently. */
typedef struct np_catalog_v1 {
  uint32_t struct_size;
  int64_t lease_ttl_ns;
  int64_t max_vcpu;              /* deployment ceilings; 0: none */
  int64_t max_memory;
  uint32_t placement;            /* NP_PLACEMENT_* */
  const np_tier_v1* const* tiers;
  uint32_t n_tiers;
  const np_node_policy_v1* const* nodes;
  uint32_t n_nodes;
} np_catalog_v1;

/* ---- Records ------------------------------------------------------------ */

typedef struct np_lease_v1 {
  uint32_t struct_size;
  const char* id;                /* 32 lowercase hex */
  const char* tier;
  const char* node;              /* the node that bound it; "" until bound */
  const char* target_node;       /* the node escrow chose */
  int32_t phase;                 /* NP_PHASE_* */
  int64_t epoch;
  int64_t vcpu;                  /* charged */
  int64_t memory;
  int64_t requested_vcpu;
  int64_t requested_memory;
  const char* instance_type;
  int64_t run_id;                /* 0: none */
  int64_t request_id;            /* 0: none */
  int64_t created_at_ns;
  int64_t heartbeat_at_ns;
  int64_t expires_at_ns;
  int64_t held_at_ns;            /* 0: no proof obligation */
  const char* guest_os;
  const char* providers;         /* comma list, preference order */
  const char* chosen_provider;
  const char* site;
  const char* failure_reason;
  const char* holder_incarnation;
  uint32_t force_release;
  uint32_t deregistered;
  uint32_t macos_slot;
} np_lease_v1;

typedef struct np_lease_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_lease_v1* lease);
} np_lease_sink;

typedef struct np_node_registration_v1 {
  uint32_t struct_size;
  const char* name;
  const char* provider;
  const char* site;              /* "" : unsited */
  const char* incarnation;       /* 32 lowercase hex, "" when the node sent none */
  int64_t total_vcpu;            /* the node's claim; the catalogue caps it */
  int64_t total_memory;
  int32_t wire_version;          /* negotiated */
  const char* release;           /* the node's build, reported only */
} np_node_registration_v1;

typedef struct np_node_v1 {
  uint32_t struct_size;
  const char* name;
  const char* provider;
  const char* site;
  const char* incarnation;
  int64_t epoch;
  int64_t total_vcpu;
  int64_t total_memory;
  int64_t last_seen_at_ns;
  int64_t dispatch_generation;
  int32_t wire_version;
  uint32_t live;
  uint32_t drained;
  uint32_t withdrawn;
} np_node_v1;

typedef struct np_node_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_node_v1* node);
} np_node_sink;

typedef struct np_node_fence_v1 {
  uint32_t struct_size;
  int64_t epoch;
  int64_t dispatch;
  int32_t wire_version;
  uint32_t live;                 /* carried, not part of the fence */
} np_node_fence_v1;

typedef struct np_compute_barrier_v1 {
  uint32_t struct_size;
  const char* id;
  int64_t generation;            /* the admission generation it was asked at */
  int64_t requested_at_ns;
  const char* requested_by;
} np_compute_barrier_v1;

typedef struct np_barrier_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_compute_barrier_v1* barrier);
} np_barrier_sink;

typedef struct np_barrier_observation_v1 {
  uint32_t struct_size;
  const char* node;
  const char* barrier_id;
  int64_t fence_epoch;           /* captured BEFORE the node was asked */
  int64_t fence_dispatch;
  uint32_t empty;                /* the node reported running nothing */
} np_barrier_observation_v1;

typedef struct np_enrollment_v1 {
  uint32_t struct_size;
  const char* name;
  const char* fingerprint;
  const char* csr_pem;
  const char* cert_pem;          /* "" until approved */
  int32_t state;                 /* NP_ENROLLMENT_* */
  int64_t requested_at_ns;
  int64_t decided_at_ns;         /* 0 while pending */
  const char* source;            /* "enrolled" or "issued" */
} np_enrollment_v1;

typedef struct np_enrollment_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_enrollment_v1* enrollment);
} np_enrollment_sink;

typedef struct np_join_token_v1 {
  uint32_t struct_size;
  const char* token_sha256;      /* hex SHA-256 of the lower-cased, trimmed secret */
  const char* note;
  int64_t uses_remaining;
  int64_t created_at_ns;
  int64_t expires_at_ns;
} np_join_token_v1;

typedef struct np_join_token_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_join_token_v1* token);
} np_join_token_sink;

typedef struct np_issued_cert_v1 {
  uint32_t struct_size;
  const char* serial;            /* lowercase hex, never "" */
  const char* node;
  const char* source;            /* "enrolled", "issued", "renewed" */
  int64_t not_after_ns;
  int64_t issued_at_ns;          /* set by the store on output; ignored on input */
  uint32_t revoked;              /* output only */
} np_issued_cert_v1;

typedef struct np_cert_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_issued_cert_v1* cert);
} np_cert_sink;

/* What a node saw the cache do for a lease's job. Closed vocabularies:
 *   image_cache:      "warm" (needs cache_generation), "cold", "pulled"
 *   actions_cache:    "intercepted", "bypassed", "disabled"
 * "" means not observed; at least one must be set. */
typedef struct np_cache_observation_v1 {
  uint32_t struct_size;
  const char* image_cache;
  const char* cache_generation;  /* only beside "warm", which requires it */
  const char* actions_cache;
} np_cache_observation_v1;

typedef struct np_job_v1 {
  uint32_t struct_size;
  const char* lease_id;
  const char* tier;
  const char* node;              /* attribution: the bound or escrowed node */
  int64_t run_id;
  int64_t request_id;
  int32_t conclusion;            /* 0 while in flight, else NP_PHASE_DONE / NP_PHASE_FAILED */
  int64_t queued_at_ns;
  int64_t assigned_at_ns;
  int64_t started_at_ns;
  int64_t finished_at_ns;
  const char* failure_reason;
  const char* image_cache;
  const char* cache_generation;
  const char* actions_cache;
  /* ---- Appended with the job intake: read only as far as struct_size reaches ---- */
  const char* forge_result;      /* the forge's verdict on the job this lease's runner ran, from the
                                  * job journal ("succeeded", "failed", "canceled", ...); "" when none */
} np_job_v1;

typedef struct np_job_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_job_v1* job);
} np_job_sink;

/* A forge's job as the host's job intake journals it (np_jobs_v1.h): what
 * the forge said of it and which lease's runner served it. Keyed by tier and
 * job_id. Every time is wall-clock nanoseconds, 0 until known. */
typedef struct np_forge_job_v1 {
  uint32_t struct_size;
  const char* tier;
  const char* job_id;        /* the forge's id of the job */
  int64_t request_id;        /* the forge's runner request, 0 when it assigned the job directly */
  const char* repository;    /* "owner/name" */
  const char* workflow_ref;
  const char* display_name;
  int64_t workflow_run_id;
  int64_t queued_at_ns;      /* at the forge */
  int64_t received_at_ns;    /* when the intake first read of it */
  int64_t acquired_at_ns;    /* when the intake acquired the forge's offer of it */
  int64_t started_at_ns;     /* when a runner took it */
  int64_t completed_at_ns;
  const char* runner_name;
  const char* lease_id;      /* the lease of the runner that took it */
  const char* result;        /* the forge's verdict ("succeeded", "failed", "canceled", ...) */
  int64_t settled_at_ns;     /* when the host settled lease_id with result */
  /* ---- Appended with the forge's whole job (a store reads them only as far
   * as struct_size reaches, and puts them all) ---- */
  const char* event_name;               /* push, pull_request, schedule, ... */
  const char* const* request_labels;    /* the job's runs-on, n_request_labels of them */
  uint32_t n_request_labels;
  int64_t runner_id;                    /* the forge's id of the runner that took it */
  int64_t assigned_at_ns;               /* when the forge last assigned it (LATEST wins) */
  int64_t runner_assigned_at_ns;        /* when the forge gave it to a runner */
  int64_t requeues;                     /* output only: assignments ended with no runner (below) */
  int64_t settle_tried_at_ns;           /* the host's last failed settle (LATEST wins) */
} np_forge_job_v1;

typedef struct np_forge_job_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_forge_job_v1* job);
} np_forge_job_sink;

/* Who leads the ledger (campaign, below). */
typedef struct np_leadership_v1 {
  uint32_t struct_size;
  uint32_t active;        /* 1: the calling instance leads, and its writes are accepted */
  int64_t generation;     /* the leadership's generation; grows by one at every change of leader */
  int64_t term_left_ns;   /* how long the leader's term runs from now, by the store's clock; 0 when
                             it has ended (anyone may take it) */
  const char* holder;     /* the leader's replica name, "" when nobody has ever led */
  const char* address;    /* the node wire address the leader advertises */
} np_leadership_v1;

typedef struct np_leadership_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_leadership_v1* leadership);
} np_leadership_sink;

/* ---- The vtable --------------------------------------------------------- *
 * Every function takes the instance from create first and the host's
 * np_error last, and returns NP_OK or an error code. Unless a slot says
 * OPTIONAL it is REQUIRED. */

typedef struct np_ledger_v1 {
  uint32_t struct_size;
  np_code (*create)(const np_host_v1* host, const char* config_json, uint64_t config_len, uint32_t flags,
                    void** instance, np_error* err);
  void (*destroy)(void* instance);

  /* Installs the catalogue (tiers, node policies, ceilings, lease TTL). The
   * host calls it after create and before anything else, and again when its
   * config is reloaded. The store copies what it keeps. */
  np_code (*set_catalog)(void* self, const np_catalog_v1* catalog, np_error* err);

  /* ---- Creating leases ---- */

  /* Measures headroom for `tier` and inserts up to min(want, headroom)
   * leases in one transaction, each placed on a node (placement: provider
   * preference rank, then the placement policy, then node name; pins, sites,
   * guest OS, per-node and deployment ceilings, other tiers' floors). Puts
   * each created lease to `out`. want = 0 creates nothing. Errors:
   * NP_UNKNOWN_TIER, NP_ADMISSION_SEALED, NP_INVALID (want < 0). Headroom
   * of zero is NP_OK with nothing put. */
  np_code (*escrow)(void* self, const char* tier, int32_t want, np_lease_sink out, np_error* err);
  /* Records the job a capacity lease now serves and opens its history:
   * fenced; the same ids again are NP_OK, different ids NP_CONFLICT, and
   * (when job_for_request is offered) a request id another open lease
   * serves is NP_CONFLICT. */
  np_code (*assign)(void* self, const char* lease_id, int64_t epoch, int64_t run_id, int64_t request_id,
                    np_error* err);

  /* ---- LeaseStore: what the node wire needs ---- */

  /* Binds the lease to `node`: the escrowed node only, never a rebind, and
   * the node must be registered with a provider the lease accepts and a
   * guest-OS policy that allows it. The same node again is NP_OK (even if
   * the policy tightened since). Records `incarnation` as the holder.
   * Errors: NP_FENCED, NP_NOT_FOUND, NP_WRONG_NODE, NP_WRONG_PROVIDER,
   * NP_GUEST_OS_NOT_ALLOWED, NP_NOT_PLACEABLE. */
  np_code (*bind)(void* self, const char* lease_id, int64_t epoch, const char* node, const char* incarnation,
                  np_error* err);
  /* Moves the lease to phase `to` along a legal edge (NP_BAD_TRANSITION
   * otherwise; quarantine is entered only by reap). Entering launching,
   * online or busy needs a bound node (NP_NOT_PLACED) and re-checks its
   * placement, even when the phase is unchanged. The same phase is NP_OK
   * without a TTL refresh. A terminal `to` archives the job. */
  np_code (*advance)(void* self, const char* lease_id, int64_t epoch, int32_t to, const char* incarnation,
                     np_error* err);
  /* Extends expiry to now + TTL. NP_FORCE_RELEASE when an operator asked the
   * holder to give the lease up (expiry is then not extended).
   * NP_DEREGISTERED, after extending the expiry, when the lease was marked
   * deregistered (mark_deregistered): its runner left the forge (its job
   * ended, or the host retired it idle), so the holder should stop the
   * compute and release the lease done. A store built before this answers
   * NP_OK, and the holder keeps the lease until its runner exits. */
  np_code (*heartbeat)(void* self, const char* lease_id, int64_t epoch, np_error* err);
  /* Records why an open lease will fail; the first reason wins (a different
   * one is NP_CONFLICT). Capacity stays charged. */
  np_code (*mark_failure)(void* self, const char* lease_id, int64_t epoch, const char* reason, np_error* err);
  /* Changes a remote lease's shape; NP_NO_CAPACITY when it does not fit. */
  np_code (*resize)(void* self, const char* lease_id, int64_t epoch, const char* instance_type, int64_t vcpu,
                    int64_t memory, np_error* err);
  /* Ends the lease with `outcome` (NP_PHASE_DONE or NP_PHASE_FAILED),
   * freeing its capacity. The same outcome on an ended lease is NP_OK;
   * another is NP_CONFLICT. */
  np_code (*release)(void* self, const char* lease_id, int64_t epoch, int32_t outcome, np_error* err);
  /* Reads one open lease; a missing or terminal lease is NP_NOT_FOUND. */
  np_code (*get_lease)(void* self, const char* lease_id, np_lease_sink out, np_error* err);
  /* Records a cache observation on the lease and its job history, keeping
   * the first value of each column; fenced. NP_INVALID for a token outside
   * the vocabularies. */
  np_code (*record_cache_observation)(void* self, const char* lease_id, int64_t epoch,
                                      const np_cache_observation_v1* obs, np_error* err);
  /* Marks the lease's GitHub registration removed: its runner will take no
   * job any more (the forge reported its job ended, or the host removed the
   * idle runner). The host counts no deregistered lease as a runner, and
   * heartbeat answers NP_DEREGISTERED for it. Unfenced, monotonic; a missing
   * or terminal lease is NP_OK. */
  np_code (*mark_deregistered)(void* self, const char* lease_id, np_error* err);
  /* Ids of leases bound to `node` in launching, online, busy, custody or
   * teardown. */
  np_code (*launched_lease_ids)(void* self, const char* node, np_string_sink out, np_error* err);
  /* The node a lease's job was attributed to, from history that outlives
   * the lease: puts one string ("" when unattributed); NP_NOT_FOUND when no
   * history exists. */
  np_code (*ended_lease_node)(void* self, const char* lease_id, np_string_sink out, np_error* err);
  /* Ids of quarantined leases charged to `node`, whatever their age. */
  np_code (*quarantined_lease_ids)(void* self, const char* node, np_string_sink out, np_error* err);

  /* ---- Registrar ---- */

  /* Records a registration and returns the node's new epoch (the first is 1;
   * +1 on every registration); marks it live, clears drained and withdrawn.
   * The catalogue's node policy caps the claimed capacity. An incarnation,
   * once recorded, is never blanked: a registration with none for a node
   * whose row has one is NP_CONFLICT (another process under the name).
   * Errors: NP_WRONG_PROVIDER, NP_WRONG_SITE, NP_INVALID, NP_CONFLICT. */
  np_code (*register_node)(void* self, const np_node_registration_v1* reg, int64_t* epoch, np_error* err);
  /* Marks the node unreachable, fenced on `epoch`: a stale epoch is NP_OK
   * and changes nothing. */
  np_code (*node_gone)(void* self, const char* node, int64_t epoch, np_error* err);
  /* The node asked to leave: not live, withdrawn; fenced on epoch AND
   * incarnation (NP_WITHDRAWAL_STALE when neither matches the current
   * registration). Releases no lease. */
  np_code (*node_withdrawn)(void* self, const char* node, int64_t epoch, const char* incarnation, np_error* err);
  /* A plane that has just started marks every node unreachable. */
  np_code (*forget_every_node)(void* self, np_error* err);
  /* Advances the node's dispatch fence before a launch is handed to it;
   * returns the new generation (0 for an unknown node). */
  np_code (*bump_dispatch)(void* self, const char* node, int64_t* generation, np_error* err);
  /* Frees quarantined leases charged to `node` that its inventory (`running`
   * lease ids) shows are gone, if `epoch` is still the node's epoch; returns
   * how many were freed. A stale epoch or unknown node frees nothing, NP_OK. */
  np_code (*resolve_quarantine_for)(void* self, const char* node, const char* const* running, uint32_t n_running,
                                    int64_t epoch, int64_t* freed, np_error* err);
  /* Corrects the verdict of an already-ended lease from a completion; never
   * ends an open lease (settled = 0). No such lease: settled = 1. */
  np_code (*settle_completion_on_terminal_lease)(void* self, const char* lease_id, int64_t lease_epoch,
                                                 int32_t outcome, uint32_t* settled, np_error* err);

  /* ---- Admission and the compute barrier (BarrierStore) ---- */

  /* Puts the durable barrier request if one exists; nothing otherwise. */
  np_code (*compute_barrier_in_force)(void* self, np_barrier_sink out, np_error* err);
  /* Asks for a barrier at the current admission generation (joining one
   * already asked at it); puts the barrier in force. */
  np_code (*request_compute_barrier)(void* self, const char* actor, np_barrier_sink out, np_error* err);
  /* Drops the barrier if its id is still `barrier_id`, with every run. */
  np_code (*drop_compute_barrier)(void* self, const char* barrier_id, np_error* err);
  /* The admission generation, and whether the deployment is sealed at it
   * (an unreadable mode counts as sealed). */
  np_code (*admission_generation)(void* self, int64_t* generation, uint32_t* sealed, np_error* err);
  /* Seals (sealed = 1) or opens admission; an effective change increments
   * the generation; NP_CONFLICT when expected_generation >= 0 and differs. */
  np_code (*set_admission)(void* self, uint32_t sealed, int64_t expected_generation, const char* reason,
                           const char* actor, int64_t* generation, np_error* err);
  /* The ledger barrier, from ONE snapshot: admission, and every non-terminal
   * lease (escrow included), oldest first. Quiet = sealed and none. */
  np_code (*quiescence)(void* self, uint32_t* sealed, int64_t* generation, np_lease_sink outstanding,
                        np_error* err);
  /* The fence an observation must be taken against; found = 0 for an
   * unknown node. */
  np_code (*node_fence_of)(void* self, const char* node, np_node_fence_v1* fence, uint32_t* found, np_error* err);
  /* Records one fenced answer: a fence that no longer matches, or a node
   * that is not empty, ends that node's run; a different barrier id or an
   * unknown node changes nothing. */
  np_code (*record_barrier_observation)(void* self, const np_barrier_observation_v1* obs, np_error* err);
  np_code (*invalidate_barrier_run)(void* self, const char* node, np_error* err);
  np_code (*invalidate_every_barrier_run)(void* self, np_error* err);
  /* Whether the barrier is proved: requested, sealed at its generation, no
   * lease open (the quiescence above, whatever its node, withdrawn or not:
   * withdrawal changes placement, never what runs), and every node that has
   * not withdrawn observed empty twice at least the barrier grace apart
   * (five minutes by default), at its current epoch and dispatch fence. */
  np_code (*compute_clear)(void* self, uint32_t* clear, np_error* err);

  /* ---- Enrollments and join tokens ---- */

  /* Stores a join token by its hash; the secret never reaches the store. */
  np_code (*create_join_token)(void* self, const char* token_sha256, int64_t uses, int64_t expires_at_ns,
                               const char* note, np_error* err);
  np_code (*list_join_tokens)(void* self, np_join_token_sink out, np_error* err);
  /* Deletes a token; NP_NOT_FOUND when none has that hash. */
  np_code (*revoke_join_token)(void* self, const char* token_sha256, np_error* err);
  /* Records the request AND spends one use of the token in one transaction.
   * The same name and fingerprint again returns the existing row without
   * spending. Errors: NP_BAD_JOIN_TOKEN (unknown, spent or expired),
   * NP_ENROLLMENT_CONFLICT (another key holds a pending or approved
   * request; the token use is not spent). Puts the recorded enrollment. */
  np_code (*request_enrollment_with_token)(void* self, const char* name, const char* fingerprint,
                                           const char* csr_pem, const char* token_sha256,
                                           np_enrollment_sink out, np_error* err);
  /* Puts the enrollment named `name`, if any. */
  np_code (*lookup_enrollment)(void* self, const char* name, np_enrollment_sink out, np_error* err);
  /* state 0 lists every state. */
  np_code (*list_enrollments)(void* self, int32_t state, np_enrollment_sink out, np_error* err);
  /* Approves (with the signed certificate) or denies; the fingerprint must
   * match exactly (NP_CONFLICT otherwise, NP_NOT_FOUND when no request). */
  np_code (*decide_enrollment)(void* self, const char* name, const char* fingerprint, int32_t state,
                               const char* cert_pem, np_error* err);

  /* ---- Issued certificates and revocations ---- */

  /* Records a certificate handed out; a known serial is NP_OK. */
  np_code (*record_issued_cert)(void* self, const np_issued_cert_v1* cert, np_error* err);
  /* Records a renewal, refused with NP_PARENT_REVOKED if the parent was
   * revoked by serial or by the node's cut-off, in one transaction. */
  np_code (*record_renewed_cert)(void* self, const np_issued_cert_v1* cert, const char* parent_serial,
                                 int64_t parent_issued_at_ns, np_error* err);
  /* Whether a certificate is revoked: by serial, or issued (issued_at_ns,
   * truncated to the second) before the node's cut-off. */
  np_code (*cert_revoked_for)(void* self, const char* node, const char* serial, int64_t issued_at_ns,
                              uint32_t* revoked, np_error* err);
  /* Revokes one serial (normalized: SERIALS above; NP_INVALID when not one);
   * idempotent, and recorded whether or not it was ever issued (so a
   * certificate the store never saw can be refused too; the host asks its
   * operator to say so on purpose). */
  np_code (*revoke_cert)(void* self, const char* serial, const char* node, const char* reason, np_error* err);
  /* Revokes every live certificate of the node and sets its cut-off to now,
   * rounded up to the next second; puts each serial revoked. */
  np_code (*revoke_node)(void* self, const char* node, const char* reason, np_string_sink revoked,
                         np_error* err);
  /* Certificates recorded for `node` ("" for every node). */
  np_code (*list_certs)(void* self, const char* node, np_cert_sink out, np_error* err);

  /* ---- Reaping and operator queries ---- */

  /* Expires every open lease past its TTL: an unbound escrow is released,
   * anything that may have compute goes to quarantine (capacity stays
   * charged) with its epoch bumped. Returns how many were reaped. */
  np_code (*reap)(void* self, int64_t* reaped, np_error* err);
  /* An operator's word on a lease: a quarantined lease fails at once (epoch
   * bumped); a custody or teardown lease is flagged so its holder's next
   * heartbeat answers NP_FORCE_RELEASE; any other phase is
   * NP_BAD_TRANSITION (its holder, or reap, ends it). */
  np_code (*force_release)(void* self, const char* lease_id, np_error* err);
  /* Every open lease (node "" for all nodes). */
  np_code (*list_leases)(void* self, const char* node, np_lease_sink out, np_error* err);
  np_code (*list_nodes)(void* self, np_node_sink out, np_error* err);
  /* The job record of a lease, readable after the lease ended. */
  np_code (*job_for_lease)(void* self, const char* lease_id, np_job_sink out, np_error* err);

  /* ---- Appended after 0.1.0: OPTIONAL ---- */

  /* The job record of the newest lease assigned `request_id` (request_id >
   * 0), open or ended; puts nothing when none was. With this slot present,
   * assign also refuses (NP_CONFLICT) a request id another open lease
   * already serves, so one request is never served twice at once: together
   * they make a launch idempotent per request id. */
  np_code (*job_for_request)(void* self, int64_t request_id, np_job_sink out, np_error* err);
  /* Up to `limit` job records assigned at or after `since_ns`, newest
   * first, open and ended alike: what an operator's dashboard lists. */
  np_code (*recent_jobs)(void* self, int64_t since_ns, uint32_t limit, np_job_sink out, np_error* err);

  /* ---- Appended with the job intake: OPTIONAL, all three or none ---- *
   * The job journal: the host's job intake writes what a forge's message
   * said before it acknowledges the message, so a crash at any point leaves
   * either the message (redelivered) or the entry. */

  /* Merges `job` into the entry of (job->tier, job->job_id), creating it.
   * tier and job_id are required (NP_INVALID). The rules, in order:
   *   J1. Each field the entry still lacks ("" or 0) takes the value given,
   *       and a field once set never changes, so a redelivered message
   *       records nothing new; except:
   *   J2. assigned_at_ns and settle_tried_at_ns keep the LATEST value given.
   *   J3. A completion naming no runner (completed_at_ns set, runner_name
   *       "") is the forge taking back an assignment no runner took (a
   *       re-queue, or the job cancelled before it ran). It is recorded
   *       (completed_at_ns, result; requeues + 1) only on an entry no runner
   *       took, with no completion yet, and not older than the entry's last
   *       assignment; otherwise it changes nothing.
   *   J4. Such a runnerless completion is undone (completed_at_ns 0, result
   *       "") by a later assignment (assigned_at_ns after it) or by any
   *       record naming a runner (a start or a completion): the job runs
   *       again, and its first runner's completion is the one recorded.
   * Records of one job are given in the order the forge sent them. */
  np_code (*record_forge_job)(void* self, const np_forge_job_v1* job, np_error* err);
  /* Up to `limit` (at most 1000) entries of `tier` ("" for every tier) first
   * received at or after `since_ns`, newest first. */
  np_code (*list_forge_jobs)(void* self, const char* tier, int64_t since_ns, uint32_t limit, np_forge_job_sink out,
                             np_error* err);
  /* Up to `limit` (at most 1000) entries of `tier` ("" for every tier) that
   * are completed by a runner with a lease but not yet settled: the
   * completions the host still owes the fleet. Entries never tried come
   * first, then the least recently tried (settle_tried_at_ns), oldest
   * completion first among equals, so completions that cannot settle yet
   * never hide one that can. */
  np_code (*unsettled_forge_jobs)(void* self, const char* tier, uint32_t limit, np_forge_job_sink out,
                                  np_error* err);

  /* ---- Appended with high availability: OPTIONAL, both or none ---- *
   * Several control planes (replicas) share one ledger; one leads. A leader
   * holds a TERM, renewed by campaigning again before it ends, and a
   * GENERATION, which grows by one each time the leadership changes hands.
   * Once an instance has won, EVERY write it makes is fenced on its
   * generation: after another replica has taken over, the old leader's
   * writes (campaign's renewal included) fail with NP_FENCED and change
   * nothing, so a paused or partitioned leader that wakes up cannot undo its
   * successor's work. An instance that never campaigned is not fenced (one
   * replica, as before).
   *
   * Terms are measured by the STORE's clock (the one exception to "now is
   * host->wall_clock_ns()"), so replicas need not agree on the time. A
   * leader must stop acting before its term ends by its own clock: it
   * counts the term from before it called campaign. Thread: as every other
   * slot (call_model, below); campaign and resign calls on one instance are
   * serialized by the host. */

  /* Takes the leadership for `replica` (advertising `address`) when nobody
   * holds it or the holder's term has ended; renews it when this instance
   * already leads (a new term of `term_ns` from now, same generation);
   * otherwise changes nothing. Puts the leadership as it stands afterwards
   * (active = 1 when this instance leads). An instance whose leadership was
   * taken by another puts active = 0 and stays fenced on the generation it
   * lost: none of its writes lands until it wins again.
   * term_ns > 0, replica not "" (NP_INVALID). */
  np_code (*campaign)(void* self, const char* replica, const char* address, int64_t term_ns,
                      np_leadership_sink out, np_error* err);
  /* Ends this instance's term now, so a standby need not wait it out (a
   * clean stop); its writes are accepted until another replica takes over.
   * NP_OK, changing nothing, when it does not lead. */
  np_code (*resign)(void* self, np_error* err);

  /* ---- Appended with the call model: OPTIONAL ---- */

  /* Which threads may call `self`: NP_CALLS_ANY_THREAD or NP_CALLS_OWN_POOL
   * (np_plugin.h, CALL MODELS); absent means NP_CALLS_OWN_POOL. Called once,
   * after create succeeded and before any other call on `self`, on an
   * arbitrary thread; it answers at once, without blocking, and the answer
   * holds for the instance's life. */
  uint32_t (*call_model)(void* self);

  /* ---- Appended with launches in one write: OPTIONAL ---- */

  /* One launch's three writes as ONE transaction: escrows one lease of
   * `tier` (as escrow with want = 1), assigns it to `run_id` / `request_id`
   * (as assign), and advances the dispatch fence of the node the lease was
   * placed on (as bump_dispatch), so a launch waits on one durable write
   * instead of three in a row. When any part fails, nothing of it is kept:
   * no lease, no job record, no fence moved. On success the lease (phase
   * NP_PHASE_ASSIGNED, target_node the node whose fence moved) is put to
   * `out`, borrowed by the sink until it returns, and *generation is that
   * node's new fence; *generation is written only then. Headroom of zero is
   * NP_OK with nothing put. `tier` is borrowed for the call. Errors: those
   * of escrow and assign (NP_CONFLICT when another open lease serves
   * request_id, request_id > 0). Thread: as every other slot (call_model).
   * Absent (NULL, or vtable_size ends before it): the host calls escrow and
   * assign, then bump_dispatch once it has chosen the node. */
  np_code (*escrow_for_launch)(void* self, const char* tier, int64_t run_id, int64_t request_id,
                               np_lease_sink out, int64_t* generation, np_error* err);
} np_ledger_v1;

#ifdef __cplusplus
}
#endif

#endif /* NODEPLANE_NP_LEDGER_V1_H */
