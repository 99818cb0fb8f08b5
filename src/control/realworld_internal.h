/* realworld_internal.h: what realworld.c and the provider's other files (realworld_reconcile.c,
 * realworld_jobs.c, realworld_observe.c, realworld_apply.c) share (private; not installed). */
#ifndef CASTOR_CONTROL_REALWORLD_INTERNAL_H
#define CASTOR_CONTROL_REALWORLD_INTERNAL_H

#include <stddef.h>

#include "control/api.h"
#include "control/realworld.h"
#include "control/state.h"
#include "model/goodput.h"
#include "model/tput.h"
#include "plan/alloc.h"
#include "plan/fleet.h"
#include "plan/snapshot.h"

#define RW_CLUSTER_MAX 40 /* the longest cluster id */
#define RW_NOPS 4         /* the kinds of cloud calls counted */

/* realworld.c: free a NULL-terminated array of strings and the strings; NULL is ignored. */
void rw_strv_free(char **v);

/* realworld.c: 1 when id is in the NULL-terminated list v (NULL: empty). */
int rw_listed(char *const *v, const char *id);

/* realworld.c: add a copy of id to the NULL-terminated list *v (ERR_NOMEM: unchanged). */
int rw_list_add(char ***v, const char *id);

/* An event of kind for each job with replicas on node id: "<why>: <then>" (then NULL: why alone),
 * logged at warn. A state error leaves the events out. */
void rw_note_node_jobs(struct realworld *rw, const char *id, double now, const char *kind,
                       const char *why, const char *then);
#define RW_RESTARTS "the job restarts from its last checkpoint" /* the `then` of a lost node */

/* The cloud calls counted, by their index in the names of the metrics (realworld.c). */
enum { RW_OP_OFFERS, RW_OP_LIST, RW_OP_LAUNCH, RW_OP_TERMINATE };

/* Every node not terminated; every node. */
#define RW_LIVE_NODES                                                    \
    (STATE_MASK(STATE_NODE_LAUNCHING) | STATE_MASK(STATE_NODE_BOOTING) | \
     STATE_MASK(STATE_NODE_READY) | STATE_MASK(STATE_NODE_DRAINING))
#define RW_ALL_NODES (RW_LIVE_NODES | STATE_MASK(STATE_NODE_TERMINATED))

/* An offer the cloud has shown; it keeps its index for the world's life. */
struct rw_offer {
    char *name;
    int gpus;
    int spot;
    double price;
    int present; /* in the cloud's last answer */
    double unavailable_until;
    int quota_held;    /* unavailable for a quota: released early by a termination in its market */
    int quota_full;    /* the quotas read leave it no room (told once) */
    int unpriced;      /* offered, but the cloud cannot tell its price (told once) */
    double list_price; /* the cloud's own price of the instance in its last answer, its disks
                        * left out: what a spot bid is on (NAN: unknown) */
    double max_price;  /* spot: the most a launch bids (0: none) */
    int over_max;      /* its spot price is above its max_price: none launched (told once) */
    double priced_at;  /* when the cloud last told its price */
    double reclaim_free_s; /* spot: reclaimed by the cloud this soon after its launch, unbilled */
    double storage;        /* $/h of a node's disks, in price and not in list_price */
    double rate;           /* preemptions per node-hour in the last snapshot (NAN: none yet) */
};

/* A price the cloud cannot tell now (a spot price read that failed) stands at the last one told
 * for this long; past it, or never told, it is unknown (NAN) and castor's planner does not
 * launch the offer. */
#define RW_PRICE_KEEP_S 3600.0

/* An offer's preemption rate: the prior counts as this many node-hours, and castor's own nodes'
 * notices over this window update it (realworld_observe.c). */
#define RW_RATE_PRIOR_H 10.0
#define RW_RATE_WINDOW_S (7 * 86400.0)

/* A quota of the cloud's, as last read (realworld_quota.c). */
struct rw_quota {
    char *name, *title, *unit; /* owned */
    double limit, used;        /* as read (used: everything it counts, not only ours) */
    double launched;           /* units of this controller's launches since the read */
};

/* What one node of an offer takes from a quota. */
struct rw_quota_use {
    int offer;    /* index in rw->offers */
    size_t quota; /* index in rw->quotas */
    double units;
};

/* What is kept of a job between ticks. */
/* A job's new replicas that wait this long for its old ones are told about in its events. */
#define RW_WAIT_TELL_S 120.0

