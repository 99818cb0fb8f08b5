/* ga_ref.h: a genetic algorithm in the style of the published Pollux policy (pymoo NSGA-II,
 * population 100, 100 generations, its crossover, mutation and repair; reduced to its first
 * objective), maximising policy_pollux_fitness. For benchmarks only: castor's policies never use
 * it. Written from the published description, not from its code. */
#ifndef CASTOR_BENCH_GA_REF_H
#define CASTOR_BENCH_GA_REF_H

#include <stdint.h>

#include "plan/alloc.h"
#include "plan/snapshot.h"
#include "policies/policy.h"

#define GA_POP 100
#define GA_GENS 100
#define GA_OFFSPRING 100
#define GA_RETRIES 100   /* pymoo: matings repeated until the offspring are unique */
#define GA_CROSSOVER 0.9 /* probability a mating crosses over */
#define GA_RESET 0.1     /* mutation: a row back to the current allocation */
#define GA_MARK 0.1      /* mutation: a row marked for zeroing */
#define GA_ZERO 0.1      /* mutation: an entry of a marked row zeroed */
#define POLLUX_EPS 1e-3  /* the power mean's offset, as policies/pollux.c adds it */

struct ga_ref_rng {
    uint64_t s;
};

struct ga_ref_problem {
    const struct snapshot *s;
    int J, N, G;
    double p, delta;
    int avoid;
    int fair_r;
    int *order;     /* row i is job order[i] */
    int *cap;       /* GPUs per node */
    int *maxr;      /* per job index: the replicas it may take */
    double *base;   /* per job index: goodput of its fair share (0: speedup r / fair_r) */
    double *pen;    /* per job index: the restart penalty factor */
    int *base_x;    /* the current allocation as a matrix, rows in order */
    double *memo;   /* goodput by (job, nodes, replicas); NAN = not computed */
    int *scratch;   /* 3 N ints */
    int *scratch_j; /* J ints */
};

struct ga_ref_stats {
    double fitness; /* the best found (the GA's own evaluation) */
    double seconds;
    long evaluations;
};

/* Monotonic wall-clock seconds (benchmarks time themselves). */
double ga_ref_now_seconds(void);

/* A seeded generator (splitmix64): next value, uniform in [0, 1), uniform in [0, n). */

uint64_t ga_ref_rng_next(struct ga_ref_rng *r);

double ga_ref_rng_unif(struct ga_ref_rng *r);

int ga_ref_rng_int(struct ga_ref_rng *r, int n);

/* The GA's view of snapshot s under cfg (limits, penalties, fair share as policies/pollux.c sets
 * them; a goodput memo of jobs x (nodes + 1) x (GPUs + 1) doubles, so only small clusters fit).
 * Errors: ERR_NOMEM. Free with ga_ref_problem_free. */

int ga_ref_problem_init(struct ga_ref_problem *pr, const struct policy_config *cfg,
                        const struct snapshot *s);
void ga_ref_problem_free(struct ga_ref_problem *pr);

/* Fitness of matrix x (rows in the problem's job order, J x N replicas); equals
 * policy_pollux_fitness of the decoded allocation. */

double ga_ref_problem_fitness(struct ga_ref_problem *pr, const int *x);

/* Matrix <-> allocation (a sized like the snapshot's current allocation). */
int ga_ref_problem_decode(const struct ga_ref_problem *pr, const int *x, struct alloc *a);

void ga_ref_problem_encode(const struct ga_ref_problem *pr, const struct alloc *a, int *x);

/* Run the GA from nseeds seed matrices (repaired first) with randomness from seed; write the best
 * matrix to best (J x N) and the figures to *st. Errors: ERR_NOMEM. */
int ga_ref_run(struct ga_ref_problem *pr, const int *seeds, int nseeds, uint64_t seed, int *best,
               struct ga_ref_stats *st);

#endif
