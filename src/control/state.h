/* state.h: the controller's durable state in SQLite: jobs, nodes, allocations, goodput models, the
 * decision log, costs and launch intents, with a versioned schema migrated at open. */
#ifndef CASTOR_CONTROL_STATE_H
#define CASTOR_CONTROL_STATE_H

#include <stddef.h>

#include "util/error.h"

/*
 * Every operation is one transaction: it is written whole or, on any error, not at all. Times are
 * seconds passed in by the caller (this module never reads a clock) and must be finite; a time
 * that is not known yet reads back as NAN. Names, instance ids and tokens are 1 to STATE_NAME_MAX
 * bytes. Errors common to all operations: ERR_INVAL for bad arguments (nothing written),
 * ERR_AGAIN when another connection holds the write lock past the busy timeout, ERR_IO and
 * ERR_CORRUPT from the file, ERR_NOMEM.
 */

struct state; /* an open state database; opaque */
struct db;

/* The schema version this build writes (PRAGMA user_version). */
#define STATE_SCHEMA_VERSION 15

/* Longest name, instance id, token, provider, offer or zone, in bytes. */
#define STATE_NAME_MAX 128

enum state_job_state {
    STATE_JOB_PENDING,   /* submitted, waiting for GPUs (or back from a preemption) */
    STATE_JOB_RUNNING,   /* holds an allocation */
    STATE_JOB_FINISHED,  /* final */
    STATE_JOB_CANCELLED, /* final */
    STATE_JOB_FAILED,    /* final */
    STATE_JOB_NSTATES
};

enum state_node_state {
    STATE_NODE_LAUNCHING,  /* asked of the provider */
    STATE_NODE_BOOTING,    /* the instance exists, its agent has not registered */
    STATE_NODE_READY,      /* schedulable */
    STATE_NODE_DRAINING,   /* to be released once its replicas have stopped */
    STATE_NODE_TERMINATED, /* final */
    STATE_NODE_NSTATES
};

enum state_market { STATE_MARKET_ON_DEMAND, STATE_MARKET_SPOT };

enum state_intent_state {
    STATE_INTENT_PENDING,  /* recorded; the provider may or may not have been asked */
    STATE_INTENT_LAUNCHED, /* the provider's instances were found or returned */
    STATE_INTENT_FAILED,   /* the provider refused, or reconciliation found nothing */
};

/* A bit per state, for the list functions: STATE_MASK(STATE_JOB_PENDING) | ... */
#define STATE_MASK(s) (1u << (s))

/* The states' names as stored ("pending", "launching", ...); NULL for a value out of range. */
const char *state_job_state_name(enum state_job_state s);
const char *state_node_state_name(enum state_node_state s);

/*
 * Open (creating if missing) the state database at path and migrate it to STATE_SCHEMA_VERSION,
 * each migration in its own transaction. Errors (with e naming the path and the reason): those
 * of db_open; ERR_RANGE for a database written by a newer castor (its version above this
 * build's: nothing is changed); ERR_INVAL for a database that is not castor's (another
 * application id, or tables without a castor version); a failing migration's code (the database
 * stays at the last version that completed). On success *out owns the state (state_close); on
 * error it is untouched.
 */
int state_open(const char *path, struct state **out, struct error *e);

/* As state_open, migrating only up to version (1 .. STATE_SCHEMA_VERSION; ERR_INVAL otherwise):
 * for tests of the migrations and for tools. A database above version is refused as newer. */
int state_open_version(const char *path, int version, struct state **out, struct error *e);

/*
 * Open the existing state database at path as it is, for reading only (db_open_readonly): no
 * migration, nothing written, so that a state an older castor still runs can be copied by a
 * newer one (state_backup) and stay at its version. Any schema version from 1 to
 * STATE_SCHEMA_VERSION is taken, written into *version (may be NULL). A write on the state
 * fails (ERR_IO). Errors (with e): those of db_open_readonly; ERR_INVAL for a database that is
 * not castor's (another application id, or an empty one); ERR_RANGE for one written by a newer
 * castor. *out and *version written only on success.
 */
int state_open_readonly(const char *path, struct state **out, int *version, struct error *e);

/* Close; NULL is ignored. */
void state_close(struct state *st);

/* The most bytes a secret kept in the state may have. */
#define STATE_SECRET_MAX 256

/*
 * The controller's secret named name (1 to 64 characters), len bytes (16 to STATE_SECRET_MAX),
 * into out: the one kept in the state; when none is kept yet, fresh (len bytes the caller drew
 * at random) is kept and given. The same from then on, across restarts. ERR_INVAL: bad
 * arguments; ERR_CORRUPT: the one kept is not len bytes of hex; what SQLite says. out written
 * only on success.
 */
int state_secret(struct state *st, const char *name, const unsigned char *fresh, size_t len,
                 unsigned char *out);

