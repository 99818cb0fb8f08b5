/* test_pollux.c: the Pollux policy (dynamic programming over replica counts, then placement) and
 * its fitness, against allocations worked out by hand on a tiny cluster, and against an
 * exhaustive search of every allocation where the cluster is small enough to enumerate. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policies/small_world.h"

#include "policies/policy.h"
#include "util/error.h"

#define EPS 1e-3 /* the power mean's offset, as the policy adds it */

/* Decide as the caller does: out starts as a copy of the current allocation. */
static int decide(struct world *w)
{
    return decide_with("pollux", &w->s, &w->cfg, 7, w->out);
}

/*
 * The best fitness of any allocation of w's snapshot, by enumeration: every job's GPU count on
 * each node (the fitness depends on a job's row only through its count, its node count and
 * whether it is unchanged, so one order per count vector suffices: the current row where the
 * counts are the current ones, else nodes ascending).
 */
static void enumerate(struct world *w, struct alloc *a, int j, int *used, double *best)
{
    if (j == JOBS) {
        double f = policy_pollux_fitness(&w->cfg, &w->s, a);

        if (f > *best)
            *best = f;
        return;
    }
    for (int c0 = 0; c0 + used[0] <= GPUS_PER_NODE; c0++)
        for (int c1 = 0; c1 + used[1] <= GPUS_PER_NODE; c1++) {
            if (c0 == alloc_on_node(w->cur, j, 0) && c1 == alloc_on_node(w->cur, j, 1)) {
                alloc_clear_job(a, j);
                for (int k = 0; k < w->cur->count[j]; k++)
                    assert_int_equal(alloc_add(a, j, w->cur->node[j * w->cur->width + k], 1), 0);
            } else {
                alloc_clear_job(a, j);
                assert_int_equal(alloc_add(a, j, 0, c0), 0);
                assert_int_equal(alloc_add(a, j, 1, c1), 0);
            }
            used[0] += c0;
            used[1] += c1;
            enumerate(w, a, j + 1, used, best);
            used[0] -= c0;
            used[1] -= c1;
        }
}

static double exhaustive_best(struct world *w)
{
    struct alloc *a;
    int used[NODES] = {0};
    double best = -HUGE_VAL;

    assert_int_equal(alloc_new(JOBS, NODES, GPUS, &a), 0);
    enumerate(w, a, 0, used, &best);
    alloc_free(a);
    return best;
}

/* The policy's answer is as fit as the best allocation there is. */
static void assert_optimal(struct world *w)
{
    double got = policy_pollux_fitness(&w->cfg, &w->s, w->out), best = exhaustive_best(w);

    assert_true(isfinite(got));
    assert_float_equal(got, best, 1e-9);
}

/* Without a model a job's speedup is r / fair share (3 of 8 GPUs for 3 jobs), and a job never
 * profiled may take max(2 x 0, 1) = 1 replica. Nothing held: giving a job its GPU is a change,
 * scaled speedup (1/3)(2/8) x 0.99997 = 0.0833 against 0 for none, so each gets one. All counts
 * are 1, placed in row order on the tightest node that fits, the lowest on ties: a on node 0
 * (4 = 4), then b and c on node 0 (3 < 4, 2 < 4). Five GPUs stay idle. */
static void pollux_allocate__without_model_one_gpu_each(void **state)
{
    struct world *w = *state;

    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0}, 1);
    assert_row(w->out, 1, (int[]){0}, 1);
    assert_row(w->out, 2, (int[]){0}, 1);
    assert_optimal(w);
}

/* a scales perfectly (speedup r/3), b is sync-bound (best on one GPU: speedup 1.524 against at
 * most 1.058 on more), c has no model (1 GPU at most). b and c take one GPU each and a, whose
 * utility -1/(r/12 + eps) rises with r, the other 6. Placed largest first: a (6) fits no node, so
 * a whole free node (0) and the tightest node for the other 2 (node 1); then b and c on node 1,
 * the only one with room. */
static void pollux_allocate__scaling_job_outgrows_sync_bound(void **state)
{
    struct world *w = *state;

    give_model(w, 0, &perfect);
    give_model(w, 1, &syncbound);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0, 0, 1, 1}, 6);
    assert_row(w->out, 1, (int[]){1}, 1);
    assert_row(w->out, 2, (int[]){1}, 1);
    assert_optimal(w);
}

/*
 * a and b both scale perfectly and hold one GPU each (a on node 0, b on node 1); c (no model)
 * holds one on node 0. a is young: any change multiplies its speedup by 1/31, so keeping one GPU
 * (scaled speedup 1/12: utility -11.9) beats 8 changed ones (8/12/31 = 0.0215: -44). b is old:
 * growing to the 6 GPUs left (0.5 x 0.99997: -2.0) beats keeping 1. a and c keep theirs (node 0
 * then has 2 free), and b, too big for one node, takes the whole free node 1, then node 0's 2.
 * Once a is old too, it grows (a and b share the 7 GPUs c leaves).
 */
