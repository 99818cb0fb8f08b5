/* node.h: castor-node, the agent on every instance: it registers the node's GPUs with the
 * controller, heartbeats, fetches its assignment and runs each assigned replica as a child process
 * (its own process group), stops and restarts replicas whose assignment changed (SIGTERM, a grace
 * period for the checkpoint, SIGKILL), forwards a preemption notice (SIGUSR1, or one its cloud
 * notice watcher found: agent/watch.h) at once, reports a replica that failed (an exit with an
 * error, or a signal it did not send) so that the controller restarts the job's replicas as a new
 * attempt or fails the job, and on SIGTERM stops its replicas and exits. The
 * endpoints are docs/api.md's; the environment is docs/local.md's. */
#ifndef CASTOR_AGENT_NODE_H
#define CASTOR_AGENT_NODE_H

#include <stddef.h>
#include <sys/types.h>

#include "agent/run_as.h"
#include "agent/watch.h"
#include "util/error.h"

struct log;
struct jv;

/* The variables castor-node and its replicas read (docs/local.md). */
#define NODE_ENV_URL "CASTOR_URL"
#define NODE_ENV_INSTANCE "CASTOR_INSTANCE_ID"
#define NODE_ENV_LAUNCH_TOKEN "CASTOR_LAUNCH_TOKEN"
#define NODE_ENV_CLUSTER "CASTOR_CLUSTER"
#define NODE_ENV_NODE_TOKEN "CASTOR_NODE_TOKEN"
#define NODE_ENV_NODE_TOKEN_FILE "CASTOR_NODE_TOKEN_FILE"
#define NODE_ENV_JOB_TOKEN "CASTOR_JOB_TOKEN"
#define NODE_ENV_JOB_TOKEN_FILE "CASTOR_JOB_TOKEN_FILE"

/* The most replicas one node runs, and the longest argv and env of a job spec. */
#define NODE_MAX_REPLICAS 1024
#define NODE_MAX_ARGS 256
#define NODE_MAX_ENV 256

/* The longest generation an assignment entry may name. */
#define NODE_GENERATION_MAX 64

/* A replica's exit status that asks for a restart after a checkpoint (EX_TEMPFAIL): not a
 * failure. */
#define NODE_EXIT_RESTART 75

/* The longest restart delay an assignment may ask for, in seconds. */
#define NODE_MAX_RESTART_DELAY_S 3600

/* One job's part of an assignment, as castor-node runs it. Strings and arrays owned. */
struct node_job {
    char *name;
    int replicas;         /* on this node, 0 .. NODE_MAX_REPLICAS */
    int rank_offset;      /* the rank of the first */
    int world_size;       /* replicas of the job on every node */
    int nodes;            /* the nodes the job's replicas are on, 1 .. world_size; 0: not said */
    char *master;         /* the master node's instance id */
    char *master_addr;    /* where the master is reached, as its agent registered it; NULL: not
                           * said */
    char *job_token;      /* the job's own token, handed to its replicas instead of the node's
                           * CASTOR_JOB_TOKEN (it speaks for this job only); NULL: not said */
    double local_bsz;     /* the plan's batch per replica; NAN before the plan gave one */
    int accum_steps;      /* -1 before the plan gave one */
    double lr_gain;       /* NAN before the plan gave one */
    double ckpt_s;        /* the spec's checkpoint interval, seconds; NAN when absent */
    double init_bsz;      /* the spec's init_batch_size (M0); NAN when absent */
    double max_bsz;       /* the spec's max_batch_size; NAN when absent */
    double max_local_bsz; /* the spec's max_local_bsz; NAN when absent */
    double placed_at;     /* when the job was placed as it is (the same on all its nodes); NAN
                           * when absent */
    int attempt;          /* the job's failures so far: each starts a new attempt; 0 when absent */
    double restart_delay; /* seconds to wait, from when this entry is first seen, before its
                           * replicas start (after a failure); 0 when absent */
    double seen_at;       /* the agent's: when it first saw this entry (monotonic); the parser
                           * leaves NAN */
    char **argv;          /* NULL-terminated; NULL when the job cannot run here (see why) */
    char *workdir;        /* NULL: none given */
    char **env;           /* "NAME=VALUE" strings, NULL-terminated (never NULL) */
    int in_flight;        /* the spec's reconfigure is in_flight: its workers take a new
                           * configuration as they run (libcastor's decision) */
    char *key;            /* the entry as compact JSON without wait_for (nor, for a job that
                           * reconfigures in flight, local_bsz, accum_steps and lr_gain): a
                           * replica whose key changes restarts */
    char *generation;     /* what the job's replicas on every node are started with, as the
                           * controller names it (reported back in heartbeats); NULL: not said */
    char *wait_for;       /* the nodes (comma-separated) where replicas of an earlier generation
                           * of the job are alive: none starts here until they have stopped;
                           * NULL: none */
    int wait_told;        /* the agent's: the wait was logged */
    int gpu_told;         /* the agent's: a wait for GPUs still held by other jobs' stopping
                           * replicas was logged */
    const char *why_not;  /* static: why the job cannot run here, or NULL */
};