/* Whether the state's file takes writes now (a full disk or a read-only file does not): a write
 * that changes nothing (the schema version written again as it is) committed. 0, or the error it
 * met (ERR_IO for a full disk or a read-only file, ERR_AGAIN while another connection writes). */
int state_write_check(struct state *st);

/* Begin a read snapshot on st's connection: the state's reads until state_read_end see the state
 * as one moment, whatever another connection writes meanwhile (for an answer built from several
 * reads: a node's assignment). No write may be made inside it. ERR_INVAL when a transaction is
 * open; what SQLite says. */
int state_read_begin(struct state *st);

/* End the read snapshot begun by state_read_begin (nothing is written); nothing when none is
 * open. */
void state_read_end(struct state *st);

/* What a backup holds. */
struct state_backup_info {
    int version;     /* its schema version */
    long long jobs;  /* every job, whatever its state */
    long long nodes; /* the nodes not terminated */
    long long bytes;
};

/*
 * A consistent copy of the state at path (a file that must not exist), taken while a controller
 * may be writing: one read snapshot (VACUUM INTO) written beside path, checked (its integrity, its
 * schema version, its jobs and nodes), made the owner's alone (mode 600), synced and renamed into
 * place, so that path is either whole or absent. The copy is at st's schema version: a state
 * opened with state_open_readonly is copied as it is, not migrated. *info (may be NULL) written
 * on success. Errors:
 * ERR_CONFLICT (path exists), ERR_INVAL, ERR_IO, ERR_CORRUPT (the copy fails its check), what
 * SQLite says; e names the file. Restoring is putting the copy in place of the state file while
 * no controller runs.
 */
int state_backup(struct state *st, const char *path, struct state_backup_info *info,
                 struct error *e);

/*
 * Claim the state database at path for this process: one controller (or teardown) per state, so
 * that two never launch for one cluster. Holds path + ".lock" (file_lock) for as long as *fd stays
 * open (close it to let go; the process's end lets go too). ERR_CONFLICT when another process
 * holds it (e names its pid and says to stop it first), ERR_IO when the lock cannot be made.
 * *fd written only on success.
 */
int state_claim(const char *path, int *fd, struct error *e);

/* The schema version of the open database. */
int state_version(struct state *st, int *out);

/* The connection underneath, borrowed (for tests and tools; the state API keeps its rules only
 * for what goes through it). */
struct db *state_db(struct state *st);

/* ---- jobs ---- */

struct state_job {
    long long id;
    char *name; /* owned */
    char *spec; /* the job spec as JSON text; owned */
    enum state_job_state state;
    double submitted_at;
    double progress;            /* in the job's own units (e.g. epochs or samples) */
    double checkpoint_progress; /* progress at the last checkpoint (0 before one) */
    double checkpoint_at;       /* NAN before the first checkpoint */
    int restarts;
    double finished_at; /* NAN until the job reaches a final state */
    /* the configuration the last plan gave it (state_job_set_config); NAN and 0 before one */
    double local_bsz;
    int accum_steps;
    double lr_gain;
    /* the gradient statistics of its last report (state_report_store); NAN before one */
    double grad_sqr;
    double grad_var;
    double reported_at; /* when a report was last stored; NAN before one */
    /* seconds one all-reduce of its gradients takes on two GPUs of one node, as its replicas
     * measured and reported (the throughput fit's prior, profile.h); NAN before one */
    double sync_prior;
    /* the gradient statistics of the first report that carried any (the start of its training:
     * its family's start, state_family_start_grad); written once; NAN before one, and for a job
     * that reported statistics before schema version 5 (its first is not known) */
    double grad0_sqr;
    double grad0_var;
    /* replicas that failed (state_job_replica_failed): every failure counted, which is also the
     * attempt its replicas now run; those in a row without progress between them; the last
     * one's reason (owned; NULL before one) and time (NAN before one) */
    int failures;
    int failure_streak;
    char *failure;
    double failure_at;
    /* read only: the dollars of the GPUs it held (its share of each node's cost, state_cost_add) */
    double dollars;
};

/* Submit a new pending job. spec is JSON text (ERR_INVAL when it is not valid JSON). A name
 * already taken, whatever that job's state: ERR_CONFLICT, nothing written. */
int state_job_submit(struct state *st, const char *name, const char *spec, double now);

/*
 * Move a job to state to. Allowed: pending <-> running; pending or running -> cancelled or
 * failed; running -> finished. A final state records finished_at = now and releases the job's
 * allocation. Moving to the state it is in changes nothing and returns 0. ERR_UNKNOWN: no such
 * job; ERR_CONFLICT: a move not allowed (from a final state, pending -> finished).
 */
int state_job_set_state(struct state *st, const char *name, enum state_job_state to, double now);

/*
 * The job says it is done: a pending or running job becomes finished at now (finished_at), its
 * allocation released, and, when progress is not NAN (else >= 0), its progress and checkpoint
 * progress set to it (a finished job has nothing left to lose). A job already finished changes
 * nothing and returns 0 (a retried call). ERR_UNKNOWN: no such job; ERR_CONFLICT: it was cancelled
 * or failed.
 */