static void pollux_allocate__restart_penalty_keeps_young_job(void **state)
{
    struct world *w = *state;

    give_model(w, 0, &perfect);
    give_model(w, 1, &perfect);
    w->jobs[0].submit_time = NOW - 1;
    set_row(w->cur, 0, (int[]){0}, 1);
    set_row(w->cur, 1, (int[]){1}, 1);
    set_row(w->cur, 2, (int[]){0}, 1);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0}, 1);
    assert_row(w->out, 1, (int[]){1, 1, 1, 1, 0, 0}, 6);
    assert_row(w->out, 2, (int[]){0}, 1);
    assert_optimal(w);

    w->jobs[0].submit_time = 0;
    assert_int_equal(decide(w), 0);
    assert_true(w->out->count[0] > 1);
    assert_int_equal(w->out->count[0] + w->out->count[1], 7);
    assert_row(w->out, 2, (int[]){0}, 1);
    assert_optimal(w);
}

/*
 * a (young, perfect, profiled up to 2: at most 4 replicas) holds 2 GPUs on each node: it keeps
 * them. b (old, perfect) would take the 3 GPUs c leaves, but 3 fit on neither node (2 free on
 * each), and a distributed b would share both nodes with a; so b gets 2 on node 0 (the tightest,
 * lowest on ties) and c the GPU on node 1, leaving one idle. Without interference avoidance b is
 * spread: the most free node first (node 0, 2), then node 1 for the last, and c on node 1; that
 * allocation is infeasible under the default rule.
 */
static void pollux_allocate__distributed_jobs_never_share_a_node(void **state)
{
    struct world *w = *state;

    give_model(w, 0, &perfect);
    give_model(w, 1, &perfect);
    w->jobs[0].max_profiled_replicas = 2;
    w->jobs[0].submit_time = NOW - 1;
    set_row(w->cur, 0, (int[]){0, 0, 1, 1}, 4);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 1, 1}, 4);
    assert_row(w->out, 1, (int[]){0, 0}, 2);
    assert_row(w->out, 2, (int[]){1}, 1);
    assert_optimal(w);

    w->cfg.no_interference_avoidance = 1;
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 1, 1}, 4);
    assert_row(w->out, 1, (int[]){0, 0, 1}, 3);
    assert_row(w->out, 2, (int[]){1}, 1);
    assert_optimal(w);
    assert_true(isfinite(policy_pollux_fitness(&w->cfg, &w->s, w->out)));
    w->cfg.no_interference_avoidance = 0;
    assert_true(policy_pollux_fitness(&w->cfg, &w->s, w->out) == -HUGE_VAL);
}

/* a and b scale perfectly, but a's owner allows 2 replicas: a 2, c 1, b the other 5. Largest
 * first: b takes the whole node 0 and 1 on node 1 (the tightest with room), a 2 on node 1, c the
 * last. */
/*
 * deadline_start (castor's planner sets it): a job with a deadline and no measurement yet may use
 * the replicas its owner asked for, beyond Pollux's exploration limit (twice the replicas
 * measured: 1 here). a (deadline, asked for 6) takes them: without a model its speedup is r / 3,
 * so more is better; b asked for 6 too but has no deadline, c has a deadline and asked for 1: one
 * GPU each. Without the setting all three get one (the published policy).
 */
static void pollux_allocate__deadline_starts_at_the_owners_request(void **state)
{
    struct world *w = *state;

    w->jobs[0].deadline = NOW + 3600;
    w->jobs[0].req_replicas = 6;
    w->jobs[1].req_replicas = 6;
    w->jobs[2].deadline = NOW + 3600;
    w->jobs[2].req_replicas = 1;
    assert_int_equal(decide(w), 0);
    for (int j = 0; j < JOBS; j++)
        assert_int_equal(w->out->count[j], 1);

    w->cfg.deadline_start = 1;
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->out->count[0], 6);
    assert_int_equal(w->out->count[1], 1);
    assert_int_equal(w->out->count[2], 1);
    assert_optimal(w);

    /* measured on 6 (what it asked for): Pollux's limit again, twice that, the whole cluster
     * here; the others' single GPUs keep it at 6 */
    w->jobs[0].max_profiled_replicas = 6;
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->out->count[0], 6);
    /* measured on 2 of the 6: twice that is 4, but it may still reach what it asked for */
    w->jobs[0].max_profiled_replicas = 2;
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->out->count[0], 6);
}

static void pollux_allocate__owner_max_replicas_caps(void **state)
{
    struct world *w = *state;

    give_model(w, 0, &perfect);
    give_model(w, 1, &perfect);
    w->jobs[0].max_replicas = 2;
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){1, 1}, 2);
    assert_row(w->out, 1, (int[]){0, 0, 0, 0, 1}, 5);
    assert_row(w->out, 2, (int[]){1}, 1);
    assert_optimal(w);
}

/*
 * Gang minimums. All three jobs scale perfectly (speedup r / 3 over the fair share of 8 / 3 GPUs);
 * a needs at least 5. Nothing for a would put a speedup of 0 in the harmonic mean (the worst
 * possible), so a takes 5: 1 / (5/3) + 1 / (2/3) + 1 / (1/3) = 5.1 beats a = 6 with one GPU each
 * for b and c (0.5 + 3 + 3 = 6.5); b and c share the 3 left, 2 and 1. With a minimum of 9, more
 * than the cluster, a gets nothing and b and c 4 each.
 */
