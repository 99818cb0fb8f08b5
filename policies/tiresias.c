/* tiresias.c: Tiresias, the published Pollux simulator's baseline: two-queue discretised LAS. */
#include "policies/policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* GPU-seconds of service (wall time held x gang size) after which a job leaves queue 0. */
#define TIRESIAS_THRESHOLD (3600.0 * 16.0)

/* Seconds without a call listing a job after which it is forgotten (besides a whole round). */
#define TIRESIAS_FORGET_S 3600.0

enum tiresias_status { TIRESIAS_PENDING, TIRESIAS_RUNNING };

/* What Tiresias remembers of one job between rounds. */
struct tiresias_job {
    char *name; /* owned */
    enum tiresias_status status;
    int queue;         /* 0 or 1 */
    double last_check; /* seconds */
    double executed;   /* seconds held while RUNNING */
    double seen;       /* the latest round (snapshot time) whose snapshot listed it */
};

/*
 * The state across rounds: the jobs of the last snapshot, in its order, then the jobs remembered
 * though it did not list them; and the two queues as ordered lists of indices into jobs. A round
 * is a snapshot time: a caller that splits one round's jobs among several calls (castor's planner
 * with split markets: fleet_allocate_part) calls at the same time, each call with some of them,
 * so a job missing from a call keeps its place and service. A job is forgotten once a whole round
 * and TIRESIAS_FORGET_S have passed without it in any call: it finished. The hour is for a split
 * whose part of the fleet holds no node for some rounds, when no call is made for its jobs: they
 * keep their service meanwhile (job names are not used twice, so one remembered after its end
 * holds nothing back).
 */
struct tiresias {
    int njobs;
    struct tiresias_job *jobs;
    int *queue[2];
    int qlen[2];
    double round, prev; /* the latest round's time, and the one before it */
};

static int tiresias_create(const struct policy_config *cfg, void **ctx)
{
    struct tiresias *t;

    (void)cfg;
    t = calloc(1, sizeof(*t));
    if (!t)
        return ERR_NOMEM;
    *ctx = t;
    return 0;
}

/* Release a state's jobs and queues (not the state itself). */
static void tiresias_clear(struct tiresias *t)
{
    for (int i = 0; i < t->njobs; i++)
        free(t->jobs[i].name);
    free(t->jobs);
    free(t->queue[0]);
    free(t->queue[1]);
    memset(t, 0, sizeof(*t));
}

static void tiresias_destroy(void *ctx)
{
    struct tiresias *t = ctx;

    if (!t)
        return;
    tiresias_clear(t);
    free(t);
}

