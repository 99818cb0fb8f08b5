/* ga_ref.c: the reference-style genetic algorithm of ga_ref.h (benchmarks only). */
#define _GNU_SOURCE
#include "ga_ref.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/bsz.h"
#include "util/error.h"

double ga_ref_now_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------------------------------------
 * Randomness: splitmix64, one stream per GA run. */

uint64_t ga_ref_rng_next(struct ga_ref_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double ga_ref_rng_unif(struct ga_ref_rng *r)
{
    return (double)(ga_ref_rng_next(r) >> 11) / 9007199254740992.0;
}

/* Uniform in [0, n). */
int ga_ref_rng_int(struct ga_ref_rng *r, int n)
{
    return (int)(ga_ref_rng_unif(r) * n);
}

/* ---------------------------------------------------------------------------------------------
 * The problem: a snapshot seen as the reference sees it, a matrix of GPU counts (jobs x nodes).
 * Rows are in the reference's job order (attained service, then submission, then index). The
 * fitness is policy_pollux_fitness's, recomputed with a goodput memo so that 10,000 evaluations
 * stay cheap; every answer is checked against policy_pollux_fitness itself. */

static int ga_ref_job_order_cmp(const struct snapshot *s, int a, int b)
{
    const struct snap_job *x = &s->jobs[a], *y = &s->jobs[b];

    if (x->attained_service != y->attained_service)
        return x->attained_service < y->attained_service ? -1 : 1;
    if (x->submit_time != y->submit_time)
        return x->submit_time < y->submit_time ? -1 : 1;
    return a < b ? -1 : a > b;
}

void ga_ref_problem_free(struct ga_ref_problem *pr)
{
    free(pr->order);
    free(pr->cap);
    free(pr->maxr);
    free(pr->base);
    free(pr->pen);
    free(pr->base_x);
    free(pr->memo);
    free(pr->scratch);
    free(pr->scratch_j);
    memset(pr, 0, sizeof(*pr));
}

int ga_ref_problem_init(struct ga_ref_problem *pr, const struct policy_config *cfg,
                        const struct snapshot *s)
{
    int J = s->njobs, N = s->nnodes, G = snapshot_gpus(s);
    size_t cells = (size_t)J * (size_t)(N + 1) * (size_t)(G + 1);

    memset(pr, 0, sizeof(*pr));
    pr->s = s;
    pr->J = J;
    pr->N = N;
    pr->G = G;
    pr->p = policy_p_mean(cfg, -1.0);
    pr->delta = cfg->restart_penalty > 0 ? cfg->restart_penalty : 30.0;
    pr->avoid = !cfg->no_interference_avoidance;
    pr->fair_r = (G + J - 1) / J;
    pr->order = calloc((size_t)J, sizeof(int));
    pr->cap = calloc((size_t)N, sizeof(int));
    pr->maxr = calloc((size_t)J, sizeof(int));
    pr->base = calloc((size_t)J, sizeof(double));
    pr->pen = calloc((size_t)J, sizeof(double));
    pr->base_x = calloc((size_t)J * (size_t)N, sizeof(int));
    pr->memo = malloc(cells * sizeof(double));
    pr->scratch = calloc(3 * (size_t)N, sizeof(int));
    pr->scratch_j = calloc((size_t)J, sizeof(int));
    if (!pr->order || !pr->cap || !pr->maxr || !pr->base || !pr->pen || !pr->base_x || !pr->memo ||
        !pr->scratch || !pr->scratch_j) {
        ga_ref_problem_free(pr);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < cells; i++)
        pr->memo[i] = NAN;
    for (int n = 0; n < N; n++)
        pr->cap[n] = s->nodes[n].gpus;
    for (int j = 0; j < J; j++) { /* insertion sort: stable, J is small */
        int k = j;

        pr->order[j] = j;
        for (; k > 0 && ga_ref_job_order_cmp(s, pr->order[k], pr->order[k - 1]) < 0; k--) {
            int t = pr->order[k];

            pr->order[k] = pr->order[k - 1];
            pr->order[k - 1] = t;
        }
    }
    for (int j = 0; j < J; j++) {
        const struct snap_job *sj = &s->jobs[j];
        double age = s->now - sj->submit_time;
        /* the limits as policies/pollux.c sets them */
        pr->maxr[j] = policy_replica_limit(sj, 2 * sj->max_profiled_replicas, G);
        pr->base[j] = 0;
        if (sj->has_model) {
            struct bsz_choice c;

            for (int r = pr->fair_r; r >= 1 && !(pr->base[j] > 0); r--)
                if (bsz_optimize(&sj->tput, &sj->grad, &sj->lim, 1, r, &c) == 0)
                    pr->base[j] = c.goodput;
        }
        pr->pen[j] = fmax(age - sj->restarts * pr->delta, 0.0) / (age + pr->delta);
    }
    for (int i = 0; i < J; i++)
        for (int n = 0; n < N; n++)
            pr->base_x[i * N + n] = alloc_on_node(s->current, pr->order[i], n);
    return 0;
}

static double ga_ref_problem_speedup(struct ga_ref_problem *pr, int j, int nodes, int r)
{
    const struct snap_job *sj = &pr->s->jobs[j];
    double *cell;

    if (r == 0)
        return 0.0;
    if (!sj->has_model || !(pr->base[j] > 0))
        return (double)r / pr->fair_r;
    cell = &pr->memo[((size_t)j * (size_t)(pr->N + 1) + (size_t)nodes) * (size_t)(pr->G + 1) +
                     (size_t)r];
    if (isnan(*cell)) {
        struct bsz_choice c;

        *cell = bsz_optimize(&sj->tput, &sj->grad, &sj->lim, nodes, r, &c) == 0 ? c.goodput : 0.0;
    }
    return *cell / pr->base[j];
}

static double ga_ref_problem_utility(const struct ga_ref_problem *pr, double sp)
{
    if (pr->p == 0)
        return log(sp > POLLUX_EPS ? sp : POLLUX_EPS);
    return pr->p < 0 ? -pow(sp + POLLUX_EPS, pr->p) : pow(sp + POLLUX_EPS, pr->p);
}

/* The fitness of matrix x (policy_pollux_fitness of its decoding). */
double ga_ref_problem_fitness(struct ga_ref_problem *pr, const int *x)
{
    int N = pr->N, *used = pr->scratch, *dist = pr->scratch + N;
    double sum = 0, mean;

    memset(used, 0, 2 * (size_t)N * sizeof(int));
    for (int i = 0; i < pr->J; i++) {
        const int *row = x + (size_t)i * (size_t)N;
        int nodes = 0;

        for (int n = 0; n < N; n++) {
            used[n] += row[n];
            nodes += row[n] > 0;
        }
        if (pr->avoid && nodes > 1)
            for (int n = 0; n < N; n++)
                if (row[n] > 0 && dist[n]++ > 0)
                    return -HUGE_VAL;
    }
    for (int n = 0; n < N; n++)
        if (used[n] > pr->cap[n])
            return -HUGE_VAL;
    for (int i = 0; i < pr->J; i++) {
        const int *row = x + (size_t)i * (size_t)N;
        int j = pr->order[i], r = 0, nodes = 0;
        int changed = memcmp(row, pr->base_x + (size_t)i * (size_t)N, (size_t)N * sizeof(int));
        double sp;

        for (int n = 0; n < N; n++) {
            r += row[n];
            nodes += row[n] > 0;
        }
        if (r > pr->maxr[j] && changed)
            return -HUGE_VAL;
        sp = ga_ref_problem_speedup(pr, j, nodes, r) * pr->N / pr->G;
        if (changed)
            sp *= pr->pen[j];
        sum += ga_ref_problem_utility(pr, sp);
    }
    mean = sum / pr->J;
    if (pr->p == 0)
        return exp(mean);
    return pow(pr->p < 0 ? -mean : mean, 1.0 / pr->p) - POLLUX_EPS;
}

/* The allocation of matrix x: an unchanged row keeps the current node order (the reference
 * compares count rows, so it would not restart the job either), a changed one lists its nodes in
 * ascending order, as the reference does. */
int ga_ref_problem_decode(const struct ga_ref_problem *pr, const int *x, struct alloc *a)
{
    const struct alloc *cur = pr->s->current;
    int rc;

    for (int i = 0; i < pr->J; i++) {
        const int *row = x + (size_t)i * (size_t)pr->N;
        int j = pr->order[i];

        alloc_clear_job(a, j);
        if (memcmp(row, pr->base_x + (size_t)i * (size_t)pr->N, (size_t)pr->N * sizeof(int)) == 0) {
            for (int k = 0; k < cur->count[j]; k++)
                if ((rc = alloc_add(a, j, cur->node[(size_t)j * (size_t)cur->width + (size_t)k],
                                    1)) < 0)
                    return rc;
            continue;
        }
        for (int n = 0; n < pr->N; n++)
            if (row[n] > 0 && (rc = alloc_add(a, j, n, row[n])) < 0)
                return rc;
    }
    return 0;
}

void ga_ref_problem_encode(const struct ga_ref_problem *pr, const struct alloc *a, int *x)
{
    for (int i = 0; i < pr->J; i++)
        for (int n = 0; n < pr->N; n++)
            x[i * pr->N + n] = alloc_on_node(a, pr->order[i], n);
}

/* ---------------------------------------------------------------------------------------------
 * The GA: SPEC 5.5's operators, with selection and survival by fitness alone. */

/* Repair, in the reference's order: one distributed job per node (later jobs in row order lose
 * their GPUs on a node a distributed job already uses), each job capped at its limit (its nodes
 * visited in random order), node capacity (earlier rows first). */
static void ga_ref_repair(struct ga_ref_problem *pr, int *x, struct ga_ref_rng *r)
{
    int J = pr->J, N = pr->N, *taken = pr->scratch, *perm = pr->scratch + N,
        *used = pr->scratch + 2 * N, *spread = pr->scratch_j;

    if (pr->avoid) {
        memset(taken, 0, (size_t)N * sizeof(int));
        for (int i = 0; i < J; i++) {
            int nodes = 0;

            for (int n = 0; n < N; n++)
                nodes += x[i * N + n] > 0;
            spread[i] = nodes > 1;
        }
        for (int i = 0; i < J; i++) {
            if (!spread[i])
                continue;
            for (int n = 0; n < N; n++) {
                if (x[i * N + n] == 0)
                    continue;
                if (taken[n])
                    x[i * N + n] = 0;
                else
                    taken[n] = 1;
            }
        }
    }
    for (int i = 0; i < J; i++) {
        int acc = 0, limit = pr->maxr[pr->order[i]];

        for (int n = 0; n < N; n++)
            perm[n] = n;
        for (int n = N - 1; n > 0; n--) {
            int k = ga_ref_rng_int(r, n + 1), t = perm[n];

            perm[n] = perm[k];
            perm[k] = t;
        }
        for (int k = 0; k < N; k++) {
            int *e = &x[i * N + perm[k]], allowed = limit - acc > 0 ? limit - acc : 0;

            if (*e > allowed)
                *e = allowed;
            acc += *e;
        }
    }
    memset(used, 0, (size_t)N * sizeof(int));
    for (int i = 0; i < J; i++)
        for (int n = 0; n < N; n++) {
            int *e = &x[i * N + n], allowed = pr->cap[n] - used[n];

            if (*e > allowed)
                *e = allowed;
            used[n] += *e;
        }
}

/* Mutation: rows back to the current allocation (p 0.1), rows marked (p 0.1) whose entries are
 * zeroed (p 0.1 each), then on every node with a free GPU each entry grows to a uniform count in
 * [itself, node size] with probability p1 + p2 - p1 p2: p1 = 1 / jobs, p2 = 1 / (jobs already on
 * the node) for those jobs. */
static void ga_ref_mutate(struct ga_ref_problem *pr, int *x, struct ga_ref_rng *r)
{
    int J = pr->J, N = pr->N, *used = pr->scratch, *on = pr->scratch + N;

    for (int i = 0; i < J; i++)
        if (ga_ref_rng_unif(r) < GA_RESET)
            memcpy(x + (size_t)i * (size_t)N, pr->base_x + (size_t)i * (size_t)N,
                   (size_t)N * sizeof(int));
    for (int i = 0; i < J; i++)
        if (ga_ref_rng_unif(r) < GA_MARK)
            for (int n = 0; n < N; n++)
                if (ga_ref_rng_unif(r) < GA_ZERO)
                    x[i * N + n] = 0;
    memset(used, 0, 2 * (size_t)N * sizeof(int));
    for (int i = 0; i < J; i++)
        for (int n = 0; n < N; n++) {
            used[n] += x[i * N + n];
            on[n] += x[i * N + n] > 0;
        }
    for (int n = 0; n < N; n++) {
        double p1;

        if (pr->cap[n] - used[n] < 1)
            continue;
        p1 = 1.0 / J;
        for (int i = 0; i < J; i++) {
            int *e = &x[i * N + n];
            double p2 = *e > 0 ? 1.0 / on[n] : 0.0;

            if (ga_ref_rng_unif(r) < p1 + p2 - p1 * p2 && *e < pr->cap[n])
                *e += ga_ref_rng_int(r, pr->cap[n] - *e + 1);
        }
    }
}

struct ga_ref_pop {
    int size, cap, width;
    int *x;         /* cap x width */
    double *fit;    /* cap */
    uint64_t *hash; /* cap */
    int *rank;      /* cap: survival sort */
};

static uint64_t ga_ref_hash(const int *x, int width)
{
    uint64_t h = 1469598103934665603ULL;

    for (int k = 0; k < width; k++)
        h = (h ^ (uint64_t)(unsigned)x[k]) * 1099511628211ULL;
    return h;
}

static int ga_ref_contains(const struct ga_ref_pop *p, const int *x, uint64_t h)
{
    for (int k = 0; k < p->size; k++)
        if (p->hash[k] == h &&
            memcmp(p->x + (size_t)k * (size_t)p->width, x, (size_t)p->width * sizeof(int)) == 0)
            return 1;
    return 0;
}

/* Append x (already repaired) unless it is there; returns 1 if added. */
static int ga_ref_add(struct ga_ref_problem *pr, struct ga_ref_pop *p, const int *x)
{
    uint64_t h = ga_ref_hash(x, p->width);

    if (p->size == p->cap || ga_ref_contains(p, x, h))
        return 0;
    memcpy(p->x + (size_t)p->size * (size_t)p->width, x, (size_t)p->width * sizeof(int));
    p->fit[p->size] = ga_ref_problem_fitness(pr, x);
    p->hash[p->size] = h;
    p->size++;
    return 1;
}

/* Binary tournament: the fitter of two random members (a coin on ties). */
static int ga_ref_tournament(const struct ga_ref_pop *p, struct ga_ref_rng *r)
{
    int a = ga_ref_rng_int(r, p->size), b = ga_ref_rng_int(r, p->size);

    if (p->fit[a] != p->fit[b])
        return p->fit[a] > p->fit[b] ? a : b;
    return ga_ref_rng_unif(r) < 0.5 ? a : b;
}

static const double *ga_sort_fit;

static int ga_ref_rank_cmp(const void *a, const void *b)
{
    int i = *(const int *)a, k = *(const int *)b;

    if (ga_sort_fit[i] != ga_sort_fit[k])
        return ga_sort_fit[i] > ga_sort_fit[k] ? -1 : 1;
    return i - k; /* stable: the population before its offspring */
}

/*
 * Run the GA from the seeds (matrices, repaired first) and write the best matrix to best. The
 * whole population and its offspring live in one pool: pool[0, size) is the population, the
 * offspring are appended, and survival keeps the GA_POP fittest.
 */
int ga_ref_run(struct ga_ref_problem *pr, const int *seeds, int nseeds, uint64_t seed, int *best,
               struct ga_ref_stats *st)
{
    int width = pr->J * pr->N, rc = 0;
    struct ga_ref_pop pool = {.cap = GA_POP + GA_OFFSPRING, .width = width};
    struct ga_ref_rng r = {seed};
    int *child = malloc(2 * (size_t)width * sizeof(int)), *tmp_x = NULL;
    double *tmp_fit = NULL, t0 = ga_ref_now_seconds();
    uint64_t *tmp_hash = NULL;
    long evals = 0;

    pool.x = malloc((size_t)pool.cap * (size_t)width * sizeof(int));
    pool.fit = malloc((size_t)pool.cap * sizeof(double));
    pool.hash = malloc((size_t)pool.cap * sizeof(uint64_t));
    pool.rank = malloc((size_t)pool.cap * sizeof(int));
    tmp_x = malloc((size_t)GA_POP * (size_t)width * sizeof(int));
    tmp_fit = malloc((size_t)GA_POP * sizeof(double));
    tmp_hash = malloc((size_t)GA_POP * sizeof(uint64_t));
    if (!child || !pool.x || !pool.fit || !pool.hash || !pool.rank || !tmp_x || !tmp_fit ||
        !tmp_hash) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (int k = 0; k < nseeds; k++) {
        memcpy(child, seeds + (size_t)k * (size_t)width, (size_t)width * sizeof(int));
        ga_ref_repair(pr, child, &r);
        evals += ga_ref_add(pr, &pool, child);
    }
    for (int gen = 0; gen < GA_GENS; gen++) {
        int popsize = pool.size, made = 0;

        for (int tries = 0; tries < GA_RETRIES && made < GA_OFFSPRING; tries++) {
            int matings = (GA_OFFSPRING - made + 1) / 2;

            for (int m = 0; m < matings && made < GA_OFFSPRING; m++) {
                struct ga_ref_pop parents = pool;
                int a, b;

                parents.size = popsize; /* select from the population, not the offspring */
                a = ga_ref_tournament(&parents, &r);
                b = ga_ref_tournament(&parents, &r);
                memcpy(child, pool.x + (size_t)a * (size_t)width, (size_t)width * sizeof(int));
                memcpy(child + width, pool.x + (size_t)b * (size_t)width,
                       (size_t)width * sizeof(int));
                if (ga_ref_rng_unif(&r) < GA_CROSSOVER) {
                    int cut = ga_ref_rng_int(&r, pr->J) * pr->N; /* rows [0, cut) swap */

                    memcpy(child, pool.x + (size_t)b * (size_t)width, (size_t)cut * sizeof(int));
                    memcpy(child + width, pool.x + (size_t)a * (size_t)width,
                           (size_t)cut * sizeof(int));
                }
                for (int c = 0; c < 2 && made < GA_OFFSPRING; c++) {
                    int *x = child + (size_t)c * (size_t)width;

                    ga_ref_mutate(pr, x, &r);
                    ga_ref_repair(pr, x, &r);
                    if (ga_ref_add(pr, &pool, x)) {
                        made++;
                        evals++;
                    }
                }
            }
        }
        /* survival: the GA_POP fittest of population and offspring */
        for (int k = 0; k < pool.size; k++)
            pool.rank[k] = k;
        ga_sort_fit = pool.fit;
        qsort(pool.rank, (size_t)pool.size, sizeof(int), ga_ref_rank_cmp);
        {
            int keep = pool.size < GA_POP ? pool.size : GA_POP;

            for (int k = 0; k < keep; k++) {
                int src = pool.rank[k];

                memcpy(tmp_x + (size_t)k * (size_t)width, pool.x + (size_t)src * (size_t)width,
                       (size_t)width * sizeof(int));
                tmp_fit[k] = pool.fit[src];
                tmp_hash[k] = pool.hash[src];
            }
            memcpy(pool.x, tmp_x, (size_t)keep * (size_t)width * sizeof(int));
            memcpy(pool.fit, tmp_fit, (size_t)keep * sizeof(double));
            memcpy(pool.hash, tmp_hash, (size_t)keep * sizeof(uint64_t));
            pool.size = keep;
        }
    }
    memcpy(best, pool.x, (size_t)width * sizeof(int)); /* sorted: the fittest first */
    st->fitness = pool.fit[0];
    st->evaluations = evals;
    st->seconds = ga_ref_now_seconds() - t0;
out:
    free(child);
    free(pool.x);
    free(pool.fit);
    free(pool.hash);
    free(pool.rank);
    free(tmp_x);
    free(tmp_fit);
    free(tmp_hash);
    return rc;
}
