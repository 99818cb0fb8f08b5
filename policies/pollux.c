/* pollux.c: the Pollux policy (OSDI'21): give each job the GPUs that maximise the power mean of
 * their speedups over the fair share, with a penalty for restarting. The published policy searches
 * with a genetic algorithm; since the objective is a sum of per-job terms under capacity limits,
 * castor solves it exactly over replica counts by dynamic programming, then places the replicas
 * (consolidated, one distributed job per node), improves the placement by local search from five
 * starts (the last after an ejection chain from free GPUs), polishes the best by re-solving pairs
 * of nodes exactly, tries undoing the moves of its large jobs, then re-solves triples of nodes and
 * re-splits pairs of distributed jobs. The search over placements lives in pollux_search.c. Each
 * job's goodput table (the batch-size optimisation for every (nodes, replicas) the search visits)
 * is kept for the next decision while the job's model is unchanged: the same numbers, computed
 * once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/bsz.h"
#include "policies/policy.h"
#include "policies/pollux_internal.h"
#include "util/error.h"

#define POLLUX_EPS 1e-3
#define POLLUX_MAX_NODES_PER_JOB 16
#define POLLUX_PAIRS 8    /* two-node re-solves per decision, after the search's chains */
#define POLLUX_UNDOS 8    /* moves of large jobs undone and searched again, after the polish */
#define POLLUX_TRIPLES 4  /* three-node re-solves per decision, last */
#define POLLUX_RESPLITS 2 /* re-splits of two distributed jobs per decision, after the triples */

static int pollux_create(const struct policy_config *cfg, void **ctx)
{
    struct pollux *p = calloc(1, sizeof(*p));

    if (!p)
        return ERR_NOMEM;
    p->p = policy_p_mean(cfg, -1.0);
    p->delta = cfg->restart_penalty > 0 ? cfg->restart_penalty : 30.0;
    p->avoid_interference = !cfg->no_interference_avoidance;
    p->deadline_start = cfg->deadline_start;
    *ctx = p;
    return 0;
}

static void pollux_memo_clear(struct pollux *p)
{
    for (int i = 0; i < p->nmemo; i++) {
        free(p->memo[i].name);
        free(p->memo[i].good);
    }
    free(p->memo);
    p->memo = NULL;
    p->nmemo = 0;
}

static void pollux_destroy(void *ctx)
{
    if (ctx) {
        pollux_memo_clear(ctx);
        free(((struct pollux *)ctx)->feas);
    }
    free(ctx);
}

/* 1 when memo m was filled for exactly this model, these statistics and limits, and width w. */
static int pollux_memo_fits(const struct pollux_memo *m, const struct snap_job *sj, int w)
{
    const struct bsz_limits *a = &m->lim, *b = &sj->lim;

    return m->good_w == w && m->tput.ops == sj->tput.ops &&
           memcmp(m->tput.theta, sj->tput.theta, sizeof(m->tput.theta)) == 0 &&
           memcmp(&m->grad.sqr, &sj->grad.sqr, sizeof(double)) == 0 &&
           memcmp(&m->grad.var, &sj->grad.var, sizeof(double)) == 0 &&
           memcmp(&a->init_bsz, &b->init_bsz, sizeof(double)) == 0 &&
           memcmp(&a->max_bsz, &b->max_bsz, sizeof(double)) == 0 &&
           memcmp(&a->min_local, &b->min_local, sizeof(double)) == 0 &&
           memcmp(&a->max_local, &b->max_local, sizeof(double)) == 0 &&
           a->accumulation == b->accumulation;
}

/* The last decision's table for job sj if it still holds, handed over to the caller (the memo
 * keeps no pointer to it); else NULL. *hint is where the search starts (jobs come in submission
 * order in both decisions) and moves past a match. */
static double *pollux_memo_take(struct pollux *p, const struct snap_job *sj, int w, int *hint)
{
    for (int k = 0; k < p->nmemo; k++) {
        struct pollux_memo *m = &p->memo[(*hint + k) % p->nmemo];

        if (m->good && strcmp(m->name, sj->name) == 0) {
            double *good = pollux_memo_fits(m, sj, w) ? m->good : NULL;

            if (good)
                m->good = NULL;
            *hint = (*hint + k + 1) % p->nmemo;
            return good;
        }
    }
    return NULL;
}