static void pollux_allocate__gang_minimum_all_or_nothing(void **state)
{
    struct world *w = *state;

    for (int j = 0; j < JOBS; j++)
        give_model(w, j, &perfect);
    w->jobs[0].min_replicas = 5;
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->out->count[0], 5);
    assert_int_equal(w->out->count[1] + w->out->count[2], 3);
    assert_true(w->out->count[1] >= 1 && w->out->count[2] >= 1);
    assert_optimal(w);

    w->jobs[0].min_replicas = 9;
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->out->count[0], 0);
    assert_int_equal(w->out->count[1], 4);
    assert_int_equal(w->out->count[2], 4);
}

/*
 * A gang that lost one of its nodes: two nodes of 1 GPU, the job (a gang of 2, measured on 2) holds
 * 1 replica on node 0 after node 1 was replaced by a new one. Below its minimum its current
 * allocation is no allocation; the only one there is, a replica on each node, is taken, whatever
 * the seed, with or without a model; and so it is when the gang holds nothing, young and
 * restarted once.
 */
static void pollux_allocate__gang_below_its_minimum_is_placed_again(void **state)
{
    struct world *w = *state;
    struct alloc *cur = NULL, *out = NULL;

    for (int i = 0; i < NODES; i++)
        w->nodes[i].gpus = 1;
    assert_int_equal(alloc_new(1, NODES, NODES, &cur), 0);
    assert_int_equal(alloc_new(1, NODES, NODES, &out), 0);
    assert_int_equal(alloc_add(cur, 0, 0, 1), 0);
    w->s.njobs = 1;
    w->s.current = cur;
    w->jobs[0].min_replicas = 2;
    for (int model = 0; model < 2; model++)
        for (uint64_t seed = 1; seed <= 20; seed++) {
            if (model)
                give_model(w, 0, &perfect);
            w->jobs[0].max_profiled_replicas = 2;
            assert_int_equal(decide_with("pollux", &w->s, &w->cfg, seed, out), 0);
            if (out->count[0] != 2)
                fail_msg("model %d, seed %llu: %d replicas", model, (unsigned long long)seed,
                         out->count[0]);
        }
    /* young (5 s), restarted once and holding nothing after its node went: Pollux's penalty,
     * max(5 - 30, 0) / (5 + 30) = 0, would make every placement worth nothing and leave it idle;
     * a gang that ran before is not penalised, so it is placed at once */
    alloc_clear_job(cur, 0);
    w->jobs[0].submit_time = NOW - 5;
    w->jobs[0].restarts = 1;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        assert_int_equal(decide_with("pollux", &w->s, &w->cfg, seed, out), 0);
        if (out->count[0] != 2)
            fail_msg("restarted young gang, seed %llu: %d replicas", (unsigned long long)seed,
                     out->count[0]);
    }
    w->s.current = w->cur;
    alloc_free(cur);
    alloc_free(out);
}

/*
 * Priority weights. Three perfectly scaling jobs (speedup r / 3) on 8 GPUs; with the harmonic mean
 * the objective is the sum of -w_j / s_j, so the best split minimises 4 / r_a + 1 / r_b + 1 / r_c
 * for a weight 4 on a (priority 20): r proportional to sqrt(w), 2 : 1 : 1, that is 4, 2, 2 (4/4 +
 * 1/2 + 1/2 = 2 against 4/3 + 1/3 + 1/2 = 2.17 for 3, 3, 2). Unweighted the split is 3, 3, 2
 * in some order: a gets at most 3.
 */
static void pollux_allocate__weight_claims_more(void **state)
{
    struct world *w = *state;

    for (int j = 0; j < JOBS; j++)
        give_model(w, j, &perfect);
    assert_int_equal(decide(w), 0);
    assert_true(w->out->count[0] <= 3); /* 3, 3, 2 in some order */
    w->jobs[0].weight = 4;
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->out->count[0], 4);
    assert_int_equal(w->out->count[1], 2);
    assert_int_equal(w->out->count[2], 2);
}

/* b holds 3 GPUs, but its owner now allows 1 (the decide step rejects more): b shrinks to one
 * GPU, like a and c (no model, one each), all on node 0 (tightest, lowest on ties). */
static void pollux_allocate__owner_limit_shrinks_held_job(void **state)
{
    struct world *w = *state;

    give_model(w, 1, &perfect);
    w->jobs[1].max_replicas = 1;
    set_row(w->cur, 1, (int[]){1, 1, 1}, 3);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0}, 1);
    assert_row(w->out, 1, (int[]){0}, 1);
    assert_row(w->out, 2, (int[]){0}, 1);
}

/*
 * KNOWN BUG (skipped until policies/pollux.c is fixed): moving a job to other nodes with the same
 * count restarts it, but the DP rates that move without the restart penalty (changed = r != held).
 * a (young: penalty 1/31; cross-node sync 1 s, one-node sync 1e-8 s) holds 2 GPUs on each node:
 * throughput 840 / (0.21 + 1) = 694 (speedup 0.231 over its base of 3000), scaled 0.058, against
 * 4000 / 3000 / 31 / 4 = 0.011 if moved to one node. So a keeps its GPUs and b and c (no model)
 * take one each on node 0 (2 free on both: the lowest). The DP instead rates the move at the
 * unpenalised 1/3, moves a to node 0 and loses (fitness 0.027 against 0.073).
 */
