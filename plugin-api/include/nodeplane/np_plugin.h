/*
 * nodeplane plugin C ABI: the core.
 *
 * A plugin is a shared object exporting exactly one symbol, np_plugin_entry.
 * The host calls it once, offering a range of ABI versions and its services;
 * the plugin picks a version and answers with a static description of the
 * interfaces it implements (ledger, JIT source, revocation list, cache
 * policy), each with a vtable. Everything else happens through those
 * vtables.
 *
 * VERSIONING POLICY
 *   1. The ABI version (NP_ABI_VERSION) names this core: the entry point, the
 *      negotiation, the descriptors, the host services and np_error. It is
 *      bumped only by a breaking change to one of those; the host offers a
 *      range [min, max] and the plugin picks one it knows.
 *   2. Each interface has its own major, in its name: "nodeplane.ledger" with
 *      major 1 is np_ledger_v1. A breaking change to an interface is a new
 *      major (np_ledger_v2), offered beside the old one for as long as the
 *      host supports it.
 *   3. Within a version, every struct begins with struct_size and only ever
 *      grows at its end. Nothing is renumbered, retyped or removed. Whoever
 *      reads a struct copies min(struct_size, sizeof what it knows) bytes and
 *      treats the rest as absent (zero / NULL).
 *   4. Vtable slots are either REQUIRED (the host refuses a plugin whose
 *      vtable lacks one) or OPTIONAL (NULL or beyond the declared size means
 *      absent, and the host checks before each call). Slots added after the
 *      first release of an interface are always optional.
 *   5. Error codes (np_code) are stable numbers; new ones may be added. A
 *      caller that meets a code it does not know treats it as NP_INTERNAL.
 *
 * RULES FOR EVERY CALL
 *   - Only C types cross: fixed-width integers, pointers, NUL-terminated
 *     UTF-8 strings. No C++ type, exception or allocation crosses the line:
 *     memory is freed by whoever allocated it.
 *   - Inputs are BORROWED for the duration of the call; a plugin copies
 *     whatever it keeps.
 *   - Variable-size output goes through a host-provided sink: the plugin
 *     calls the sink once per item, and the item (and every string it points
 *     to) need only live until the sink returns; the host copies.
 *   - Every fallible function returns an np_code and, on failure, fills the
 *     host's np_error (code, retryable flag, message in the host's buffer).
 *   - Times are int64 nanoseconds since the Unix epoch, UTC. Durations are
 *     int64 nanoseconds.
 *   - All v1 operations BLOCK. The host never calls a plugin on an I/O
 *     thread: each instance gets its own small pool of threads, and calls on
 *     one instance may arrive CONCURRENTLY from those threads unless the
 *     interface says otherwise. A plugin serializes internally what must be
 *     serialized. An instance whose interface has a call_model slot may
 *     widen that with NP_CALLS_ANY_THREAD (below).
 *   - The host never unloads a plugin library.
 *
 * This header is pure C99 and includes only <stdint.h> and <stddef.h>.
 */
#ifndef NODEPLANE_NP_PLUGIN_H
#define NODEPLANE_NP_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NP_ABI_VERSION 1u

#if defined(_WIN32)
#define NP_EXPORT __declspec(dllexport)
#else
#define NP_EXPORT __attribute__((visibility("default")))
#endif

/* ---- Error codes ------------------------------------------------------- */

typedef int32_t np_code;