int state_job_finish(struct state *st, const char *name, double progress, double now);

/* What state_job_complete made of a report. */
enum state_complete_outcome {
    STATE_COMPLETE_STALE,    /* from another placement or attempt, or the job had finished */
    STATE_COMPLETE_FINISHED, /* the job is finished now */
    STATE_COMPLETE_PEERS,    /* finished now, from the attempt the last failure counted ended:
                              * that failure was its other ranks' end after rank 0's */
};

/*
 * Rank 0 of job name on node ended by itself with status 0 while it ran attempt (the job's
 * failures when its node started it) in the placement made at placed_at (NAN: not said): the
 * job's work is done, as if it had said so (state_job_finish without a progress) but could not
 * (its controller unreachable then). A report from the job's current attempt and placement
 * finishes it (STATE_COMPLETE_FINISHED). So does one from the attempt that the job's last counted
 * failure ended, in that failure's placement, from a node of that placement
 * (STATE_COMPLETE_PEERS): its other ranks failed because rank 0, their rendezvous' host, had
 * gone, and their report came first; a job that failure failed (max_restarts) is finished too. One
 * from any other attempt or placement (a replica that exited for a restart the node had not been
 * told of yet), or for a job finished already, writes nothing (STATE_COMPLETE_STALE). *outcome
 * written on success. ERR_UNKNOWN: no such job; ERR_CONFLICT: it was cancelled, or failed
 * otherwise; ERR_RANGE: node holds none of its replicas (nothing written in any).
 */
int state_job_complete(struct state *st, const char *name, const char *node, int attempt,
                       double placed_at, double now, enum state_complete_outcome *outcome);

/* What state_job_replica_failed made of a report. */
enum state_failure_outcome {
    STATE_FAILURE_STALE,   /* for an attempt already counted: nothing written */
    STATE_FAILURE_RESTART, /* counted: the job's replicas restart as a new attempt */
    STATE_FAILURE_FAILED,  /* counted, and more in a row than max_restarts: the job failed */
};

/* The longest failure reason, in bytes. */
#define STATE_FAILURE_MAX 512

/* Fail a pending or running job for reason (1 to STATE_FAILURE_MAX bytes), which is kept as its
 * failure with now: state failed, finished_at = now, its allocation released. ERR_UNKNOWN: no
 * such job; ERR_CONFLICT: it has ended (nothing written). */
int state_job_fail(struct state *st, const char *name, const char *reason, double now);

/*
 * A replica of job name on node failed while it ran attempt (the job's failures when its node
 * started it): it exited with an error, or a signal castor did not send killed it. A report for
 * an attempt other than the job's current one was counted already (another replica of the same
 * attempt, or a retried report): STATE_FAILURE_STALE, nothing written. Otherwise failures grows
 * by one (the replicas restart as the next attempt), the streak restarts at 1 when the job's
 * progress grew since the last failure and grows by one when it did not, and reason (1 to
 * STATE_FAILURE_MAX bytes) and now are recorded; a streak above max_restarts (>= 0) fails the
 * job (finished_at = now, its allocation released). *outcome and *streak (may be NULL) written on
 * success. ERR_UNKNOWN: no such job; ERR_CONFLICT: the job is finished, cancelled or failed;
 * ERR_RANGE: node holds none of its replicas (nothing written in either case).
 */
int state_job_replica_failed(struct state *st, const char *name, const char *node, int attempt,
                             const char *reason, int max_restarts, double now,
                             enum state_failure_outcome *outcome, int *streak);

/* Record the job's progress (>= 0; it may go back, as after a restart from a checkpoint).
 * ERR_UNKNOWN: no such job. */
int state_job_progress(struct state *st, const char *name, double progress);

/* Record a checkpoint at progress (>= 0) taken at now: sets the checkpoint progress and time,
 * and the progress if it was lower. The checkpoint progress never goes back: a checkpoint below
 * the one recorded (a late report, from replicas of an earlier generation that stopped after the
 * new ones checkpointed further, or a retried request) writes nothing and returns 0, as does
 * one from replicas that restored an older checkpoint, the newest lost, until they pass the
 * record. ERR_UNKNOWN: no such job; ERR_CONFLICT: it has ended (finished, cancelled or failed:
 * nothing is written). */
int state_job_checkpoint(struct state *st, const char *name, double progress, double now);

/* Count one restart of the job. ERR_UNKNOWN: no such job. */
int state_job_restarted(struct state *st, const char *name);

/* Record the configuration the plan gives the job: local batch per replica (> 0), accumulation
 * steps (>= 0) and learning-rate gain (> 0). ERR_UNKNOWN: no such job; ERR_CONFLICT: the job is in
 * a final state. */
int state_job_set_config(struct state *st, const char *name, double local_bsz, int accum_steps,
                         double lr_gain);

