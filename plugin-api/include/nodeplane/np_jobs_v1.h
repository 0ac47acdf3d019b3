/*
 * nodeplane plugin C ABI: the job source, interface "nodeplane.jobs" major 1.
 *
 * A job source tells the host which jobs a forge has queued for a pool of
 * runners and what became of them. For GitHub it is the runner scale-set
 * message queue: the control plane dials out and long-polls, so no inbound
 * webhook endpoint is needed. Like a JIT source, one instance serves ONE
 * target (organisation, repository or enterprise) with that target's
 * credentials; the host keeps one per target and picks it from the tier.
 *
 * THE CONVERSATION, per scale set:
 *   ensure_scale_set   find the scale set by name in its runner group, or
 *                      create it with the tier's labels; puts it once.
 *   open_session       one message session per scale set. NP_CONFLICT with
 *                      retryable = 1 when another holder has a session (a
 *                      previous process may still be alive): the host waits
 *                      and tries again, it never gives up on the tier.
 *   next_message       a bounded long poll; puts at most one message. No
 *                      message within the bound is NP_OK with nothing put,
 *                      also when the forge still holds the poll at the
 *                      bound: a held poll is never an outage.
 *   acknowledge        removes a message from the queue. The host calls it
 *                      only after it has made durable what the message
 *                      said; an unacknowledged message comes back, to this
 *                      session or to the next one.
 *   acquire            claims offered (JobAvailable) request ids; puts the
 *                      ids the forge granted, a subset of those asked.
 *   jit_config         a just-in-time registration for one runner of the
 *                      scale set (np_jit_registration_v1, a SECRET).
 *   close_session      ends the session, so a successor need not wait for
 *                      the forge to expire it.
 *   cancel             makes a next_message blocked on the session return
 *                      promptly with NP_UNAVAILABLE; for shutdown.
 *   remove_runner      (optional) takes an idle runner's registration away
 *                      before the host stops its compute.
 *
 * A session handle is the plugin's: nonzero, opaque to the host, valid from
 * open_session until close_session returns (whatever its result). The
 * plugin refreshes what a session needs (tokens) inside the calls.
 *
 * Failures: 5xx, timeouts and rate limits are NP_UNAVAILABLE with
 * retryable = 1 and, when known, retry_after_ns; a scale set or runner group
 * that cannot be found or created is NP_INVALID or NP_NOT_FOUND with a
 * message naming the target and the scale set; a session the forge no
 * longer knows is NP_NOT_FOUND (the host opens a new one), and so is a
 * scale set the forge deleted, at open_session (the host ensures it again).
 *
 * Messages the plugin cannot decode are still put, with `undecodable` = 1,
 * their id and `decode_error`, and no jobs: whether to acknowledge one is
 * the host's decision (it lets a bounded number of redeliveries happen
 * first).
 *
 * THREADS AND OWNERSHIP: create and destroy as np_plugin.h states. Every
 * other function but cancel is called from the host's pool for this
 * instance, never from an I/O thread, may block on the network, and may run
 * concurrently with any other, though the host makes at most one
 * next_message call per session at a time. cancel may be called from any
 * thread, at any time while the session is open, and does not block. Every
 * pointer argument is borrowed for the call only; what a plugin passes to a
 * sink's put is borrowed by the host until put returns (the host copies).
 * SECRETS: JIT configs and tokens never appear in a log or a message.
 */
#ifndef NODEPLANE_NP_JOBS_V1_H
#define NODEPLANE_NP_JOBS_V1_H

#include "nodeplane/np_jit_v1.h"
#include "nodeplane/np_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NP_JOBS_INTERFACE "nodeplane.jobs"
#define NP_JOBS_MAJOR 1u

typedef struct np_jobs_scale_set_v1 {
  uint32_t struct_size;
  int64_t id;
  const char* name;
  int64_t runner_group_id;
  const char* const* labels;
  uint32_t n_labels;
} np_jobs_scale_set_v1;

typedef struct np_jobs_scale_set_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_jobs_scale_set_v1* set);
} np_jobs_scale_set_sink;

/* The queue's counters, as the forge reports them with every message and
 * at session open. total_assigned_jobs is the one to scale on. */
