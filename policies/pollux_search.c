/* pollux_search.c: Pollux's search over placements: local moves, chains, re-solves, re-splits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policies/policy.h"
#include "policies/pollux_internal.h"
#include "util/error.h"

#define POLLUX_CHAINS 8 /* three-job moves tried per decision, after the local search settles */

/* Local search over placements: the counts step assumes every job sits on the fewest nodes, which
 * fragmentation and the one-distributed-job-per-node rule can make impossible. Starting from the
 * better of the placed counts and the current allocation, repeatedly apply the single best move
 * that raises the objective: re-place one job at another count (in place, or consolidated afresh),
 * or let one job take GPUs from another on a node. Each move is scored by the change in the two
 * jobs' terms only. */
struct pollux_ls {
    const struct pollux *p;
    const struct snapshot *s;
    struct pollux_job *pj;
    int J, N;
    int *cnt;  /* J x N: replicas of each job on each node */
    int *cur;  /* J x N: the current allocation's counts */
    int *used; /* N */
    int *dcnt; /* N: distributed jobs on each node */
    int *jn;   /* J: nodes each job's row in cnt uses */
    int *fr;   /* N: scratch for ls_make_row (free GPUs per node) */
    double *u; /* J: each job's term */
    int *row;  /* scratch rows, N each */
    int *row2;
};

static int ls_nodes(const int *row, int N, int *r)
{
    int n = 0, t = 0;

    for (int i = 0; i < N; i++) {
        n += row[i] > 0;
        t += row[i];
    }
    *r = t;
    return n;
}

/* Job j's term if its counts were row. */
static double ls_utility(struct pollux_ls *ls, int j, const int *row)
{
    int r, n = ls_nodes(row, ls->N, &r);
    int changed = memcmp(row, ls->cur + (size_t)j * (size_t)ls->N, (size_t)ls->N * sizeof(int));

    if (r > ls->pj[j].maxr)
        return -HUGE_VAL;
    return pollux_job_utility(ls->p, ls->s, j, &ls->pj[j], n, r, changed != 0);
}

/* 1 if replacing job j's row by rj (and job k's by rk, when k >= 0) keeps every node within its
 * GPUs and at most one distributed job per node. */
static int ls_feasible(struct pollux_ls *ls, int j, const int *rj, int k, const int *rk)
{
    const int *oj = ls->cnt + (size_t)j * (size_t)ls->N,
              *ok = k >= 0 ? ls->cnt + (size_t)k * (size_t)ls->N : NULL;
    int dj_old = ls->jn[j] > 1, dk_old = k >= 0 && ls->jn[k] > 1, nj = 0, nk = 0, dj_new, dk_new;

    for (int n = 0; n < ls->N; n++) { /* the nodes the new rows use */
        nj += rj[n] > 0;
        nk += k >= 0 && rk[n] > 0;
    }
    dj_new = nj > 1;
    dk_new = nk > 1;
    for (int n = 0; n < ls->N; n++) {
        int used = ls->used[n] - oj[n] + rj[n], d = ls->dcnt[n];

        d += (dj_new && rj[n] > 0) - (dj_old && oj[n] > 0);
        if (k >= 0) {
            used += rk[n] - ok[n];
            d += (dk_new && rk[n] > 0) - (dk_old && ok[n] > 0);
        }
        if (used > ls->s->nodes[n].gpus || (ls->p->avoid_interference && d > 1))
            return 0;
    }
    return 1;
}

/* Score the two-job move in ls->row (job j) and ls->row2 (job k); if it is feasible and beats
 * *best, remember it in *bj, *bk, brow and brow2. */
static void ls_consider_pair(struct pollux_ls *ls, int j, int k, double *best, int *bj, int *bk,
                             int *brow, int *brow2)
{
    double d;

    if (!ls_feasible(ls, j, ls->row, k, ls->row2))
        return;
    d = ls_utility(ls, j, ls->row) + ls_utility(ls, k, ls->row2) - ls->u[j] - ls->u[k];
    if (d > *best) {
        *best = d, *bj = j, *bk = k;
        memcpy(brow, ls->row, (size_t)ls->N * sizeof(int));
        memcpy(brow2, ls->row2, (size_t)ls->N * sizeof(int));
    }
}

static void ls_apply(struct pollux_ls *ls, int j, const int *row)
{
    int *o = ls->cnt + (size_t)j * (size_t)ls->N, r, nn = ls_nodes(row, ls->N, &r);
    int d_old = ls->jn[j] > 1, d_new = nn > 1;

    for (int n = 0; n < ls->N; n++) {
        ls->used[n] += row[n] - o[n];
        ls->dcnt[n] += (d_new && row[n] > 0) - (d_old && o[n] > 0);
        o[n] = row[n];
    }
    ls->jn[j] = nn;
    ls->u[j] = ls_utility(ls, j, o);
}

/* Row for job j at count r: "in place" (grow on its nodes, then the tightest others; shrink from
 * its smallest shares) when fresh is 0, else consolidated on free capacity as if j held nothing.
 * Returns 0 when it cannot be done. */
static int ls_make_row(struct pollux_ls *ls, int j, int r, int fresh, int *row)
{
    const int *o = ls->cnt + (size_t)j * (size_t)ls->N;
    int N = ls->N, have = 0, need, *fr = ls->fr;

    for (int n = 0; n < N; n++) {
        row[n] = fresh ? 0 : o[n];
        have += row[n];
    }
    if (have > r) { /* shrink from the smallest shares */
        while (have > r) {
            int pick = -1;

            for (int n = 0; n < N; n++)
                if (row[n] > 0 && (pick < 0 || row[n] < row[pick]))
                    pick = n;
            row[pick]--;
            have--;
        }
        return 1;
    }
    need = r - have;
    for (int n = 0; n < N; n++) /* free GPUs on each node, j's own counted free */
        fr[n] = ls->s->nodes[n].gpus - (ls->used[n] - o[n]) - row[n];
    /* grow on nodes it already uses */
    for (int n = 0; n < N && need > 0; n++) {
        if (row[n] > 0 && fr[n] > 0) {
            int t = fr[n] < need ? fr[n] : need;

            row[n] += t;
            fr[n] -= t;
            need -= t;
        }
    }
    while (need > 0) {
        int pick = -1, t;

        /* the tightest node that takes the rest, else the one with the most room */
        for (int n = 0; n < N; n++) {
            if (row[n] > 0 || fr[n] <= 0)
                continue;
            if (fr[n] >= need) {
                if (pick < 0 || fr[n] < fr[pick] || fr[pick] < need)
                    pick = n;
            } else if (pick < 0 || (fr[pick] < need && fr[n] > fr[pick])) {
                pick = n;
            }
        }
        if (pick < 0)
            return 0;
        t = fr[pick] < need ? fr[pick] : need;
        row[pick] += t;
        fr[pick] -= t;
        need -= t;
    }
    return 1;
}

/*
 * When no one- or two-job move helps: a chain of three. Job j grows by one on a full node n it
 * uses; job k moves its replica from n to a node m; job l gives up one replica on m to make room.
 * Applies the best such chain that raises the objective; returns 1 if one was applied.
 */