struct node_assignment {
    char *state; /* the node's state as the controller sees it ("ready", "draining", ...) */
    struct node_job *jobs;
    size_t njobs;
};

/*
 * Parse a GET /v1/nodes/{id}/assignment answer (docs/api.md). A job whose spec this agent cannot
 * run (an image without a workdir, no command) is kept with argv NULL and why_not set, so that
 * the caller logs it once. Errors (e says what, never quoting the text): ERR_PARSE (not JSON, a
 * field missing or of the wrong type or range), ERR_NOMEM; *out written only on success, owned
 * by the caller (node_assignment_clear).
 */
int node_assignment_parse(const char *text, size_t len, struct node_assignment *out,
                          struct error *e);

/* Free what the assignment owns and zero it. NULL is ignored. */
void node_assignment_clear(struct node_assignment *a);

/* What a replica's environment is built from besides its job. All borrowed. */
struct node_env_inputs {
    const char *const *base; /* the agent's environment (NULL-terminated) */
    const char *self;        /* this node's instance id */
    const char *url;         /* the controller, for CASTOR_URL */
    const char *job_token;   /* CASTOR_JOB_TOKEN when the job's entry has no job_token of its
                              * own; NULL: not set */
    const char *master_addr; /* the master's address when it is another node, overriding the
                              * assignment's; NULL: the assignment's, else the master's id */
    int gpu;                 /* the GPU index for CUDA_VISIBLE_DEVICES; < 0: not set */
    const struct node_run_as *run_as; /* HOME, USER and LOGNAME are its (before the spec's env);
                                       * NULL: the agent's */
};

/*
 * The environment of replica local (0 .. replicas - 1) of job j: the agent's environment less
 * every CASTOR_*TOKEN* variable (the node's secrets never reach a job), the run-as user's HOME,
 * USER and LOGNAME (when it has one), then the spec's env,
 * then CASTOR_JOB, CASTOR_RANK, CASTOR_LOCAL_RANK, CASTOR_WORLD_SIZE, CASTOR_LOCAL_WORLD_SIZE,
 * CASTOR_NODES (when the assignment said), CASTOR_MASTER_ADDR (127.0.0.1 when the master is this
 * node), CASTOR_MASTER_PORT (node_master_port of the job's placement and attempt), CASTOR_ATTEMPT,
 * CASTOR_LOCAL_BSZ, CASTOR_ACCUM_STEPS and CASTOR_LR_GAIN (when the plan gave them),
 * CASTOR_CHECKPOINT_INTERVAL, CASTOR_INIT_BSZ, CASTOR_MAX_BSZ, CASTOR_MAX_LOCAL_BSZ and
 * CASTOR_ACCUMULATION=1 (from the spec, when it has them), CASTOR_URL, CASTOR_JOB_TOKEN,
 * CASTOR_INSTANCE_ID and CUDA_VISIBLE_DEVICES; a later one replaces an earlier one of the same
 * name. On success *out is a NULL-terminated array of new strings (node_env_free, which wipes them:
 * one may hold the job token). ERR_INVAL (local out of range), ERR_NOMEM; *out untouched on error.
 */
int node_replica_env(const struct node_job *j, int local, const struct node_env_inputs *in,
                     char ***out);

/* Wipe and free an environment from node_replica_env. NULL is ignored. */
void node_env_free(char **env);

