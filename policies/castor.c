/* castor.c: castor's own scheduling policy. Each job's replica count is chosen by a marginal-gain
 * greedy (a priority queue over jobs, so the cost grows about linearly with jobs and GPUs) on a
 * weighted utility of its goodput speedup over one GPU: jobs with less work left weigh more
 * (shortest remaining first, the work left read from the length the job declared and its goodput
 * model; least attained service for a job that declared none), and a change of allocation is
 * priced by the progress its restart costs over the job's remaining time, with a hysteresis
 * margin; GPUs nobody wants at that price are then offered without the margin and with a wider
 * exploration limit. Before the greedy, a job whose work left is not known gets its smallest
 * allocation (one GPU or its gang minimum) while GPUs last, so none is starved on a guess. The
 * counts are then placed: jobs that keep their count keep their GPUs, the
 * others are placed single-node jobs first, then largest first, consolidated, one distributed job
 * per node; a job that cannot be placed at its count is capped at what it got and the counts are
 * chosen again (at most three times). docs/scheduler.md describes the algorithm, its cost and what
 * was measured. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/bsz.h"
#include "policies/policy.h"
#include "util/error.h"

#define CASTOR_EPS 1e-3

struct castor {
    double p;               /* utility exponent (power mean) */
    double delta;           /* restart penalty, seconds */
    double work_scale;      /* GPU-seconds: the unit of work left in the weight */
    double work_pow;        /* weight = (1 + work left / work_scale)^-work_pow */
    double las_scale;       /* GPU-seconds: the unit of attained service in the weight of a job
                               that declared no length */
    double las_pow;         /* its weight = (1 + attained / las_scale)^-las_pow */
    double min_horizon;     /* seconds: the shortest horizon a restart is priced over */
    double hysteresis;      /* relative gain a job's change must bring */
    double idle_hysteresis; /* the same, for GPUs that no job wants otherwise; <0: no idle phase */
    double idle_explore;    /* the idle phase's exploration limit, times the replicas measured
                               (0: none; the batch, owner's and cluster limits still apply) */
    int avoid_interference;
    int floor_unknown; /* 1: a job whose work left is not known gets its smallest allocation
                          before any job grows (while GPUs last) */
    int decides;       /* count choices at most, each after the last one's jobs that could
                          not be placed at their counts were capped at what was placed */
};

struct castor_job {
    int maxr;          /* replicas allowed now (maxr_main, then maxr_idle in the idle phase) */
    int maxr_main;     /* replicas allowed (owner's limit, exploration limit, batch limit) */
    int maxr_idle;     /* replicas allowed for otherwise idle GPUs */
    double keepf_main; /* keepf with the main hysteresis */
    double keepf_idle; /* keepf with the idle hysteresis */
    double base;       /* goodput on one GPU (speedup 1) */
    double left;       /* work left: GPU-seconds on one GPU at today's goodput; <0: not known */
    double w;          /* weight */
    double keepf;      /* factor on the speedup when the job's GPUs change (keepf_main, then
                          keepf_idle in the idle phase) */
    int cur_r;         /* replicas held now */
    int cur_n;         /* nodes held now */
    double *good;      /* goodput on r replicas packed onto the fewest nodes; NAN = not computed */
    int count;         /* the greedy's count */
    int placed;        /* replicas placed */
    int keep;          /* keeps its current GPUs */
};

static int castor_create(const struct policy_config *cfg, void **ctx)
{
    struct castor *c = calloc(1, sizeof(*c));

    if (!c)
        return ERR_NOMEM;
    c->p = policy_p_mean(cfg, 1.0);
    c->delta = cfg->restart_penalty > 0 ? cfg->restart_penalty : 30.0;
    c->work_scale = 20000.0;
    c->work_pow = 1.0;
    c->las_scale = 3600.0;
    c->las_pow = 0.25;
    c->min_horizon = 300.0;
    c->hysteresis = 0.15;
    c->idle_hysteresis = 0.0;
    c->idle_explore = 4.0;
    c->avoid_interference = !cfg->no_interference_avoidance;
    c->floor_unknown = 1;
    c->decides = 3;
    *ctx = c;
    return 0;
}

static void castor_destroy(void *ctx)
{
    free(ctx);
}