typedef struct np_jobs_statistics_v1 {
  uint32_t struct_size;
  int64_t total_available_jobs;
  int64_t total_acquired_jobs;
  int64_t total_assigned_jobs;
  int64_t total_running_jobs;
  int64_t total_registered_runners;
  int64_t total_busy_runners;
  int64_t total_idle_runners;
} np_jobs_statistics_v1;

#define NP_JOB_AVAILABLE 1u /* offered: acquire it to be assigned it */
#define NP_JOB_ASSIGNED 2u  /* the scale set owes it a runner */
#define NP_JOB_STARTED 3u   /* runner_name took it */
#define NP_JOB_COMPLETED 4u /* finished with `result`; runner_name "" when no runner took it */

/* One entry of a message. Strings are never NULL ("" when absent); times
 * are 0 when absent. runner_request_id may be 0 (GitHub.com assigns jobs
 * directly): job_id then identifies the job. */
typedef struct np_jobs_job_v1 {
  uint32_t struct_size;
  uint32_t kind;              /* NP_JOB_* */
  int64_t runner_request_id;
  const char* job_id;
  int64_t workflow_run_id;
  const char* owner;
  const char* repository;
  const char* workflow_ref;   /* owner/repo/.github/workflows/ci.yml@refs/heads/main */
  const char* display_name;
  const char* event_name;
  int64_t queued_at_ns;
  int64_t assigned_at_ns;
  int64_t finished_at_ns;
  int64_t runner_id;          /* started, completed */
  const char* runner_name;    /* started, completed */
  const char* result;         /* completed: "succeeded", "failed", "canceled", ... */
  /* ---- Appended with the forge's whole job entry (a host reads them only
   * when struct_size reaches them) ---- */
  const char* const* request_labels; /* the job's runs-on, n_request_labels of them; NULL when none */
  uint32_t n_request_labels;
  int64_t runner_assigned_at_ns;     /* when the forge gave the job to a runner */
} np_jobs_job_v1;

/* `statistics` is a pointer, not a member, so that np_jobs_statistics_v1
 * can grow at its end without moving what follows it here. */
typedef struct np_jobs_message_v1 {
  uint32_t struct_size;
  int64_t message_id;
  const np_jobs_statistics_v1* statistics; /* never NULL */
  const np_jobs_job_v1* jobs;               /* n_jobs entries, each of jobs[0].struct_size bytes */
  uint32_t n_jobs;
  uint32_t undecodable;       /* 1: jobs is empty and decode_error says why */
  const char* decode_error;   /* "" unless undecodable */
} np_jobs_message_v1;

typedef struct np_jobs_message_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_jobs_message_v1* message);
} np_jobs_message_sink;

typedef struct np_jobs_id_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, int64_t id);
} np_jobs_id_sink;

/* A runner the forge has registered (list_runners). `name` is borrowed until
 * put returns. */
typedef struct np_jobs_runner_v1 {
  uint32_t struct_size;
  int64_t id;        /* the forge's id of the runner: what remove_runner is given */
  const char* name;
  uint32_t online;   /* 1: connected to the forge now */
  uint32_t busy;     /* 1: running a job */
} np_jobs_runner_v1;

typedef struct np_jobs_runner_sink {
  uint32_t struct_size;
  void* ctx;
  int32_t (*put)(void* ctx, const np_jobs_runner_v1* runner);
} np_jobs_runner_sink;

