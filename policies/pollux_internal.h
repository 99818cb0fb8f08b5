/* pollux_internal.h: what pollux.c and pollux_search.c share (private; not installed). */
#ifndef CASTOR_POLICIES_POLLUX_INTERNAL_H
#define CASTOR_POLICIES_POLLUX_INTERNAL_H

#include "plan/alloc.h"
#include "plan/snapshot.h"
#include "policies/policy.h"

/* A job's goodput table kept from one decision to the next (pollux.c): valid while the job's
 * model, gradient statistics, batch limits and table width are bit for bit those it was filled
 * with. */
struct pollux_memo {
    char *name; /* owned */
    struct tput_params tput;
    struct grad_params grad;
    struct bsz_limits lim;
    double *good; /* good_w x good_w cells, owned; NAN = not computed */
    int good_w;
};

struct pollux {
    double p;     /* power mean exponent */
    double delta; /* restart penalty, seconds */
    int avoid_interference;
    int deadline_start; /* policy_config.deadline_start */
    /* the last decision's goodput tables, one per job (NULL, 0 in a one-off fitness check) */
    struct pollux_memo *memo;
    int nmemo;
    /* pollux_feasible's scratch: 2 ints per node of the decision's snapshot (nfeas nodes) */
    int *feas;
    int nfeas;
};

struct pollux_job {
    int maxr;         /* replicas allowed */
    double base;      /* goodput of the fair share (speedup 1) */
    int fair_r;       /* the fair share, replicas */
    double penalty;   /* factor on the speedup when the job's GPUs change */
    double scale;     /* nodes / GPUs of the cluster: the speedup's normaliser */
    int cur_r, cur_n; /* what it holds now */
    double *good;     /* goodput by (nodes, replicas), memoised; NAN = not computed */
    int good_w;       /* row width of good: maxr + 1 */
};
/* pollux.c: the job's utility on (nodes, replicas): scaled speedup, with the restart penalty if
 * changed. pj[j]'s goodput memo is filled as a side effect (the caller owns it). -HUGE_VAL when
 * r is below the job's gang minimum (not an allocation); never an error. */
double pollux_job_utility(const struct pollux *p, const struct snapshot *s, int j,
                          struct pollux_job *pj, int nodes, int r, int changed);

/* How far pollux_improve looks beyond its moves of one and two jobs (zero everywhere: the local
 * search and its chains only). */
struct pollux_passes {
    int pairs;    /* exact two-node re-solves at most; > 0 also tries whole-placement swaps */
    int triples;  /* exact three-node re-solves at most */
    int resplits; /* re-splits of two distributed jobs over their nodes at most */
    int eject;    /* 1: begin with the best ejection chain from free GPUs; where none beats a
                   * single move, stop at once (a unchanged, and the result 1) */
    int settled;  /* 1: the caller's word that chains and pair re-solves find nothing in a as it
                   * is (they are tried again only after a move) */
};

/* pollux_search.c: improve the feasible allocation a in place by local search over placements
 * (moves of one or two jobs, whole-placement swaps when passes->pairs > 0, three-job chains),
 * then the re-solves and re-splits that passes allows, each followed by the local search again.
 * dp_count is the dynamic program's count for each job (a move target); pj is prepared by the
 * caller, who owns it, s, passes and a. 0 on success; 1 when passes->eject finds no chain (a
 * unchanged); ERR_NOMEM if scratch cannot be had;
 * ERR_RANGE or ERR_INVAL from alloc_add while rebuilding a's rows (a is then part-rebuilt). */
int pollux_improve(const struct pollux *p, const struct snapshot *s, struct pollux_job *pj,
                   const int *dp_count, const struct pollux_passes *passes, struct alloc *a);

#endif