static int pollux_chain(struct pollux_ls *ls, struct pollux_job *pj)
{
    int N = ls->N, *rl = ls->row + 4 * (size_t)N, *save = malloc((size_t)N * 3 * sizeof(int));
    int *bj_row = save + N, *bk_row = save + 2 * N, bj = -1, bk = -1, bl = -1, r;
    double best = 1e-12;

    if (!save)
        return 0;
    for (int j = 0; j < ls->J; j++) {
        const int *cj = ls->cnt + (size_t)j * N;

        ls_nodes(cj, N, &r);
        if (r == 0 || r >= pj[j].maxr)
            continue;
        for (int n = 0; n < N; n++) {
            if (cj[n] == 0 || ls->used[n] < ls->s->nodes[n].gpus)
                continue;
            for (int k = 0; k < ls->J; k++) {
                if (k == j || ls->cnt[(size_t)k * N + n] == 0)
                    continue;
                for (int m = 0; m < N; m++) {
                    if (m == n || ls->used[m] < ls->s->nodes[m].gpus)
                        continue;
                    for (int l = 0; l < ls->J; l++) {
                        const int *cl = ls->cnt + (size_t)l * N;
                        double ul = ls->u[l], d;

                        if (l == j || l == k || cl[m] == 0)
                            continue;
                        /* l gives one up on m, then j and k move as in the relocate move */
                        memcpy(save, cl, (size_t)N * sizeof(int));
                        memcpy(rl, cl, (size_t)N * sizeof(int));
                        rl[m]--;
                        ls_apply(ls, l, rl);
                        memcpy(ls->row, cj, (size_t)N * sizeof(int));
                        memcpy(ls->row2, ls->cnt + (size_t)k * N, (size_t)N * sizeof(int));
                        ls->row[n]++;
                        ls->row2[n]--;
                        ls->row2[m]++;
                        if (ls_feasible(ls, j, ls->row, k, ls->row2)) {
                            d = ls_utility(ls, j, ls->row) + ls_utility(ls, k, ls->row2) -
                                ls->u[j] - ls->u[k] + ls->u[l] - ul;
                            if (d > best) {
                                best = d, bj = j, bk = k, bl = l;
                                memcpy(bj_row, ls->row, (size_t)N * sizeof(int));
                                memcpy(bk_row, ls->row2, (size_t)N * sizeof(int));
                            }
                        }
                        ls_apply(ls, l, save);
                    }
                }
            }
        }
    }
    if (bj >= 0) {
        const int *cl = ls->cnt + (size_t)bl * N;
        int m = -1;

        for (int q = 0; q < N; q++)
            if (bk_row[q] > ls->cnt[(size_t)bk * N + q])
                m = q;
        memcpy(rl, cl, (size_t)N * sizeof(int));
        rl[m]--;
        ls_apply(ls, bl, rl);
        ls_apply(ls, bk, bk_row);
        ls_apply(ls, bj, bj_row);
    }
    free(save);
    return bj >= 0;
}

/*
 * The last pass's move: re-solve two nodes (or three) exactly. Every GPU of the nodes is given back
 * and shared out again among the jobs that hold GPUs there, the jobs that held GPUs there before
 * this round (back where they were, they need no restart) and the jobs that one GPU or a node's
 * worth there would help most (at most six jobs for a pair, ten for a triple), each job's GPUs
 * elsewhere kept. Branch and bound over each job's GPUs on each of the nodes (an option), best
 * options first, bounded by a dynamic program over the jobs and the GPUs left (exact but for the
 * one-distributed-job rule, which the search checks). On a two-node cluster with few jobs the
 * answer is the optimum; on larger ones it moves that many jobs at once, which no one-, two- or
 * three-job move does (a job shrinking off a node so that another returns to what it held and a
 * third grows there).
 */
#define PX_PAIR_JOBS 6    /* jobs in a pair's search at most */
#define PX_TRIPLE_JOBS 10 /* jobs in a triple's search at most */
#define PX_JOBS 10        /* the larger of the two */
#define PX_NODES 3        /* nodes re-solved at once, at most */
#define PX_OPTS 125       /* options per job: pairs of nodes of up to 8 GPUs, triples of up to 4 */
#define PX_TRIPLES 2000   /* triples of nodes set up per scan at most */
#define PX_TRIPLE_STEPS 200000 /* (pair, third node) candidates looked at per scan at most */
#define PX_TRIPLE_GPUS 4       /* GPUs of a node in a triple at most (5^3 options fill PX_OPTS) */
#define PX_GAINERS 4     /* jobs whose nodes may be third nodes of a triple, those gaining most */
#define PX_GPUS 16       /* GPUs on the set up to which a job's terms are memoised */
#define PX_VISITS 200000 /* search nodes per set at most (a bound on a pathological one) */

struct pollux_px {
    struct pollux_ls *ls;
    int K, A, nopt;
    int n[PX_NODES], g[PX_NODES], stride[PX_NODES]; /* the nodes; option o = sum of GPUs x stride */
    unsigned char od[PX_NODES][PX_OPTS];            /* GPUs option o puts on each node */
    unsigned char oin[PX_OPTS];                     /* nodes of the set option o uses */
    int job[PX_JOBS];
    int outn[PX_JOBS];             /* nodes the job uses outside the set */
    int was_dist[PX_JOBS];         /* distributed now */
    double u[PX_JOBS][PX_OPTS];    /* the job's term per option; -inf: none */
    short order[PX_JOBS][PX_OPTS]; /* allowed options, best first */
    int nord[PX_JOBS];
    double rest[PX_JOBS + 1][PX_OPTS]; /* the best sum of jobs i.. within the GPUs left */
    int pick[PX_JOBS], best_pick[PX_JOBS];
    double best;
    int used[PX_NODES], dist[PX_NODES];
    long visits;
};

static int px_member(const struct pollux_px *x, int m)
{
    for (int d = 0; d < x->K; d++)
        if (x->n[d] == m)
            return 1;
    return 0;
}

/* 1 if the picked options keep nodes outside the set at one distributed job each. */
static int px_outside_ok(struct pollux_px *x)
{
    struct pollux_ls *ls = x->ls;
    int N = ls->N;

    if (!ls->p->avoid_interference)
        return 1;
    for (int i = 0; i < x->A; i++) {
        const int *c = ls->cnt + (size_t)x->job[i] * N;
        int now = x->outn[i] + x->oin[x->pick[i]] > 1;

        if (x->outn[i] == 0 || now == x->was_dist[i] || !now)
            continue;
        /* job i becomes distributed: each outside node it uses must have no other */
        for (int m = 0; m < N; m++) {
            int d = ls->dcnt[m];

            if (c[m] == 0 || px_member(x, m))
                continue;
            for (int k = 0; k < x->A; k++)
                if (ls->cnt[(size_t)x->job[k] * N + m] > 0)
                    d += (x->outn[k] + x->oin[x->pick[k]] > 1) - x->was_dist[k];
            if (d > 1)
                return 0;
        }
    }
    return 1;
}

static void px_search(struct pollux_px *x, int i, double sum)
{
    int left = 0;

    for (int d = 0; d < x->K; d++)
        left += (x->g[d] - x->used[d]) * x->stride[d];
    /* what the rest could reach within the GPUs left, interference aside: an upper bound */
    if (sum + x->rest[i][left] <= x->best || ++x->visits > PX_VISITS)
        return;
    if (i == x->A) {
        if (px_outside_ok(x)) {
            x->best = sum;
            memcpy(x->best_pick, x->pick, sizeof(x->pick));
        }
        return;
    }
    for (int q = 0; q < x->nord[i]; q++) {
        int o = x->order[i][q], fits = 1, dist;

        if (sum + x->u[i][o] + x->rest[i + 1][x->nopt - 1] <= x->best)
            break; /* options are sorted: none after this one can do better */
        dist = x->ls->p->avoid_interference && x->outn[i] + x->oin[o] > 1;
        for (int d = 0; d < x->K; d++)
            fits &=
                x->used[d] + x->od[d][o] <= x->g[d] && !(dist && x->od[d][o] > 0 && x->dist[d] > 0);
        if (!fits)
            continue;
        x->pick[i] = o;
        for (int d = 0; d < x->K; d++) {
            x->used[d] += x->od[d][o];
            x->dist[d] += dist && x->od[d][o] > 0;
        }
        px_search(x, i + 1, sum + x->u[i][o]);
        for (int d = 0; d < x->K; d++) {
            x->used[d] -= x->od[d][o];
            x->dist[d] -= dist && x->od[d][o] > 0;
        }
    }
}

/* Job j's term with r replicas on `nodes` nodes; -inf beyond its limit. */
static double ls_term(const struct pollux_ls *ls, int j, int nodes, int r, int changed)
{
    if (r > ls->pj[j].maxr)
        return -HUGE_VAL;
    return pollux_job_utility(ls->p, ls->s, j, &ls->pj[j], nodes, r, changed);
}

