/* api.h: the controller's HTTP API over the durable state: bearer tokens for nodes, jobs and
 * users, node registration and heartbeats, training jobs' reports, users' jobs and fleet, and
 * Prometheus metrics. The endpoints and their JSON are documented in docs/api.md. */
#ifndef CASTOR_CONTROL_API_H
#define CASTOR_CONTROL_API_H

#include <stddef.h>

#include "control/attest.h"
#include "control/state.h"
#include "util/error.h"
#include "util/http_server.h"

struct state;
struct log;

/* Who a token speaks for. The metrics role is optional: without a metrics token, /metrics takes
 * the user token. */
enum api_role { API_ROLE_NODE, API_ROLE_JOB, API_ROLE_USER, API_ROLE_METRICS, API_NROLES };

#define API_TOKEN_MIN 16  /* shortest token accepted, bytes */
#define API_TOKEN_MAX 512 /* longest */

/* The tokens, one per role (metrics may be NULL); owned, wiped by api_tokens_clear. A token is
 * API_TOKEN_MIN to API_TOKEN_MAX printable ASCII characters without spaces, and no two roles share
 * one. */
struct api_tokens {
    char *token[API_NROLES];
};

/* The environment variables the tokens are read from (never from the command line). */
#define API_ENV_NODE_TOKEN "CASTOR_NODE_TOKEN"
#define API_ENV_JOB_TOKEN "CASTOR_JOB_TOKEN"
#define API_ENV_USER_TOKEN "CASTOR_USER_TOKEN"
#define API_ENV_METRICS_TOKEN "CASTOR_METRICS_TOKEN" /* optional */

/*
 * Read the tokens from the environment variables above. Errors (e names the variable, never the
 * value): ERR_NOENT (a required one is not set), ERR_INVAL (too short or long, a character not
 * allowed, two roles with the same token), ERR_NOMEM. On success *out owns copies
 * (api_tokens_clear); on error it is untouched and nothing read is left in memory.
 */
int api_tokens_from_env(struct api_tokens *out, struct error *e);

/*
 * Read the tokens from files, one token per file (a final newline is dropped; metrics_path may be
 * NULL). Errors as api_tokens_from_env, with e naming the file, plus ERR_IO (cannot read) and
 * ERR_INVAL for a file readable by others than its owner (mode & 077: a token file is a secret).
 */
int api_tokens_from_files(const char *node_path, const char *job_path, const char *user_path,
                          const char *metrics_path, struct api_tokens *out, struct error *e);

/* Wipe and free the tokens; the struct is zeroed. NULL is ignored. */
void api_tokens_clear(struct api_tokens *t);

/* ---- metrics the daemon fills ---- */

/* Upper bounds, in seconds, of the decide-latency histogram's buckets (one more: +Inf). */
#define API_DECIDE_NBUCKETS 8
extern const double api_decide_buckets[API_DECIDE_NBUCKETS];

struct api_job_metrics {
    const char *job;   /* the job's name */
    double goodput;    /* samples per second at the current configuration; NAN: not known */
    double speedup;    /* goodput over that of one GPU at the job's initial batch; NAN: not known */
    double batch_size; /* total batch size; NAN: not known */
    double eta;        /* when the job is predicted to finish at its configuration (its `samples`
                          left at that goodput), seconds since the epoch; NAN or <= 0: not known */
    double deadline;   /* its spec's deadline, seconds since the epoch; NAN or <= 0: none */
};

struct api_call_metrics {
    const char *op;   /* provider operation: "launch", "terminate", "describe", ... */
    const char *code; /* for errors: the provider's code ("InsufficientInstanceCapacity") */
    long long count;
};

/* A cloud quota as the controller last read it (realworld_quota.c). */
struct api_quota_metrics {
    const char *quota; /* the cloud's name for it, e.g. "ec2/us-east-1/L-3819A6DF" */
    const char *title; /* for people */
    const char *unit;  /* "vCPUs", "GPUs" */
    double limit;
    double used; /* as last read, with what castor launched since */
};

/* The nodes of an offer that its quotas still let the controller launch. */
struct api_offer_room {
    const char *offer;
    const char *quota; /* the quota that leaves it the least room */
    long long room;
};

/* An offer's price and preemption rate as the planner last saw them. */
struct api_offer_price {
    const char *offer;
    int spot;
    double price; /* $/h per node; NAN: unknown (castor's planner does not launch the offer) */
    double rate;  /* preemptions per node-hour the planner counts on (learned; NAN: not yet) */
};