static void pollux_allocate__same_count_on_other_nodes_is_a_restart(void **state)
{
    static const struct tput_params crossnode = {
        .ops = &tput_model_pollux, .theta = {1e-8, 0.001, 1.0, 1e-8, 1e-8, 1e-8, 1.0}};
    struct world *w = *state;

    give_model(w, 0, &crossnode);
    w->jobs[0].max_profiled_replicas = 2;
    w->jobs[0].submit_time = NOW - 1;
    set_row(w->cur, 0, (int[]){0, 0, 1, 1}, 4);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 1, 1}, 4);
    assert_row(w->out, 1, (int[]){0}, 1);
    assert_row(w->out, 2, (int[]){0}, 1);
    assert_optimal(w);
}

/*
 * KNOWN LIMITATION (skipped until the placement accounts for it): the DP values every count on
 * the fewest nodes, then places the largest jobs first. a (young, perfect) keeps 3 GPUs on node
 * 0; b (perfect) gets 3 and c (cross-node sync 1 s, owner's limit 2) gets 2. b goes to node 1
 * (the tightest fit), which leaves one GPU on each node: c is split across them (speedup 0.197
 * instead of 2/3). The best allocation splits b instead (it does not mind): b on node 0's last
 * GPU and 2 on node 1, c on node 1's other 2 (fitness 0.214 against 0.107).
 */
static void pollux_allocate__placement_splits_the_job_that_minds_least(void **state)
{
    static const struct tput_params crossnode = {
        .ops = &tput_model_pollux, .theta = {1e-8, 0.001, 1.0, 1e-8, 1e-8, 1e-8, 1.0}};
    struct world *w = *state;

    give_model(w, 0, &perfect);
    give_model(w, 1, &perfect);
    give_model(w, 2, &crossnode);
    w->jobs[2].max_replicas = 2;
    w->jobs[0].submit_time = NOW - 1;
    set_row(w->cur, 0, (int[]){0, 0, 0}, 3);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0}, 3);
    assert_int_equal(w->out->count[1], 3);
    assert_int_equal(alloc_nodes_used(w->out, 2), 1);
    assert_optimal(w);
}

/* No active job: nothing to do, nothing touched. */
static void pollux_allocate__no_jobs(void **state)
{
    struct world *w = *state;
    struct policy p;

    w->s.njobs = 0;
    assert_int_equal(policy_new("pollux", NULL, &p), 0);
    assert_int_equal(policy_allocate(&p, &w->s, 1, w->out), 0);
    policy_free(&p);
    assert_float_equal(policy_pollux_fitness(&w->cfg, &w->s, w->out), 0, 0);
}

/* Three modelless jobs, a profiled up to 2 (at most 4 replicas), b and c never (1 each). */
static void fitness_world(struct world *w)
{
    w->jobs[0].max_profiled_replicas = 2;
    set_row(w->cur, 0, (int[]){0, 0}, 2);
    set_row(w->cur, 1, (int[]){1}, 1);
    set_row(w->cur, 2, (int[]){1}, 1);
    alloc_copy(w->out, w->cur);
}

/* a holds 2 GPUs, b and c 1, unchanged (no penalty): speedups r / 3 = 2/3, 1/3, 1/3, scaled by
 * nodes / GPUs = 1/4: 1/6, 1/12, 1/12. The power mean with p = -1 is the harmonic mean of
 * (s + eps), less eps: 3 / (1/(1/6 + eps) + 2/(1/12 + eps)) - eps = 0.10008, near the harmonic
 * mean without eps, 3 / (6 + 12 + 12) = 0.1. */
static void pollux_fitness__harmonic_mean_by_hand(void **state)
{
    struct world *w = *state;
    double want = 3.0 / (1.0 / (1.0 / 6 + EPS) + 2.0 / (1.0 / 12 + EPS)) - EPS;

    fitness_world(w);
    assert_float_equal(policy_pollux_fitness(&w->cfg, &w->s, w->out), want, 1e-12);
    assert_float_equal(want, 0.1, 1e-3);
}

/* The same allocation, but nothing was held before and the jobs are 90 s old: every row changes,
 * so every speedup is multiplied by 90 / (90 + 30) = 0.75: 0.125, 0.0625, 0.0625 (harmonic mean
 * 0.075 without eps). One restart already (b) takes 30 s off its age: 60/120 = 0.5. */
static void pollux_fitness__restart_penalty_by_hand(void **state)
{
    struct world *w = *state;
    double want = 3.0 / (1.0 / (0.125 + EPS) + 2.0 / (0.0625 + EPS)) - EPS;

    fitness_world(w);
    alloc_clear_job(w->cur, 0);
    alloc_clear_job(w->cur, 1);
    alloc_clear_job(w->cur, 2);
    w->s.now = 90;
    assert_float_equal(policy_pollux_fitness(&w->cfg, &w->s, w->out), want, 1e-12);
    w->jobs[1].restarts = 1;
    want = 3.0 / (1.0 / (0.125 + EPS) + 1.0 / (0.0625 + EPS) + 1.0 / (1.0 / 24 + EPS)) - EPS;
    assert_float_equal(policy_pollux_fitness(&w->cfg, &w->s, w->out), want, 1e-12);
}