/* rest[i][c] for every capacity c (each node's GPUs within the set's): the best sum of jobs i..
 * by dynamic programming over the jobs, each option o within c adding u[i][o] to rest[i + 1] of
 * what is left (c - o, digit by digit). */
static void px_bound(struct pollux_px *x)
{
    int g0 = x->g[0], g1 = x->K > 1 ? x->g[1] : 0, g2 = x->K > 2 ? x->g[2] : 0;
    int s0 = x->stride[0], s1 = x->K > 1 ? x->stride[1] : 0, s2 = x->K > 2 ? x->stride[2] : 0;

    for (int o = 0; o < x->nopt; o++)
        x->rest[x->A][o] = 0;
    for (int i = x->A - 1; i >= 0; i--) {
        const double *u = x->u[i], *next = x->rest[i + 1];

        for (int c0 = 0; c0 <= g0; c0++)
            for (int c1 = 0; c1 <= g1; c1++)
                for (int c2 = 0; c2 <= g2; c2++) {
                    int c = c0 * s0 + c1 * s1 + c2 * s2;
                    double v = -HUGE_VAL;

                    for (int a0 = 0; a0 <= c0; a0++)
                        for (int a1 = 0; a1 <= c1; a1++)
                            for (int a2 = 0; a2 <= c2; a2++) {
                                int o = a0 * s0 + a1 * s1 + a2 * s2;
                                /* no NaN here (terms are finite or -inf): a comparison is fmax
                                 * without the call */
                                double t = u[o] + next[c - o];

                                if (t > v)
                                    v = t;
                            }
                    x->rest[i][c] = v;
                }
    }
}

/* Set up the set of K nodes: its jobs, their options and bounds. jr, jn and jdiff are each job's
 * replicas, nodes, and nodes where it differs from the current allocation; jgain what one more
 * node (one GPU or a node's worth) would add to its term. Returns 0 if the set holds more jobs
 * than a search can take, or its nodes more options. */
static int px_setup(struct pollux_px *x, struct pollux_ls *ls, int K, const int *nodes,
                    const int *jr, const int *jn, const int *jdiff, const double *jgain)
{
    int N = ls->N;
    double gain[PX_JOBS], memo[PX_NODES + 1][PX_GPUS + 1][2];
    int cap = K == 2 ? PX_PAIR_JOBS : PX_TRIPLE_JOBS;

    x->ls = ls, x->K = K, x->A = 0, x->nopt = 1, x->visits = 0;
    for (int d = K - 1; d >= 0; d--) {
        x->n[d] = nodes[d];
        x->g[d] = ls->s->nodes[nodes[d]].gpus;
        x->stride[d] = x->nopt;
        x->nopt *= x->g[d] + 1;
        x->used[d] = x->dist[d] = 0;
        if (x->nopt > PX_OPTS)
            return 0;
    }
    for (int o = 0; o < x->nopt; o++) {
        x->oin[o] = 0;
        for (int d = 0; d < K; d++) {
            x->od[d][o] = (unsigned char)(o / x->stride[d] % (x->g[d] + 1));
            x->oin[o] += x->od[d][o] > 0;
        }
    }
    for (int j = 0; j < ls->J; j++) {
        const int *c = ls->cnt + (size_t)j * N;
        int on = 0;

        for (int d = 0; d < K; d++)
            on |= c[nodes[d]] > 0;
        if (!on)
            continue;
        if (x->A == cap)
            return 0;
        x->job[x->A++] = j;
    }
    /* then the jobs that held GPUs here before this round (back where they were, they need no
     * restart), then the jobs that one GPU or a node's worth here would help most */
    for (int j = 0, held = x->A; j < ls->J; j++) {
        const int *c = ls->cnt + (size_t)j * N, *cur = ls->cur + (size_t)j * N;
        int on = 0, was = 0, slot;
        double g;

        for (int d = 0; d < K; d++) {
            on |= c[nodes[d]] > 0;
            was |= cur[nodes[d]] > 0;
        }
        if (on || ls->pj[j].maxr == 0)
            continue;
        if (was) {
            g = HUGE_VAL;
        } else {
            g = jgain[j];
            if (!(g > 0))
                continue;
        }
        slot = x->A;
        if (x->A == cap) { /* replace the weakest entrant if this one is better */
            slot = -1;
            for (int i = held; i < x->A; i++)
                if (gain[i] < g && (slot < 0 || gain[i] < gain[slot]))
                    slot = i;
            if (slot < 0)
                continue;
        } else {
            x->A++;
        }
        x->job[slot] = j;
        gain[slot] = g;
    }
    for (int i = 0; i < x->A; i++) {
        int j = x->job[i], outr = jr[j], odiff = jdiff[j];
        const int *c = ls->cnt + (size_t)j * N, *cur = ls->cur + (size_t)j * N;

        x->was_dist[i] = jn[j] > 1;
        x->outn[i] = jn[j];
        for (int d = 0; d < K; d++) {
            outr -= c[nodes[d]];
            odiff -= c[nodes[d]] != cur[nodes[d]];
            x->outn[i] -= c[nodes[d]] > 0;
        }
        x->nord[i] = 0;
        for (int q = 0; q < (int)(sizeof(memo) / sizeof(memo[0][0][0])); q++)
            (&memo[0][0][0])[q] = NAN;
        for (int o = 0; o < x->nopt; o++) {
            int here = 0, changed = odiff > 0, q;
            double u, *m;

            for (int d = 0; d < K; d++) {
                here += x->od[d][o];
                changed |= x->od[d][o] != cur[nodes[d]];
            }
            /* the term depends on the nodes used, the GPUs and whether they changed: many
             * options share one (a triple's 125 options, at most 2 x 4 x 13 terms) */
            if (here > PX_GPUS) {
                u = ls_term(ls, j, x->outn[i] + x->oin[o], outr + here, changed);
            } else {
                m = &memo[x->oin[o]][here][changed];
                if (isnan(*m))
                    *m = ls_term(ls, j, x->outn[i] + x->oin[o], outr + here, changed);
                u = *m;
            }
            x->u[i][o] = u;
            if (u == -HUGE_VAL)
                continue;
            for (q = x->nord[i]; q > 0 && x->u[i][x->order[i][q - 1]] < u; q--)
                x->order[i][q] = x->order[i][q - 1];
            x->order[i][q] = (short)o;
            x->nord[i]++;
        }
        if (x->nord[i] == 0)
            return 0;
    }
    px_bound(x);
    return 1;
}

/* The best re-solve of a scan: its nodes, jobs and their GPUs on each node. */
struct px_best {
    int K, A;
    int n[PX_NODES];
    int job[PX_JOBS];
    int gpus[PX_JOBS][PX_NODES];
};

/* Search the set of nodes set up in x; if its best beats the best so far (*best, the gain over
 * what the set's jobs have now), keep it in bx. 1 if it did. */
static int px_try(struct pollux_px *x, struct px_best *bx, double *best)
{
    double now = 0;

    for (int i = 0; i < x->A; i++)
        now += x->ls->u[x->job[i]];
    x->best = now + *best;
    px_search(x, 0, 0.0);
    if (x->best <= now + *best)
        return 0;
    *best = x->best - now;
    bx->K = x->K, bx->A = x->A;
    memcpy(bx->n, x->n, sizeof(x->n));
    memcpy(bx->job, x->job, sizeof(x->job));
    for (int i = 0; i < x->A; i++)
        for (int d = 0; d < x->K; d++)
            bx->gpus[i][d] = x->od[d][x->best_pick[i]];
    return 1;
}

/* 1 if node n has free GPUs or a job whose GPUs there differ from the current allocation's. */
static int ls_touched(const struct pollux_ls *ls, int n)
{
    if (ls->used[n] < ls->s->nodes[n].gpus)
        return 1;
    for (int j = 0; j < ls->J; j++)
        if (ls->cnt[(size_t)j * ls->N + n] != ls->cur[(size_t)j * ls->N + n])
            return 1;
    return 0;
}