/* Why nodes were lost (castor_node_losses_total's reason label, api_node_loss_names). */
enum api_node_loss {
    API_LOSS_GONE,         /* the cloud reports the instance gone (preempted, or terminated) */
    API_LOSS_SILENT,       /* its agent went unheard past heartbeat_timeout */
    API_LOSS_UNREGISTERED, /* its agent never registered within register_timeout */
    API_LOSS_STRAY,        /* an instance no launch intent explains */
    API_NLOSSES
};
extern const char *const api_node_loss_names[API_NLOSSES];

/* What the daemon knows that the state does not. Strings and arrays are borrowed for the call to
 * api_set_metrics, which copies them. */
struct api_metrics {
    const struct api_job_metrics *jobs;
    size_t njobs;
    long long decide_counts[API_DECIDE_NBUCKETS + 1]; /* per bucket (not cumulative); last: +Inf */
    double decide_sum;                                /* seconds, over all decides */
    long long decide_failures;            /* decides whose policy failed (the allocation stayed) */
    const struct api_call_metrics *calls; /* provider calls by op (code unused) */
    size_t ncalls;
    const struct api_call_metrics *errors; /* provider errors by op and code */
    size_t nerrors;
    long long node_losses[API_NLOSSES]; /* nodes terminated by the controller, by reason */
    long long nodes_unfenced; /* silent static nodes whose jobs wait (no self-fence, or not past
                               * it): the operator's `castor down`, or the node, settles them */
    long long jobs_waiting;   /* running jobs whose new replicas wait for their old ones that other
                               * nodes say are alive (docs/api.md, wait_for) */
    double spend_limit;       /* the fleet's spend limit per period, dollars (0 or NAN: none) */
    double spend_period;      /* what the fleet cost in the current period (NAN: no limit) */
    double spend_until;       /* when the current period ends, UNIX seconds (NAN: no limit) */
    const struct api_quota_metrics *quotas; /* the cloud's quotas (none: not read, or none) */
    size_t nquotas;
    const struct api_offer_room *rooms; /* per offer that a quota limits */
    size_t nrooms;
    const struct api_offer_price *prices; /* per offer the cloud offers now */
    size_t nprices;
};

/* Count one decide of the given latency (seconds, >= 0) into m's histogram. ERR_INVAL for a
 * latency that is negative or not finite (nothing counted). */
int api_metrics_observe_decide(struct api_metrics *m, double seconds);

/* A per-job token: "cj1.<job>.<64 hex digits>", at most this long with its NUL; a per-node token
 * ("cn1.<instance id>.<64 hex digits>") is as long. */
#define API_JOB_TOKEN_MAX (4 + 128 + 1 + 64 + 1)

/* ---- the API ---- */

/* The time, seconds since the Unix epoch, from the daemon layer (the API reads no clock). */
typedef double (*api_clock_fn)(void *ctx);

/* Told, from the request's thread, that a request changed what the decide step sees. */
typedef void (*api_changed_fn)(void *ctx);

/* The bytes of api_config's node_key. */
#define API_NODE_KEY_LEN 32

struct api_config {
    struct state *state; /* borrowed; the API serialises its use */
    struct log *log;     /* borrowed; NULL: no request log */
    api_clock_fn clock;  /* the time of records and log lines */
    void *clock_ctx;
    /* NULL, or called after each 2xx answer that changed what the decide step sees (a node
     * registered or noticed, a job submitted, finished or cancelled): the daemon decides at once
     * rather than at its next interval */
    api_changed_fn changed;
    void *changed_ctx;
    const struct api_tokens *tokens; /* read at api_new (only their digests are kept) */
    /* 1: a node's calls on its own paths need its own token (api_node_token), which its
     * registration answers; the shared node token then only registers nodes. 0: either */
    int per_node_tokens;
    /* the key of the nodes' own tokens (API_NODE_KEY_LEN bytes, copied; the daemon's is kept in
     * the state, state_secret): no token a worker holds may derive it, or a worker could forge
     * any node's token from the shared one. NULL: derived from the shared node token (for tests
     * and tools that make no per-node tokens). */
    const unsigned char *node_key;
    /* attest.certificate set: EC2 nodes prove their instance with its identity document signed
     * under it (docs/api.md); the instance ids in attest_static (NULL-terminated; NULL: none)
     * need no proof. Copied by api_new. certificate NULL: no EC2 document is checked. */
    struct attest_aws attest;
    /* attest_gcp.certificates_path set: Compute Engine nodes prove theirs with an identity token
     * (docs/api.md). Copied by api_new. With either set, every registration but attest_static's
     * must carry a proof that one of them checks. */
    struct attest_gcp attest_gcp;
    const char *const *attest_static;
};