static double castor_f(const struct castor *c, double s)
{
    if (c->p == 0)
        return log(s + CASTOR_EPS);
    return c->p < 0 ? -pow(s + CASTOR_EPS, c->p) : pow(s + CASTOR_EPS, c->p);
}

/* Goodput of job j on r replicas over `nodes` nodes. */
static double castor_goodput_at(const struct snap_job *sj, int nodes, int r)
{
    struct bsz_choice ch;

    return bsz_optimize(&sj->tput, &sj->grad, &sj->lim, nodes, r, &ch) == 0 ? ch.goodput : 0.0;
}

/* Speedup of job j on r replicas over `nodes` nodes (0: the fewest); memoised for the fewest. */
static double castor_speedup(const struct snap_job *sj, struct castor_job *q, int gpn, int nodes,
                             int r)
{
    int minn = (r + gpn - 1) / gpn;

    if (r <= 0)
        return 0.0;
    if (!sj->has_model || !(q->base > 0))
        return (double)r;
    if (nodes == 0 || nodes == minn) {
        if (r > q->maxr)
            return castor_goodput_at(sj, minn, r) / q->base;
        if (isnan(q->good[r]))
            q->good[r] = castor_goodput_at(sj, minn, r);
        return q->good[r] / q->base;
    }
    return castor_goodput_at(sj, nodes, r) / q->base;
}

/* Job j's utility on r replicas placed afresh (changed) or kept as they are. */
static double castor_utility(const struct castor *c, const struct snap_job *sj,
                             struct castor_job *q, int gpn, int nodes, int r, int changed)
{
    double sp = castor_speedup(sj, q, gpn, nodes, r);

    if (changed && r > 0)
        sp *= q->keepf;
    return q->w * castor_f(c, sp);
}

/* The best utility of r replicas for job j: afresh, or (for its current count) as it holds them. */
static double castor_best_utility(const struct castor *c, const struct snap_job *sj,
                                  struct castor_job *q, int gpn, int r)
{
    double u = castor_utility(c, sj, q, gpn, 0, r, 1);

    if (r == q->cur_r && r > 0) {
        double uk = castor_utility(c, sj, q, gpn, q->cur_n, r, 0);

        if (uk > u)
            u = uk;
    }
    return u;
}

/* The replica limit: the owner's, `explore` times the replicas measured (at least 1; explore 0:
 * no exploration limit once measured, 1 before), the batch limit, the cluster. */
static int castor_maxr(const struct snap_job *sj, double explore, int gpus)
{
    int cap = explore > 0 ? (int)(explore * sj->max_profiled_replicas)
                          : (sj->max_profiled_replicas > 0 ? gpus : 1);

    return policy_replica_limit(sj, cap, gpus);
}

/* Job j's work left: GPU-seconds on one GPU at the goodput its model predicts now (the progress
 * still to make, in iterations at M0, times M0 over the goodput on one GPU, in M0-equivalent
 * samples per second); -1 when the job declared no length or has no model yet. */
static double castor_left(const struct snap_job *sj, const struct castor_job *q)
{
    double left = sj->progress_target - sj->progress;

    if (!(sj->progress_target > 0) || !sj->has_model || !(q->base > 0))
        return -1.0;
    return (left > 0 ? left : 0) * sj->lim.init_bsz / q->base;
}