/* The port rank 0 of job listens on for the placement made at placed_at (NAN: not said) in its
 * attempt: 29500 + a hash of the name, that time and the attempt modulo 1000, the same on every
 * node of the placement without asking anyone. Each placement and each attempt after a failure
 * draws afresh, so two jobs (or two clusters' jobs on one host) that drew one port do not keep it
 * past a re-placement or a restart. */
int node_master_port(const char *job, double placed_at, int attempt);

/* The longest self-fence (fence_s plus grace_s) a node registers; longer, none is registered and
 * the controller keeps a silent static node's jobs waiting for its operator. */
#define NODE_FENCE_MAX_S 86400.0

/* The agent's configuration. Strings borrowed for node_run. */
struct node_config {
    const char *url;          /* the controller, http(s)://host:port (no trailing path) */
    const char *instance_id;  /* this node */
    const char *launch_token; /* the token it was launched under; NULL for a static node */
    const char *node_token;   /* the node role's bearer token (a secret): it registers the node */
    const char *token_cache;  /* a file keeping the node's own token (its registration's answer,
                               * mode 600) for the next agent here; NULL: memory only */
    const char *job_token;    /* handed to replicas of a job whose assignment names no token of
                               * its own (an older controller); NULL: none */
    const char *ca_file;      /* TLS trust for the controller; NULL: the system's */
    const char *master_addr;  /* address of other master nodes (overrides what the controller
                               * says, for the local world); NULL: the assignment's */
    const char *address;      /* where this node's replicas are reached (registered); NULL:
                               * not said */
    /* registration extras (the controller ignores them for a node it launched); NULL: omitted */
    const char *provider, *offer, *zone, *market;
    double price; /* NAN: omitted */
    int gpus;     /* GPUs to register (>= 1) */
    int gpu_memory_mib;
    double heartbeat_s;   /* between heartbeats and assignment polls (> 0) */
    double grace_s;       /* SIGTERM to SIGKILL of a stopping replica (>= 0) */
    double timeout_s;     /* each request to the controller (> 0) */
    double backoff_max_s; /* the longest wait between retries (> 0) */
    double fence_s;       /* the controller unanswered this long (heartbeats): the replicas stop
                           * until it answers again, so that it may move their jobs without two
                           * copies running (set it below the controller's heartbeat_timeout, for
                           * static nodes); registered, with grace_s, as the node's fence_s, so
                           * that the controller moves a silent static node's jobs once it has
                           * passed; 0: never */
    struct log *log;      /* borrowed; NULL: silent */
    /* The cloud's notices, watched in a child process (agent/watch.h): NULL or &watch_none for
     * none. watch's log and node are set by node_run. */
    const struct watch_ops *watch_ops;
    struct watch_config watch;
    int rebalance_ignore; /* 1: a rebalance recommendation is logged only; 0: forwarded as a
                           * notice without deadline */
    const char *audience; /* the audience a Compute Engine identity token is asked for
                           * (CASTOR_NODE_AUDIENCE); NULL: url */
    int attest_off;       /* 1: registrations carry no identity document even where the watch's
                           * cloud gives one (CASTOR_NODE_ATTEST=off, for a controller from
                           * before attestation, which refuses the field) */
    const struct node_run_as *run_as; /* the replicas' user (node_run_as_lookup); NULL: the
                                       * agent's own */
};

/*
 * Run the agent until it is told to stop (SIGTERM or SIGINT, or the controller answers that the
 * node is terminated) and every replica has exited. The calling process's SIGTERM, SIGINT,
 * SIGUSR1 (a notice; its value the milliseconds left, counted from when it is taken), SIGRTMIN + 1
 * (the watcher's notices), SIGHUP and SIGCHLD are blocked and taken synchronously, stops and
 * notices also between requests; it becomes the subreaper of its replicas' descendants (Linux).
 * With a watch, a child process runs its rounds and signals each notice as SIGRTMIN + 1 carrying
 * its deadline (epoch milliseconds; 0: none); it is restarted when it dies and killed when the
 * agent stops. Returns 0 after a clean stop, ERR_INVAL for a bad
 * configuration, ERR_NOMEM or ERR_INTERNAL (the HTTP client could not be made); a controller that
 * is unreachable or answers badly is retried with backoff and logged, never fatal.
 */
int node_run(const struct node_config *cfg);

#endif