struct rw_job {
    char *name;
    int has_model;
    struct tput_params tput;
    double fitted_for; /* the reported_at of the reports fitted (NAN: none) */
    int family_fitted; /* a fit took its family's measurements (done once; then on its own) */
    int max_profiled;
    double attained; /* GPU-seconds held while this process watched */
    int refitted;    /* the model changed in this tick */
    /* when this world last changed its configuration without a new placement (NAN: not yet), and
     * whether its own reports have measured the configuration it has now: a voluntary change
     * waits for that measurement (or REALWORLD_CONFIG_SETTLE_S), so that a refit on reports of the
     * configuration it left does not send it straight back */
    double config_at;
    int config_seen;
    /* the figures of its current configuration, for the metrics */
    double goodput, speedup, batch;
    double eta; /* when it is predicted to finish there, seconds since the epoch (NAN: unknown) */
    int late;   /* 1 while that is after its deadline (told once, and again when it is not) */
    int cost_warned;  /* its dollars passed RW_COST_WARN of its max_dollars (told once) */
    double wait_told; /* the placement (since) whose wait for old replicas was told; NAN: none */
    int blocked_told; /* 1 while its wait for a fleet that cannot grow was told */
};

/* A job's spec, as the decide step needs it. */
struct rw_spec {
    double m0, max_bsz, max_local, checkpoint, deadline, weight;
    double samples;                  /* the job's length in samples (0: unknown) */
    char family[API_FAMILY_MAX + 1]; /* its model family ("": none) */
    int min_replicas, max_replicas, req_replicas;
    double hang_timeout; /* seconds without a step reported that make the job hung (0: off) */
    int max_restarts;    /* failures in a row without progress before the job fails */
    double max_dollars;  /* what the job may cost before it is failed (NAN: no limit) */
    int in_flight;       /* reconfigure: in_flight (its workers take a new configuration as they
                          * run); 0: restart */
};

struct rw_error_count; /* the failures of one cloud call with one error code (realworld.c) */

/* A real world (realworld_new): its state, cloud, clock and options, what it keeps across ticks,
 * and the snapshot of its last observe with what the snapshot's rows stand for. */
struct realworld {
    struct state *state;
    struct cloud *cloud;
    struct log *log;
    char cluster[RW_CLUSTER_MAX + 1];
    realworld_clock_fn clock, timer; /* timer: never NULL (the clock when none was given) */
    realworld_sleep_fn sleep;
    void *clock_ctx;
    double launch_timeout;
    double register_timeout, heartbeat_timeout; /* 0: not watched */
    char **silent; /* live nodes left out for their silence (ids owned), NULL-terminated */
    char **fenced; /* silent launched nodes whose instances are being terminated: their jobs wait
                    * until the cloud says they are gone (ids owned), NULL-terminated; what this
                    * daemon fenced, the state's draining nodes without a notice telling the rest
                    * (rw_node_fenced) */
    struct realworld_spend spend;
    double spent;      /* the dollars of the current period at the last look (NAN: no limit) */
    int over_spend;    /* 1 while the period's dollars are at or over the limit */
    double spend_told; /* the period start of the last warning and of the last stop (NAN: none) */
    double stop_told;
    long long jobs_waiting; /* running jobs whose new replicas wait for old ones on other nodes,
                             * as the last tick found them */
    char **unfenced; /* silent static nodes whose replicas may still run (no self-fence, or not
                      * past it): their jobs wait until they are heard again or taken down (ids
                      * owned), NULL-terminated */
    struct rw_quota *quotas; /* as last read (realworld_quota.c) */
    size_t nquotas;
    struct rw_quota_use *quota_uses;
    size_t nquota_uses;
    double quotas_read_at; /* NAN: never */
    double quotas_ok_at;   /* the last read that succeeded */
    int quotas_stale;      /* an instance went or a launch was refused: read again soon */
    int quotas_failed;     /* the last read failed (told once) */
    struct api_quota_metrics *quota_rows;
    struct api_offer_room *room_rows;
    struct api_offer_price *price_rows;
    struct realworld_offer *meta; /* strings owned */
    size_t nmeta;
    int meta_checked; /* the configuration's offers were checked against the cloud's (told once) */
    const struct tput_model_ops *model;
    double wake_at;   /* the deadline of the wait in progress, on the timer (NAN: none) */
    double wait_from; /* when the wait in progress began, on the timer */
    double woke_due;  /* the deadline of the last wait that ended (NAN: none since the look) */
    double last_observe;
    double watch_from; /* the first observe, or the first after an outage of the controller's
                        * own (rw_pause_check): hangs and silences are timed from no earlier
                        * (NAN: none yet) */