/* After a decision: the memo becomes the tables of the jobs with a model (moved from pj, which
 * keeps none); the tables of jobs gone or changed are freed. Out of memory, the memo is only
 * emptied. */
static void pollux_memo_keep(struct pollux *p, const struct snapshot *s, struct pollux_job *pj)
{
    struct pollux_memo *m;
    int n = 0;

    pollux_memo_clear(p);
    if (!(m = calloc((size_t)s->njobs, sizeof(*m))))
        return;
    for (int j = 0; j < s->njobs; j++) {
        if (!pj[j].good || !s->jobs[j].has_model || !s->jobs[j].name ||
            !(m[n].name = strdup(s->jobs[j].name)))
            continue;
        m[n].tput = s->jobs[j].tput;
        m[n].grad = s->jobs[j].grad;
        m[n].lim = s->jobs[j].lim;
        m[n].good = pj[j].good;
        m[n].good_w = pj[j].good_w;
        pj[j].good = NULL;
        n++;
    }
    p->memo = m;
    p->nmemo = n;
}

/* The job's utility for scaled speedup s: the term of the power mean (a sum of these is to be
 * maximised; p < 0 makes it negative, so that more is still better). */
static double pollux_utility(const struct pollux *p, double s)
{
    if (p->p == 0)
        return log(s > POLLUX_EPS ? s : POLLUX_EPS);
    if (p->p == -1) /* the default, the harmonic mean: pow's result, without pow's cost */
        return -1.0 / (s + POLLUX_EPS);
    return p->p < 0 ? -pow(s + POLLUX_EPS, p->p) : pow(s + POLLUX_EPS, p->p);
}

/* Best goodput of job j on (nodes, replicas): memoised in pj's table, which outlives the round
 * while the job's model is unchanged (pollux_memo_take). */
static double pollux_goodput(const struct snap_job *sj, struct pollux_job *pj, int nodes, int r)
{
    struct bsz_choice c;
    double *cell;

    if (nodes >= pj->good_w || r >= pj->good_w) /* what it holds beyond today's limit */
        return bsz_optimize(&sj->tput, &sj->grad, &sj->lim, nodes, r, &c) == 0 ? c.goodput : 0.0;
    cell = &pj->good[(size_t)nodes * (size_t)pj->good_w + (size_t)r];
    if (isnan(*cell))
        *cell = bsz_optimize(&sj->tput, &sj->grad, &sj->lim, nodes, r, &c) == 0 ? c.goodput : 0.0;
    return *cell;
}

/* Speedup of job j on (nodes, replicas), relative to its fair share. */
static double pollux_speedup(const struct snap_job *sj, struct pollux_job *pj, int nodes, int r)
{
    if (r == 0)
        return 0.0;
    if (!sj->has_model || !(pj->base > 0))
        return (double)r / pj->fair_r;
    return pollux_goodput(sj, pj, nodes, r) / pj->base;
}

/* The job's utility on (nodes, replicas): scaled speedup, with the restart penalty if changed. */
double pollux_job_utility(const struct pollux *p, const struct snapshot *s, int j,
                          struct pollux_job *pj, int nodes, int r, int changed)
{
    double sp;

    if (r > 0 && r < s->jobs[j].min_replicas)
        return -HUGE_VAL; /* below its gang minimum: not an allocation */
    sp = pollux_speedup(&s->jobs[j], pj, nodes, r) * pj->scale;
    if (changed)
        sp *= pj->penalty;
    /* the owner's priority weighs the job's term */
    return snapshot_job_weight(&s->jobs[j]) * pollux_utility(p, sp);
}

/* Nodes needed for r replicas packed onto nodes of gpn GPUs. */
static int pollux_min_nodes(int r, int gpn)
{
    return (r + gpn - 1) / gpn;
}

/* Fills pj[0..J) for one decision; the goodput tables come from p's memo where they still hold,
 * and the memo is emptied; p's feasibility scratch grows to s's nodes. ERR_NOMEM (pj's tables so
 * far are the caller's to free). */