/* 1 if some job holds, or held before this round, GPUs on both nodes a and b. */
static int ls_linked(const struct pollux_ls *ls, int a, int b)
{
    for (int j = 0; j < ls->J; j++) {
        const int *c = ls->cnt + (size_t)j * ls->N, *cur = ls->cur + (size_t)j * ls->N;

        if ((c[a] > 0 || cur[a] > 0) && (c[b] > 0 || cur[b] > 0))
            return 1;
    }
    return 0;
}

/*
 * Re-solve every pair of nodes (K = 2), or up to PX_TRIPLES triples (K = 3), and apply the best
 * that raises the objective. 1 if one was applied. A triple is two touched nodes (free GPUs, or a
 * job moved there) and a third that is touched too, shares a job with one of them, or holds one
 * of the PX_GAINERS jobs that one more node would help most: the rearrangements a pair cannot
 * make move jobs between nodes that are linked in one of those ways.
 */
static int pollux_resolve(struct pollux_ls *ls, int K)
{
    struct pollux_px *x = malloc(sizeof(*x));
    struct px_best *bx = malloc(sizeof(*bx));
    int *jr = calloc((size_t)ls->J * 4, sizeof(int)), *jn = jr + ls->J, *jdiff = jn + ls->J;
    int *picked = jdiff + ls->J;
    int *role = malloc((size_t)ls->N * 2 * sizeof(int)), *tl = role + ls->N;
    double best = 1e-12, *jgain = malloc((size_t)ls->J * sizeof(double));
    int N = ls->N, found = 0, gpn = ls->s->nodes[0].gpus, set[PX_NODES], nt = 0, sets = 0;
    long steps = 0;

    if (!x || !bx || !jr || !jgain || !role)
        goto out;
    for (int j = 0; j < ls->J; j++) {
        const int *c = ls->cnt + (size_t)j * N, *cur = ls->cur + (size_t)j * N;
        int more;

        jn[j] = ls_nodes(c, N, &jr[j]);
        jdiff[j] = 0;
        for (int n = 0; n < N; n++)
            jdiff[j] += c[n] != cur[n];
        /* on a node it does not use (as an entrant of a set it is not on) */
        more = ls->pj[j].maxr - jr[j] < gpn ? ls->pj[j].maxr - jr[j] : gpn;
        jgain[j] = more <= 0 ? -HUGE_VAL
                             : fmax(ls_term(ls, j, jn[j] + 1, jr[j] + 1, 1),
                                    ls_term(ls, j, jn[j] + 1, jr[j] + more, 1)) -
                                   ls->u[j];
    }
    if (K == 2) {
        for (set[0] = 0; set[0] < N; set[0]++)
            for (set[1] = set[0] + 1; set[1] < N; set[1]++)
                if (px_setup(x, ls, 2, set, jr, jn, jdiff, jgain))
                    found |= px_try(x, bx, &best);
        goto apply;
    }
    for (int n = 0; n < N; n++) { /* role -1: too many GPUs to be in a triple */
        role[n] = ls->s->nodes[n].gpus > PX_TRIPLE_GPUS ? -1 : ls_touched(ls, n);
        if (role[n] == 1)
            tl[nt++] = n;
    }
    /* the nodes of the PX_GAINERS jobs holding GPUs that one more node would help most may be
     * third nodes too (role 2): such a job moves into a touched node and another grows where it
     * was */
    for (int e = 0; e < PX_GAINERS; e++) {
        int g = -1;

        for (int j = 0; j < ls->J; j++)
            if (jn[j] > 0 && jgain[j] > 0 && !picked[j] && (g < 0 || jgain[j] > jgain[g]))
                g = j;
        if (g < 0)
            break;
        picked[g] = 1;
        for (int n = 0; n < N; n++)
            if (ls->cnt[(size_t)g * N + n] > 0 && role[n] == 0)
                role[n] = 2;
    }
    for (int a = 0; a < nt; a++)
        for (int b = a + 1; b < nt; b++)
            for (int n = 0; n < N; n++) {
                if (sets == PX_TRIPLES || ++steps > PX_TRIPLE_STEPS)
                    goto apply;
                if (n == tl[a] || n == tl[b] || role[n] < 0 || (role[n] == 1 && n < tl[b]) ||
                    (!role[n] && !ls_linked(ls, n, tl[a]) && !ls_linked(ls, n, tl[b])))
                    continue;
                set[0] = tl[a], set[1] = tl[b], set[2] = n;
                sets++;
                if (px_setup(x, ls, 3, set, jr, jn, jdiff, jgain))
                    found |= px_try(x, bx, &best);
            }
apply:
    if (found) {
        int *row = ls->row;

        for (int i = 0; i < bx->A; i++) {
            memcpy(row, ls->cnt + (size_t)bx->job[i] * N, (size_t)N * sizeof(int));
            for (int d = 0; d < bx->K; d++)
                row[bx->n[d]] = bx->gpus[i][d];
            ls_apply(ls, bx->job[i], row);
        }
    }
out:
    free(x);
    free(bx);
    free(jr);
    free(jgain);
    free(role);
    return found;
}

/*
 * The re-split, after the triples: two distributed jobs share the nodes they use (at most
 * RS_NODES) anew. Each node of the union goes whole to one of the two (the GPUs the other jobs
 * there leave), or to neither, where other jobs may then grow (onto it, or in place). On nodes of
 * several GPUs, one node more for one job and one fewer for the other is often worth a restart of
 * both that no move of one or two jobs and no re-solve of two or three nodes reaches: with the
 * nodes other jobs share, the re-split spans four nodes or more. Every split is scored by the two
 * jobs' terms (each with all it may use of the GPUs on the nodes it gets, or as it is when it
 * keeps exactly its nodes) plus, for each node left to neither, an estimate of the best gain of a
 * third job there; the best RS_CANDS are applied in turn, the third jobs' moves found exactly
 * (node by node, while one gains), and the first whose exact gain is positive is kept. Only under
 * the one-distributed-job-per-node rule (the two jobs' nodes are then disjoint, and no other
 * distributed job shares them).
 */
#define RS_NODES 8 /* nodes of the two jobs at most */
#define RS_CAP 64  /* GPUs of those nodes at most */
#define RS_JOBS 16 /* distributed jobs looked at, at most */
#define RS_CANDS 4 /* splits verified per scan, best estimate first */
#define RS_GPN 8   /* GPUs per node up to which a third job's gain is estimated */

/* A distributed job's term on n nodes (of the union) holding all C GPUs there that it may use,
 * computed when first asked (NAN until then): the goodputs behind it are costly to fill. */
struct rs_job {
    int j;
    double t[RS_NODES + 1][RS_CAP + 1];
};

/* One split of a pair: the union's nodes, which go to the first job (mask a) and to the second
 * (mask b), whether each keeps its row as it is, and the estimated gain. */
struct rs_cand {
    int x, y, ns, keep_a, keep_b;
    unsigned a, b;
    int node[RS_NODES], f[RS_NODES];
    double est;
};

struct rs_scan {
    struct pollux_ls *ls;
    struct rs_job *ja, *jb;
    int x, y, ns;
    int node[RS_NODES], f[RS_NODES];
    unsigned now_a, now_b;
    double base, third[RS_GPN + 1]; /* base: the two terms now; third: the best gain by GPUs */
    double here[RS_NODES];          /* the best gain of a job on node i growing there */
    struct rs_cand cand[RS_CANDS];
    int ncand;
};

/* Job q's count on n nodes with C GPUs: all it may use of them; -1 if it cannot have n nodes. */
static int rs_count(const struct pollux_ls *ls, const struct rs_job *q, int n, int C)
{
    int r = C < ls->pj[q->j].maxr ? C : ls->pj[q->j].maxr;

    return n == 0 ? 0 : r >= n ? r : -1;
}

/* Job q's term on n nodes with C GPUs (rs_job), filled in when first asked. */
static double rs_term(const struct pollux_ls *ls, struct rs_job *q, int n, int C)
{
    int r = rs_count(ls, q, n, C);

    if (r < 0)
        return -HUGE_VAL;
    if (isnan(q->t[n][C]))
        q->t[n][C] = ls_term(ls, q->j, n, r, 1);
    return q->t[n][C];
}

