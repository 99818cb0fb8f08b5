/* policy.h: scheduling policies: given a snapshot, who gets which GPUs. One `const struct
 * policy_ops` per policy, registered by name; an instance is {ops, ctx}. */
#ifndef CASTOR_POLICIES_POLICY_H
#define CASTOR_POLICIES_POLICY_H

#include <stdint.h>

#include "plan/alloc.h"
#include "plan/snapshot.h"

/* Settings a policy may read; zero means the policy's default (p_mean: when p_mean_set is 0). */
struct policy_config {
    double p_mean;                 /* pollux, castor: the fitness power mean p (pollux's default
                                      -1, castor's 1); 0 is the geometric mean */
    int p_mean_set;                /* 1: p_mean was given; 0: the policy's default */
    double restart_penalty;        /* pollux: delta, seconds of the restart penalty (default 30) */
    int no_interference_avoidance; /* pollux: allow two distributed jobs on one node */
    int deadline_start;            /* pollux: a job with a deadline may use the replicas its owner
                                      asked for (snap_job.req_replicas) until measured there, beyond
                                      the exploration limit (castor's fleet planner sets it) */
};

struct policy_ops {
    const char *name;
    const char *summary;
    /* What the policy expects of the jobs it schedules: */
    int adaptive_batch; /* 1: jobs pick goodput-optimal batch sizes (else the size they asked) */
    int gang;           /* 1: a job runs on exactly the GPUs it asked for, or not at all */
    /* A new instance's private state (may stay NULL); errors: ERR_NOMEM, ERR_INVAL. */
    int (*create)(const struct policy_config *cfg, void **ctx);
    void (*destroy)(void *ctx);
    /*
     * Decide: write into out (njobs x nnodes, as s->current, which it starts as a copy of) the
     * allocation for the next interval. seed is the only randomness. State carried in ctx from
     * round to round must depend only on the snapshots seen (so that a replay decides alike).
     * Errors leave out unspecified; the caller keeps the current allocation.
     */
    int (*allocate)(void *ctx, const struct snapshot *s, uint64_t seed, struct alloc *out);
};

struct policy {
    const struct policy_ops *ops;
    void *ctx;
};

/* cfg's power mean p if it was given, else dflt. */
double policy_p_mean(const struct policy_config *cfg, double dflt);

extern const struct policy_ops policy_pollux;
extern const struct policy_ops policy_optimus;
extern const struct policy_ops policy_tiresias;
extern const struct policy_ops policy_castor;

/* All policies, NULL-terminated. */
extern const struct policy_ops *const policy_registry[];

/* The policy called name, or NULL. */
const struct policy_ops *policy_find(const char *name);

/* Create an instance of the policy called name. ERR_UNKNOWN for an unknown name; as create. */
int policy_new(const char *name, const struct policy_config *cfg, struct policy *out);

/* Ask p for the next allocation (see policy_ops.allocate). */
int policy_allocate(struct policy *p, const struct snapshot *s, uint64_t seed, struct alloc *out);

void policy_free(struct policy *p);

/*
 * Pollux's objective for allocation a of snapshot s: the power mean (p from cfg, default -1) of
 * the jobs' speedups over their fair share, scaled as the paper scales them, with the restart
 * penalty for jobs whose GPUs change. -HUGE_VAL for an allocation that breaks node capacity, a
 * job's replica limit or (unless disabled) the one-distributed-job-per-node rule; NAN when out of
 * memory. For comparing optimizers; the policy itself maximises it.
 */
double policy_pollux_fitness(const struct policy_config *cfg, const struct snapshot *s,
                             const struct alloc *a);

/* Fill job j of out with n more replicas, taking GPUs from the node with the most free ones first
 * (the lowest index on ties), as Optimus and Tiresias place jobs. free[] (nnodes values) is
 * updated. ERR_RANGE if fewer than n GPUs are free. */
int policy_fill_most_free(struct alloc *out, int j, int n, int *free);

/* A job's replica limit: at most explore replicas (the exploration limit the policy chose), the
 * cluster's GPUs, what its batch can feed (max_bsz / min_local) and its owner's max_replicas; at
 * least its gang minimum (min_replicas) within the cluster and the owner's limit; at least 1. */
int policy_replica_limit(const struct snap_job *sj, int explore, int gpus);

/*
 * Place job j's r replicas consolidated: on the tightest node that holds them all, else whole free
 * nodes plus the tightest node for the rest, else the nodes with the most free GPUs; when avoid is
 * set, a job on several nodes uses only nodes without another distributed job (dist[n] != 0), and
 * marks the nodes it uses. free and dist (nnodes values each) are updated. Returns 1 when placed,
 * 0 when the free nodes cannot take r replicas (nothing changes), or an error from alloc_add.
 */
int policy_place_consolidated(struct alloc *out, int j, int r, const struct snapshot *s, int *free,
                              int *dist, int avoid);

/* As policy_place_consolidated with r replicas, else r - 1, ... down to the job's gang minimum
 * (min_replicas, at least 1); returns how many were placed (0 if none could be) or an error. */
int policy_place_shrinking(struct alloc *out, int j, int r, const struct snapshot *s, int *free,
                           int *dist, int avoid);

#endif