static int pollux_prepare(struct pollux *p, const struct snapshot *s, struct pollux_job *pj)
{
    int gpus = snapshot_gpus(s), J = s->njobs, hint = 0;
    int fair_r = (gpus + J - 1) / J;

    if (!p->feas || s->nnodes > p->nfeas) { /* pollux_feasible's, for the most nodes seen */
        int n = s->nnodes > 1 ? s->nnodes : 1, *f = realloc(p->feas, 2 * (size_t)n * sizeof(int));

        if (!f)
            return ERR_NOMEM;
        p->feas = f;
        p->nfeas = n;
    }

    for (int j = 0; j < J; j++) {
        const struct snap_job *sj = &s->jobs[j];
        struct pollux_job *q = &pj[j];
        double age = s->now - sj->submit_time;
        /* Pollux's exploration limit: twice the replicas measured; with deadline_start, a job
         * with a deadline may use what its owner asked for until it has been measured there (a
         * job starts without a model, and a doubling per round can be too slow for its deadline) */
        int explore = 2 * sj->max_profiled_replicas;
        int maxr;
        size_t cells;

        if (p->deadline_start && sj->deadline > 0 && sj->max_profiled_replicas < sj->req_replicas &&
            sj->req_replicas > explore)
            explore = sj->req_replicas;
        maxr = policy_replica_limit(sj, explore, gpus);

        q->maxr = maxr;
        q->fair_r = fair_r;
        q->scale = (double)s->nnodes / gpus;
        q->good_w = maxr + 1;
        cells = (size_t)(maxr + 1) * (size_t)(maxr + 1);
        /* the last decision's numbers where they still hold, else a table to fill */
        q->good = sj->has_model ? pollux_memo_take(p, sj, q->good_w, &hint) : NULL;
        if (!q->good) {
            if (!(q->good = malloc(cells * sizeof(double))))
                return ERR_NOMEM;
            for (size_t i = 0; i < cells; i++)
                q->good[i] = NAN;
        }
        q->base = 0;
        if (sj->has_model) {
            struct bsz_choice c;

            /* the fair share on one node; if no batch fits it, the largest that does */
            for (int r = fair_r; r >= 1 && !(q->base > 0); r--)
                if (bsz_optimize(&sj->tput, &sj->grad, &sj->lim, 1, r, &c) == 0)
                    q->base = c.goodput;
        }
        q->penalty = fmax(age - sj->restarts * p->delta, 0.0) / (age + p->delta);
        q->cur_r = s->current->count[j];
        /* a gang below its minimum that ran before (it lost a node) restarts whatever is
         * chosen: no change of it is voluntary, so none is penalised (else a young gang that
         * restarted once would wait out its age against restarts x delta on GPUs left idle) */
        if (sj->min_replicas > 1 && q->cur_r < sj->min_replicas &&
            (q->cur_r > 0 || sj->restarts > 0))
            q->penalty = 1.0;
        q->cur_n = alloc_nodes_used(s->current, j);
    }
    /* the tables not taken are of jobs gone or changed: freed now, so that a decision never holds
     * more tables than its own */
    pollux_memo_clear(p);
    return 0;
}

/* The fitness sum of an allocation (the power mean's monotone equivalent). */
static double pollux_total(const struct pollux *p, const struct snapshot *s, struct pollux_job *pj,
                           const struct alloc *a)
{
    double u = 0;

    for (int j = 0; j < s->njobs; j++) {
        int r = a->count[j], n = alloc_nodes_used(a, j);

        if (r > pj[j].maxr)
            return -HUGE_VAL;
        u += pollux_job_utility(p, s, j, &pj[j], n, r, !alloc_job_equal(a, j, s->current, j));
    }
    return u;
}

/* 1 if the allocation respects node capacity and (when asked) has at most one distributed job
 * per node. Uses p's scratch, sized for s by pollux_prepare. */
static int pollux_feasible(const struct pollux *p, const struct snapshot *s, const struct alloc *a)
{
    int *used = p->feas, *dist = p->feas + s->nnodes;

    alloc_node_usage(a, used);
    memset(dist, 0, (size_t)s->nnodes * sizeof(int));
    for (int i = 0; i < s->nnodes; i++)
        if (used[i] > s->nodes[i].gpus)
            return 0;
    if (!p->avoid_interference)
        return 1;
    for (int j = 0; j < a->njobs; j++) {
        if (alloc_nodes_used(a, j) < 2)
            continue;
        for (int k = 0; k < a->count[j]; k++) {
            int node = a->node[(size_t)j * (size_t)a->width + (size_t)k];

            if (k == 0 || node != a->node[(size_t)j * (size_t)a->width + (size_t)k - 1])
                if (dist[node]++ > 0)
                    return 0;
        }
    }
    return 1;
}