    realworld_heard_fn heard; /* NULL: none (realworld_config) */
    void *heard_ctx;
    int state_failing; /* 1 while the state's writes fail (realworld_reconcile): no node is
                        * terminated or fenced for its silence (told once, and again when they
                        * work) */
    /* offers, jobs and counts kept across ticks */
    struct rw_offer *offers;
    size_t noffers;
    struct rw_job *jobs;
    size_t njobs;
    long long calls[RW_NOPS];
    long long losses[API_NLOSSES]; /* nodes lost, by reason (the metrics) */
    struct rw_error_count *errors;
    size_t nerrors;
    struct api_call_metrics *call_rows, *error_rows;
    struct api_job_metrics *job_rows;
    struct realworld_actions actions;
    /* the snapshot of the last observe and what its rows stand for */
    int observed;
    struct snapshot snap;
    struct state_node *live; /* nodes not terminated */
    size_t nlive;
    struct snap_node *snodes;
    int *snode_live; /* snapshot node -> index in live */
    struct snap_booting *booting;
    int *boot_live;    /* booting entry -> index in live, or -1 for an intent */
    char **boot_token; /* booting entry -> the intent's token (borrowed from intents) */
    struct state_intent *intents;
    size_t nintents;
    struct state_job *sjob_state; /* the jobs as read */
    size_t nsjobs;
    struct snap_job *sjobs;
    int *sjob_rw; /* snapshot job -> index in jobs */
    struct rw_spec *specs;
    struct state_alloc **held; /* per snapshot job: the state's allocation */
    size_t *nheld;
    struct alloc *current;
    struct snap_offer *soffers;
};

/* ---- small helpers and offers (realworld.c) ---- */

/* realworld.c: the world's clock, seconds since the Unix epoch. */
double rw_now(struct realworld *rw);

/* realworld.c: when the wait that led to this look ended more than REALWORLD_PAUSE_S past its
 * deadline on the timer, the controller itself was out (stopped, its machine frozen; its API
 * heard nothing either): the watches start again from now (watch_from), as after a restart, and
 * the log says so. now: the clock now. */
void rw_pause_check(struct realworld *rw, double now);

/* realworld.c: count a cloud call (op: RW_OP_*) and, when it failed (rc < 0), its error. */
void rw_count(struct realworld *rw, int op, int rc);

/* realworld.c: what the configuration says of the offer named offer, or NULL. */
const struct realworld_offer *rw_meta(const struct realworld *rw, const char *offer);

/* realworld.c: the index in rw->offers of the offer named name, or -1 (also for NULL). */
int rw_offer_find(const struct realworld *rw, const char *name);

/* realworld.c: fetch the cloud's offers into rw->offers: known ones keep their index, new ones
 * are appended, those no longer offered stay, marked absent (unavailable). */
int rw_offers_refresh(struct realworld *rw);

/* realworld_reconcile.c: what a node of the offer is billed now ($/h): its price (the cloud's,
 * or the configuration's), else for spot its max_price and its disks (no spot instance is billed
 * above its bid), else NAN (unknown). */
double rw_offer_bill(const struct rw_offer *of);

/* realworld_reconcile.c: each of the n live nodes castor launched takes its offer's price from
 * now on when it is known and has changed (a spot price moves while the instance runs, and the
 * cloud bills the price of the moment), in the state and in nodes; static nodes keep theirs, and
 * a node whose offer's price is unknown keeps its last. */
void rw_node_prices(struct realworld *rw, struct state_node *nodes, size_t n, double now);

/* ---- quotas (realworld_quota.c) ---- */

/* Read the cloud's quotas when due (every 5 minutes; 30 s after an instance went or a launch was
 * refused for a quota); a failed read keeps the last figures and is logged once. Offers left no
 * room are logged once, and an offer held for a quota refusal that has room again is released. */
void rw_quotas_refresh(struct realworld *rw, double now);

/* 1 when the quotas read limit offer o, with the nodes they still let this controller launch
 * into *room (>= 0); 0 (room untouched) when none known does. */
int rw_offer_room(const struct realworld *rw, int o, int *room);

