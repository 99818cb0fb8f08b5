/* api_internal.h: what api.c and the endpoints' files (api_nodes.c, api_reports.c, api_jobs.c,
 * api_metrics.c) share (private; not installed). */
#ifndef CASTOR_CONTROL_API_INTERNAL_H
#define CASTOR_CONTROL_API_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include "control/api.h"
#include "control/state.h"
#include "util/crypto.h"
#include "util/json.h"

#define AP_STATUS_MAX 600 /* responses are counted by status below this */
#define AP_MAX_SEGS 6
#define AP_NAME_MAX 128    /* longest node or job name */
#define API_ALIVE_MAX 4096 /* entries of a heartbeat's "replicas" */

/* Every node not terminated. */
#define AP_LIVE_NODES                                                    \
    (STATE_MASK(STATE_NODE_LAUNCHING) | STATE_MASK(STATE_NODE_BOOTING) | \
     STATE_MASK(STATE_NODE_READY) | STATE_MASK(STATE_NODE_DRAINING))

/* A deep copy of the daemon's metrics: every string in one owned block per array. */
struct ap_metrics {
    struct api_job_metrics *jobs;
    size_t njobs;
    long long decide_counts[API_DECIDE_NBUCKETS + 1];
    double decide_sum;
    long long decide_failures;
    long long node_losses[API_NLOSSES];
    long long nodes_unfenced;
    long long jobs_waiting;
    double spend_limit, spend_period, spend_until;
    struct api_call_metrics *calls;
    size_t ncalls;
    struct api_call_metrics *errors;
    size_t nerrors;
    struct api_quota_metrics *quotas;
    size_t nquotas;
    struct api_offer_room *rooms;
    size_t nrooms;
    struct api_offer_price *prices;
    size_t nprices;
    char *strings;
};

struct ap_pending; /* a report waiting for its group commit (api_reports.c) */

/* When a node's heartbeat was last answered (api_node_heard). */
struct ap_heard {
    char node[AP_NAME_MAX + 1];
    double at;
};

/* An entry of the heartbeats answered unheard of for this long is dropped when a node is added. */
#define AP_HEARD_KEEP_S 86400.0

/* The API (api_new): its state, clock, tokens' digests, the daemon's metrics, the counts of its
 * answers and the queue of reports. */
struct api {
    struct state *state;
    struct log *log;
    api_clock_fn clock;
    void *clock_ctx;
    api_changed_fn changed;
    void *changed_ctx;
    unsigned char digest[API_NROLES][CRYPTO_SHA256_LEN];
    int has[API_NROLES];
    unsigned char job_key[CRYPTO_SHA256_LEN];  /* the per-job tokens' key (api_job_token) */
    unsigned char node_key[CRYPTO_SHA256_LEN]; /* the per-node tokens' key (api_node_token) */
    int per_node_tokens;
    /* api_config's attestation, copied (attest.certificate NULL: none asked) */
    struct attest_aws attest;
    struct attest_gcp attest_gcp;
    char **attest_static; /* NULL-terminated; NULL: none */
    pthread_mutex_t mu;   /* the state's connection, the metrics and the counts */
    struct ap_metrics metrics;
    long long answered[AP_STATUS_MAX]; /* responses by status */
    /* group commit of reports: requests queue their report; one of them at a time commits the
     * whole queue in one transaction while the next ones queue behind it */
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    struct ap_pending *queue;
    struct ap_pending **qtail;
    int committing;
    long long batches; /* transactions of reports committed, and reports in them */
    long long batched;
    /* the heartbeats answered, recorded in the state or not (api_node_heard): by node (sorted),
     * under hmu, which the loop's thread takes too */
    pthread_mutex_t hmu;
    struct ap_heard *heard;
    size_t nheard, heard_cap;
};

/* One request being answered (api_handle). */
struct ap_ctx {
    struct api *a;
    const struct http_request *req;
    struct http_response *resp;
    double now;
    int role;
    char token_job[AP_NAME_MAX + 1];  /* a per-job token's job ("": not one) */
    char token_node[AP_NAME_MAX + 1]; /* a per-node token's node ("": not one) */
    const char *param;                /* the {id} or {name} of the path */
    char segbuf[512];
    const char *segs[AP_MAX_SEGS];
    int nsegs;
    struct jv *body; /* the parsed body; owned */
    int json_failed; /* building an answer ran out of memory */
    char reason[320];
};

/* ---- one request (api.c) ---- */