/*
 * Choose replica counts: maximise the sum of utilities with at most `gpus` replicas in all, by
 * dynamic programming over jobs and GPUs used. keep[j] says whether job j's best use of its
 * chosen count is to keep what it holds. With whole set, a count of more than one node's worth
 * must be whole nodes (or what the job holds now, kept): the dynamic program ignores the rule of
 * one distributed job per node, and two jobs' partial nodes can make its best counts impossible
 * to place; whole nodes leave no remainders to collide.
 */
static int pollux_choose_counts(const struct pollux *p, const struct snapshot *s,
                                struct pollux_job *pj, int gpus, int gpn, int whole, int *count,
                                int *keep)
{
    int J = s->njobs, rc = 0;
    size_t w = (size_t)gpus + 1;
    double *best = malloc((size_t)(J + 1) * w * sizeof(double));
    int *pick = malloc((size_t)(J + 1) * w * sizeof(int));
    double *util = malloc(w * sizeof(double));
    int *ukeep = malloc(w * sizeof(int));
    int *kbest = malloc((size_t)(J + 1) * w * sizeof(int));

    if (!best || !pick || !util || !ukeep || !kbest) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (size_t g = 0; g < w; g++)
        best[g] = 0.0; /* no jobs: nothing gained, whatever is left over */
    for (int j = 0; j < J; j++) {
        double *prev = best + (size_t)j * w, *cur = best + (size_t)(j + 1) * w;
        int *pk = pick + (size_t)(j + 1) * w, *kb = kbest + (size_t)(j + 1) * w;
        int maxr = pj[j].maxr < gpus ? pj[j].maxr : gpus;

        /* the job's utility with r replicas, and whether keeping its allocation gives it */
        for (int r = 0; r <= maxr; r++) {
            int changed = 1; /* a new placement; keeping the current one is scored below */
            double u =
                pollux_job_utility(p, s, j, &pj[j], r ? pollux_min_nodes(r, gpn) : 0, r, changed);

            ukeep[r] = 0;
            if (r == pj[j].cur_r) {
                double uk = pollux_job_utility(p, s, j, &pj[j], pj[j].cur_n, r, 0);

                if (uk >= u) {
                    u = uk;
                    ukeep[r] = 1;
                }
            }
            if (whole && r > gpn && r % gpn != 0 && !ukeep[r])
                u = -HUGE_VAL;
            util[r] = u;
        }
        for (size_t g = 0; g < w; g++) {
            double bv = -HUGE_VAL;
            int br = 0, bk = 0;

            for (int r = 0; r <= maxr && (size_t)r <= g; r++) {
                double v = prev[g - (size_t)r] + util[r];

                if (v > bv) {
                    bv = v;
                    br = r;
                    bk = ukeep[r];
                }
            }
            cur[g] = bv;
            pk[g] = br;
            kb[g] = bk;
        }
    }
    /* walk back from the full budget */
    {
        size_t g = w - 1;

        for (int j = J; j >= 1; j--) {
            int r = pick[(size_t)j * w + g];

            count[j - 1] = r;
            keep[j - 1] = kbest[(size_t)j * w + g];
            g -= (size_t)r;
        }
    }
out:
    free(best);
    free(pick);
    free(util);
    free(ukeep);
    free(kbest);
    return rc;
}

/*
 * Place counts: starting from the current allocation, the jobs that keep what they hold keep it,
 * and the others are placed afresh, largest first (they fragment most), shrinking where they do
 * not fit. cand is overwritten; free_gpus and dist (nnodes each) and order (njobs) are scratch.
 * Returns 0, or ERR_NOMEM from the allocation rows.
 */