/* Read one job into *out (its strings owned by *out: state_job_clear). ERR_UNKNOWN: no such
 * job. *out written only on success. */
int state_job_get(struct state *st, const char *name, struct state_job *out);

/* The jobs whose state is in the mask (STATE_MASK bits), in submission order. *out owns n jobs
 * (state_jobs_free; NULL when n is 0). Written only on success. */
int state_jobs_list(struct state *st, unsigned states, struct state_job **out, size_t *n);

void state_job_clear(struct state_job *j);
void state_jobs_free(struct state_job *jobs, size_t n);

/* ---- launch intents: recorded and committed before the provider is asked ---- */

struct state_intent {
    char *token; /* owned; the idempotency token the instances carry */
    char *offer; /* owned */
    int count;   /* instances asked for */
    double created_at;
    enum state_intent_state state;
    double resolved_at; /* NAN while pending */
};

/* Record a pending intent to launch count (>= 1) instances of offer under token. A token used
 * before: ERR_CONFLICT, nothing written. */
int state_intent_record(struct state *st, const char *token, const char *offer, int count,
                        double now);

/* Resolve a pending intent as LAUNCHED or FAILED (PENDING: ERR_INVAL). Resolving again with the
 * same outcome changes nothing and returns 0; with the other: ERR_CONFLICT. ERR_UNKNOWN: no such
 * token. */
int state_intent_resolve(struct state *st, const char *token, enum state_intent_state outcome,
                         double now);

/* The intents still pending, oldest first: what reconciliation must look for after a restart.
 * *out owns n intents (state_intents_free). Written only on success. */
int state_intents_pending(struct state *st, struct state_intent **out, size_t *n);

void state_intents_free(struct state_intent *intents, size_t n);

/* ---- nodes ---- */

struct state_node {
    long long id; /* read only */
    char *instance_id;
    char *provider;
    char *offer; /* the offer (instance type x zone x market) or pool it came from */
    enum state_market market;
    char *zone;
    int gpus; /* >= 0 */
    enum state_node_state state;
    char *launch_token; /* the intent it was launched under; NULL for a node found otherwise */
    int launch_index;   /* which of the intent's count (0 .. count - 1); ignored without token */
    double launched_at;
    double ready_at;      /* NAN until ready */
    double terminated_at; /* NAN until terminated */
    double price;         /* dollars per hour, >= 0 */
    int gpu_memory_mib;   /* memory of each GPU in MiB, >= 0 (0: not reported) */
    /* read only: set by state_node_register, state_node_heartbeat and state_node_notice */
    double heartbeat_at;    /* NAN before the first */
    double notice_at;       /* when a preemption notice came; NAN without one */
    double notice_deadline; /* when the provider said it takes the node; NAN when not said */
    /* where the node's replicas are reached (an IP address or host name, for rank 0's
     * rendezvous), as its agent registered it; NULL: not said. Written by state_node_register
     * only (state_node_upsert leaves it). */
    char *address;
    /* the agent's self-fence: seconds after the controller last answered it by which it has
     * stopped every replica itself (> 0); NAN: it does not fence itself. Written by
     * state_node_register only. */
    double fence_s;
    /* the agent that registered it: a random name the agent drew at its start (16 to 64
     * characters), or NULL. Written by state_node_register only. */
    char *agent;
};

/*
 * Insert the node, or update every field of the node with its instance id (id is ignored;
 * ready_at and terminated_at may be NAN). A launch token names a recorded intent (ERR_CONFLICT
 * when none has it) and an index below its count (ERR_RANGE); another node holding the same
 * (token, index): ERR_CONFLICT. A terminated node cannot come back: ERR_CONFLICT. A node that is
 * ready or draining (its agent registered) is not moved back by a launching or booting record:
 * only the record's provider, offer, market, zone, launch token and index, launch time and price
 * are written (the launch recorded after its agent registered, in one transaction). Strings are
 * copied.
 */
int state_node_upsert(struct state *st, const struct state_node *node);

/*
 * Move a node to state to: forward in the order launching, booting, ready, draining, terminated,
 * or draining -> ready. Ready records ready_at = now (if not set); terminated records
 * terminated_at = now and releases every allocation on the node. The same state changes nothing
 * and returns 0. ERR_UNKNOWN: no such node; ERR_CONFLICT: a move not allowed.
 */
int state_node_set_state(struct state *st, const char *instance_id, enum state_node_state to,
                         double now);

/*
 * The node's price from now on ($/h, finite and >= 0): what the cloud bills for it changed (a
 * spot price moves while the instance runs) or became known. The costs recorded so far keep the
 * price they were recorded at. ERR_INVAL: a bad price; ERR_UNKNOWN: no such node; ERR_CONFLICT:
 * it is terminated (its bill is closed). Nothing is written on error.
 */
int state_node_set_price(struct state *st, const char *instance_id, double price);

/* The longest self-fence a node may register (seconds). */
#define STATE_NODE_FENCE_MAX 86400.0