/* p = 1 makes it the arithmetic mean (eps cancels): (1/6 + 1/12 + 1/12) / 3 = 1/9. A job without
 * GPUs counts as speedup 0: with c's GPU taken, (1/6 + 1/12 + 0) / 3 = 1/12 (c changed, but
 * 0 x penalty is still 0). */
static void pollux_fitness__p_one_is_arithmetic_mean(void **state)
{
    struct world *w = *state;

    fitness_world(w);
    w->cfg.p_mean = 1;
    w->cfg.p_mean_set = 1;
    assert_float_equal(policy_pollux_fitness(&w->cfg, &w->s, w->out), 1.0 / 9, 1e-12);
    alloc_clear_job(w->out, 2);
    assert_float_equal(policy_pollux_fitness(&w->cfg, &w->s, w->out), 1.0 / 12, 1e-12);
}

/* p = 0 is the geometric mean, not the default: (1/6 x 1/12 x 1/12)^(1/3) = 864^(-1/3) =
 * 0.104993; unset, the same p_mean of 0 means the default, the harmonic mean (0.10008). */
static void pollux_fitness__p_zero_is_geometric_mean(void **state)
{
    struct world *w = *state;

    fitness_world(w);
    w->cfg.p_mean = 0;
    w->cfg.p_mean_set = 1;
    assert_float_equal(policy_pollux_fitness(&w->cfg, &w->s, w->out), pow(864.0, -1.0 / 3), 1e-12);
    w->cfg.p_mean_set = 0;
    assert_float_equal(policy_pollux_fitness(&w->cfg, &w->s, w->out),
                       3.0 / (1.0 / (1.0 / 6 + EPS) + 2.0 / (1.0 / 12 + EPS)) - EPS, 1e-12);
}

/* Allocations that break a rule are -inf: 5 GPUs on a 4-GPU node; b (at most 1 replica) given 2,
 * whether or not it holds them already (the decide step rejects a job over its limit either way);
 * a and b both on two nodes (unless interference avoidance is off). */
static void pollux_fitness__infeasible_is_minus_inf(void **state)
{
    struct world *w = *state;

    fitness_world(w);
    set_row(w->out, 0, (int[]){0, 0, 0, 0}, 4);
    set_row(w->out, 1, (int[]){0}, 1);
    assert_true(policy_pollux_fitness(&w->cfg, &w->s, w->out) == -HUGE_VAL);

    fitness_world(w);
    set_row(w->out, 1, (int[]){1, 1}, 2);
    assert_true(policy_pollux_fitness(&w->cfg, &w->s, w->out) == -HUGE_VAL);
    set_row(w->cur, 1, (int[]){1, 1}, 2);
    assert_true(policy_pollux_fitness(&w->cfg, &w->s, w->out) == -HUGE_VAL);

    fitness_world(w);
    w->jobs[1].max_profiled_replicas = 1;
    set_row(w->out, 0, (int[]){0, 1}, 2);
    set_row(w->out, 1, (int[]){1, 0}, 2);
    assert_true(policy_pollux_fitness(&w->cfg, &w->s, w->out) == -HUGE_VAL);
    w->cfg.no_interference_avoidance = 1;
    assert_true(isfinite(policy_pollux_fitness(&w->cfg, &w->s, w->out)));
}

/* The decision depends only on the snapshot: the same answer from a fresh instance, and from
 * another seed (the policy uses no randomness). */
static void pollux_allocate__deterministic(void **state)
{
    struct world *w = *state;
    struct alloc *first;
    struct policy p;

    give_model(w, 0, &perfect);
    give_model(w, 1, &syncbound);
    w->jobs[1].grad = (struct grad_params){.sqr = 1.0, .var = 5.0};
    w->jobs[1].lim.max_bsz = 4 * 840;
    w->jobs[1].lim.accumulation = 1;
    w->jobs[0].submit_time = NOW - 100;
    set_row(w->cur, 0, (int[]){1, 1}, 2);
    set_row(w->cur, 2, (int[]){0}, 1);
    assert_int_equal(alloc_new(JOBS, NODES, GPUS, &first), 0);
    assert_int_equal(decide(w), 0);
    alloc_copy(first, w->out);
    assert_int_equal(decide(w), 0);
    for (int j = 0; j < JOBS; j++)
        assert_true(alloc_job_equal(first, j, w->out, j));
    assert_int_equal(policy_new("pollux", NULL, &p), 0);
    for (uint64_t seed = 0; seed < 3; seed++) {
        alloc_copy(w->out, w->cur);
        assert_int_equal(policy_allocate(&p, &w->s, seed, w->out), 0);
        for (int j = 0; j < JOBS; j++)
            assert_true(alloc_job_equal(first, j, w->out, j));
    }
    policy_free(&p);
    alloc_free(first);
    assert_optimal(w);
}

/* One policy object decides twice: the goodput tables it keeps from the first decision must not
 * survive a change of the jobs' models. First a scales perfectly and b is sync-bound (a takes 6
 * GPUs, as above); then they trade models (and c gets one), so b must take a's place: the kept
 * policy's answer is a fresh policy's, and not the first. */