typedef struct np_jobs_v1 {
  uint32_t struct_size;
  np_code (*create)(const np_host_v1* host, const char* config_json, uint64_t config_len, uint32_t flags,
                    void** instance, np_error* err);
  void (*destroy)(void* instance);

  /* Finds the scale set `name` in runner group `runner_group` ("" for the
   * default group), creating it with `labels` (n_labels of them, borrowed)
   * when absent, and puts it once. A scale set found with other labels is
   * updated to these. */
  np_code (*ensure_scale_set)(void* self, const char* name, const char* runner_group, const char* const* labels,
                              uint32_t n_labels, np_jobs_scale_set_sink out, np_error* err);
  /* Opens the message session of scale set `scale_set_id` under
   * `owner_name` (how the forge shows who holds it); sets *session and
   * fills *statistics. Both out-parameters are the host's: it sets
   * statistics->struct_size, and the plugin writes no more than that. */
  np_code (*open_session)(void* self, int64_t scale_set_id, const char* owner_name, uint64_t* session,
                          np_jobs_statistics_v1* statistics, np_error* err);
  /* Waits at most `timeout_ns` (the forge may answer sooner) for the next
   * message after `last_message_id` (0: the first unacknowledged), telling
   * the forge the scale set takes at most `max_capacity` runners. Puts the
   * message once, or not at all when none came; the message, its jobs and
   * every string are borrowed until put returns. Never two at once on one
   * session; cancel ends it early. */
  np_code (*next_message)(void* self, uint64_t session, int64_t last_message_id, int64_t max_capacity,
                          int64_t timeout_ns, np_jobs_message_sink out, np_error* err);
  /* Removes message `message_id` from the session's queue; one already
   * gone is NP_OK. */
  np_code (*acknowledge)(void* self, uint64_t session, int64_t message_id, np_error* err);
  /* Claims the offered `request_ids` (n_request_ids of them, borrowed for
   * the call) and puts each id the forge granted, once. */
  np_code (*acquire)(void* self, uint64_t session, const int64_t* request_ids, uint32_t n_request_ids,
                     np_jobs_id_sink granted, np_error* err);
  /* A JIT registration for a runner of the scale set, named exactly
   * `runner_name` ("" work_folder: the forge's default); puts it once,
   * borrowed until put returns (SECRET). A name an earlier, unanswered
   * attempt registered is the plugin's to resolve. */
  np_code (*jit_config)(void* self, int64_t scale_set_id, const char* runner_name, const char* work_folder,
                        np_jit_registration_sink out, np_error* err);
  /* Ends the session at the forge. The handle is invalid when this
   * returns, whatever the result; the host calls it once per session,
   * after every other call on the session has returned. */
  np_code (*close_session)(void* self, uint64_t session, np_error* err);
  /* Any thread, any time while the session is open, never blocks: a
   * next_message in progress on the session returns NP_UNAVAILABLE
   * promptly, and so does every later one. An unknown handle is ignored. */
  void (*cancel)(void* self, uint64_t session);

  /* ---- OPTIONAL ---- */

  /* Any thread, never blocks: the forge API's rate limit for this
   * instance's credential as its latest answer stated it (`remaining`
   * requests left until `reset_at_ns`, wall clock); remaining = -1 while no
   * answer has stated it. What an operator watches before the forge starts
   * refusing registrations. */
  np_code (*rate_limit)(void* self, int64_t* remaining, int64_t* reset_at_ns, np_error* err);

  /* ---- Appended with idle-runner retirement: OPTIONAL ---- */

  /* Removes the runner named exactly `runner_name` from scale set
   * `scale_set_id` at the forge, so no job can be given to it any more;
   * when runner_id is not 0 it must be that runner's id. NP_OK when the
   * runner is gone (already gone included). NP_CONFLICT, removing nothing,
   * when the runner is running a job or belongs to another scale set;
   * NP_UNAVAILABLE (retryable) for an outage. The host calls it before it
   * stops an idle runner's compute, from its pool, as every other call. */
  np_code (*remove_runner)(void* self, int64_t scale_set_id, const char* runner_name, int64_t runner_id,
                           np_error* err);

  /* ---- Appended with the ghost check: OPTIONAL ---- */

  /* Puts, once each, every runner the forge has registered in runner group
   * `runner_group_id` (the scale set's, as ensure_scale_set put it) of the
   * plugin's scope, which holds scale set `scale_set_id`'s runners: the
   * forge may list other scale sets' runners of the group too, and the
   * host removes one only through remove_runner, which checks. Pages
   * through the whole list before returning; an outage part way is
   * NP_UNAVAILABLE and the host uses nothing of what was put. The host
   * calls it every few minutes per scale set, from its pool, to find
   * registrations no lease owns (offline runners left behind). */
  np_code (*list_runners)(void* self, int64_t scale_set_id, int64_t runner_group_id, np_jobs_runner_sink out,
                          np_error* err);
} np_jobs_v1;

#ifdef __cplusplus
}
#endif

#endif /* NODEPLANE_NP_JOBS_V1_H */