static int castor_prepare(const struct castor *c, const struct snapshot *s, struct castor_job *cj,
                          int gpn)
{
    int gpus = snapshot_gpus(s);

    for (int j = 0; j < s->njobs; j++) {
        const struct snap_job *sj = &s->jobs[j];
        struct castor_job *q = &cj[j];
        double age = s->now - sj->submit_time, horizon;
        int maxr = castor_maxr(sj, 2.0, gpus);
        int maxi = c->idle_hysteresis >= 0 ? castor_maxr(sj, c->idle_explore, gpus) : maxr;

        if (maxi < maxr)
            maxi = maxr;
        q->maxr = q->maxr_main = maxr;
        q->maxr_idle = maxi;
        q->good = malloc((size_t)(maxi + 1) * sizeof(double));
        if (!q->good)
            return ERR_NOMEM;
        for (int r = 0; r <= maxi; r++)
            q->good[r] = NAN;
        q->base = 0;
        if (sj->has_model)
            q->base = castor_goodput_at(sj, 1, 1);
        q->cur_r = s->current->count[j];
        q->cur_n = alloc_nodes_used(s->current, j);
        q->count = 0;
        q->left = castor_left(sj, q);
        /* shortest remaining first where the work left is known, least attained service else */
        if (q->left >= 0)
            q->w = pow(1.0 + q->left / c->work_scale, -c->work_pow);
        else
            q->w = pow(1.0 + sj->attained_service / c->las_scale, -c->las_pow);
        q->w *= snapshot_job_weight(sj);
        /* a restart loses delta seconds of the time the job has left: its work left at its
         * current speed where known, else its age (the expected remaining time of a job that
         * has run that long); never less than min_horizon */
        horizon = age;
        if (q->left >= 0) {
            double sp = q->cur_r > 0 ? castor_speedup(sj, q, gpn, q->cur_n, q->cur_r) : 1.0;

            horizon = q->left / (sp > 1.0 ? sp : 1.0);
        }
        if (horizon < c->min_horizon)
            horizon = c->min_horizon;
        q->keepf = horizon > c->delta ? 1.0 - c->delta / horizon : 0.0;
        q->keepf_idle = q->keepf / (1.0 + (c->idle_hysteresis > 0 ? c->idle_hysteresis : 0));
        q->keepf /= 1.0 + c->hysteresis;
        q->keepf_main = q->keepf;
    }
    return 0;
}

/* A max-heap of (gain per GPU, job, target count), with lazy deletion by version. */
struct castor_heap_item {
    double key;
    int j, to, ver;
};

struct castor_heap {
    struct castor_heap_item *v;
    int n;
};

static void castor_heap_push(struct castor_heap *h, struct castor_heap_item it)
{
    int i = h->n++;

    while (i > 0) {
        int p = (i - 1) / 2;

        /* ties: the lower job index first, for determinism */
        if (h->v[p].key > it.key || (h->v[p].key == it.key && h->v[p].j < it.j))
            break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = it;
}

static struct castor_heap_item castor_heap_pop(struct castor_heap *h)
{
    struct castor_heap_item top = h->v[0], last = h->v[--h->n];
    int i = 0;

    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        const struct castor_heap_item *mv = &last;

        if (l < h->n && (h->v[l].key > mv->key || (h->v[l].key == mv->key && h->v[l].j < mv->j)))
            m = l, mv = &h->v[l];
        if (r < h->n && (h->v[r].key > mv->key || (h->v[r].key == mv->key && h->v[r].j < mv->j)))
            m = r, mv = &h->v[r];
        if (m == i)
            break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n > 0)
        h->v[i] = last;
    return top;
}

/* Job j's best next step from its count, with at most `room` more GPUs: the target count and its
 * gain per GPU (the steepest of the next gpn counts, and of its current count when that is
 * higher); 0 when no step gains. */
static int castor_next(const struct castor *c, const struct snap_job *sj, struct castor_job *q,
                       int gpn, int room, double *key)
{
    int r = q->count, lim = q->maxr < r + room ? q->maxr : r + room, best = 0;
    int from = r + 1, upto = r + gpn;
    double u0 = castor_best_utility(c, sj, q, gpn, r), bk = 0;

    if (r == 0 && sj->min_replicas > 1) /* a gang: all of its minimum or nothing */
        from = upto = sj->min_replicas;
    for (int t = from; t <= lim && t <= upto; t++) {
        double k = (castor_best_utility(c, sj, q, gpn, t) - u0) / (t - r);

        if (k > bk)
            bk = k, best = t;
    }
    if (q->cur_r > r + gpn && q->cur_r <= lim && q->cur_r >= sj->min_replicas) {
        double k = (castor_best_utility(c, sj, q, gpn, q->cur_r) - u0) / (q->cur_r - r);

        if (k > bk)
            bk = k, best = q->cur_r;
    }
    *key = bk;
    return best;
}

/* The floor: every job whose work left is not known (least attained service weighs it) and that
 * gains from GPUs gets its smallest allocation (one GPU, or its gang minimum) before any job
 * grows, the steepest first while *free_gpus last. Without a length, starving a job on the
 * strength of its attained service is a guess; a job left with nothing is also the term that
 * dominates Pollux's objective (1 / (0 + 1e-3)). h is scratch (left empty). */