/*
 * A node agent registers its node (instance id, gpus >= 1, gpu_memory_mib, address, fence_s: 0 or
 * NAN for none, else at most STATE_NODE_FENCE_MAX; negative ERR_INVAL) at now: a node the
 * controller launched (launching or booting) takes the reported GPUs, memory, address and fence and
 * becomes ready; a node not known yet is inserted ready with every field of node (a static node:
 * its launch token must be NULL), and so is a static node that was terminated (taken down, or its
 * cluster torn down: its agent is a new one) over its old row, its launched_at no earlier than the
 * end of the costs recorded (a tick may have recorded every node up to its own time before this
 * registration was written: the node is billed from there). Either way ready_at and heartbeat_at
 * are now, and the node's agent is node->agent (16 to 64 characters; NULL: none said). A node
 * already ready or draining, or a launched node terminated: ERR_CONFLICT (a second registration),
 * nothing written; but the same agent again (node->agent as it registered: a retry whose answer was
 * lost) returns 0 with its heartbeat recorded, so that it is answered as the first time.
 */
int state_node_register(struct state *st, const struct state_node *node, double now);

/* The longest generation name (state_alive). */
#define STATE_GENERATION_MAX 64

/* A job generation of which a node's agent says replicas are alive on its node (running, or
 * stopping): the generation is the API's name for what the replicas were started with (the job's
 * placement, attempt, configuration and spec), 1 to STATE_GENERATION_MAX characters. */
struct state_alive {
    const char *job;        /* borrowed */
    const char *generation; /* borrowed */
};

/* How long after a node stops holding a job its heartbeats may still say that job's replicas
 * are alive there (they stop, checkpointing, within their grace). */
#define STATE_HELD_RECENT_S 3600.0

/*
 * Record a heartbeat of the node at now, with what its agent says is alive there: n entries
 * (duplicates allowed) replacing those of its last heartbeat; alive NULL when the agent does not
 * say (one that predates it), which counts as nothing alive. An entry of a job the node neither
 * holds nor held within STATE_HELD_RECENT_S is left out (a node may not hold back the start of a
 * job it never ran). ERR_UNKNOWN: no such node;
 * ERR_CONFLICT: it is terminated (its agent should stop); ERR_INVAL: a malformed entry (nothing
 * is written).
 */
int state_node_heartbeat(struct state *st, const char *instance_id, double now,
                         const struct state_alive *alive, size_t n);

/* A static node's self-fence is taken as passed this long after its fence_s (its heartbeats, and
 * the clocks of two loops). */
#define STATE_SELF_FENCE_MARGIN_S 10.0

/*
 * The nodes other than except (NULL: none) whose agents said, in their last heartbeats, that
 * replicas of job of a generation other than generation are alive, and that may still run them
 * at now: not terminated, not past a preemption deadline (the cloud has taken them), and not a
 * static node silent past its self-fence (fence_s + STATE_SELF_FENCE_MARGIN_S). *out owns n
 * instance ids, by instance id (state_strv_free); written only on success.
 */
int state_job_stale_nodes(struct state *st, const char *job, const char *generation,
                          const char *except, double now, char ***out, size_t *n);

/* Free n strings and their array (NULL is ignored). */
void state_strv_free(char **v, size_t n);

/*
 * Record a preemption notice for the node at now, with the provider's deadline (NAN when not
 * known; else >= now): notice_at is kept from the first notice, the deadline is the latest said,
 * and a node not yet draining moves to draining. Returns 1 for the node's first notice, 0 for one
 * told again (the agent's after the cloud's, a retry), read in the same transaction: the caller
 * tells the node's jobs on 1 only. ERR_UNKNOWN: no such node; ERR_CONFLICT: it is terminated.
 */
int state_node_notice(struct state *st, const char *instance_id, double now, double deadline);

/* A job's replicas on one node. */
struct state_node_job {
    char *job; /* owned */
    int replicas;
};

/* The jobs with replicas on the node, by job name. *out owns n rows (state_node_jobs_free).
 * ERR_UNKNOWN: no such node. Written only on success. */
int state_node_jobs(struct state *st, const char *instance_id, struct state_node_job **out,
                    size_t *n);

void state_node_jobs_free(struct state_node_job *rows, size_t n);

/* What castor's own nodes of one offer went through between since and now. */
struct state_offer_record {
    char *offer;      /* owned */
    long preemptions; /* its nodes that got a preemption notice in the span */
    double hours;     /* the hours its nodes were alive in the span (from launch to their end) */
};

/* The records of every offer castor launched nodes of (launch token) alive in [since, now], by
 * offer. *out owns n rows (state_offer_records_free); written only on success. ERR_INVAL: a bad
 * span. */
int state_offer_records(struct state *st, double since, double now, struct state_offer_record **out,
                        size_t *n);

void state_offer_records_free(struct state_offer_record *rows, size_t n);