static int pollux_place_counts(const struct pollux *p, const struct snapshot *s, const int *count,
                               const int *keep, struct alloc *cand, int *free_gpus, int *dist,
                               int *order)
{
    int J = s->njobs, rc;

    for (int i = 0; i < s->nnodes; i++) {
        free_gpus[i] = s->nodes[i].gpus;
        dist[i] = 0;
    }
    for (int j = 0; j < J; j++) {
        if (!keep[j] || count[j] == 0)
            continue;
        for (int k = 0; k < s->current->count[j]; k++) {
            int node = s->current->node[(size_t)j * (size_t)s->current->width + (size_t)k];

            free_gpus[node]--;
            if (alloc_nodes_used(s->current, j) > 1)
                dist[node] = 1;
        }
    }
    alloc_copy(cand, s->current);
    for (int j = 0; j < J; j++) {
        if (!keep[j] || count[j] == 0)
            alloc_clear_job(cand, j);
        order[j] = j;
    }
    for (int a = 1; a < J; a++) /* insertion sort by count, descending, stable */
        for (int b = a; b > 0 && count[order[b]] > count[order[b - 1]]; b--) {
            int t = order[b];

            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (int i = 0; i < J; i++) {
        int j = order[i];

        if (keep[j] || count[j] == 0)
            continue;
        if ((rc = policy_place_shrinking(cand, j, count[j], s, free_gpus, dist,
                                         p->avoid_interference)) < 0)
            return rc;
    }
    return 0;
}

/* The search's passes: a start's (moves and chains only); an ejection chain first (a start from
 * the current allocation); the polish (pair re-solves); the last (triples and re-splits). */
static const struct pollux_passes first = {0}, eject = {.eject = 1},
                                  polish = {.pairs = POLLUX_PAIRS},
                                  last = {.pairs = POLLUX_PAIRS,
                                          .triples = POLLUX_TRIPLES,
                                          .resplits = POLLUX_RESPLITS,
                                          .settled = 1};

/* 1 when a is feasible and b is not, or both are and a is the fitter. */
static int pollux_fitter(const struct pollux *p, const struct snapshot *s, struct pollux_job *pj,
                         const struct alloc *a, const struct alloc *b)
{
    return pollux_feasible(p, s, a) &&
           (!pollux_feasible(p, s, b) || pollux_total(p, s, pj, a) > pollux_total(p, s, pj, b));
}

/* Improve alt (a start placed by the caller) with passes and copy it into best if it is then
 * fitter (or best is infeasible). An infeasible alt, or one where passes->eject finds no chain, is
 * left alone. Returns 0, or ERR_NOMEM. */
static int pollux_try_start(const struct pollux *p, const struct snapshot *s, struct pollux_job *pj,
                            const int *count, const struct pollux_passes *passes, struct alloc *alt,
                            struct alloc *best)
{
    int rc;

    if (!pollux_feasible(p, s, alt))
        return 0;
    if ((rc = pollux_improve(p, s, pj, count, passes, alt)) != 0)
        return rc < 0 ? rc : 0;
    if (pollux_fitter(p, s, pj, alt, best))
        alloc_copy(best, alt);
    return 0;
}

/*
 * After the polish: for each of up to POLLUX_UNDOS jobs that held at least a node's worth (gpn)
 * and that best moves or resizes (largest held first), undo that: the job back on what it holds,
 * the jobs in its way (over a node's capacity, or distributed where it is distributed) cleared,
 * and the search run again with the pair re-solves; best becomes the result where that is fitter.
 * It reaches rearrangements where keeping one large job in place and moving others beats the
 * search's answer, which restarted it. alt is scratch. 0, or ERR_NOMEM.
 */
static int pollux_undo_moves(const struct pollux *p, const struct snapshot *s,
                             struct pollux_job *pj, const int *count, int gpn, struct alloc *alt,
                             struct alloc *best)
{
    const struct alloc *cur = s->current;
    int J = s->njobs, n = 0, rc = 0;
    int *order = calloc((size_t)J + 1, sizeof(int)), *used = calloc((size_t)s->nnodes, sizeof(int));

    if (!order || !used) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (int j = 0; j < J; j++)
        if (cur->count[j] >= gpn && !alloc_job_equal(best, j, cur, j))
            order[n++] = j;
    /* largest held first (a selection sort: ties in the order its swaps leave them) */
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (cur->count[order[b]] > cur->count[order[a]]) {
                int t = order[a];

                order[a] = order[b];
                order[b] = t;
            }
    for (int i = 0; i < n && i < POLLUX_UNDOS; i++) {
        int j = order[i], dist = alloc_nodes_used(cur, j) > 1;
        const int *row = cur->node + (size_t)j * (size_t)cur->width;

        if (alloc_job_equal(best, j, cur, j)) /* an earlier undo put it back */
            continue;
        alloc_copy(alt, best);
        alloc_clear_job(alt, j);
        alloc_node_usage(alt, used);
        for (int r = 0; r < cur->count[j]; r++)
            used[row[r]]++;
        for (int k = 0; k < J; k++) {
            int clash = 0;

            for (int r = 0; k != j && r < cur->count[j] && !clash; r++)
                clash = alloc_on_node(alt, k, row[r]) > 0 &&
                        (used[row[r]] > s->nodes[row[r]].gpus ||
                         (p->avoid_interference && dist && alloc_nodes_used(alt, k) > 1));
            if (!clash)
                continue;
            for (int r = 0; r < alt->count[k]; r++)
                used[alt->node[(size_t)k * (size_t)alt->width + (size_t)r]]--;
            alloc_clear_job(alt, k);
        }
        for (int r = 0; r < cur->count[j] && rc == 0; r++)
            rc = alloc_add(alt, j, row[r], 1);
        if (rc < 0 || (rc = pollux_try_start(p, s, pj, count, &polish, alt, best)) < 0)
            goto out;
    }
out:
    free(order);
    free(used);
    return rc;
}

/* Polish a feasible start a: two-node re-solves; then the moves of large jobs undone (alt is
 * scratch); last, three-node re-solves where pairs find nothing, then re-splits of two
 * distributed jobs where triples find nothing. An infeasible a is left alone. 0, or ERR_NOMEM. */
static int pollux_polish(const struct pollux *p, const struct snapshot *s, struct pollux_job *pj,
                         const int *count, int gpn, struct alloc *alt, struct alloc *a)
{
    int rc;

    if (!pollux_feasible(p, s, a))
        return 0;
    if ((rc = pollux_improve(p, s, pj, count, &polish, a)) < 0 ||
        (rc = pollux_undo_moves(p, s, pj, count, gpn, alt, a)) < 0 ||
        (rc = pollux_improve(p, s, pj, count, &last, a)) < 0)
        return rc;
    return 0;
}

static int pollux_allocate(void *ctx, const struct snapshot *s, uint64_t seed, struct alloc *out)
{
    struct pollux *p = ctx;
    struct pollux_job *pj = NULL;
    struct alloc *cand = NULL, *alt = NULL, *chain = NULL;
    int J = s->njobs, gpus = snapshot_gpus(s), gpn = s->nodes[0].gpus, rc, partial = 0, differ = 0,
        chained;
    int *count = NULL, *keep = NULL, *wcount = NULL, *wkeep = NULL, *free_gpus = NULL, *dist = NULL,
        *order = NULL;

    (void)seed;
    if (J == 0)
        return 0;
    pj = calloc((size_t)J, sizeof(*pj));
    count = calloc((size_t)J * 4, sizeof(int));
    order = calloc((size_t)J, sizeof(int));
    free_gpus = calloc((size_t)s->nnodes, sizeof(int));
    dist = calloc((size_t)s->nnodes, sizeof(int));
    if (!pj || !count || !order || !free_gpus || !dist) {
        rc = ERR_NOMEM;
        goto out;
    }
    keep = count + J, wcount = count + 2 * J, wkeep = count + 3 * J;
    if ((rc = pollux_prepare(p, s, pj)) < 0 ||
        (rc = alloc_new(J, s->nnodes, out->width, &cand)) < 0 ||
        (rc = alloc_new(J, s->nnodes, out->width, &alt)) < 0 ||
        (rc = alloc_new(J, s->nnodes, out->width, &chain)) < 0)
        goto out;
    /* the first start: the dynamic program's counts, placed */
    if ((rc = pollux_choose_counts(p, s, pj, gpus, gpn, 0, count, keep)) < 0 ||
        (rc = pollux_place_counts(p, s, count, keep, cand, free_gpus, dist, order)) < 0)
        goto out;
    if (pollux_feasible(p, s, cand) && (rc = pollux_improve(p, s, pj, count, &first, cand)) < 0)
        goto out;
    /* the second: the current allocation */
    alloc_copy(alt, s->current);
    if ((rc = pollux_try_start(p, s, pj, count, &first, alt, cand)) < 0)
        goto out;
    /* a third start: every job placed afresh with the counts it holds, largest first (a
     * defragmented cluster), improved the same way */
    for (int j = 0; j < J; j++) {
        wcount[j] = s->current->count[j];
        wkeep[j] = 0;
    }
    if ((rc = pollux_place_counts(p, s, wcount, wkeep, alt, free_gpus, dist, order)) < 0 ||
        (rc = pollux_try_start(p, s, pj, count, &first, alt, cand)) < 0)
        goto out;
    /* a fourth, where the first's counts need partial nodes: the best counts in whole nodes.
     * Where none does, the restricted program's best is the first's (its values are never
     * higher, and equal along the first's choices), so it is not run. */
    for (int j = 0; j < J; j++)
        partial |= count[j] > gpn && count[j] % gpn != 0 && !keep[j];
    if (partial && (rc = pollux_choose_counts(p, s, pj, gpus, gpn, 1, wcount, wkeep)) < 0)
        goto out;
    for (int j = 0; partial && j < J; j++)
        differ |= wcount[j] != count[j];
    if (differ &&
        ((rc = pollux_place_counts(p, s, wcount, wkeep, alt, free_gpus, dist, order)) < 0 ||
         (rc = pollux_try_start(p, s, pj, wcount, &first, alt, cand)) < 0))
        goto out;
    /* a fifth: the current allocation after the best ejection chain, where one beats every
     * single move. The best start is polished (pair re-solves, large jobs' moves undone, triples,
     * re-splits); where the chain's start is the fitter, both are polished and the fitter kept:
     * a polish that starts higher may end lower. */
    alloc_copy(chain, s->current);
    chained = pollux_feasible(p, s, chain) ? pollux_improve(p, s, pj, count, &eject, chain) : 1;
    if (chained < 0) {
        rc = chained;
        goto out;
    }
    if (chained == 0 && pollux_fitter(p, s, pj, chain, cand)) {
        if ((rc = pollux_polish(p, s, pj, count, gpn, alt, chain)) < 0 ||
            (rc = pollux_polish(p, s, pj, count, gpn, alt, cand)) < 0)
            goto out;
        if (pollux_fitter(p, s, pj, chain, cand))
            alloc_copy(cand, chain);
    } else if ((rc = pollux_polish(p, s, pj, count, gpn, alt, cand)) < 0) {
        goto out;
    }
    alloc_copy(out, cand);
    pollux_memo_keep(p, s, pj);
    rc = 0;
out:
    for (int j = 0; pj && j < J; j++)
        free(pj[j].good);
    free(pj);
    free(count);
    free(order);
    free(free_gpus);
    free(dist);
    alloc_free(cand);
    alloc_free(alt);
    alloc_free(chain);
    return rc;
}

double policy_pollux_fitness(const struct policy_config *cfg, const struct snapshot *s,
                             const struct alloc *a)
{
    struct pollux p = {.p = policy_p_mean(cfg, -1.0),
                       .delta = cfg->restart_penalty > 0 ? cfg->restart_penalty : 30.0,
                       .avoid_interference = !cfg->no_interference_avoidance,
                       .deadline_start = cfg->deadline_start};
    struct pollux_job *pj;
    double sum = -HUGE_VAL, mean;

    if (s->njobs == 0)
        return 0.0;
    pj = calloc((size_t)s->njobs, sizeof(*pj));
    if (!pj)
        return NAN;
    if (pollux_prepare(&p, s, pj) == 0 && pollux_feasible(&p, s, a))
        sum = pollux_total(&p, s, pj, a);
    for (int j = 0; j < s->njobs; j++)
        free(pj[j].good);
    free(pj);
    free(p.feas);
    if (!isfinite(sum))
        return -HUGE_VAL;
    /* back from the sum of utilities to the power mean of (speedup + eps) */
    mean = sum / s->njobs;
    if (p.p == 0)
        return exp(mean);
    return pow(p.p < 0 ? -mean : mean, 1.0 / p.p) - POLLUX_EPS;
}

const struct policy_ops policy_pollux = {
    .name = "pollux",
    .adaptive_batch = 1,
    .summary = "Pollux (OSDI'21): power mean of goodput speedups, restart penalty, solved exactly",
    .create = pollux_create,
    .destroy = pollux_destroy,
    .allocate = pollux_allocate,
};