/* The quota that leaves offer o the least room, said into buf (size bytes): "quota NAME \"TITLE\"
 * has USED of LIMIT UNIT in use", what it counts with this controller's launches since the read
 * (for the log and the events of an offer without room). */
void rw_quota_say(const struct realworld *rw, int o, char *buf, size_t size);

/* Tell in the log the offers the quotas leave no room (once, until they have room again). */
void rw_quotas_tell(struct realworld *rw, double now);

/* The quota (index in rw->quotas) that leaves offer o the least room, or -1: none limits it;
 * with left not NULL, the whole nodes of o it leaves room for (cloud_quota_room; 0 past its
 * limit). */
int rw_quota_binding(const struct realworld *rw, int o, double *left);

/* Count one launch of offer o against its quotas until the next read. */
void rw_quota_launched(struct realworld *rw, int o);

/* Forget the quotas read (freeing them). */
void rw_quotas_free(struct realworld *rw);

/* ---- realworld_blocked.c ---- */

/* 1 when the fleet cannot grow now: the cloud has offers, no instance is booting, and none can be
 * launched (not offered, held after a refusal, a spot price above its max_price, no room under its
 * quotas) or the spend limit stops launches; why (size bytes, cut to fit) then says so offer by
 * offer. 0 (why untouched) otherwise, and for a static
 * cluster (no offers). */
int rw_fleet_blocked(const struct realworld *rw, double now, char *why, size_t size);

/* Tell job st (its kept figures job) in its events, once, that it has no GPUs and why the fleet
 * cannot grow (blocked, why: rw_fleet_blocked's), once it has waited RW_WAIT_TELL_S since its
 * submission; told again after it had replicas or the fleet could grow. */
void rw_tell_blocked(struct realworld *rw, const struct state_job *st, struct rw_job *job,
                     int replicas, int blocked, const char *why, double now);

/* ---- nodes in the state and reconciliation (realworld_reconcile.c) ---- */

/* realworld_reconcile.c: 1 when the state's node is spot, 0 when on-demand. */
int rw_node_spot(const struct state_node *n);

/* realworld_reconcile.c: terminate the node (its instance first; spot: its market as
 * rw_quota_freed takes it); an instance the cloud no longer knows is gone. */
int rw_node_terminate(struct realworld *rw, const char *id, int spot, double now, const char *why);

/* realworld_reconcile.c: rw_node_terminate, and once it went through (not at each tick a refusal
 * asks it again) an event of kind for each job the node held ("<lost>: <then>", as
 * rw_note_node_jobs; kind NULL: none) and one more of the node's losses (loss: API_LOSS_*; < 0:
 * none counted). */
int rw_node_terminate_lost(struct realworld *rw, const char *id, int spot, double now,
                           const char *why, const char *kind, const char *lost, const char *then,
                           int loss);

/* realworld_reconcile.c: launch one instance of offer o under token (an intent already
 * committed). */
int rw_launch_token(struct realworld *rw, int o, const char *token, double now);

/* realworld_reconcile.c: 1 when one of the n nodes was launched under token. */
int rw_token_has_node(const struct state_node *nodes, size_t n, const char *token);

/* realworld_reconcile.c: read the pending intents into rw->intents (replacing the last ones). */
int rw_intents_read(struct realworld *rw);

/* ---- jobs: specs and models (realworld_jobs.c) ---- */

/* realworld_jobs.c: the job's stored spec (JSON text) into *out, absent fields at their defaults;
 * ERR_CORRUPT when it cannot be parsed or lacks an initial batch size or a local limit. */
int rw_spec_parse(const char *text, struct rw_spec *out);

/* realworld_jobs.c: what is kept of the job named name; when there is none, a new one (no model
 * yet) if create, else NULL. NULL when out of memory. */
struct rw_job *rw_job_find(struct realworld *rw, const char *name, int create);

/*
 * realworld_jobs.c: refit the job's throughput model when reports came since the last fit, and
 * once when it is first seen with a family whose other jobs have measurements (a job of a family
 * with no reports of its own starts with the family's model). The profile fitted is the job's own
 * pooled configurations plus, for a job of a family, the configurations of the family's other
 * jobs that it has not measured itself.
 */
void rw_model_update(struct realworld *rw, struct rw_job *j, const struct state_job *sj,
                     const struct rw_spec *spec, double now);