struct api; /* opaque */

/* A new API. Errors: ERR_INVAL (no state, clock or tokens; a token as api_tokens_from_env would
 * refuse), ERR_NOMEM. On success *out owns it (api_free); the tokens may be cleared at once. */
int api_new(const struct api_config *cfg, struct api **out, struct error *e);

/* Free the API (the server that calls it must be stopped first). NULL is ignored. */
void api_free(struct api *a);

/*
 * The per-job token of job (a job name) into out (size >= API_JOB_TOKEN_MAX): "cj1.<job>.<mac>",
 * the mac an HMAC-SHA256 of the job's name under a key derived from the job role's token. It
 * stands for the job role on that job's own paths only (reports, checkpoints, finished, its
 * allocation), so that one job's replicas, which run their owners' code, cannot speak for
 * another job. Nothing is stored: a job's token is the same for as long as the job token is.
 * Assignments hand it to castor-node for the job's replicas. ERR_INVAL (not a job name, out too
 * small; out unchanged).
 */
int api_job_token(const struct api *a, const char *job, char *out, size_t size);

/*
 * The per-node token of node (an instance id) into out (size >= API_JOB_TOKEN_MAX):
 * "cn1.<id>.<mac>", the mac under a key derived from the node role's token. It stands for the
 * node role on that node's own paths only (heartbeat, assignment, notice, failures), so that one
 * node cannot speak for another or read another's assignment (and so other jobs' tokens). A node's
 * first registration answers it; with per_node_tokens the shared node token no longer acts on a
 * node's paths. ERR_INVAL as api_job_token.
 */
int api_node_token(const struct api *a, const char *node, char *out, size_t size);

/*
 * When this API last answered a heartbeat of node (an instance id), on its clock, into *at:
 * heard whether or not the state could record it (a full disk, a read-only file), so that the
 * controller's silence watch, in the same process, does not take a node it hears for a silent
 * one. ERR_UNKNOWN: none answered since the API was made (or for a day); ERR_INVAL: node NULL.
 * *at written only on success. Safe from any thread.
 */
int api_node_heard(struct api *a, const char *node, double *at);

/* Replace the metrics the daemon fills by a copy of m. ERR_INVAL (a NULL name, op or code),
 * ERR_NOMEM (the old metrics stay). */
int api_set_metrics(struct api *a, const struct api_metrics *m);

/* ---- the rules the daemon's configuration shares ---- */

/* The keys of a job spec (POST /v1/jobs), NULL-terminated. */
extern const char *const api_job_spec_keys[];

/* The most samples a job spec may declare (its length: epochs x dataset size). */
#define API_SAMPLES_MAX 1e15

/* The largest batch a job spec may give (init_batch_size, max_batch_size, max_local_bsz), and
 * the smallest per-GPU limit: a local batch is at least one sample, and with these the
 * accumulation steps of a configuration (M0 over the replicas, a share of at most
 * max_local_bsz each) fit in an int. */
#define API_BATCH_MAX 1e9
#define API_LOCAL_BSZ_MIN 1.0

/* The most a job spec's checkpoint_interval and hang_timeout may say (seconds), and its latest
 * deadline (9999-12-31T23:59:59Z), as the configuration file reads them. */
#define API_CHECKPOINT_INTERVAL_MAX 1e7
#define API_HANG_TIMEOUT_MAX 1e7
#define API_DEADLINE_MAX 253402300799.0

/* The most a node may say it costs ($ per hour), as an offer of the configuration and
 * CASTOR_NODE_PRICE: a larger price would make the fleet's dollars infinite. */
#define API_PRICE_MAX 1e6

/* A job spec's max_restarts: the failures in a row without progress its replicas are restarted
 * after (one more fails the job), when the spec does not say, and the most it may say. */
#define API_MAX_RESTARTS_DEFAULT 3
#define API_MAX_RESTARTS_MAX 1000