/* Read one node (strings owned by *out: state_node_clear). ERR_UNKNOWN: no such node. */
int state_node_get(struct state *st, const char *instance_id, struct state_node *out);

/* The nodes whose state is in the mask, in insertion order. *out owns n nodes
 * (state_nodes_free). Written only on success. */
int state_nodes_list(struct state *st, unsigned states, struct state_node **out, size_t *n);

void state_node_clear(struct state_node *node);
void state_nodes_free(struct state_node *nodes, size_t n);

/* ---- allocations ---- */

struct state_alloc {
    char *node;   /* instance id */
    int replicas; /* >= 1 */
    double since; /* when the job's allocation was last replaced (read only) */
};

/*
 * Replace the job's whole allocation by rows (n may be 0: the job holds nothing), all at now.
 * All or nothing: on any error the old allocation stays. ERR_UNKNOWN: no such job or node;
 * ERR_CONFLICT: the job is in a final state, a node is terminated, or a node appears twice.
 */
int state_alloc_replace(struct state *st, const char *job, const struct state_alloc *rows, size_t n,
                        double now);

/* A job's configuration on its placement: per-GPU batch (> 0), accumulation steps (>= 0) and
 * learning-rate gain (> 0), as state_job_set_config takes them. */
struct state_job_config {
    double local_bsz;
    int accum_steps;
    double lr_gain;
};

/* As state_alloc_replace, and the job's configuration for the new rows (cfg; NULL: unchanged) in
 * the same transaction, so that no reader sees the new placement with the old configuration (a
 * node's assignment would start one generation of replicas for a moment, then another).
 * ERR_INVAL also for a bad configuration; nothing is written on any error. */
int state_alloc_replace_config(struct state *st, const char *job, const struct state_alloc *rows,
                               size_t n, double now, const struct state_job_config *cfg);

/* The job's allocation, by instance id. *out owns n rows (state_allocs_free). ERR_UNKNOWN: no
 * such job. Written only on success. */
int state_alloc_get(struct state *st, const char *job, struct state_alloc **out, size_t *n);

void state_allocs_free(struct state_alloc *rows, size_t n);

/* ---- goodput models ---- */

struct state_model {
    char *params;     /* fitted throughput-model parameters, JSON; owned */
    char *grad_stats; /* gradient statistics, JSON; owned */
    double fitted_at;
};

/* Store the job's latest model (replacing the one before). Both texts must be valid JSON
 * (ERR_INVAL). ERR_UNKNOWN: no such job. */
int state_model_store(struct state *st, const char *job, const char *params, const char *grad_stats,
                      double now);

/* The job's latest model (state_model_clear). ERR_UNKNOWN: no such job; ERR_EMPTY: no model yet. */
int state_model_get(struct state *st, const char *job, struct state_model *out);

void state_model_clear(struct state_model *m);

/* ---- reports: what a training job observed ---- */

/*
 * Step times observed at one configuration since the job's previous report: count steps
 * (>= 1) of mean step_mean seconds (> 0) with standard deviation step_sd (>= 0), of which
 * sync_mean (0 <= sync_mean < step_mean) synchronising gradients on average. The stored row for
 * a configuration pools every report's observations (counts add; means and variances combine).
 */
struct state_report_config {
    int nodes;        /* >= 1 */
    int replicas;     /* >= nodes */
    double local_bsz; /* > 0 */
    int accum_steps;  /* >= 0 */
    long long count;
    double step_mean;
    double step_sd;
    double sync_mean;
    double at; /* read only: when the row was last written */
};

/* A report: configurations, and the job's gradient statistics (sqr >= 0, var >= 0; both NAN when
 * the report has none; the first that has them is also kept as the job's grad0) and progress
 * (>= 0; NAN when it has none). */
struct state_report {
    const struct state_report_config *configs;
    size_t nconfigs;
    double grad_sqr;
    double grad_var;
    double progress;
    double sync_prior; /* > 0: the job's measured all-reduce time (state_job); 0: none */
};

/* Store a report of the job at now, all or nothing. ERR_INVAL: a value out of range (nothing
 * written); ERR_UNKNOWN: no such job; ERR_CONFLICT: the job is in a final state. */
int state_report_store(struct state *st, const char *job, const struct state_report *r, double now);

/* One report of a batch: the job, its report, and (out) its outcome: 0 or the error
 * state_report_store would have returned for it alone. */
struct state_report_item {
    const char *job;
    struct state_report report;
    int rc;
};

/*
 * Store n >= 1 reports, of one job or several, in one transaction (one write to the disk for all:
 * what lets the API keep up with many jobs), each under a savepoint so that a refused one
 * (ERR_INVAL, ERR_UNKNOWN, ERR_CONFLICT in its rc) writes nothing and the others are stored.
 * Returns 0 when the transaction committed (each item's rc says how its report fared), or an
 * error of the whole (ERR_AGAIN, ERR_IO, ERR_NOMEM, ...; ERR_INVAL for bad arguments) with
 * nothing written and every item's rc set to it.
 */
