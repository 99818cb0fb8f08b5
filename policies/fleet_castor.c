/* fleet_castor.c: castor's fleet planner. Each round it prices every offer per GPU-hour of useful
 * work (the price over the fraction of time that preemptions leave: rate times the restart delay
 * and the work since the last checkpoint), sizes every job by a marginal-gain greedy on its
 * goodput model (efficiency: a GPU is worth renting while it adds at least `threshold` of one
 * GPU's goodput per dollar at the best offer; budget: the most goodput under a cap in $/h), packs
 * the wanted GPUs into nodes, and launches on the cheapest useful offer or lets surplus nodes go
 * once they have been surplus for two rounds and are past their minimum billed time. The
 * allocation policy then splits the nodes kept. docs/fleet.md describes it and its numbers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policies/fleet.h"
#include "util/error.h"

struct fleet_castor_state {
    enum fleet_mode mode;
    double threshold, budget, restart_s;
    int max_nodes;
    int surplus_rounds; /* consecutive rounds with more nodes than wanted */
};

static int castor_fleet_create(const struct fleet_config *cfg, void **ctx)
{
    struct fleet_castor_state *st;

    if (cfg->mode == FLEET_BUDGET && !(cfg->budget > 0))
        return ERR_INVAL;
    if (!(st = calloc(1, sizeof(*st))))
        return ERR_NOMEM;
    st->mode = cfg->mode;
    st->threshold = cfg->threshold > 0 ? cfg->threshold : 0.5;
    st->budget = cfg->budget;
    st->restart_s = cfg->restart_s > 0 ? cfg->restart_s : 30.0;
    st->max_nodes = cfg->max_nodes > 0 ? cfg->max_nodes : 512;
    *ctx = st;
    return 0;
}

static void castor_fleet_destroy(void *ctx)
{
    free(ctx);
}

/* Dollars per GPU-hour of useful work on offer o, for jobs checkpointing every ckpt seconds. */
static double castor_fleet_price(const struct fleet_castor_state *st, const struct snap_offer *o,
                                 double ckpt)
{
    double lost_s = st->restart_s + ckpt / 2, loss = o->preempt_rate * lost_s / 3600.0;

    if (loss > 0.9)
        loss = 0.9;
    return o->price / o->gpus / (1.0 - loss);
}

/* Job j's best next step from want GPUs: to *t GPUs, gaining *k speedup per GPU added (0 if
 * none is allowed). */
static void castor_fleet_next(const struct snap_job *sj, int gpn, int want, double sp, int maxgpus,
                              double *k, int *t)
{
    int explore = sj->has_model ? 2 * sj->max_profiled_replicas : 1;
    int lim = policy_replica_limit(sj, explore, maxgpus);

    *k = 0;
    *t = want;
    for (int u = want + 1; u <= lim && u <= want + gpn; u++) {
        double g = (fleet_job_speedup(sj, gpn, u) - sp) / (u - want);

        if (g > *k + 1e-12) {
            *k = g;
            *t = u;
        }
    }
}

/* The GPUs each job is worth (want[j]), by marginal gain per GPU over the next gpn counts.
 * ERR_NOMEM. */
static int castor_fleet_size(const struct fleet_castor_state *st, const struct snapshot *s, int gpn,
                             double gpu_price, int maxgpus, int *want)
{
    double rate = 0, *sp = calloc((size_t)s->njobs + 1, sizeof(double));
    double *key = calloc((size_t)s->njobs + 1, sizeof(double));
    int total = 0, *to = calloc((size_t)s->njobs + 1, sizeof(int));

    if (!sp || !key || !to) {
        free(sp);
        free(key);
        free(to);
        return ERR_NOMEM;
    }
    for (int j = 0; j < s->njobs; j++) {
        want[j] = s->jobs[j].min_replicas > 1 ? s->jobs[j].min_replicas : 1;
        total += want[j];
        rate += want[j] * gpu_price;
        sp[j] = fleet_job_speedup(&s->jobs[j], gpn, want[j]);
        castor_fleet_next(&s->jobs[j], gpn, want[j], sp[j], maxgpus, &key[j], &to[j]);
    }
    while (total < maxgpus) {
        int bj = -1;

        for (int j = 0; j < s->njobs; j++)
            if (to[j] > want[j] && (bj < 0 || key[j] > key[bj] + 1e-12))
                bj = j;
        if (bj < 0)
            break;
        if (st->mode == FLEET_BUDGET ? rate + (to[bj] - want[bj]) * gpu_price > st->budget
                                     : key[bj] < st->threshold)
            break;
        total += to[bj] - want[bj];
        rate += (to[bj] - want[bj]) * gpu_price;
        want[bj] = to[bj];
        sp[bj] = fleet_job_speedup(&s->jobs[bj], gpn, want[bj]);
        castor_fleet_next(&s->jobs[bj], gpn, want[bj], sp[bj], maxgpus, &key[bj], &to[bj]);
    }
    free(sp);
    free(key);
    free(to);
    return 0;
}