static void castor_floor(const struct castor *c, const struct snapshot *s, struct castor_job *cj,
                         int gpn, struct castor_heap *h, int *free_gpus)
{
    for (int j = 0; j < s->njobs; j++) {
        const struct snap_job *sj = &s->jobs[j];
        int m = sj->min_replicas > 1 ? sj->min_replicas : 1;
        double k;

        if (cj[j].left >= 0 || m > cj[j].maxr)
            continue;
        k = (castor_best_utility(c, sj, &cj[j], gpn, m) -
             castor_best_utility(c, sj, &cj[j], gpn, 0)) /
            m;
        if (k > 0)
            castor_heap_push(h, (struct castor_heap_item){k, j, m, 0});
    }
    while (h->n > 0 && *free_gpus > 0) {
        struct castor_heap_item it = castor_heap_pop(h);

        if (it.to <= *free_gpus) {
            *free_gpus -= it.to;
            cj[it.j].count = it.to;
        }
    }
    h->n = 0;
}

/* Choose replica counts: the floor (jobs of unknown length), then repeatedly give the steepest
 * step to its job. */
static int castor_choose_counts(const struct castor *c, const struct snapshot *s,
                                struct castor_job *cj, int gpus, int gpn)
{
    int J = s->njobs, free_gpus = gpus, rc = 0;
    struct castor_heap h = {0};
    int *ver = calloc((size_t)J, sizeof(int));

    h.v = malloc((size_t)(2 * J + 1) * sizeof(*h.v));
    if (!h.v || !ver) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (int j = 0; j < J; j++) {
        cj[j].maxr = cj[j].maxr_main;
        cj[j].keepf = cj[j].keepf_main;
        cj[j].count = 0;
    }
    if (c->floor_unknown)
        castor_floor(c, s, cj, gpn, &h, &free_gpus);
    for (int phase = 0; phase < 2 && free_gpus > 0; phase++) {
        if (phase == 1) {
            /* GPUs no job wanted at the full price: offer them with the idle hysteresis and
             * exploration limit */
            if (c->idle_hysteresis < 0)
                break;
            for (int j = 0; j < J; j++) {
                cj[j].keepf = cj[j].keepf_idle;
                cj[j].maxr = cj[j].maxr_idle;
                ver[j]++;
            }
            h.n = 0;
        }
        for (int j = 0; j < J; j++) {
            double k;
            int to = castor_next(c, &s->jobs[j], &cj[j], gpn, free_gpus, &k);

            if (to > 0)
                castor_heap_push(&h, (struct castor_heap_item){k, j, to, ver[j]});
        }
        while (h.n > 0 && free_gpus > 0) {
            struct castor_heap_item it = castor_heap_pop(&h);
            struct castor_job *q = &cj[it.j];
            double k;
            int to;

            if (it.ver != ver[it.j])
                continue;
            if (it.to - q->count <= free_gpus) {
                free_gpus -= it.to - q->count;
                q->count = it.to;
            }
            ver[it.j]++;
            to = castor_next(c, &s->jobs[it.j], q, gpn, free_gpus, &k);
            if (to > 0)
                castor_heap_push(&h, (struct castor_heap_item){k, it.j, to, ver[it.j]});
        }
    }
out:
    free(h.v);
    free(ver);
    return rc;
}

/* Placement order: jobs that fit on one node (gpn GPUs) first, they need their GPUs together
 * while a multi-node job can spread over any node; then by count, largest first (they fragment
 * most); then by index. */
static int castor_cmp_place(int ja, int jb, const struct castor_job *cj, int gpn)
{
    int sa = cj[ja].count <= gpn, sb = cj[jb].count <= gpn;

    if (sa != sb)
        return sb - sa;
    if (cj[ja].count != cj[jb].count)
        return cj[jb].count - cj[ja].count;
    return ja - jb;
}