/* Keep the split (a, b) if its estimate is among the best RS_CANDS so far. */
static void rs_offer(struct rs_scan *sc, unsigned a, unsigned b, int na, int ca, int nb, int cb,
                     double bonus)
{
    struct pollux_ls *ls = sc->ls;
    double va = rs_term(ls, sc->ja, na, ca), vb = rs_term(ls, sc->jb, nb, cb), est;
    int keep_a = 0, keep_b = 0, q;

    if (a == sc->now_a && ls->u[sc->ja->j] >= va)
        va = ls->u[sc->ja->j], keep_a = 1;
    if (b == sc->now_b && ls->u[sc->jb->j] >= vb)
        vb = ls->u[sc->jb->j], keep_b = 1;
    est = va + vb - sc->base + bonus;
    if (!(est > 1e-12) || (keep_a && keep_b))
        return;
    if (sc->ncand == RS_CANDS && !(est > sc->cand[RS_CANDS - 1].est))
        return;
    q = sc->ncand < RS_CANDS ? sc->ncand++ : RS_CANDS - 1;
    for (; q > 0 && sc->cand[q - 1].est < est; q--)
        sc->cand[q] = sc->cand[q - 1];
    sc->cand[q] = (struct rs_cand){.x = sc->x,
                                   .y = sc->y,
                                   .ns = sc->ns,
                                   .a = a,
                                   .b = b,
                                   .keep_a = keep_a,
                                   .keep_b = keep_b,
                                   .est = est};
    memcpy(sc->cand[q].node, sc->node, sizeof(sc->node));
    memcpy(sc->cand[q].f, sc->f, sizeof(sc->f));
}

/* Every split of the union's nodes i.. among the first job, the second and neither; a job that
 * has all the GPUs it may use gets no node more (a node more, no GPU more: only sync to pay). */
static void rs_enumerate(struct rs_scan *sc, int i, unsigned a, int ca, unsigned b, int cb,
                         double bonus)
{
    int f = sc->f[i < sc->ns ? i : 0];

    if (i == sc->ns) {
        rs_offer(sc, a, b, __builtin_popcount(a), ca, __builtin_popcount(b), cb, bonus);
        return;
    }
    if (ca < sc->ls->pj[sc->ja->j].maxr)
        rs_enumerate(sc, i + 1, a | 1u << i, ca + f, b, cb, bonus);
    if (cb < sc->ls->pj[sc->jb->j].maxr)
        rs_enumerate(sc, i + 1, a, ca, b | 1u << i, cb + f, bonus);
    rs_enumerate(sc, i + 1, a, ca, b, cb,
                 bonus + fmax(sc->third[f < RS_GPN ? f : RS_GPN], sc->here[i]));
}

/* Job j's row on the union's nodes in mask (their free GPUs f), r GPUs: one on each, the rest on
 * the nodes with the most room first. */
static void rs_row(const struct rs_cand *c, unsigned mask, int r, int N, int *row)
{
    int left = r - __builtin_popcount(mask), done[RS_NODES] = {0};

    memset(row, 0, (size_t)N * sizeof(int));
    for (int i = 0; i < c->ns; i++)
        if (mask >> i & 1)
            row[c->node[i]] = 1;
    while (left > 0) {
        int pick = -1, t;

        for (int i = 0; i < c->ns; i++)
            if ((mask >> i & 1) && !done[i] && (pick < 0 || c->f[i] > c->f[pick]))
                pick = i;
        done[pick] = 1;
        t = c->f[pick] - 1 < left ? c->f[pick] - 1 : left;
        row[c->node[pick]] += t;
        left -= t;
    }
}

/* The best move of one job other than j and k onto the free GPUs of a node of the union (a node
 * it does not use, or in place; elsewhere nothing changed): its gain, and the job and row in *e
 * and erow; -1 in *e when none gains. */
static double rs_third(struct pollux_ls *ls, const struct rs_cand *c, int j, int k, int *e,
                       int *erow)
{
    double best = 1e-12;

    *e = -1;
    for (int i = 0; i < c->ns; i++) {
        int m = c->node[i], room = ls->s->nodes[m].gpus - ls->used[m];

        for (int q = 0; room > 0 && q < ls->J; q++) {
            int r;

            if (q == j || q == k)
                continue;
            ls_nodes(ls->cnt + (size_t)q * ls->N, ls->N, &r);
            for (int g = 1; g <= room && r + g <= ls->pj[q].maxr; g++) {
                double d;

                memcpy(ls->row, ls->cnt + (size_t)q * ls->N, (size_t)ls->N * sizeof(int));
                ls->row[m] += g;
                if (!ls_feasible(ls, q, ls->row, -1, NULL))
                    continue;
                d = ls_utility(ls, q, ls->row) - ls->u[q];
                if (d > best) {
                    best = d, *e = q;
                    memcpy(erow, ls->row, (size_t)ls->N * sizeof(int));
                }
            }
        }
    }
    return *e >= 0 ? best : 0.0;
}

/* Apply candidate c exactly: the two jobs' rows, then, node by node, the best third job's move
 * while one gains. 1 if the whole is a gain (kept), else everything is put back and 0. save holds
 * (4 + RS_NODES) x N ints. */
static int rs_apply(struct pollux_ls *ls, const struct rs_job *rj, const struct rs_cand *c,
                    int *save)
{
    int N = ls->N, j = rj[c->x].j, k = rj[c->y].j, ca = 0, cb = 0, nthird = 0;
    int *sj = save, *sk = save + N, *rowj = save + 2 * N, *rowk = save + 3 * N, third[RS_NODES];
    double before = ls->u[j] + ls->u[k], gain;

    for (int i = 0; i < c->ns; i++) {
        ca += (c->a >> i & 1) ? c->f[i] : 0;
        cb += (c->b >> i & 1) ? c->f[i] : 0;
    }
    memcpy(sj, ls->cnt + (size_t)j * N, (size_t)N * sizeof(int));
    memcpy(sk, ls->cnt + (size_t)k * N, (size_t)N * sizeof(int));
    if (c->keep_a)
        memcpy(rowj, sj, (size_t)N * sizeof(int));
    else
        rs_row(c, c->a, rs_count(ls, &rj[c->x], __builtin_popcount(c->a), ca), N, rowj);
    if (c->keep_b)
        memcpy(rowk, sk, (size_t)N * sizeof(int));
    else
        rs_row(c, c->b, rs_count(ls, &rj[c->y], __builtin_popcount(c->b), cb), N, rowk);
    memset(ls->row2, 0, (size_t)N * sizeof(int));
    ls_apply(ls, j, ls->row2); /* both off first: their nodes are disjoint after */
    ls_apply(ls, k, ls->row2);
    ls_apply(ls, j, rowj);
    ls_apply(ls, k, rowk);
    gain = ls->u[j] + ls->u[k] - before;
    while (nthird < RS_NODES) {
        int *old = save + (size_t)(4 + nthird) * N, e;
        double g = rs_third(ls, c, j, k, &e, rowj);

        if (e < 0)
            break;
        memcpy(old, ls->cnt + (size_t)e * N, (size_t)N * sizeof(int));
        third[nthird++] = e;
        ls_apply(ls, e, rowj);
        gain += g;
    }
    if (gain > 1e-12)
        return 1;
    while (nthird > 0) { /* put back in the reverse order */
        nthird--;
        ls_apply(ls, third[nthird], save + (size_t)(4 + nthird) * N);
    }
    ls_apply(ls, j, ls->row2);
    ls_apply(ls, k, ls->row2);
    ls_apply(ls, j, sj);
    ls_apply(ls, k, sk);
    return 0;
}

/* Re-split the best pair of distributed jobs where that gains (see above). 1 if one was applied;
 * 0 if none gains or scratch cannot be had (the search then ends as it would have). */