int state_report_store_many(struct state *st, struct state_report_item *items, size_t n,
                            double now);

/* The job's pooled configurations, ordered by (nodes, replicas, local_bsz, accum_steps). *out
 * owns n rows (free); ERR_UNKNOWN: no such job. Written only on success. */
int state_report_configs(struct state *st, const char *job, struct state_report_config **out,
                         size_t *n);

/* ---- model families: the jobs whose specs name the same "family" ---- */

/* One pooled configuration of a job of a family. */
struct state_family_config {
    long long job_id; /* the job it belongs to: the rows of one job are adjacent */
    struct state_report_config config;
};

/*
 * The pooled report configurations of the jobs whose spec names family, except the job named
 * except (NULL: none excepted; it need not exist), in any state (a finished job's measurements
 * stay valid), ordered by job (in submission order) and then as state_report_configs orders
 * them, so that the caller can merge them job by job. *out owns n rows (free; NULL when n is 0:
 * no other job of the family, or none that reported). ERR_INVAL: family or except not a name
 * (1 to STATE_NAME_MAX bytes). Written only on success.
 */
int state_family_configs(struct state *st, const char *family, const char *except,
                         struct state_family_config **out, size_t *n);

/*
 * A family's start statistics for a job whose initial batch size is m0: the mean of grad0_sqr
 * (state_job: the gradient statistics each job reported first), and the mean of grad0_var scaled
 * to m0 (grad_var is a variance per batch of the job's own initial size, init_batch_size in its
 * spec: times that size it is per sample, which the jobs of one model share; a spec without the
 * key counts as m0), over the jobs whose spec names family and that have them, in any state.
 * ERR_NOENT: no such job (*sqr and *var untouched); ERR_INVAL: family not a name, m0 not
 * positive.
 */
int state_family_start_grad(struct state *st, const char *family, double m0, double *sqr,
                            double *var);

/* ---- the decision log and costs ---- */

/* Append the decision of tick (>= 0) taken at now; summary is JSON (ERR_INVAL when it is not). */
int state_decision_append(struct state *st, long long tick, double now, const char *summary);

/* The tick of the last decision appended. ERR_EMPTY when there is none. */
int state_decision_last_tick(struct state *st, long long *tick);

/* Add dollars (>= 0) spent on the node over [from, to] (to >= from), and to each job with
 * replicas on the node now its share: dollars x its replicas / the node's GPUs (the share of idle
 * GPUs goes to no job). A span over several UTC hours is recorded in each at its rate (costs are
 * kept per node and hour). One transaction. ERR_UNKNOWN: no such node (nothing written). */
int state_cost_add(struct state *st, const char *instance_id, double from, double to,
                   double dollars);

/* The shortest time a cloud bills an instance it was asked to terminate (EC2 and Compute
 * Engine: a minute). */
#define STATE_MIN_BILLED_S 60.0

/*
 * Record what every node cost between from and now (seconds, from <= now) at its price: for each,
 * its own part of that span (from its launch, to its end), state_cost_add'ed. A node castor
 * launched (a launch token) that is terminated is billed at least STATE_MIN_BILLED_S from its
 * launch, the rest of that minute recorded as the spans reach it; a node at price 0 adds nothing.
 * Called with consecutive spans, each second is recorded once. One transaction: on error nothing
 * is recorded, and the same span may be asked again (whole, or within a longer one). ERR_INVAL: a
 * bad span; what SQLite says (ERR_IO: a full disk, a read-only file).
 */
int state_cost_accrue(struct state *st, double from, double now);

/* As state_cost_accrue, with what the cloud lists: what the nodes cost while no controller ran.
 * With listed (NULL-terminated instance ids) not NULL, a node castor launched whose instance is
 * not in it is left out (gone, at a time not known), unless the state terminated it by now (it
 * ended then); NULL: the cloud could not say, every node counts. A terminated node counts up to
 * its end, which the state knows: those terminated after the last costs recorded (in the tick
 * the controller was killed in, or by the API meanwhile) included, and what a start could not
 * record, recorded later, after the reconciliation may have terminated some of them. Errors as
 * state_cost_accrue. */
int state_cost_accrue_listed(struct state *st, double from, double now, char *const *listed);

/* An instance terminated as a stray (no node of castor's explains it), as the cloud listed it:
 * what its charges are kept under. Strings borrowed: names (1 to STATE_NAME_MAX bytes). */
struct state_stray {
    const char *instance_id;
    const char *offer;
    const char *zone;
    enum state_market market;
};

/*
 * Charge a stray instance at price ($/h, >= 0) for [from, to] (seconds): from its last charge
 * instead when it has one (an instance still listed a tick after it was terminated is charged
 * only for the new span), and its first charge at least min_s (>= 0: the cloud's minimum billed
 * time) long. Kept per instance and UTC hour (a span over several split at the hours, at its
 * rate), counted in the fleet's costs (state_cost_total, _since, _split, _report) under its offer
 * and market; no job is charged. *seconds and *dollars (each may be NULL): what was added (0 when
 * the span is already charged). One transaction; nothing written on error. ERR_INVAL: a bad
 * argument; what SQLite says.
 */