/* Stable numbers; never renumbered. */
#define NP_OK 0
#define NP_INVALID 1              /* malformed input; permanent */
#define NP_NOT_FOUND 2            /* no such thing (a missing or terminal lease) */
#define NP_CONFLICT 3             /* collides with what is recorded */
#define NP_FENCED 4               /* a stale epoch: the caller no longer holds it */
#define NP_UNAVAILABLE 5          /* an outage; retryable */
#define NP_REFUSED 6              /* understood and rejected on its merits */
#define NP_INTERNAL 7             /* a bug: an invariant did not hold */
#define NP_UNSUPPORTED 8          /* an optional operation this plugin does not offer */
#define NP_BAD_TRANSITION 9       /* the lease's phase cannot move that way */
#define NP_NO_CAPACITY 10         /* nothing fits */
#define NP_UNKNOWN_TIER 11        /* the tier is not in the catalogue */
#define NP_WRONG_NODE 12          /* the lease is placed on another node */
#define NP_WRONG_PROVIDER 13      /* the node's provider does not serve the lease */
#define NP_WRONG_SITE 14          /* the node is not in the lease's site */
#define NP_GUEST_OS_NOT_ALLOWED 15
#define NP_NOT_PLACED 16          /* the phase needs a node and the lease has none */
#define NP_NOT_PLACEABLE 17       /* the lease's provider list cannot be read */
#define NP_FORCE_RELEASE 18       /* an operator asked the holder to give the lease up */
#define NP_WITHDRAWAL_STALE 19    /* a withdrawal from a process no longer registered */
#define NP_ADMISSION_SEALED 20    /* the deployment takes no new work */
#define NP_BAD_JOIN_TOKEN 21      /* unknown, spent or expired: one code for all three */
#define NP_ENROLLMENT_CONFLICT 22 /* another key holds a pending or approved request */
#define NP_PARENT_REVOKED 23      /* a renewal whose parent was revoked meanwhile */
#define NP_SCHEMA_TOO_NEW 24      /* the store was written by a newer version */
#define NP_DEREGISTERED 25        /* the lease's runner left the forge: stop its compute, release the lease */

/* Filled by the plugin on failure. The host owns `message` (a buffer of
 * `message_capacity` bytes) and sets struct_size, message and
 * message_capacity before the call; the plugin sets code, retryable,
 * retry_after_ns and writes a NUL-terminated message, truncated to fit.
 * Messages never contain secrets (tokens, keys, JIT configs). */
typedef struct np_error {
  uint32_t struct_size;
  np_code code;
  uint32_t retryable;       /* 1: the same call may succeed later */
  uint32_t message_capacity;
  char* message;
  int64_t retry_after_ns;   /* a hint with retryable, 0 when none */
} np_error;

/* Fills an np_error; safe with err == NULL. For plugins' convenience. */
static inline np_code np_error_set(np_error* err, np_code code, uint32_t retryable, const char* msg) {
  if (err != NULL) {
    err->code = code;
    err->retryable = retryable;
    if (err->message != NULL && err->message_capacity > 0) {
      uint32_t i = 0;
      for (; msg != NULL && msg[i] != '\0' && i + 1 < err->message_capacity; ++i) err->message[i] = msg[i];
      err->message[i] = '\0';
    }
  }
  return code;
}

/* ---- Host services ----------------------------------------------------- */

#define NP_LOG_DEBUG 0
#define NP_LOG_INFO 1
#define NP_LOG_WARN 2
#define NP_LOG_ERROR 3

/* What the host lends a plugin. Valid from np_plugin_entry for the life of
 * the process. Every function is thread-safe. */
typedef struct np_host_v1 {
  uint32_t struct_size;
  void* ctx; /* passed back to every function below */
  /* One structured log event; `event` is a short dotted identifier and the
   * n_fields key/value pairs are borrowed. Never pass a secret. */
  void (*log)(void* ctx, int32_t level, const char* event, const char* const* keys,
              const char* const* values, uint32_t n_fields);
  /* Wall-clock time, UTC ns. Plugins take every "now" from here, so tests
   * (and the conformance suite) can run them on a fake clock. */
  int64_t (*wall_clock_ns)(void* ctx);
  /* Monotonic time in ns, for timeouts and backoff. */
  int64_t (*monotonic_ns)(void* ctx);
  /* The deployment's state directory (absolute); plugins resolve relative
   * paths in their config against it. */
  const char* state_dir;
} np_host_v1;

/* ---- Sinks ------------------------------------------------------------- */

/* Every sink is a struct the host fills and passes by value: struct_size,
 * the host's ctx, and put, called once per item from the thread making the
 * call it was passed to. What put receives is borrowed until it returns; the
 * host copies. A non-zero return asks the plugin to stop and fail the call
 * with NP_INTERNAL.
 *
 * np_string_sink receives strings one at a time (lease ids, serials, a node
 * name). */
typedef struct np_string_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const char* value);
} np_string_sink;

/* ---- Descriptors and negotiation -------------------------------------- */