static int pollux_resplit(struct pollux_ls *ls)
{
    int N = ls->N, nd = 0, found = 0, gmax = 0;
    struct rs_job *rj = malloc(RS_JOBS * sizeof(*rj));
    struct rs_scan *sc = malloc(sizeof(*sc));
    double *gain = malloc((size_t)ls->J * (RS_GPN + 1) * sizeof(double));
    int *save = malloc((size_t)N * (4 + RS_NODES) * sizeof(int));

    if (!rj || !sc || !gain || !save || !ls->p->avoid_interference)
        goto out;
    for (int j = 0; j < ls->J && nd < RS_JOBS; j++) {
        if (ls->jn[j] < 2 || ls->jn[j] > RS_NODES)
            continue;
        rj[nd].j = j;
        for (int q = 0; q < (int)(sizeof(rj[nd].t) / sizeof(double)); q++)
            (&rj[nd].t[0][0])[q] = NAN;
        nd++;
    }
    if (nd < 2)
        goto out;
    /* each job's gain from c more GPUs on a node it does not use (its estimate as a third), up
     * to the largest node's GPUs */
    for (int m = 0; m < N; m++)
        gmax = ls->s->nodes[m].gpus > gmax ? ls->s->nodes[m].gpus : gmax;
    for (int q = 0; q < ls->J; q++) {
        int r, n = ls_nodes(ls->cnt + (size_t)q * N, N, &r);
        double *g = gain + (size_t)q * (RS_GPN + 1);

        g[0] = 0.0;
        for (int c = 1; c <= RS_GPN; c++)
            g[c] = c > gmax ? g[c - 1] : fmax(g[c - 1], ls_term(ls, q, n + 1, r + c, 1) - ls->u[q]);
    }
    sc->ls = ls;
    sc->ncand = 0;
    for (int x = 0; x < nd; x++)
        for (int y = x + 1; y < nd; y++) {
            const int *cj = ls->cnt + (size_t)rj[x].j * N, *ck = ls->cnt + (size_t)rj[y].j * N;
            int cap = 0, ok = 1;

            sc->ja = &rj[x], sc->jb = &rj[y], sc->x = x, sc->y = y, sc->ns = 0;
            sc->now_a = sc->now_b = 0;
            for (int m = 0; m < N && ok; m++) {
                if (cj[m] == 0 && ck[m] == 0)
                    continue;
                if (sc->ns == RS_NODES || (cj[m] > 0 && ck[m] > 0)) {
                    ok = 0;
                    break;
                }
                sc->now_a |= (unsigned)(cj[m] > 0) << sc->ns;
                sc->now_b |= (unsigned)(ck[m] > 0) << sc->ns;
                sc->node[sc->ns] = m;
                sc->f[sc->ns] = ls->s->nodes[m].gpus - ls->used[m] + cj[m] + ck[m];
                cap += sc->f[sc->ns++];
            }
            if (!ok || cap > RS_CAP)
                continue;
            /* the best third job's gain by the GPUs it would get */
            for (int c = 0; c <= RS_GPN; c++) {
                sc->third[c] = 0.0;
                for (int q = 0; q < ls->J; q++)
                    if (q != rj[x].j && q != rj[y].j)
                        sc->third[c] = fmax(sc->third[c], gain[(size_t)q * (RS_GPN + 1) + c]);
            }
            /* and of a job already on a node of the union, growing there */
            for (int i = 0; i < sc->ns; i++) {
                int m = sc->node[i];

                sc->here[i] = 0.0;
                for (int q = 0; q < ls->J; q++) {
                    int r, n;

                    if (q == rj[x].j || q == rj[y].j || ls->cnt[(size_t)q * N + m] == 0)
                        continue;
                    n = ls_nodes(ls->cnt + (size_t)q * N, N, &r);
                    for (int c = 1; c <= sc->f[i] && r + c <= ls->pj[q].maxr; c++)
                        sc->here[i] = fmax(sc->here[i], ls_term(ls, q, n, r + c, 1) - ls->u[q]);
                }
            }
            sc->base = ls->u[rj[x].j] + ls->u[rj[y].j];
            rs_enumerate(sc, 0, 0, 0, 0, 0, 0.0);
        }
    for (int i = 0; i < sc->ncand && !found; i++)
        found = rs_apply(ls, rj, &sc->cand[i], save);
out:
    free(rj);
    free(sc);
    free(gain);
    free(save);
    return found;
}

/*
 * Ejection chains from free GPUs (passes->eject), tried before the first move from a start: job a
 * takes free GPUs on a node (growing there, or moving there whole), job b takes GPUs that a's move
 * freed, job c GPUs that a's or b's freed. A greedy search never makes the middle step when it
 * loses on its own (a job consolidating where another left, so that a third grows where it was),
 * nor, when one job without GPUs gains far more from any GPU than all else, the move that frees
 * GPUs for it. EJ_BEAM partial chains that freed GPUs, the best by summed gain, are kept at each
 * step; the best chain of two steps or more is applied when its gain beats every chain of one step
 * (a move the search makes anyway).
 */
#define EJ_BEAM 8  /* partial chains kept per step */
#define EJ_DEPTH 3 /* steps of a chain at most */

struct ej_chain {
    int n;             /* steps */
    int job[EJ_DEPTH]; /* the job each step moves */
    double gain;       /* summed gain of the steps */
    int *rows;         /* EJ_DEPTH x N: each step's new row */
};

struct ej_scan {
    struct pollux_ls *ls;
    struct ej_chain beam[2][EJ_BEAM], best;
    int nbeam[2];
    double best1; /* the best chain of one step */
};

/* 1 if row leaves GPUs free on a node where was has them. */
static int ej_frees(const int *was, const int *row, int N)
{
    for (int m = 0; m < N; m++)
        if (row[m] < was[m])
            return 1;
    return 0;
}

/* Offer the chain base + (job q to row), gain g in all, to the next beam (kept if among the
 * EJ_BEAM best), and as the best chain. */
static void ej_offer(struct ej_scan *e, int nb, const struct ej_chain *base, int q, const int *row,
                     double g)
{
    struct pollux_ls *ls = e->ls;
    struct ej_chain *next = e->beam[nb];
    int N = ls->N, d = base ? base->n : 0, at;
    int *tmp;

    if (d == 0 && g > e->best1)
        e->best1 = g;
    if (d > 0 && g > e->best.gain) {
        e->best.n = d + 1;
        e->best.gain = g;
        memcpy(e->best.job, base->job, sizeof(base->job));
        e->best.job[d] = q;
        memcpy(e->best.rows, base->rows, (size_t)d * (size_t)N * sizeof(int));
        memcpy(e->best.rows + (size_t)d * N, row, (size_t)N * sizeof(int));
    }
    if (d + 1 >= EJ_DEPTH || !ej_frees(ls->cnt + (size_t)q * N, row, N))
        return; /* a chain goes on only into GPUs a step freed */
    if (e->nbeam[nb] == EJ_BEAM && !(g > next[EJ_BEAM - 1].gain))
        return;
    at = e->nbeam[nb] < EJ_BEAM ? e->nbeam[nb]++ : EJ_BEAM - 1;
    tmp = next[at].rows; /* the slot falling out lends its rows to the new chain */
    for (; at > 0 && next[at - 1].gain < g; at--)
        next[at] = next[at - 1];
    next[at].rows = tmp;
    next[at].n = d + 1;
    next[at].gain = g;
    if (base) {
        memcpy(next[at].job, base->job, sizeof(base->job));
        memcpy(tmp, base->rows, (size_t)d * (size_t)N * sizeof(int));
    }
    next[at].job[d] = q;
    memcpy(tmp + (size_t)d * N, row, (size_t)N * sizeof(int));
}

/* Every move of a job not yet in chain base onto the free GPUs of node m (growing there by 1 or
 * more, or moving there whole at any count that fits), offered with the chain's gain so far. */