/* realworld_jobs.c: the job's gradient statistics: its own latest; before its first report of
 * them, its family's start (the mean of the family's jobs' first statistics) when it has one;
 * else none. */
struct grad_params rw_grad(struct realworld *rw, const struct state_job *sj,
                           const struct rw_spec *spec);

/* realworld_jobs.c: start the watches of hangs and silent nodes at the first look (watch_from). */
void rw_watch_start(struct realworld *rw, double now);

/* realworld_reconcile.c: when the node's agent was last heard from: its registration, its latest
 * heartbeat (as the state has it, or as this process's API heard it: rw->heard), or this world's
 * first look, whichever is latest. */
double rw_node_heard(const struct realworld *rw, const struct state_node *n);

/* realworld_reconcile.c: 1 when the ready node's agent has not been heard from (rw_node_heard)
 * within the heartbeat timeout. */
int rw_node_silent(const struct realworld *rw, const struct state_node *n, double now);

/* realworld_reconcile.c: 1 when the node is fenced (rw_fence): launched by castor, not
 * terminated, and listed in rw->fenced or draining without a preemption notice (as a fence leaves
 * it in the state, so that a restarted daemon knows it too). Its replicas may still run: its jobs
 * wait until its instance is gone. */
int rw_node_fenced(const struct realworld *rw, const struct state_node *n);

/* realworld_observe.c: 1 when one of the n allocation rows is on a live node (as the last observe
 * read them) whose replicas may still run out of castor's reach: a launched node fenced
 * (rw_node_fenced), or a silent static node not fenced (rw->unfenced). */
int rw_rows_fenced(const struct realworld *rw, const struct state_alloc *rows, size_t n);

/* realworld_jobs.c: the watches of the pending and running jobs, in one pass (one list, one
 * spec read per job). The hang watch: each running job that has reported training steps and
 * whose last step report, placement, last failure and this world's first observe (rw_watch_start,
 * which must have run) are all more than its hang_timeout ago, and none of whose nodes is silent,
 * is taken as hung: a replica failure is counted for it (state_job_replica_failed on its first
 * node), which restarts its replicas as a new attempt or fails it. The cost watch: each job with a
 * max_dollars whose dollars (its share of its nodes', state_cost_add) reach it is failed
 * (state_job_fail), its GPUs freed, with the reason in its failure, the log and its events; one
 * that passes RW_COST_WARN of it is warned, once per process. A state error leaves the job for the
 * next tick (logged). */
#define RW_COST_WARN 0.8
void rw_watch_jobs(struct realworld *rw, double now);

/* realworld_spend.c: the spend limit. The dollars recorded since the period began (the costs'
 * rows that end in it); at RW_COST_WARN of the limit a warning, once a period; at the limit the
 * world stops renting: every offer unavailable in the snapshot, and every launched node's instance
 * terminated (its jobs restart from their checkpoints once renting resumes, or on static nodes),
 * until the next period. A state error leaves it as it was. */
void rw_spend_check(struct realworld *rw, double now);

/* realworld_spend.c: 1 when the spend limit is set and could not count the nodes of offer of: it
 * has no known price, and no max_price to count them at. Such an offer is not launched while the
 * limit is set (a fleet there would spend without the limit seeing it). */
int rw_spend_uncounted(const struct realworld *rw, const struct rw_offer *of);

/* ---- observe (realworld_observe.c) ---- */

/* realworld_observe.c: free the snapshot of the last observe and what its rows stand for; the
 * world is no longer observed. */
void rw_snapshot_free(struct realworld *rw);

/* realworld_observe.c: the provider's observe: reconcile the state with the cloud, then build
 * the snapshot (offers, nodes and booting ones, jobs with their models and what they hold) into
 * *out, valid until the next observe. */
int rw_observe(void *ctx, const struct snapshot **out);

/* ---- apply and resize (realworld_apply.c) ---- */

/* realworld_apply.c: the provider's apply: write each job's allocation in the plan (one made on
 * the last snapshot, else ERR_INVAL) to the state, and its configuration. */
int rw_apply(void *ctx, const struct alloc *plan);

/* realworld_apply.c: the provider's resize: release nodes, cancel booting ones and launch offers
 * as the plan (one made on the last snapshot, else ERR_INVAL) says, each launch's intent
 * committed first; counted in rw->actions. Returns the first error. */
int rw_resize(void *ctx, const struct fleet_plan *f);

#endif
