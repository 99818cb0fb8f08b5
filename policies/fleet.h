/* fleet.h: fleet policies: given a snapshot of a rented fleet, which offers to launch, which nodes
 * to let go, and (through an allocation policy) who runs where on the nodes kept. One `const
 * struct fleet_ops` per policy, registered by name; an instance is {ops, ctx}. */
#ifndef CASTOR_POLICIES_FLEET_H
#define CASTOR_POLICIES_FLEET_H

#include <stdint.h>

#include "plan/alloc.h"
#include "plan/fleet.h"
#include "plan/snapshot.h"
#include "policies/policy.h"

/* castor's default value of an hour of a job's completion time, dollars (docs/fleet.md). */
#define FLEET_DEFAULT_VALUE 1.2

/* pollux's power mean where castor's planner rents the fleet: the geometric mean, whose terms
 * do not depend on a fair share of a fixed cluster (docs/fleet.md). */
#define FLEET_CASTOR_P_MEAN 0.0

enum fleet_mode {
    FLEET_EFFICIENCY, /* grow while the next node buys enough goodput per dollar */
    FLEET_BUDGET,     /* the most goodput under a cap in $/h */
    FLEET_DEADLINE,   /* meet each job's deadline at the lowest cost */
};

/* Settings a fleet policy may read; zero means the policy's default. */
/* pollux-autoscale's utilisation band when its bounds are not given (the paper's U = 2/3, with
 * a target L = 1/2 halfway) */
#define FLEET_UTIL_HIGH (2.0 / 3.0)
#define FLEET_UTIL_LOW (1.0 / 3.0)

struct fleet_config {
    enum fleet_mode mode; /* castor */
    double value;         /* castor: dollars an hour of a job's completion time is worth; a
                             GPU is added while the hours it saves pay for it (default
                             FLEET_DEFAULT_VALUE) */
    int patience;         /* castor: rounds a surplus lasts before nodes go (default 5) */
    double budget;        /* castor, budget: $/h */
    double util_high;     /* pollux-autoscale: scale when the utility leaves [low, high] */
    double util_low;      /* (defaults 2/3 and 1/3: the paper's U = 2/3, target L = 1/2) */
    int window;           /* pollux-autoscale: intervals averaged (default 15) */
    int offer;            /* fixed, pollux-autoscale: the offer to rent (index) */
    int nodes;            /* fixed: the nodes to hold */
    int max_nodes;        /* the most nodes to hold (default 512) */
    double restart_s;     /* seconds a restart costs a job (default 30) */
};

struct fleet_ops {
    const char *name;
    const char *summary;
    /* A new instance's private state (may stay NULL); errors: ERR_NOMEM, ERR_INVAL. */
    int (*create)(const struct fleet_config *cfg, void **ctx);
    void (*destroy)(void *ctx);
    /*
     * Decide: the fleet's changes into f (empty on entry) and the allocation of the nodes kept
     * into a (sized as s->current, which it starts as a copy of), splitting them with the
     * allocation policy pol. seed is the only randomness; state in ctx depends only on the
     * snapshots seen. Errors leave a and f unspecified; the caller keeps the current allocation
     * and changes nothing.
     */
    int (*plan)(void *ctx, const struct snapshot *s, struct policy *pol, uint64_t seed,
                struct alloc *a, struct fleet_plan *f);
};

struct fleet_policy {
    const struct fleet_ops *ops;
    void *ctx;
};

/* The allocation policy's settings that fleet planner `fleet` implies where pcfg leaves them to
 * the default: under castor's planner, pollux's power mean is FLEET_CASTOR_P_MEAN, and a job with
 * a deadline may start on the replicas its owner asked for (deadline_start). pcfg is the caller's;
 * a p_mean already given is kept. */
void fleet_policy_defaults(const char *fleet, const char *policy, struct policy_config *pcfg);

extern const struct fleet_ops fleet_fixed;
extern const struct fleet_ops fleet_pollux;
extern const struct fleet_ops fleet_castor;

/* All fleet policies, NULL-terminated. */
extern const struct fleet_ops *const fleet_registry[];

/* The fleet policy called name, or NULL. */
const struct fleet_ops *fleet_find(const char *name);

/* Create an instance of the fleet policy called name. ERR_UNKNOWN for an unknown name; as
 * create. */
int fleet_new(const char *name, const struct fleet_config *cfg, struct fleet_policy *out);

/* Ask p for the next fleet plan and allocation (see fleet_ops.plan). */
int fleet_plan(struct fleet_policy *p, const struct snapshot *s, struct policy *pol, uint64_t seed,
               struct alloc *a, struct fleet_plan *f);

void fleet_free(struct fleet_policy *p);

/*
 * Split the nodes whose keep[] is set (s->nnodes values) with the allocation policy pol, writing
 * the allocation into a (rows and nodes as s's; nothing on nodes not kept). With no node kept,
 * every job gets nothing. Errors: what the policy returns, ERR_NOMEM.
 */
int fleet_allocate_kept(const struct snapshot *s, const unsigned char *keep, struct policy *pol,
                        uint64_t seed, struct alloc *a);

/*
 * Split the nodes whose keep_nodes[] is set among the jobs whose keep_jobs[] is set (NULL: all
 * jobs) with pol, writing those jobs' rows of a (rows and nodes as s's); other rows are left as
 * they are. With no node or no job kept, the kept jobs get nothing. Errors: what the policy
 * returns, ERR_NOMEM, ERR_RANGE.
 */
int fleet_allocate_part(const struct snapshot *s, const unsigned char *keep_nodes,
                        const unsigned char *keep_jobs, struct policy *pol, uint64_t seed,
                        struct alloc *a);

/* Cancel the n most recently launched booting instances (of spot offers when spot is 1, of
 * on-demand ones when 0, of any when -1), on the latest launch time ties the last listed. */
void fleet_cancel_newest(const struct snapshot *s, int spot, int n, struct fleet_plan *f);

/*
 * Shrink to want nodes: keep the ready nodes whose GPUs the current allocation uses most (the
 * first on ties) and those younger than the minimum billed time; release the others and cancel
 * booting instances beyond want (the newest first); split the kept nodes with pol into a.
 * Errors: as fleet_allocate_kept.
 */
int fleet_shrink_to(const struct snapshot *s, struct policy *pol, uint64_t seed, int want,
                    struct alloc *a, struct fleet_plan *f);

/* A job's best goodput (M0-equivalent samples per second) on r GPUs packed onto the fewest nodes
 * of gpn GPUs, from its goodput model; 0 without a model or where no batch size fits. */
double fleet_job_goodput(const struct snap_job *sj, int gpn, int r);

/* A job's speedup on r GPUs packed onto the fewest nodes of gpn GPUs, over one GPU, from its
 * goodput model at the best batch size (r itself before it has a model; 0 for r <= 0 or a
 * configuration no batch size fits). */
double fleet_job_speedup(const struct snap_job *sj, int gpn, int r);

#endif