/* One implementation of one interface. A plugin may list several for the
 * same interface (two ledger flavours, say), told apart by implementation. */
typedef struct np_interface_desc {
  uint32_t struct_size;
  const char* interface;      /* "nodeplane.ledger", "nodeplane.jit", ... */
  uint32_t interface_major;   /* 1 for the _v1 vtables */
  const char* implementation; /* e.g. "sqlite"; unique within the plugin */
  const void* vtable;         /* e.g. const np_ledger_v1*, static storage */
  uint32_t vtable_size;       /* sizeof the vtable the plugin was built with */
} np_interface_desc;

typedef struct np_plugin_desc {
  uint32_t struct_size;
  const char* name;    /* e.g. "ledger-sqlite" */
  const char* version; /* the plugin's own version, free-form */
  uint32_t n_interfaces;
  const np_interface_desc* interfaces; /* static storage */
} np_plugin_desc;

typedef struct np_negotiation {
  uint32_t struct_size;
  /* in: set by the host */
  uint32_t host_abi_min;
  uint32_t host_abi_max;
  const np_host_v1* host;
  /* out: set by the plugin on success */
  uint32_t chosen_abi;
  const np_plugin_desc* plugin; /* static storage, lives as long as the library */
} np_negotiation;

/* The one exported symbol. Returns NP_OK with chosen_abi and plugin set, or
 * NP_UNSUPPORTED when the plugin knows no version in [host_abi_min,
 * host_abi_max] (setting err's message to say which it knows). Called once,
 * before any other function of the plugin, on an arbitrary thread. */
typedef np_code (*np_plugin_entry_fn)(np_negotiation* negotiation, np_error* err);
#define NP_PLUGIN_ENTRY_SYMBOL "np_plugin_entry"
NP_EXPORT np_code np_plugin_entry(np_negotiation* negotiation, np_error* err);

/* ---- Instances --------------------------------------------------------- */

/* Every interface vtable begins with these three members, in this order:
 *
 *   uint32_t struct_size;
 *   np_code (*create)(const np_host_v1* host, const char* config_json,
 *                     uint64_t config_len, uint32_t flags, void** instance,
 *                     np_error* err);
 *   void (*destroy)(void* instance);
 *
 * create parses the instance's config (the [plugins.NAME.config] table as
 * JSON; "{}" when absent) and, unless flags has NP_CREATE_VALIDATE_ONLY,
 * opens what it needs. With NP_CREATE_VALIDATE_ONLY it only checks the
 * config, touches no file, socket or network, and leaves *instance NULL.
 * A refusal returns NP_INVALID with a message naming the offending key.
 * destroy is called at most once, after every other call on the instance
 * has returned. */
#define NP_CREATE_VALIDATE_ONLY 1u

/* CALL MODELS: what an interface's optional call_model slot answers, a set
 * of bits; a host ignores bits it does not know.
 *
 *   NP_CALLS_OWN_POOL (0): calls come only from the instance's own small
 *     pool of host threads, as described under RULES FOR EVERY CALL. Every
 *     plugin without the slot is called this way.
 *   NP_CALLS_ANY_THREAD: the instance accepts calls from ANY host thread that
 *     may block (a wire worker, the admin socket, the job intake, the
 *     reaper), as many at once as the host has such threads, and each thread
 *     may be one the instance never saw before. The host then makes each
 *     call on the thread that needs its answer, sparing the hand-over to the
 *     pool and back (two thread wake-ups per call). Still never an I/O
 *     thread. An instance answers this only when nothing in it is tied to a
 *     thread (no per-thread connection, no thread-local state that must be
 *     set up first). */
#define NP_CALLS_OWN_POOL 0u
#define NP_CALLS_ANY_THREAD 1u

/* The common head of every interface vtable, so a host can validate an
 * instance's config for any interface, even one it does not use yet. */
typedef struct np_vtable_head {
  uint32_t struct_size;
  np_code (*create)(const np_host_v1* host, const char* config_json, uint64_t config_len, uint32_t flags,
                    void** instance, np_error* err);
  void (*destroy)(void* instance);
} np_vtable_head;

#ifdef __cplusplus
}
#endif

#endif /* NODEPLANE_NP_PLUGIN_H */