/* A job spec's hang_timeout when it does not say: seconds without a training step reported (by a
 * job that has reported steps) after which the controller takes the job as hung and restarts its
 * replicas, as for a failure. 0 turns the watch off. */
#define API_HANG_TIMEOUT_DEFAULT 1800.0

/* A job spec's reconfigure: how its workers take a new local batch, accumulation or learning-rate
 * gain from the plan. "restart" (the default: any worker, one that reads CASTOR_LOCAL_BSZ at its
 * start included): its replicas restart into it; "in_flight": its workers apply the controller's
 * decision as they run (libcastor's, as the PyTorch adapter does), so a new configuration is no
 * new generation and no replica restarts. */
#define API_RECONFIGURE_RESTART "restart"
#define API_RECONFIGURE_IN_FLIGHT "in_flight"

/* The most a job spec's max_dollars may say: what the job may cost (its share of its nodes'
 * dollars, state_cost_add) before the controller fails it. No limit when absent. */
#define API_MAX_DOLLARS_MAX 1e9

/* Tell what a replica failure counted by state_job_replica_failed did to job (on node, for
 * reason), in the log and the job's events (events.h; st may be NULL): a warning that its replicas
 * restart (after api_restart_delay(streak), as attempt failures), or, for STATE_FAILURE_FAILED,
 * an error that the job failed; nothing for STATE_FAILURE_STALE. log may be NULL. */
void api_note_failure(struct state *st, struct log *log, double now, const char *job,
                      const char *node, const char *reason, enum state_failure_outcome out,
                      int streak, int failures, long long max_restarts);

/* The wait before a failed job's replicas restart, by its failures in a row (streak): none before
 * a failure, then API_RESTART_DELAY_S doubling per failure to API_RESTART_DELAY_MAX_S. Sent
 * with each assignment (restart_delay); the agent waits it from when it first sees the attempt. */
#define API_RESTART_DELAY_S 2.0
#define API_RESTART_DELAY_MAX_S 60.0
double api_restart_delay(int streak);

/* Hex digits of a job's generation. */
#define API_GENERATION_LEN 16

/*
 * The generation of job j placed at placed_at (its allocation's since; NAN when it holds none):
 * a digest of the placement, attempt, configuration (not for a spec that says reconfigure:
 * in_flight: its workers take a new one as they run) and spec, the same on every node of the job,
 * new whenever its replicas restart; each assignment entry names it (docs/api.md). Written into
 * out (API_GENERATION_LEN + 1 bytes) on success; ERR_NOMEM.
 */
int api_job_generation(const struct state_job *j, double placed_at, char *out);

/* The longest model family a job spec may name, in bytes. */
#define API_FAMILY_MAX 64
/* What a family's name may hold, as the API and the config file's errors say it. */
#define API_FAMILY_CHARS "letters, digits, '.', '_', ':', '/' or '-'"

/* What a stored job spec (JSON text) asks that castor cannot do, as a sentence for its owner: a
 * deadline without `samples` (castor plans a deadline from the work left, and predicts no finish
 * without the job's length). NULL when nothing (or the text does not parse). The string is
 * static. */
const char *api_job_spec_warning(const char *spec);

/* 1 when s is a model family's name: 1 to API_FAMILY_MAX of [A-Za-z0-9._:/-]; else 0 (NULL
 * included). */
int api_family_ok(const char *s);

/* 1 when s is a name of a job or node: 1 to 128 of [A-Za-z0-9._-], starting with a letter or
 * digit; else 0 (NULL included). */
int api_name_ok(const char *s);

/* 1 when s is an environment variable's name ([A-Za-z_][A-Za-z0-9_]*, not empty); else 0. */
int api_env_name_ok(const char *s);

/* The route table, for the tests that walk it (so that no endpoint can be added without them
 * seeing it): the number of routes, and route i's method, path ('*' stands for one segment: a
 * job's or node's name) and roles (a mask of 1u << enum api_role; /metrics also takes the user
 * token when there is no metrics token). Every route needs a token: there is no public endpoint.
 * api_route_get: 0, or ERR_RANGE for i past the end (nothing written). */
size_t api_route_count(void);
int api_route_get(size_t i, const char **method, const char **path, unsigned *roles);

/* The HTTP handler (an http_handler_fn with the API as ctx): every request is authenticated,
 * routed, validated and answered with JSON (the metrics in Prometheus text). */
void api_handle(void *api, const struct http_request *req, struct http_response *resp);

#endif