/* Stable sort of order[] into placement order (merge sort: O(J log J)). */
static void castor_sort(int *order, int *tmp, int n, const struct castor_job *cj, int gpn)
{
    if (n < 2)
        return;
    castor_sort(order, tmp, n / 2, cj, gpn);
    castor_sort(order + n / 2, tmp, n - n / 2, cj, gpn);
    for (int i = 0, a = 0, b = n / 2; i < n; i++) {
        if (b >= n || (a < n / 2 && castor_cmp_place(order[a], order[b], cj, gpn) <= 0))
            tmp[i] = order[a++];
        else
            tmp[i] = order[b++];
    }
    memcpy(order, tmp, (size_t)n * sizeof(int));
}

/* 1 when job j's current GPUs are all free in free_gpus and, if it spans nodes, none of its nodes
 * holds another distributed job (dist); else 0. */
static int castor_current_fits(const struct castor *c, const struct snapshot *s, int j,
                               const struct castor_job *q, const int *free_gpus, const int *dist)
{
    const int *row = s->current->node + (size_t)j * (size_t)s->current->width;

    for (int k = 0; k < q->cur_r; k++)
        if (free_gpus[row[k]] < alloc_on_node(s->current, j, row[k]) ||
            (q->cur_n > 1 && c->avoid_interference && dist[row[k]]))
            return 0;
    return 1;
}

/* Count job j's current GPUs as taken in free_gpus and dist (its row in out is the caller's). */
static void castor_take_current(const struct snapshot *s, int j, const struct castor_job *q,
                                int *free_gpus, int *dist)
{
    const int *row = s->current->node + (size_t)j * (size_t)s->current->width;

    for (int k = 0; k < q->cur_r; k++) {
        free_gpus[row[k]]--;
        if (q->cur_n > 1)
            dist[row[k]] = 1;
    }
}

/* Job j, placed afresh in out on as many GPUs as it holds now, goes back to the GPUs it holds if
 * they are free (with the one-distributed-job rule) and keeping them is worth at least the fresh
 * placement after its restart. free_gpus and dist are updated. Returns 1 when it went back, 0
 * when not, or an error from alloc_add. */
static int castor_stay(const struct castor *c, const struct snapshot *s, int j,
                       struct castor_job *q, int gpn, int *free_gpus, int *dist, struct alloc *out)
{
    const int *row = s->current->node + (size_t)j * (size_t)s->current->width;
    const int *orow = out->node + (size_t)j * (size_t)out->width;
    int n = out->count[j], nodes = alloc_nodes_used(out, j), spread = nodes > 1, rc;

    if (castor_utility(c, &s->jobs[j], q, gpn, q->cur_n, q->cur_r, 0) <
        castor_utility(c, &s->jobs[j], q, gpn, nodes, n, 1))
        return 0;
    /* lift the fresh placement, try the current one, put the fresh one back if it does not fit */
    for (int k = 0; k < n; k++) {
        free_gpus[orow[k]]++;
        if (spread)
            dist[orow[k]] = 0;
    }
    if (!castor_current_fits(c, s, j, q, free_gpus, dist)) {
        for (int k = 0; k < n; k++) {
            free_gpus[orow[k]]--;
            if (spread)
                dist[orow[k]] = 1;
        }
        return 0;
    }
    alloc_clear_job(out, j);
    for (int k = 0; k < q->cur_r; k++)
        if ((rc = alloc_add(out, j, row[k], 1)) < 0)
            return rc;
    castor_take_current(s, j, q, free_gpus, dist);
    return 1;
}

/* Place the counts into out (first a copy of the current allocation): jobs that keep their count
 * keep their GPUs (if that is their better use of them), the others single-node jobs first, then
 * largest first. free_gpus and dist (nnodes each), order and tmp (njobs each) are scratch. Returns
 * how many jobs were placed short of their count (cj[].placed says how many each got), or an
 * error from alloc_add. */