static void ej_extend(struct ej_scan *e, int nb, const struct ej_chain *base, int m)
{
    struct pollux_ls *ls = e->ls;
    int N = ls->N, room = ls->s->nodes[m].gpus - ls->used[m];
    double g0 = base ? base->gain : 0.0;

    for (int q = 0; room > 0 && q < ls->J; q++) {
        const int *cq = ls->cnt + (size_t)q * N;
        int r, in = 0;

        for (int i = 0; base && i < base->n; i++)
            in |= base->job[i] == q;
        ls_nodes(cq, N, &r);
        if (in || ls->pj[q].maxr <= 0)
            continue;
        for (int g = 1; g <= room && r + g <= ls->pj[q].maxr; g++) { /* grow onto m */
            memcpy(ls->row, cq, (size_t)N * sizeof(int));
            ls->row[m] += g;
            if (ls_feasible(ls, q, ls->row, -1, NULL))
                ej_offer(e, nb, base, q, ls->row, g0 + ls_utility(ls, q, ls->row) - ls->u[q]);
        }
        for (int g = 1; r > 0 && g <= room + cq[m] && g <= ls->pj[q].maxr; g++) { /* move */
            if (cq[m] == r) /* all of it on m already: that is growing, above */
                break;
            memset(ls->row, 0, (size_t)N * sizeof(int));
            ls->row[m] = g;
            if (ls_feasible(ls, q, ls->row, -1, NULL))
                ej_offer(e, nb, base, q, ls->row, g0 + ls_utility(ls, q, ls->row) - ls->u[q]);
        }
    }
}

/* Find the best ejection chain and apply it where it beats every single step. 1 if applied; 0 if
 * none does or scratch cannot be had (a is then as it was). */
static int pollux_eject(struct pollux_ls *ls)
{
    int N = ls->N, cur = 0, applied = 0;
    size_t rows = (size_t)EJ_DEPTH * (size_t)N;
    int *mem = malloc((2 * EJ_BEAM + 2) * rows * sizeof(int));
    struct ej_scan *e = malloc(sizeof(*e));

    if (!mem || !e)
        goto out;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < EJ_BEAM; i++)
            e->beam[b][i].rows = mem + (size_t)(b * EJ_BEAM + i) * rows;
    e->best.rows = mem + 2 * EJ_BEAM * rows;
    e->best.n = 0;
    e->best.gain = -HUGE_VAL;
    e->best1 = -HUGE_VAL;
    e->ls = ls;
    e->nbeam[0] = e->nbeam[1] = 0;
    for (int m = 0; m < N; m++)
        ej_extend(e, cur, NULL, m);
    for (int d = 1; d < EJ_DEPTH && e->nbeam[cur] > 0; d++) {
        int nb = 1 - cur;
        int *save = mem + (2 * EJ_BEAM + 1) * rows; /* the rows the chain's jobs had */

        e->nbeam[nb] = 0;
        for (int i = 0; i < e->nbeam[cur]; i++) {
            const struct ej_chain *c = &e->beam[cur][i];

            for (int k = 0; k < c->n; k++) {
                memcpy(save + (size_t)k * N, ls->cnt + (size_t)c->job[k] * N,
                       (size_t)N * sizeof(int));
                ls_apply(ls, c->job[k], c->rows + (size_t)k * N);
            }
            for (int m = 0; m < N; m++) { /* the nodes the chain's steps freed GPUs on */
                int freed = 0;

                for (int k = 0; k < c->n && !freed; k++)
                    freed = c->rows[(size_t)k * N + m] < save[(size_t)k * N + m];
                if (freed)
                    ej_extend(e, nb, c, m);
            }
            for (int k = c->n - 1; k >= 0; k--)
                ls_apply(ls, c->job[k], save + (size_t)k * N);
        }
        cur = nb;
    }
    if (e->best.n >= 2 && e->best.gain > 1e-12 && e->best.gain > e->best1 + 1e-12) {
        for (int k = 0; k < e->best.n; k++)
            ls_apply(ls, e->best.job[k], e->best.rows + (size_t)k * N);
        applied = 1;
    }
out:
    free(mem);
    free(e);
    return applied;
}