/* FNV-1a, for the name table. */
static uint64_t tiresias_hash(const char *name)
{
    uint64_t h = 1469598103934665603ull;

    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

/* The slot of name in an open-addressing table of cap (a power of two) snapshot indices, -1 for
 * empty: the slot holding it, or the empty one where it would go. */
static size_t tiresias_slot(const struct snapshot *s, const int *table, size_t cap,
                            const char *name)
{
    size_t i = (size_t)tiresias_hash(name) & (cap - 1);

    while (table[i] >= 0 && strcmp(s->jobs[table[i]].name, name) != 0)
        i = (i + 1) & (cap - 1);
    return i;
}

/*
 * The new state for snapshot s: the jobs of s in its order, each carrying what t remembered of it
 * (new ones PENDING, appended to queue 0 in submission order), then the jobs t remembers that s
 * does not list, kept while they were in a call of this round or of the one before (struct
 * tiresias); the others are dropped. Queues keep their order. t is left as it was. ERR_INVAL for
 * a job without a name or a name twice, ERR_NOMEM.
 */
static int tiresias_carry(const struct tiresias *t, const struct snapshot *s, struct tiresias *n)
{
    size_t cap = 16, size = (size_t)s->njobs + (size_t)t->njobs + 1;
    int *table = NULL, *seen = NULL;
    int rc = ERR_NOMEM;

    memset(n, 0, sizeof(*n));
    n->round = s->now > t->round ? s->now : t->round;
    n->prev = s->now > t->round ? t->round : t->prev;
    while (cap < 2 * (size_t)s->njobs)
        cap *= 2;
    table = malloc(cap * sizeof(int));
    seen = calloc((size_t)s->njobs + 1, sizeof(int));
    n->jobs = calloc(size, sizeof(*n->jobs));
    n->queue[0] = malloc(size * sizeof(int));
    n->queue[1] = malloc(size * sizeof(int));
    if (!table || !seen || !n->jobs || !n->queue[0] || !n->queue[1])
        goto out;
    memset(table, -1, cap * sizeof(int));
    for (int j = 0; j < s->njobs; j++) {
        size_t slot;

        rc = ERR_INVAL;
        if (!s->jobs[j].name)
            goto out;
        slot = tiresias_slot(s, table, cap, s->jobs[j].name);
        if (table[slot] >= 0)
            goto out;
        table[slot] = j;
        rc = ERR_NOMEM;
        n->jobs[j].name = strdup(s->jobs[j].name);
        if (!n->jobs[j].name)
            goto out;
        n->jobs[j].seen = n->round;
        n->njobs = j + 1;
    }
    /* the remembered jobs, queue by queue in order, move to their new index: those of s to
     * theirs, those it does not list (another call of the round has them) after its jobs */
    for (int q = 0; q < 2; q++)
        for (int k = 0; k < t->qlen[q]; k++) {
            const struct tiresias_job *old = &t->jobs[t->queue[q][k]];
            int j = table[tiresias_slot(s, table, cap, old->name)];

            if (old->seen < n->prev && old->seen < n->round - TIRESIAS_FORGET_S)
                continue; /* in no call for a whole round and an hour: it ended */
            if (j < 0) {
                j = n->njobs;
                if (!(n->jobs[j].name = strdup(old->name)))
                    goto out;
                n->jobs[j].seen = old->seen;
                n->njobs = j + 1;
            } else {
                seen[j] = 1;
            }
            n->jobs[j].status = old->status;
            n->jobs[j].queue = q;
            n->jobs[j].last_check = old->last_check;
            n->jobs[j].executed = old->executed;
            n->queue[q][n->qlen[q]++] = j;
        }
    for (int j = 0; j < s->njobs; j++)
        if (!seen[j]) {
            n->jobs[j].status = TIRESIAS_PENDING;
            n->jobs[j].queue = 0;
            n->queue[0][n->qlen[0]++] = j;
        }
    rc = 0;
out:
    free(table);
    free(seen);
    if (rc < 0)
        tiresias_clear(n);
    return rc;
}

/* Service accounting and demotion (SPEC 4.3): RUNNING jobs add the time since their last check,
 * and a queue-0 job whose time x gang size reaches the threshold moves to the end of queue 1. */
static void tiresias_account(struct tiresias *n, const struct snapshot *s, double now)
{
    int kept = 0;

    for (int j = 0; j < s->njobs; j++) {
        struct tiresias_job *tj = &n->jobs[j];

        if (tj->status == TIRESIAS_RUNNING) {
            tj->executed += now - tj->last_check;
            tj->last_check = now;
            if (tj->queue == 0 &&
                tj->executed * (double)s->jobs[j].req_replicas >= TIRESIAS_THRESHOLD) {
                tj->queue = 1;
                n->queue[1][n->qlen[1]++] = j;
            }
        } else {
            tj->last_check = now;
        }
    }
    for (int k = 0; k < n->qlen[0]; k++)
        if (n->jobs[n->queue[0][k]].queue == 0)
            n->queue[0][kept++] = n->queue[0][k];
    n->qlen[0] = kept;
}

/*
 * Tiresias (SPEC 4): jobs are served queue 0 first, each queue in order; a job runs if its whole
 * gang (req_replicas GPUs) fits in what is left, with no head-of-line blocking. Running jobs keep
 * their nodes; newly running ones are placed on the nodes with the most free GPUs in queue order;
 * the others are preempted. State in ctx; seed unused. ERR_INVAL for bad sizes, a gang smaller
 * than one GPU, or a missing or repeated job name; ERR_NOMEM; ERR_RANGE if the current allocation
 * of the running jobs leaves too few GPUs. On error ctx is unchanged.
 */
static int tiresias_allocate(void *ctx, const struct snapshot *s, uint64_t seed, struct alloc *out)
{
    struct tiresias *t = ctx;
    struct tiresias n;
    int *free_gpus = NULL;
    int left, rc;

    (void)seed;
    if (!t || !s || !out || out->njobs != s->njobs || out->nnodes != s->nnodes)
        return ERR_INVAL;
    for (int j = 0; j < s->njobs; j++)
        if (s->jobs[j].req_replicas < 1)
            return ERR_INVAL;
    free_gpus = calloc((size_t)s->nnodes, sizeof(int));
    if (!free_gpus)
        return ERR_NOMEM;
    if ((rc = tiresias_carry(t, s, &n)) < 0)
        goto out;
    /* the simulator's clock is whole seconds: now = int(current_time) */
    tiresias_account(&n, s, trunc(s->now));

    /* status pass: whole gangs in queue order while GPUs last; the rest are preempted */
    left = snapshot_gpus(s);
    for (int q = 0; q < 2; q++)
        for (int k = 0; k < n.qlen[q]; k++) {
            int j = n.queue[q][k];

            if (j >= s->njobs) /* not this call's: as it was */
                continue;
            if (s->jobs[j].req_replicas <= left) {
                n.jobs[j].status = TIRESIAS_RUNNING;
                left -= s->jobs[j].req_replicas;
            } else {
                n.jobs[j].status = TIRESIAS_PENDING;
                alloc_clear_job(out, j);
            }
        }

    /* allocation pass: running jobs without GPUs are placed, queue order */
    alloc_node_usage(out, free_gpus);
    for (int i = 0; i < s->nnodes; i++) {
        free_gpus[i] = s->nodes[i].gpus - free_gpus[i];
        if (free_gpus[i] < 0)
            free_gpus[i] = 0;
    }
    for (int q = 0; q < 2; q++)
        for (int k = 0; k < n.qlen[q]; k++) {
            int j = n.queue[q][k];

            if (j >= s->njobs || n.jobs[j].status != TIRESIAS_RUNNING || out->count[j] > 0)
                continue;
            if ((rc = policy_fill_most_free(out, j, s->jobs[j].req_replicas, free_gpus)) < 0) {
                tiresias_clear(&n);
                goto out;
            }
        }
    tiresias_clear(t);
    *t = n;
out:
    free(free_gpus);
    return rc;
}

const struct policy_ops policy_tiresias = {
    .name = "tiresias",
    .gang = 1,
    .summary = "Tiresias: two-queue discretised least-attained-service with gang scheduling",
    .create = tiresias_create,
    .destroy = tiresias_destroy,
    .allocate = tiresias_allocate,
};