static int castor_place(const struct castor *c, const struct snapshot *s, struct castor_job *cj,
                        int gpn, int *free_gpus, int *dist, int *order, int *tmp, struct alloc *out)
{
    int J = s->njobs, N = s->nnodes, nshort = 0, rc;

    alloc_copy(out, s->current);
    for (int i = 0; i < N; i++)
        free_gpus[i] = s->nodes[i].gpus, dist[i] = 0;
    /* jobs that keep their count keep their GPUs (if that is their better use of them) */
    for (int j = 0; j < J; j++) {
        struct castor_job *q = &cj[j];

        q->placed = 0;
        /* (a current allocation that breaks capacity or the interference rule is not kept) */
        q->keep = q->count > 0 && q->count == q->cur_r &&
                  castor_utility(c, &s->jobs[j], q, gpn, q->cur_n, q->cur_r, 0) >=
                      castor_utility(c, &s->jobs[j], q, gpn, 0, q->cur_r, 1) &&
                  castor_current_fits(c, s, j, q, free_gpus, dist);
        if (!q->keep) {
            alloc_clear_job(out, j);
            continue;
        }
        castor_take_current(s, j, q, free_gpus, dist);
        q->placed = q->count;
    }
    /* the others: single-node jobs first, then largest first */
    for (int j = 0; j < J; j++)
        order[j] = j;
    castor_sort(order, tmp, J, cj, gpn);
    for (int i = 0; i < J; i++) {
        int j = order[i];

        if (cj[j].keep || cj[j].count == 0)
            continue;
        if ((rc = policy_place_shrinking(out, j, cj[j].count, s, free_gpus, dist,
                                         c->avoid_interference)) < 0)
            return rc;
        cj[j].placed = rc;
    }
    /* a job placed short on as many GPUs as it holds would restart for nothing: it keeps its GPUs
     * where they are still free (and no better placement pays for the restart) */
    for (int j = 0; j < J; j++) {
        if (cj[j].placed >= cj[j].count)
            continue;
        nshort++;
        if (cj[j].placed == cj[j].cur_r && cj[j].placed > 0 &&
            (rc = castor_stay(c, s, j, &cj[j], gpn, free_gpus, dist, out)) < 0)
            return rc;
    }
    return nshort;
}

static int castor_allocate(void *ctx, const struct snapshot *s, uint64_t seed, struct alloc *out)
{
    const struct castor *c = ctx;
    struct castor_job *cj = NULL;
    int J = s->njobs, N = s->nnodes, gpus = snapshot_gpus(s), gpn, rc = 0;
    int *free_gpus = NULL, *dist = NULL, *order = NULL, *tmp = NULL;

    (void)seed;
    if (J == 0 || N == 0)
        return 0;
    gpn = s->nodes[0].gpus > 0 ? s->nodes[0].gpus : 1;
    cj = calloc((size_t)J, sizeof(*cj));
    free_gpus = calloc((size_t)N, sizeof(int));
    dist = calloc((size_t)N, sizeof(int));
    order = calloc((size_t)J, sizeof(int));
    tmp = calloc((size_t)J, sizeof(int));
    if (!cj || !free_gpus || !dist || !order || !tmp) {
        rc = ERR_NOMEM;
        goto out;
    }
    if ((rc = castor_prepare(c, s, cj, gpn)) < 0)
        goto out;
    /* decide counts and place them; when some job cannot be placed at its count (its GPUs would
     * not fit on the nodes left, or only across nodes that already hold a distributed job), cap
     * it at what was placed and decide again, so that the GPUs it could not use go to someone
     * who can use them instead of staying idle (and its donors do not restart for nothing) */
    for (int round = 1;; round++) {
        int nshort;

        if ((rc = castor_choose_counts(c, s, cj, gpus, gpn)) < 0 ||
            (rc = castor_place(c, s, cj, gpn, free_gpus, dist, order, tmp, out)) < 0)
            goto out;
        nshort = rc;
        rc = 0;
        if (nshort == 0 || round >= c->decides)
            break;
        for (int j = 0; j < J; j++)
            if (cj[j].placed < cj[j].count) {
                if (cj[j].maxr_main > cj[j].placed)
                    cj[j].maxr_main = cj[j].placed;
                if (cj[j].maxr_idle > cj[j].placed)
                    cj[j].maxr_idle = cj[j].placed;
            }
    }
out:
    for (int j = 0; cj && j < J; j++)
        free(cj[j].good);
    free(cj);
    free(free_gpus);
    free(dist);
    free(order);
    free(tmp);
    return rc;
}

const struct policy_ops policy_castor = {
    .name = "castor",
    .adaptive_batch = 1,
    .summary = "castor: marginal-gain greedy weighted by work left (or attained service), restart "
               "priced",
    .create = castor_create,
    .destroy = castor_destroy,
    .allocate = castor_allocate,
};