/* Nodes of gpn GPUs that hold every job's want: whole nodes, then the remainders first-fit
 * decreasing. */
static int castor_fleet_pack(const int *want, int n, int gpn)
{
    int nodes = 0, *rem = calloc((size_t)n + 1, sizeof(int)),
        *room = calloc((size_t)n + 1, sizeof(int));
    int nrem = 0, nroom = 0;

    if (!rem || !room) {
        free(rem);
        free(room);
        return -1;
    }
    for (int j = 0; j < n; j++) {
        nodes += want[j] / gpn;
        if (want[j] % gpn)
            rem[nrem++] = want[j] % gpn;
    }
    for (int i = 0; i < nrem; i++) /* largest first: a selection sort, n is small */
        for (int k = i + 1; k < nrem; k++)
            if (rem[k] > rem[i]) {
                int t = rem[i];

                rem[i] = rem[k];
                rem[k] = t;
            }
    for (int i = 0; i < nrem; i++) {
        int b = 0;

        while (b < nroom && room[b] < rem[i])
            b++;
        if (b == nroom)
            room[nroom++] = gpn;
        room[b] -= rem[i];
    }
    free(rem);
    free(room);
    return nodes + nroom;
}

static int castor_fleet_plan(void *ctx, const struct snapshot *s, struct policy *pol, uint64_t seed,
                             struct alloc *a, struct fleet_plan *f)
{
    struct fleet_castor_state *st = ctx;
    double ckpt = 0, best_price = INFINITY;
    int best = -1, gpn, *want = NULL, nodes, have = s->nnodes + s->nbooting, rc;
    unsigned char *keep = NULL;

    if (s->njobs == 0) {
        st->surplus_rounds = 0;
        return fleet_shrink_to(s, pol, seed, 0, a, f);
    }
    for (int j = 0; j < s->njobs; j++)
        ckpt += (s->jobs[j].checkpoint_s > 0 ? s->jobs[j].checkpoint_s : 3600.0) / s->njobs;
    for (int o = 0; o < s->noffers; o++) {
        double p = castor_fleet_price(st, &s->offers[o], ckpt);

        if (!s->offers[o].unavailable && p < best_price) {
            best_price = p;
            best = o;
        }
    }
    gpn = best >= 0 ? s->offers[best].gpus : (s->nnodes > 0 ? s->nodes[0].gpus : 1);
    if (!(want = calloc((size_t)s->njobs + 1, sizeof(int))) ||
        !(keep = malloc((size_t)s->nnodes + 1))) {
        rc = ERR_NOMEM;
        goto out;
    }
    if ((rc = castor_fleet_size(st, s, gpn, isfinite(best_price) ? best_price : 0,
                                st->max_nodes * gpn, want)) < 0)
        goto out;
    if ((nodes = castor_fleet_pack(want, s->njobs, gpn)) < 0) {
        rc = ERR_NOMEM;
        goto out;
    }
    if (nodes > st->max_nodes)
        nodes = st->max_nodes;
    if (nodes > have && best >= 0)
        f->launch[best] = nodes - have;
    if (nodes < s->nnodes) {
        if (++st->surplus_rounds >= 2) {
            rc = fleet_shrink_to(s, pol, seed, nodes, a, f);
            goto out;
        }
    } else {
        st->surplus_rounds = 0;
    }
    /* cancel launches no longer wanted (the newest first) */
    for (int b = s->nbooting - 1, extra = have - (nodes > s->nnodes ? nodes : s->nnodes);
         b >= 0 && extra > 0; b--, extra--)
        f->cancel[b] = 1;
    memset(keep, 1, (size_t)s->nnodes + 1);
    rc = fleet_allocate_kept(s, keep, pol, seed, a);
out:
    free(want);
    free(keep);
    return rc;
}

const struct fleet_ops fleet_castor = {
    .name = "castor",
    .summary = "castor's fleet planner: rent what each job's goodput per dollar is worth",
    .create = castor_fleet_create,
    .destroy = castor_fleet_destroy,
    .plan = castor_fleet_plan,
};