static void pollux_allocate__kept_tables_follow_model_changes(void **state)
{
    struct world *w = *state;
    struct alloc *kept;
    struct policy p;

    assert_int_equal(alloc_new(JOBS, NODES, GPUS, &kept), 0);
    assert_int_equal(policy_new("pollux", NULL, &p), 0);
    give_model(w, 0, &perfect);
    give_model(w, 1, &syncbound);
    alloc_copy(kept, w->cur);
    assert_int_equal(policy_allocate(&p, &w->s, 7, kept), 0);
    assert_int_equal(kept->count[0], 6);
    assert_int_equal(kept->count[1], 1);

    give_model(w, 0, &syncbound);
    give_model(w, 1, &perfect);
    give_model(w, 2, &syncbound);
    alloc_copy(kept, w->cur);
    assert_int_equal(policy_allocate(&p, &w->s, 7, kept), 0);
    assert_int_equal(decide(w), 0); /* a fresh policy */
    for (int j = 0; j < JOBS; j++)
        assert_true(alloc_job_equal(kept, j, w->out, j));
    assert_int_equal(kept->count[0], 1);
    assert_int_equal(kept->count[1], 6);
    assert_optimal(w);
    policy_free(&p);
    alloc_free(kept);
}

/* A small deterministic generator for the random worlds below. */
static double lcg_uniform(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*x >> 11) / 9007199254740992.0;
}

/*
 * Random worlds: every job a random Pollux model (log-uniform compute and sync costs, gamma in
 * [1, 3]), gradient noise, an adaptive batch, random profiling, owner's limits, ages and restarts,
 * and a random feasible current allocation (each job within its limit, as in a simulation, where
 * the limit only grows; one distributed job at most). The policy's answer is feasible, never worse
 * than the current allocation, and as fit as the best one enumeration finds: on two nodes the
 * local search's last move (re-solving a pair of nodes by branch and bound over every job's GPUs
 * on each) is exact. Without that move the policy missed the best in 4 of these 40 worlds
 * (castor-bench-pollux-ga's tiny worlds: 270 of 300 before, 300 of 300 with it).
 */
static void pollux_allocate__random_worlds_feasible_and_optimal(void **state)
{
    struct world *w = *state;
    uint64_t x = 12345;

    for (int t = 0; t < 40; t++) {
        int used[NODES] = {0}, spread = 0;
        double cur_fit, got;

        for (int j = 0; j < JOBS; j++) {
            struct snap_job *sj = &w->jobs[j];
            struct tput_params tp = {.ops = &tput_model_pollux};
            int limit;

            tp.theta[0] = 0.01 * exp(3 * lcg_uniform(&x));
            tp.theta[1] = 1e-4 * exp(3 * lcg_uniform(&x));
            tp.theta[2] = 0.01 * exp(5 * lcg_uniform(&x));
            tp.theta[3] = 1e-3 * exp(4 * lcg_uniform(&x));
            tp.theta[4] = 0.005 * exp(4 * lcg_uniform(&x));
            tp.theta[5] = 1e-3 * exp(3 * lcg_uniform(&x));
            tp.theta[6] = 1 + 2 * lcg_uniform(&x);
            sj->has_model = lcg_uniform(&x) < 0.8;
            sj->tput = tp;
            sj->grad = (struct grad_params){.sqr = lcg_uniform(&x), .var = 10 * lcg_uniform(&x)};
            sj->lim = (struct bsz_limits){.init_bsz = 64,
                                          .max_bsz = 64 * (1 + 31 * lcg_uniform(&x)),
                                          .max_local = 256,
                                          .accumulation = 1};
            sj->max_profiled_replicas = (int)(5 * lcg_uniform(&x));
            sj->max_replicas = lcg_uniform(&x) < 0.2 ? 2 : 0;
            sj->submit_time = NOW - 600 * lcg_uniform(&x);
            sj->restarts = (int)(3 * lcg_uniform(&x));
            limit = sj->max_profiled_replicas > 0 ? 2 * sj->max_profiled_replicas : 1;
            if (sj->max_replicas > 0 && sj->max_replicas < limit)
                limit = sj->max_replicas;
            alloc_clear_job(w->cur, j);
            for (int i = 0; i < NODES; i++) {
                int n = (int)((GPUS_PER_NODE - used[i] + 1) * lcg_uniform(&x));

                if (n > limit - w->cur->count[j])
                    n = limit - w->cur->count[j];
                if (i > 0 && w->cur->count[j] > 0 && spread) /* one distributed job at most */
                    n = 0;
                if (n > 0 && lcg_uniform(&x) < 0.5) {
                    assert_int_equal(alloc_add(w->cur, j, i, n), 0);
                    used[i] += n;
                }
            }
            spread |= alloc_nodes_used(w->cur, j) > 1;
        }
        cur_fit = policy_pollux_fitness(&w->cfg, &w->s, w->cur);
        assert_true(isfinite(cur_fit));
        assert_int_equal(decide(w), 0);
        got = policy_pollux_fitness(&w->cfg, &w->s, w->out);
        assert_true(isfinite(got));
        assert_true(got >= cur_fit);
        assert_float_equal(got, exhaustive_best(w), 1e-9);
    }
}

