/* fleet_pollux.c: Pollux's autoscaler as a baseline (reference section 5): every interval it
 * records the cluster's utility (the jobs' speedups summed over the GPUs held); when the mean over
 * a window of intervals leaves the band [low, high] it searches the node count whose predicted
 * utility is closest to the band's middle (the paper's U = 2/3 and L = 1/2 by default), and grows
 * or shrinks one offer's nodes to it. It knows nothing of prices or preemptions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policies/fleet.h"
#include "util/error.h"

struct fleet_pollux_state {
    int offer;
    double high, low;
    int window, max_nodes;
    double *win;
    int nwin;
};

static int pollux_as_create(const struct fleet_config *cfg, void **ctx)
{
    struct fleet_pollux_state *st;

    if (cfg->offer < 0)
        return ERR_INVAL;
    if (!(st = calloc(1, sizeof(*st))))
        return ERR_NOMEM;
    st->offer = cfg->offer;
    st->high = cfg->util_high > 0 ? cfg->util_high : FLEET_UTIL_HIGH;
    st->low = cfg->util_low > 0 ? cfg->util_low : FLEET_UTIL_LOW;
    st->window = cfg->window > 0 ? cfg->window : 15;
    st->max_nodes = cfg->max_nodes > 0 ? cfg->max_nodes : 512;
    if (!(st->win = calloc((size_t)st->window, sizeof(double)))) {
        free(st);
        return ERR_NOMEM;
    }
    *ctx = st;
    return 0;
}

static void pollux_as_destroy(void *ctx)
{
    struct fleet_pollux_state *st = ctx;

    if (st)
        free(st->win);
    free(st);
}

/* Utility of allocation a: the jobs' speedups over the GPUs of gpus. */
static double pollux_as_utility(const struct snapshot *s, const struct alloc *a, int gpn, int gpus)
{
    double sum = 0;

    if (gpus <= 0)
        return 0;
    for (int j = 0; j < s->njobs; j++)
        sum += fleet_job_speedup(&s->jobs[j], gpn, a->count[j]);
    return sum / gpus;
}

/* The utility predicted on n fresh nodes of gpn GPUs, from the allocation policy's answer. */
static int pollux_as_predict(const struct snapshot *s, struct policy *pol, uint64_t seed, int n,
                             int gpn, double *util)
{
    struct snapshot h = *s;
    struct snap_node *nodes = calloc((size_t)n, sizeof(*nodes));
    struct alloc *cur = NULL, *a = NULL;
    int rc;

    if (!nodes)
        return ERR_NOMEM;
    for (int k = 0; k < n; k++)
        nodes[k] = (struct snap_node){.gpus = gpn, .offer = -1};
    if ((rc = alloc_new(s->njobs, n, n * gpn, &cur)) < 0 ||
        (rc = alloc_new(s->njobs, n, n * gpn, &a)) < 0)
        goto out;
    h.nnodes = n;
    h.nodes = nodes;
    h.current = cur;
    if ((rc = policy_allocate(pol, &h, seed, a)) < 0)
        goto out;
    *util = pollux_as_utility(s, a, gpn, n * gpn);
out:
    alloc_free(cur);
    alloc_free(a);
    free(nodes);
    return rc;
}

/* The node count in [1, max] whose predicted utility is closest to target (ties: more nodes),
 * by bisection on the utility, which falls as nodes are added. */
static int pollux_as_search(const struct snapshot *s, struct policy *pol, uint64_t seed, int max,
                            int gpn, double target, int *out)
{
    int lo = 1, hi = max, rc, best;
    double ulo, uhi;

    while (lo < hi) {
        int mid = (lo + hi) / 2;
        double u;

        if ((rc = pollux_as_predict(s, pol, seed, mid, gpn, &u)) < 0)
            return rc;
        if (u > target)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* lo: the fewest nodes at or below the target; compare with one fewer */
    best = lo;
    if (lo > 1) {
        if ((rc = pollux_as_predict(s, pol, seed, lo, gpn, &ulo)) < 0 ||
            (rc = pollux_as_predict(s, pol, seed, lo - 1, gpn, &uhi)) < 0)
            return rc;
        if (fabs(uhi - target) < fabs(ulo - target) - 1e-12)
            best = lo - 1;
    }
    *out = best;
    return 0;
}

static int pollux_as_plan(void *ctx, const struct snapshot *s, struct policy *pol, uint64_t seed,
                          struct alloc *a, struct fleet_plan *f)
{
    struct fleet_pollux_state *st = ctx;
    int gpn, gpus = 0, have, want, most, rc;
    unsigned char *keep;
    double mean = 0;

    if (st->offer >= s->noffers)
        return ERR_INVAL;
    gpn = s->offers[st->offer].gpus;
    have = s->nnodes + s->nbooting;
    if (s->njobs == 0) {
        /* nothing to run: scale to zero */
        st->nwin = 0;
        return fleet_shrink_to(s, pol, seed, 0, a, f);
    }
    if (have == 0) {
        fleet_plan_launch(s, st->offer, 1, 0, f);
        return 0;
    }
    if (!(keep = malloc((size_t)s->nnodes + 1)))
        return ERR_NOMEM;
    memset(keep, 1, (size_t)s->nnodes + 1);
    rc = fleet_allocate_kept(s, keep, pol, seed, a);
    free(keep);
    if (rc < 0)
        return rc;
    for (int k = 0; k < s->nnodes; k++)
        gpus += s->nodes[k].gpus;
    if (gpus == 0)
        return 0; /* everything still boots */
    memmove(st->win, st->win + 1, (size_t)(st->window - 1) * sizeof(double));
    st->win[st->window - 1] = pollux_as_utility(s, a, gpn, gpus);
    if (st->nwin < st->window)
        st->nwin++;
    if (st->nwin < st->window)
        return 0;
    for (int i = 0; i < st->window; i++)
        mean += st->win[i] / st->window;
    /* the noticed nodes still held count against max_nodes until they go */
    most = st->max_nodes - snapshot_noticed(s);
    if (!((mean < st->low && have > 1) || (mean > st->high && have < most)))
        return 0;
    if ((rc = pollux_as_search(s, pol, seed, most, gpn, (st->low + st->high) / 2, &want)) < 0)
        return rc;
    st->nwin = 0;
    if (want > have) {
        fleet_plan_launch(s, st->offer, want - have, 0, f);
        return 0;
    }
    return want < s->nnodes ? fleet_shrink_to(s, pol, seed, want, a, f) : 0;
}

const struct fleet_ops fleet_pollux = {
    .name = "pollux-autoscale",
    .summary = "Pollux's autoscaler: hold the node count whose utility is closest to 1/2",
    .create = pollux_as_create,
    .destroy = pollux_as_destroy,
    .plan = pollux_as_plan,
};