int state_stray_charge(struct state *st, const struct state_stray *s, double from, double to,
                       double min_s, double price, double *seconds, double *dollars);

/* *until: the latest end of the nodes' costs recorded (NAN: none yet), where a restarted
 * controller's accrual begins (the strays' charges are not the nodes' accrual and are left out).
 * Errors: what SQLite says. */
int state_cost_recorded_until(struct state *st, double *until);

/* A job's share of what was taken back from one node (state_cost_refund). */
struct state_cost_share {
    char *job; /* owned */
    double dollars;
};

/*
 * A node the cloud did not bill (an AWS spot instance it interrupted in its first hour): every
 * cost added for it is taken back, from the fleet's costs (so from every period's spend) and
 * from each job's dollars (the shares state_cost_add gave it of this node), and its price is 0
 * from now on, so that what is added after costs nothing. *dollars (may be NULL) is what was
 * taken back; with shares not NULL, *shares owns *nshares rows, each job's part of it, by job
 * (state_cost_shares_free). ERR_UNKNOWN: no such node; ERR_CONFLICT: it is terminated (its
 * shares are no longer kept: take it back before the node is terminated). One transaction;
 * nothing written, and nothing out, on error.
 */
int state_cost_refund(struct state *st, const char *instance_id, double *dollars,
                      struct state_cost_share **shares, size_t *nshares);

void state_cost_shares_free(struct state_cost_share *rows, size_t n);

/* What the fleet cost (every cost added, the strays' charges included), the part the jobs held
 * (their dollars, over every job ever: state_cost_add's shares), and the rest, what no job held:
 * idle GPUs and strays (never below 0); 0 each with none. */
struct state_costs {
    double spent, jobs, idle;
};
int state_cost_split(struct state *st, struct state_costs *out);

/* The dollars of the costs added (the strays' charges included) that end after from (seconds):
 * what the fleet cost since then, a row that straddles it counted for its part after it (0 with
 * none). */
int state_cost_since(struct state *st, double from, double *dollars);

/* What the fleet cost, by UTC day or by offer (state_cost_report). */
enum state_cost_by { STATE_COST_BY_DAY, STATE_COST_BY_OFFER };

struct state_cost_row {
    char *key;        /* owned: the day ("2026-11-27", UTC) or the offer */
    double on_demand; /* castor's on-demand nodes (and strays of that market) */
    double spot;      /* castor's spot nodes (and strays of that market) */
    double fixed;     /* static nodes (registered, not launched), at their registered price */
    double dollars;   /* the three together */
};

/*
 * The costs recorded from from to to (seconds; a cost counts where it starts: costs are kept per
 * node and UTC hour, so a day's share is exact to a tick), the strays' charges with them under
 * their offer and market (state_stray_charge), summed by day (oldest first) or by offer (dearest
 * first). What was taken back (state_cost_refund) is not in them. *out owns n rows
 * (state_cost_rows_free); written only on success. ERR_INVAL: a bad span.
 */
int state_cost_report(struct state *st, double from, double to, enum state_cost_by by,
                      struct state_cost_row **out, size_t *n);

void state_cost_rows_free(struct state_cost_row *rows, size_t n);

/* The dollars of every cost added, the strays' charges included (0 with none). */
int state_cost_total(struct state *st, double *dollars);

/* ---- job events: what happened to a job, for its owner ---- */

/* The most events kept per job: older ones go as new ones come. */
#define STATE_EVENTS_KEPT 500
/* The longest kind and message of an event, in bytes. */
#define STATE_EVENT_KIND_MAX 32
#define STATE_EVENT_MESSAGE_MAX 1024

/* One event. Strings owned. */
struct state_event {
    long long id; /* increasing with time */
    double at;
    char *kind;    /* "submitted", "placed", "failure", ... (docs/api.md) */
    char *node;    /* the node it is about, or NULL */
    char *message; /* a sentence for people */
};

/*
 * Record an event of job at now: kind (1 to STATE_EVENT_KIND_MAX bytes), node (NULL, or a name)
 * and message (1 to STATE_EVENT_MESSAGE_MAX bytes; a longer one is cut). Only the job's newest
 * STATE_EVENTS_KEPT stay. ERR_UNKNOWN: no such job.
 */
int state_event_add(struct state *st, const char *job, double now, const char *kind,
                    const char *node, const char *message);

/* The job's newest events, at most limit (>= 1), oldest first. *out owns n (state_events_free).
 * ERR_UNKNOWN: no such job. Written only on success. */
int state_events_list(struct state *st, const char *job, int limit, struct state_event **out,
                      size_t *n);

void state_events_free(struct state_event *events, size_t n);

#endif