/* Job j of a holds a node's worth (gpn GPUs) on each of nodes[0..n-1]. */
static void set_whole_nodes(struct alloc *a, int j, const int *nodes, int n, int gpn)
{
    alloc_clear_job(a, j);
    for (int i = 0; i < n; i++)
        assert_int_equal(alloc_add(a, j, nodes[i], gpn), 0);
}

/*
 * A snapshot of a simulation (workload 1 of job load 0.5, t = 18,060 s, 16 nodes of 4 GPUs, every
 * node held; the models as fitted then). Two yolov3 jobs hold 6 and 7 whole nodes, cifar10-41 two
 * and cifar10-43 one. The dynamic program's best counts are 24 (kept), 17, 15 and 8: two
 * distributed jobs with partial nodes (17 = 4 x 4 + 1, 15 = 3 x 4 + 3), which the rule of one
 * distributed job per node forbids to share the node their remainders need. From those counts
 * placed, from the current allocation and from a defragmented one, the local search settled on
 * yolov3-22 giving one node to cifar10-43 (fitness 0.186982). The best counts in whole nodes
 * (24, 16, 16, 8) place exactly and are fitter: the reference-style GA found them
 * (castor-bench-pollux-ga: 0.187671), and the policy's fourth start, the dynamic program held to
 * whole nodes, does too.
 */
static void pollux_allocate__whole_nodes_where_partial_counts_cannot_be_placed(void **state)
{
    enum { N = 16, J = 4, GPN = 4 };
    static const struct {
        const char *name;
        double theta[7], sqr, var;
        struct bsz_limits lim;
        double submit;
        int restarts, profiled;
    } in[J] = {
        {"yolov3-21",
         {0.29003562707937441, 0.0094766223002684304, 1.1542866308066082, 0.010258167398834258,
          0.16293656726269456, 0.096776783332857941, 2.4558464172273307},
         180.62669297240939,
         21521.79715257962,
         {8, 512, 4, 8, 1},
         11382,
         21,
         42},
        {"yolov3-22",
         {0.28819409229935844, 0.010414708162834699, 1.1356929610426258, 0.0096246301192257685,
          0.15989500798169784, 0.092210954037662787, 2.4147602297622268},
         180.62669297240939,
         21521.79715257962,
         {8, 512, 4, 8, 1},
         11528,
         21,
         36},
        {"cifar10-41",
         {0.017152833337678558, 0.0006921171436645436, 0.21451243272102632, 0.0010730236214775398,
          0.039561924320809481, 0.003917605133887705, 3.0453301190805551},
         0.10178876753506114,
         5.2252838159811006,
         {128, 4096, 32, 1024, 1},
         17553,
         3,
         8},
        {"cifar10-43",
         {0.021669820660312204, 0.00064206676401457226, 0.031273183460642909, 0.0044798256866132296,
          0.028430166782402639, 0.0040725688060120266, 2.3306177070518386},
         0.1635515663590093,
         2.3157432926897719,
         {128, 4096, 32, 1024, 1},
         17739,
         2,
         4},
    };
    struct snap_node nodes[N];
    struct snap_job jobs[J];
    struct alloc *cur, *out, *ga;
    struct snapshot s = {.now = 18060, .nnodes = N, .nodes = nodes, .njobs = J, .jobs = jobs};
    struct policy_config cfg = {0};
    double got, ga_fit;

    (void)state;
    for (int i = 0; i < N; i++)
        nodes[i].gpus = GPN;
    memset(jobs, 0, sizeof(jobs));
    for (int j = 0; j < J; j++) {
        jobs[j].name = in[j].name;
        jobs[j].has_model = 1;
        jobs[j].tput.ops = &tput_model_pollux;
        memcpy(jobs[j].tput.theta, in[j].theta, sizeof(in[j].theta));
        jobs[j].grad = (struct grad_params){.sqr = in[j].sqr, .var = in[j].var};
        jobs[j].lim = in[j].lim;
        jobs[j].submit_time = in[j].submit;
        jobs[j].restarts = in[j].restarts;
        jobs[j].max_profiled_replicas = in[j].profiled;
    }
    assert_int_equal(alloc_new(J, N, N * GPN, &cur), 0);
    assert_int_equal(alloc_new(J, N, N * GPN, &out), 0);
    assert_int_equal(alloc_new(J, N, N * GPN, &ga), 0);
    set_whole_nodes(cur, 0, (int[]){0, 1, 2, 3, 5, 11}, 6, GPN);
    set_whole_nodes(cur, 1, (int[]){4, 6, 7, 8, 9, 10, 12}, 7, GPN);
    set_whole_nodes(cur, 2, (int[]){14, 15}, 2, GPN);
    set_whole_nodes(cur, 3, (int[]){13}, 1, GPN);
    s.current = cur;
    /* the GA's answer: yolov3-22 gives up three nodes, two to cifar10-41 and one to cifar10-43 */
    alloc_copy(ga, cur);
    set_whole_nodes(ga, 1, (int[]){6, 9, 10, 12}, 4, GPN);
    set_whole_nodes(ga, 2, (int[]){4, 7, 14, 15}, 4, GPN);
    set_whole_nodes(ga, 3, (int[]){8, 13}, 2, GPN);
    ga_fit = policy_pollux_fitness(&cfg, &s, ga);
    assert_true(isfinite(ga_fit));
    assert_float_equal(ga_fit, 0.187671, 1e-6);

    assert_int_equal(decide_with("pollux", &s, &cfg, 7, out), 0);
    got = policy_pollux_fitness(&cfg, &s, out);
    assert_true(got >= ga_fit - 1e-12);
    assert_int_equal(out->count[0], 24);
    assert_int_equal(out->count[1], 16);
    assert_int_equal(out->count[2], 16);
    assert_int_equal(out->count[3], 8);
    for (int j = 1; j < J; j++)
        assert_int_equal(alloc_nodes_used(out, j), out->count[j] / GPN);
    alloc_free(cur);
    alloc_free(out);
    alloc_free(ga);
}