int pollux_improve(const struct pollux *p, const struct snapshot *s, struct pollux_job *pj,
                   const int *dp_count, const struct pollux_passes *passes, struct alloc *a)
{
    struct pollux_ls ls = {.p = p, .s = s, .pj = pj, .J = s->njobs, .N = s->nnodes};
    size_t JN = (size_t)ls.J * (size_t)ls.N;
    int rc = 0, gpn = s->nodes[0].gpus, chains = 0, pairs = 0, triples = 0, resplits = 0;
    int settled = passes->settled; /* chains and pairs found nothing here */

    ls.cnt = calloc(JN, sizeof(int));
    ls.cur = calloc(JN, sizeof(int));
    ls.used = calloc((size_t)ls.N, sizeof(int));
    ls.dcnt = calloc((size_t)ls.N, sizeof(int));
    ls.u = calloc((size_t)ls.J, sizeof(double));
    ls.jn = calloc((size_t)ls.J, sizeof(int));
    /* scratch: row, row2, best, best2, saved, ls_make_row's, then one node list */
    ls.row = calloc((size_t)ls.N * 6 + (size_t)a->width, sizeof(int));
    if (!ls.cnt || !ls.cur || !ls.used || !ls.dcnt || !ls.u || !ls.jn || !ls.row) {
        rc = ERR_NOMEM;
        goto out;
    }
    ls.row2 = ls.row + ls.N;
    ls.fr = ls.row + 5 * (size_t)ls.N;
    for (int j = 0; j < ls.J; j++) {
        int r;

        for (int n = 0; n < ls.N; n++) {
            ls.cnt[(size_t)j * ls.N + n] = alloc_on_node(a, j, n);
            ls.cur[(size_t)j * ls.N + n] = alloc_on_node(s->current, j, n);
            ls.used[n] += ls.cnt[(size_t)j * ls.N + n];
        }
        ls.jn[j] = ls_nodes(ls.cnt + (size_t)j * ls.N, ls.N, &r);
        if (ls.jn[j] > 1)
            for (int n = 0; n < ls.N; n++)
                ls.dcnt[n] += ls.cnt[(size_t)j * ls.N + n] > 0;
        ls.u[j] = ls_utility(&ls, j, ls.cnt + (size_t)j * ls.N);
    }
    if (passes->eject && !pollux_eject(&ls)) {
        rc = 1; /* no chain: a is left as it is */
        goto out;
    }
    for (int iter = 0; iter < 4 * ls.J + 64; iter++) {
        double best = 1e-12;
        int bj = -1, bk = -1;
        int *brow = ls.row + 2 * ls.N, *brow2 = ls.row + 3 * ls.N;

        for (int j = 0; j < ls.J; j++) {
            int r, cur_r, maxr = pj[j].maxr;
            int targets[12], nt = 0;

            ls_nodes(ls.cnt + (size_t)j * ls.N, ls.N, &r);
            cur_r = pj[j].cur_r;
            {
                int cand[12] = {0,       r - 1,       r + 1,       r - 2, r + 2, r - gpn,
                                r + gpn, r + 2 * gpn, dp_count[j], cur_r, maxr,  r};

                for (int c = 0; c < 12; c++)
                    if (cand[c] >= 0 && cand[c] <= maxr)
                        targets[nt++] = cand[c];
            }
            /* back to the current allocation */
            if (memcmp(ls.cnt + (size_t)j * ls.N, ls.cur + (size_t)j * ls.N,
                       (size_t)ls.N * sizeof(int)) &&
                ls_feasible(&ls, j, ls.cur + (size_t)j * ls.N, -1, NULL)) {
                double d = ls_utility(&ls, j, ls.cur + (size_t)j * ls.N) - ls.u[j];

                if (d > best) {
                    best = d, bj = j, bk = -1;
                    memcpy(brow, ls.cur + (size_t)j * ls.N, (size_t)ls.N * sizeof(int));
                }
            }
            for (int t = 0; t < nt; t++) {
                for (int fresh = 0; fresh < 2; fresh++) {
                    double d;

                    if (!ls_make_row(&ls, j, targets[t], fresh, ls.row) ||
                        !memcmp(ls.row, ls.cnt + (size_t)j * ls.N, (size_t)ls.N * sizeof(int)) ||
                        !ls_feasible(&ls, j, ls.row, -1, NULL))
                        continue;
                    d = ls_utility(&ls, j, ls.row) - ls.u[j];
                    if (d > best) {
                        best = d, bj = j, bk = -1;
                        memcpy(brow, ls.row, (size_t)ls.N * sizeof(int));
                    }
                }
            }
            /* take up to a node's worth of GPUs from another job on one node */
            if (r >= maxr)
                continue;
            for (int n = 0; n < ls.N; n++) {
                for (int k = 0; k < ls.J; k++) {
                    int have = ls.cnt[(size_t)k * ls.N + n], take;

                    if (k == j || have == 0)
                        continue;
                    take = have < maxr - r ? have : maxr - r;
                    memcpy(ls.row, ls.cnt + (size_t)j * ls.N, (size_t)ls.N * sizeof(int));
                    memcpy(ls.row2, ls.cnt + (size_t)k * ls.N, (size_t)ls.N * sizeof(int));
                    ls.row[n] += take;
                    ls.row2[n] -= take;
                    ls_consider_pair(&ls, j, k, &best, &bj, &bk, brow, brow2);
                }
            }
        }
        /* relocate: j grows by one on a node n it uses that is full; a job k with a replica on
         * n moves that replica to a node with a free GPU (one of k's own if it can) */
        for (int j = 0; j < ls.J; j++) {
            const int *cj = ls.cnt + (size_t)j * ls.N;
            int r;

            ls_nodes(cj, ls.N, &r);
            if (r == 0 || r >= pj[j].maxr)
                continue;
            for (int n = 0; n < ls.N; n++) {
                if (cj[n] == 0 || ls.used[n] < s->nodes[n].gpus)
                    continue;
                for (int k = 0; k < ls.J; k++) {
                    const int *ck = ls.cnt + (size_t)k * ls.N;
                    int m = -1;

                    if (k == j || ck[n] == 0)
                        continue;
                    for (int q = 0; q < ls.N; q++) {
                        int room = s->nodes[q].gpus - ls.used[q];

                        if (q == n || room <= 0)
                            continue;
                        /* prefer k's own nodes, then the tightest */
                        if (m < 0 || (ck[q] > 0 && ck[m] == 0) ||
                            ((ck[q] > 0) == (ck[m] > 0) && room < s->nodes[m].gpus - ls.used[m]))
                            m = q;
                    }
                    if (m < 0)
                        continue;
                    memcpy(ls.row, cj, (size_t)ls.N * sizeof(int));
                    memcpy(ls.row2, ck, (size_t)ls.N * sizeof(int));
                    ls.row[n]++;
                    ls.row2[n]--;
                    ls.row2[m]++;
                    ls_consider_pair(&ls, j, k, &best, &bj, &bk, brow, brow2);
                }
            }
        }
        /* swap, in the last pass only: two jobs trade their placements whole (node usage and the
         * distributed jobs per node stay as they are, so the trade is always feasible) */
        for (int j = 0; passes->pairs > 0 && j < ls.J; j++) {
            const int *cj = ls.cnt + (size_t)j * ls.N;

            for (int k = j + 1; k < ls.J; k++) {
                const int *ck = ls.cnt + (size_t)k * ls.N;
                double d;

                if (!memcmp(cj, ck, (size_t)ls.N * sizeof(int)))
                    continue;
                d = ls_utility(&ls, j, ck) + ls_utility(&ls, k, cj) - ls.u[j] - ls.u[k];
                if (d > best) {
                    best = d, bj = j, bk = k;
                    memcpy(brow, ck, (size_t)ls.N * sizeof(int));
                    memcpy(brow2, cj, (size_t)ls.N * sizeof(int));
                }
            }
        }
        /* exchange: one job gives d GPUs back (from its smallest shares), another grows by d,
         * in place or afresh, on what that frees (worth it on small clusters: J^2 moves) */
        for (int k = 0; ls.J <= 64 && k < ls.J; k++) {
            int rk, *ok = ls.cnt + (size_t)k * ls.N, *save = ls.row + 4 * ls.N;

            ls_nodes(ok, ls.N, &rk);
            if (rk == 0)
                continue;
            for (int dd = 0; dd < 3; dd++) {
                int d = dd == 0 ? 1 : dd == 1 ? gpn : rk;
                double uk_old = ls.u[k], uk_new;

                if (d > rk || (dd == 2 && (rk == 1 || rk == gpn)) || (dd == 1 && gpn == 1))
                    continue;
                if (!ls_make_row(&ls, k, rk - d, 0, ls.row2))
                    continue;
                memcpy(save, ok, (size_t)ls.N * sizeof(int));
                ls_apply(&ls, k, ls.row2);
                uk_new = ls.u[k];
                for (int j = 0; j < ls.J; j++) {
                    int r, tr;

                    if (j == k)
                        continue;
                    ls_nodes(ls.cnt + (size_t)j * ls.N, ls.N, &r);
                    tr = r + d < pj[j].maxr ? r + d : pj[j].maxr;
                    if (tr <= r)
                        continue;
                    for (int fresh = 0; fresh < 2; fresh++) {
                        double gain;

                        if (!ls_make_row(&ls, j, tr, fresh, ls.row) ||
                            !ls_feasible(&ls, j, ls.row, -1, NULL))
                            continue;
                        gain = ls_utility(&ls, j, ls.row) - ls.u[j] + uk_new - uk_old;
                        if (gain > best) {
                            best = gain, bj = j, bk = k;
                            memcpy(brow, ls.row, (size_t)ls.N * sizeof(int));
                            memcpy(brow2, ls.row2, (size_t)ls.N * sizeof(int));
                        }
                    }
                }
                ls_apply(&ls, k, save);
            }
        }
        if (bj < 0 && !settled && chains < POLLUX_CHAINS && pollux_chain(&ls, pj))
            chains++, iter--; /* a three-job move applied: search again */
        else if (bj < 0 && !settled && pairs < passes->pairs && pollux_resolve(&ls, 2))
            pairs++, iter--; /* two nodes re-solved: search again */
        else if (bj < 0 && triples < passes->triples && pollux_resolve(&ls, 3))
            triples++, iter--, settled = 0; /* three nodes re-solved: search again */
        else if (bj < 0 && resplits < passes->resplits && pollux_resplit(&ls))
            resplits++, iter--, settled = 0; /* two distributed jobs re-split: search again */
        else if (bj < 0)
            break;
        else {
            if (bk >= 0) /* apply k first (it gives GPUs up), then j */
                ls_apply(&ls, bk, brow2);
            ls_apply(&ls, bj, brow);
            settled = 0;
        }
    }
    /* back to rows: unchanged jobs keep their node order, others list nodes in index order */
    for (int j = 0; j < ls.J; j++) {
        const int *c = ls.cnt + (size_t)j * ls.N;
        int k0, *ord = ls.row + 6 * (size_t)ls.N;

        if (!memcmp(c, ls.cur + (size_t)j * ls.N, (size_t)ls.N * sizeof(int))) {
            alloc_clear_job(a, j);
            for (int k = 0; k < s->current->count[j]; k++)
                alloc_add(a, j, s->current->node[(size_t)j * s->current->width + k], 1);
            continue;
        }
        /* nodes in the order the job's row had them, new ones after, in index order */
        memcpy(ls.row, c, (size_t)ls.N * sizeof(int));
        memcpy(ord, a->node + (size_t)j * (size_t)a->width, (size_t)a->count[j] * sizeof(int));
        k0 = a->count[j];
        alloc_clear_job(a, j);
        for (int k = 0; k < k0; k++) {
            int n = ord[k];

            if (ls.row[n] > 0 && (rc = alloc_add(a, j, n, ls.row[n])) < 0)
                goto out;
            ls.row[n] = 0;
        }
        for (int n = 0; n < ls.N; n++)
            if (ls.row[n] > 0 && (rc = alloc_add(a, j, n, ls.row[n])) < 0)
                goto out;
    }
out:
    free(ls.cnt);
    free(ls.cur);
    free(ls.used);
    free(ls.dcnt);
    free(ls.u);
    free(ls.jn);
    free(ls.row);
    return rc;
}