/* Set o[key] = v (stolen), remembering the first failure in c. */
void ap_set(struct ap_ctx *c, struct jv *o, const char *key, struct jv *v);

/* Push v (stolen) onto the array arr, remembering the first failure in c. */
void ap_push(struct ap_ctx *c, struct jv *arr, struct jv *v);

/* Answer status with v (stolen) as the JSON body. */
void ap_reply(struct ap_ctx *c, int status, struct jv *v);

/* Answer status with {"error": reason}; the reason is kept for the log. */
void ap_fail(struct ap_ctx *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A state operation's error as an answer: what names the thing it was about. */
void ap_state_fail(struct ap_ctx *c, int rc, const char *what);

/* Note a bad request's reason (for ap_fail(c, 400, ...)); returns ERR_INVAL. */
int ap_bad(struct ap_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse the body as a JSON object into c->body (an empty body is {} when allow_empty). */
int ap_parse_body(struct ap_ctx *c, int allow_empty);

/* Every key of obj is one of allowed (NULL-terminated): a misspelt field is an error, not a
 * default. where prefixes the names in the reason ("" or "configs[2]."). */
int ap_keys(struct ap_ctx *c, const struct jv *obj, const char *where, const char *const *allowed);

/* obj[key] as an integer in [min, max] into *out; absent: ERR_INVAL if required, else *out is
 * left (its default). */
int ap_int(struct ap_ctx *c, const struct jv *obj, const char *where, const char *key, int required,
           long long min, long long max, long long *out);

/* obj[key] as a number above min (or at least min when closed) into *out; absent as ap_int. */
int ap_num(struct ap_ctx *c, const struct jv *obj, const char *where, const char *key, int required,
           double min, int closed, double *out);

/* obj[key] as a string of 1 to max bytes into *out (borrowed from obj); absent as ap_int. */
int ap_str(struct ap_ctx *c, const struct jv *obj, const char *where, const char *key, int required,
           size_t max, const char **out);

/* The state of job name (an enum state_job_state), or -1 when it cannot be read. */
int ap_job_state(struct ap_ctx *c, const char *name);

/* ---- parts of the answers about jobs ---- */

/* api_nodes.c: the job's spec as stored, parsed again (it was written by ap_job_submit); NULL if
 * it cannot be (out of memory). */
struct jv *ap_spec(const struct state_job *j);

/* api_nodes.c: the configuration the plan gave the job: batch per replica, accumulation, gain
 * (null before). */
void ap_set_config(struct ap_ctx *c, struct jv *o, const struct state_job *j);

/* api_reports.c: the job's allocation, node by node, with its world size (NULL on a state error,
 * in *rc). */
struct jv *ap_allocation(struct ap_ctx *c, const char *job, long long *world, int *rc);

/* api_jobs.c: the name of market m in answers and metrics: "spot" or "on-demand". */
const char *ap_market_name(enum state_market m);

/* ---- the daemon's metrics (api_metrics.c) ---- */

/* Free what m owns; m is zeroed. */
void ap_metrics_free(struct ap_metrics *m);

/* A deep copy of m into *out, which owns it (ap_metrics_free). ERR_INVAL (a job, op or code is
 * NULL), ERR_NOMEM; on error *out is untouched. */
int ap_metrics_copy(const struct api_metrics *m, struct ap_metrics *out);

/*
 * ---- the endpoints ----
 *
 * Each answers c's request into c->resp (an error through ap_fail or ap_state_fail, its reason
 * kept in c->reason for the log); c->param is the path's {id} or {name}, already checked with
 * api_name_ok. They run under c->a->mu unless their route says they take it themselves.
 */

/* api_nodes.c: POST /v1/nodes: register the body's node, ready at once (201); 400 for a bad
 * body, 409 if it is already registered. */
void ap_node_register(struct ap_ctx *c);

/* api_nodes.c: POST /v1/nodes/{id}/heartbeat: the node's agent is alive; 200 with its state, 404
 * for no such node, 409 if it is terminated. Heard (api_node_heard) even when the state cannot
 * record it (a full disk, a read-only file): 200 then too, when the node can be read. */
void ap_node_heartbeat(struct ap_ctx *c);

/* api_nodes.c: POST /v1/nodes/{id}/notice: the node will be preempted (at {"deadline"}, now if
 * already past); 200 with its state, 404 for no such node, 409 if it is terminated. */
void ap_node_notice(struct ap_ctx *c);

/* api_nodes.c: POST /v1/nodes/{id}/failures: a replica of the body's job on the node failed in
 * the body's attempt (state_job_replica_failed): 200 with the job's state and failures, and
 * whether this report was counted; 400 for a bad body, 404 for no such node, 409 if it is
 * terminated, 422 for no such job, a job that has ended, or one with no replicas on the node. */
void ap_node_failure(struct ap_ctx *c);

/* api_nodes.c: POST /v1/nodes/{id}/completions: rank 0 of the body's job on the node exited with
 * status 0 by itself in the body's attempt and placement (state_job_complete): the job is
 * finished unless the report is stale; 200 with the job's state and whether this report finished
 * it; 400 for a bad body, 404 for no such node, 409 if it is terminated, 422 for no such job, one
 * cancelled or failed, or one with no replicas on the node. */
void ap_node_completion(struct ap_ctx *c);

/* api_nodes.c: POST /v1/nodes/{id}/down (user role): the operator says a static node is off, so
 * that the jobs a silent one holds may move (castor cannot fence a node it did not launch): the
 * node is terminated, its allocation released and each of its jobs told; 200 with its state (a
 * terminated node again too), 400 for a body that is not empty or {}, 404 for no such node, 409
 * for a node castor launched (it fences those itself). The node's agent, if it runs, is told that
 * the node is terminated and stops; a new agent may register the node again. */
void ap_node_down(struct ap_ctx *c);

/* api_nodes.c: GET /v1/nodes/{id}/assignment: the jobs placed on the node, each with its replicas
 * there, ranks, world size, master, configuration and spec; 404 for no such node. */
void ap_node_assignment(struct ap_ctx *c);

/* api_reports.c: POST /v1/jobs/{name}/reports: a training job's step times per configuration,
 * gradient statistics and progress, stored by group commit (it takes c->a->mu itself); 400 for a
 * bad body, 404 for no such job, 409 if the job has ended. */
void ap_job_report(struct ap_ctx *c);

/* api_reports.c: POST /v1/jobs/{name}/checkpoint: a checkpoint at {"progress"} is on disk; 409 if
 * the job has ended. */
void ap_job_checkpoint(struct ap_ctx *c);

/* api_reports.c: POST /v1/jobs/{name}/finished: the job completed its work (optionally at
 * {"progress"}); 409 if it was cancelled or failed. */
void ap_job_finished(struct ap_ctx *c);

/* api_reports.c: GET /v1/jobs/{name}/allocation: the job's nodes, world size and configuration;
 * 404 for no such job. */
void ap_job_allocation(struct ap_ctx *c);

/* api_jobs.c: POST /v1/jobs: check a job spec and store it with its defaults (201, with the
 * warning of api_job_spec_warning if any); 400 for a bad spec, 409 if a job has its name. */
void ap_job_submit(struct ap_ctx *c);

/* api_jobs.c: GET /v1/jobs[?state=a,b]: the jobs' summaries; 400 for an unknown state. */
void ap_job_list(struct ap_ctx *c);

/* api_jobs.c: GET /v1/jobs/{name}: the job's summary, spec, allocation, configuration, gradient
 * statistics and pooled reports; 404 for no such job. */
void ap_job_get(struct ap_ctx *c);

/* api_jobs.c: GET /v1/jobs/{name}/events[?limit=N]: the job's newest events (at most N, 100 when
 * not said, 1 to STATE_EVENTS_KEPT), oldest first; 400 for a bad limit, 404 for no such job. */
void ap_job_events(struct ap_ctx *c);

/* api_jobs.c: DELETE /v1/jobs/{name}: cancel the job; 404 for no such job, 409 if it has already
 * ended. */
void ap_job_cancel(struct ap_ctx *c);

/* api_jobs.c: GET /v1/fleet: the nodes not terminated, their GPUs, what they cost per hour and
 * what was spent. */
void ap_fleet(struct ap_ctx *c);

/* api_jobs.c: GET /v1/costs[?since=&until=&by=day|offer]: what the fleet cost, by UTC day or by
 * offer, split by market (castor's on-demand and spot nodes, static nodes), with the total; since
 * and until are a date (YYYY-MM-DD, UTC) or an ISO 8601 time (400 otherwise). */
void ap_costs(struct ap_ctx *c);

/* api_metrics.c: GET /metrics: the Prometheus text from the state, the daemon's metrics and the
 * API's own counts; an error as ap_state_fail's. */
void ap_metrics_text(struct ap_ctx *c);

#endif