/*
 * Past 1024 nodes: 1025 nodes of 8 GPUs, job a (perfect, measured on 4) holding 8 GPUs of node 0
 * and job b (the same) holding nothing. The current allocation is feasible, so its fitness is
 * finite, and the policy's answer is feasible and at least as fit, with b given GPUs. (The
 * feasibility check had room for 1024 nodes and called everything beyond infeasible: fitness
 * -inf, and the search skipped.)
 */
static void pollux_allocate__more_than_1024_nodes(void **state)
{
    enum { N = 1025 };
    struct snap_node *nodes = test_calloc(N, sizeof(*nodes));
    struct snap_job jobs[2];
    struct policy_config cfg = {0};
    struct alloc *cur, *out;
    struct snapshot s;
    double before, after;

    (void)state;
    assert_non_null(nodes);
    for (int k = 0; k < N; k++)
        nodes[k].gpus = 8;
    for (int j = 0; j < 2; j++)
        jobs[j] = (struct snap_job){.name = j ? "b" : "a",
                                    .has_model = 1,
                                    .tput = perfect,
                                    .grad = {.sqr = 0.0, .var = 1.0},
                                    .lim = {.init_bsz = 840},
                                    .max_profiled_replicas = 4};
    assert_int_equal(alloc_new(2, N, 16, &cur), 0);
    assert_int_equal(alloc_new(2, N, 16, &out), 0);
    assert_int_equal(alloc_add(cur, 0, 0, 8), 0);
    s = (struct snapshot){
        .now = NOW, .nnodes = N, .nodes = nodes, .njobs = 2, .jobs = jobs, .current = cur};
    before = policy_pollux_fitness(&cfg, &s, cur);
    assert_true(isfinite(before));
    assert_int_equal(decide_with("pollux", &s, &cfg, 7, out), 0);
    after = policy_pollux_fitness(&cfg, &s, out);
    assert_true(isfinite(after));
    assert_true(after >= before);
    assert_true(out->count[1] > 0);
    alloc_free(cur);
    alloc_free(out);
    test_free(nodes);
}

/* The registry entry is named and creates an instance. */
static void policy_pollux__ops(void **state)
{
    (void)state;
    assert_ptr_equal(policy_find("pollux"), &policy_pollux);
    assert_string_equal(policy_pollux.name, "pollux");
    assert_non_null(policy_pollux.summary);
    assert_non_null(policy_pollux.create);
    assert_non_null(policy_pollux.allocate);
}

#define WORLD_TEST(f) cmocka_unit_test_setup_teardown(f, world_setup, world_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        WORLD_TEST(pollux_allocate__without_model_one_gpu_each),
        WORLD_TEST(pollux_allocate__scaling_job_outgrows_sync_bound),
        WORLD_TEST(pollux_allocate__restart_penalty_keeps_young_job),
        WORLD_TEST(pollux_allocate__distributed_jobs_never_share_a_node),
        WORLD_TEST(pollux_allocate__owner_max_replicas_caps),
        WORLD_TEST(pollux_allocate__deadline_starts_at_the_owners_request),
        WORLD_TEST(pollux_allocate__owner_limit_shrinks_held_job),
        WORLD_TEST(pollux_allocate__gang_minimum_all_or_nothing),
        WORLD_TEST(pollux_allocate__gang_below_its_minimum_is_placed_again),
        WORLD_TEST(pollux_allocate__weight_claims_more),
        WORLD_TEST(pollux_allocate__same_count_on_other_nodes_is_a_restart),
        WORLD_TEST(pollux_allocate__placement_splits_the_job_that_minds_least),
        WORLD_TEST(pollux_allocate__no_jobs),
        WORLD_TEST(pollux_fitness__harmonic_mean_by_hand),
        WORLD_TEST(pollux_fitness__restart_penalty_by_hand),
        WORLD_TEST(pollux_fitness__p_one_is_arithmetic_mean),
        WORLD_TEST(pollux_fitness__p_zero_is_geometric_mean),
        WORLD_TEST(pollux_fitness__infeasible_is_minus_inf),
        WORLD_TEST(pollux_allocate__deterministic),
        WORLD_TEST(pollux_allocate__kept_tables_follow_model_changes),
        WORLD_TEST(pollux_allocate__random_worlds_feasible_and_optimal),
        cmocka_unit_test(pollux_allocate__whole_nodes_where_partial_counts_cannot_be_placed),
        cmocka_unit_test(pollux_allocate__more_than_1024_nodes),
        cmocka_unit_test(policy_pollux__ops),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
