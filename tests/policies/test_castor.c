/* test_castor.c: the castor policy (marginal-gain greedy over replica counts, weighted by the
 * work left or by least attained service, restart priced, then placement) on allocations worked out
 * by hand on a tiny cluster, and a property test: on thousands of random snapshots every answer
 * respects node capacity, the replica limits and the one-distributed-job-per-node rule, and is
 * deterministic. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policies/small_world.h"
#include "util/error.h"

/* Decide as the caller does: out starts as a copy of the current allocation. */
static int decide(struct world *w)
{
    return decide_with("castor", &w->s, &w->cfg, 7, w->out);
}

/* Without models each job may take one GPU (it has never been measured on more): one each, on
 * the tightest node (node 0, lowest on ties, then the same node as it fills). */
static void castor_allocate__without_model_one_gpu_each(void **state)
{
    struct world *w = *state;

    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0}, 1);
    assert_row(w->out, 1, (int[]){0}, 1);
    assert_row(w->out, 2, (int[]){0}, 1);
}

/* a scales perfectly (every GPU adds about one to its speedup), b is sync-bound (its second to
 * fourth GPUs lower its speedup), c has no model (one GPU at most). Equal weights: every job's
 * first GPU gains the same, b's and c's further steps gain nothing against a's, so a takes the
 * other 6. Placed single-node jobs first: b and c on node 0 (the tightest that holds them, the
 * lowest on ties), then a on the whole node 1 and the 2 GPUs left on node 0. */
static void castor_allocate__scaling_job_outgrows_sync_bound(void **state)
{
    struct world *w = *state;

    give_model(w, 0, &perfect);
    give_model(w, 1, &syncbound);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){1, 1, 1, 1, 0, 0}, 6);
    assert_row(w->out, 1, (int[]){0}, 1);
    assert_row(w->out, 2, (int[]){0}, 1);
}

/* a, b and c scale perfectly and declared the same length (10^6 iterations left each, weight
 * (1 + 840,000 / 20000)^-1 = 0.023); a and b hold a node each: any change would cost a restart,
 * and nothing gains enough to pay for it (c's first GPU would cost a or b a restart for less than
 * its fourth GPU's worth), so both keep their GPUs and c waits. */
static void castor_allocate__hysteresis_keeps_balanced_jobs(void **state)
{
    struct world *w = *state;

    for (int j = 0; j < JOBS; j++) {
        give_model(w, j, &perfect);
        w->jobs[j].progress_target = 1e6;
    }
    set_row(w->cur, 0, (int[]){0, 0, 0, 0}, 4);
    set_row(w->cur, 1, (int[]){1, 1, 1, 1}, 4);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0, 0}, 4);
    assert_row(w->out, 1, (int[]){1, 1, 1, 1}, 4);
    assert_int_equal(w->out->count[2], 0);
}

/* The floor: as above, but no job declared its length (least attained service, 10^5 GPU-seconds
 * each) and c has no model. A job of unknown length is not starved on a guess: c gets one GPU
 * before anyone grows, and a and b share the other 7 (one of them restarts on 3). */
static void castor_allocate__unknown_length_gets_one_gpu_first(void **state)
{
    struct world *w = *state;

    give_model(w, 0, &perfect);
    give_model(w, 1, &perfect);
    w->jobs[0].attained_service = w->jobs[1].attained_service = 1e5;
    w->jobs[2].attained_service = 1e5;
    set_row(w->cur, 0, (int[]){0, 0, 0, 0}, 4);
    set_row(w->cur, 1, (int[]){1, 1, 1, 1}, 4);
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->out->count[2], 1);
    assert_int_equal(w->out->count[0] + w->out->count[1], 7);
}

/*
 * Least attained service: a (perfect) holds all 8 GPUs and has had 10^6 GPU-seconds (weight
 * (1 + 10^6 / 3600)^-1/4 = 0.244); c arrives with none (weight 1). c's first GPU gains 0.833
 * (the restart-priced speedup 1), a's 8 kept GPUs 0.244 each: c gets one, and a, unable to keep
 * its 8, is re-placed on 7: c first (a single-node job) on node 0, then a on the whole node 1
 * and the 3 GPUs left on node 0.
 */
static void castor_allocate__newcomer_takes_from_long_served_job(void **state)
{
    struct world *w = *state;

    give_model(w, 0, &perfect);
    w->jobs[0].attained_service = 1e6;
    w->jobs[1].submit_time = NOW; /* b: not profiled yet, but served long; c: fresh */
    w->jobs[1].attained_service = 1e6;
    set_row(w->cur, 0, (int[]){0, 0, 0, 0, 1, 1, 1, 1}, 8);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 2, (int[]){0}, 1);
    assert_int_equal(w->out->count[0] + w->out->count[1], 7);
    assert_true(w->out->count[0] >= 6);
}

/* The owner's limit caps a job, and shrinks a job that holds more than it now allows; the
 * exploration limit caps b (measured on 2, so 4 at most) while GPUs are contested: a 2, b 4, c 1.
 * (Changed with the idle phase: the one GPU nobody else wants then goes to b beyond its
 * exploration limit, as b's gain from it pays its restart, so b ends with 5.) */
static void castor_allocate__owner_and_exploration_limits_cap(void **state)
{
    struct world *w = *state;

    give_model(w, 0, &perfect);
    give_model(w, 1, &perfect);
    w->jobs[0].max_replicas = 2;
    w->jobs[1].max_profiled_replicas = 2;
    set_row(w->cur, 0, (int[]){0, 0, 0}, 3);
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->out->count[0], 2);
    assert_int_equal(w->out->count[1], 5);
    assert_int_equal(w->out->count[2], 1);
}

static void castor_allocate__no_jobs(void **state)
{
    struct world *w = *state;

    w->s.njobs = 0;
    assert_int_equal(decide(w), 0);
}

/* A small deterministic generator for the random snapshots below. */
static double lcg_uniform(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*x >> 11) / 9007199254740992.0;
}

#define PMAX_NODES 6
#define PMAX_JOBS 12

/*
 * Random snapshots: 1 to 6 nodes of 1 to 8 GPUs, 1 to 12 jobs with random Pollux models (or
 * none), gradient noise, batch limits, profiling, owners' limits, ages, attained service and a
 * random current allocation that respects capacity (its jobs may exceed today's limits, and
 * distributed jobs may share nodes: the policy must repair both). Every answer: within each
 * node's GPUs; each job within its owner's limit and its exploration limit (twice the replicas it
 * was measured on, one if none); at most one distributed job per node; the same answer twice.
 */
/*
 * Gang minimums: a, which needs 5 GPUs, gets all 5 or nothing; with a minimum of 9, more than the
 * cluster's 8, it gets nothing, and the other two jobs share the cluster.
 */
static void castor_allocate__gang_minimum_all_or_nothing(void **state)
{
    struct world *w = *state;

    for (int j = 0; j < JOBS; j++)
        give_model(w, j, &perfect);
    w->jobs[0].min_replicas = 5;
    assert_int_equal(decide_with("castor", &w->s, &w->cfg, 1, w->out), 0);
    assert_true(w->out->count[0] == 0 || w->out->count[0] >= 5);
    assert_true(w->out->count[0] + w->out->count[1] + w->out->count[2] <= GPUS);

    w->jobs[0].min_replicas = 9;
    assert_int_equal(decide_with("castor", &w->s, &w->cfg, 1, w->out), 0);
    assert_int_equal(w->out->count[0], 0);
    assert_true(w->out->count[1] > 0 && w->out->count[2] > 0);
}

/* Priority weights: of three perfectly scaling jobs, the one weighted 8 (priority 30) gets at
 * least as many GPUs as each of the others, and more than it got unweighted. */
static void castor_allocate__weight_claims_more(void **state)
{
    struct world *w = *state;
    int before;

    for (int j = 0; j < JOBS; j++)
        give_model(w, j, &perfect);
    assert_int_equal(decide_with("castor", &w->s, &w->cfg, 1, w->out), 0);
    before = w->out->count[0];
    w->jobs[0].weight = 8;
    assert_int_equal(decide_with("castor", &w->s, &w->cfg, 1, w->out), 0);
    assert_true(w->out->count[0] > before);
    assert_true(w->out->count[0] >= w->out->count[1] && w->out->count[0] >= w->out->count[2]);
}

/*
 * Shortest remaining first: a and b scale perfectly (1,000 samples/s per GPU) and declared their
 * lengths; a has 1,000 iterations of M0 = 840 left (840 GPU-seconds: weight (1 + 840 / 20000)^-1
 * = 0.96), b 10^6 (840,000 GPU-seconds: weight 0.023); c declared none and has no model (one GPU,
 * weight 1 by least attained service). c gets its GPU, a the other 7, b none; with the lengths
 * swapped, b gets the 7. Without declared lengths (least attained service, equal for a and b) the
 * two share the GPUs.
 */
static void castor_allocate__less_work_left_claims_more(void **state)
{
    struct world *w = *state;

    give_model(w, 0, &perfect);
    give_model(w, 1, &perfect);
    w->jobs[0].max_profiled_replicas = w->jobs[1].max_profiled_replicas = 8;
    w->jobs[0].progress_target = 2000, w->jobs[0].progress = 1000;
    w->jobs[1].progress_target = 1e6, w->jobs[1].progress = 0;
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->out->count[0], 7);
    assert_int_equal(w->out->count[1], 0);
    assert_int_equal(w->out->count[2], 1);

    w->jobs[0].progress_target = 1e6, w->jobs[0].progress = 0;
    w->jobs[1].progress_target = 2000, w->jobs[1].progress = 1000;
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->out->count[0], 0);
    assert_int_equal(w->out->count[1], 7);

    w->jobs[0].progress_target = w->jobs[1].progress_target = 0;
    assert_int_equal(decide(w), 0);
    assert_true(w->out->count[0] > 0 && w->out->count[1] > 0);
    assert_int_equal(w->out->count[0] + w->out->count[1], 7);
}

/*
 * A count that cannot be placed is decided again. a, distributed (2 GPUs on each node, its owner's
 * limit 4), keeps its GPUs; b, a gang of 3 (and at most 3) weighted 8, is given the 3 free GPUs (2
 * on node 0, 1 on node 1), but 3 GPUs on two nodes that both hold a distributed job cannot be
 * placed. Capped at 0, the second decide offers the room to c (1 GPU on node 1, scaling perfectly):
 * it is counted 4 but fits only 2 on one node; capped at 2, the third decide places it on 2 GPUs of
 * node 0 (the tightest, lowest on ties). One decide left c on 1 GPU and 3 GPUs idle.
 */
static void castor_allocate__unplaceable_count_decided_again(void **state)
{
    struct world *w = *state;

    for (int j = 0; j < JOBS; j++)
        give_model(w, j, &perfect);
    w->jobs[0].max_profiled_replicas = w->jobs[0].max_replicas = 4;
    w->jobs[1].max_profiled_replicas = w->jobs[1].min_replicas = w->jobs[1].max_replicas = 3;
    w->jobs[1].weight = 8;
    w->jobs[2].max_profiled_replicas = 1;
    set_row(w->cur, 0, (int[]){0, 0, 1, 1}, 4);
    set_row(w->cur, 2, (int[]){1}, 1);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 1, 1}, 4);
    assert_int_equal(w->out->count[1], 0);
    assert_row(w->out, 2, (int[]){0, 0}, 2);
}

static void castor_allocate__random_snapshots_respect_constraints(void **state)
{
    struct snap_node nodes[PMAX_NODES];
    struct snap_job jobs[PMAX_JOBS];
    struct policy_config cfg = {0};
    uint64_t x = 4242;

    (void)state;
    for (int t = 0; t < 3000; t++) {
        int nn = 1 + (int)(PMAX_NODES * lcg_uniform(&x)), gpn = 1 + (int)(8 * lcg_uniform(&x));
        int nj = 1 + (int)(PMAX_JOBS * lcg_uniform(&x)), used[PMAX_NODES] = {0};
        int dist[PMAX_NODES] = {0};
        struct alloc *cur, *out, *again;
        struct snapshot s;

        memset(jobs, 0, sizeof(jobs));
        for (int i = 0; i < nn; i++)
            nodes[i] = (struct snap_node){.gpus = gpn};
        assert_int_equal(alloc_new(nj, nn, nn * gpn, &cur), 0);
        assert_int_equal(alloc_new(nj, nn, nn * gpn, &out), 0);
        assert_int_equal(alloc_new(nj, nn, nn * gpn, &again), 0);
        for (int j = 0; j < nj; j++) {
            struct snap_job *sj = &jobs[j];
            struct tput_params tp = {.ops = &tput_model_pollux};

            tp.theta[0] = 0.01 * exp(3 * lcg_uniform(&x));
            tp.theta[1] = 1e-4 * exp(3 * lcg_uniform(&x));
            tp.theta[2] = 0.01 * exp(5 * lcg_uniform(&x));
            tp.theta[3] = 1e-3 * exp(4 * lcg_uniform(&x));
            tp.theta[4] = 0.005 * exp(4 * lcg_uniform(&x));
            tp.theta[5] = 1e-3 * exp(3 * lcg_uniform(&x));
            tp.theta[6] = 1 + 2 * lcg_uniform(&x);
            sj->name = "j";
            sj->has_model = lcg_uniform(&x) < 0.8;
            sj->tput = tp;
            sj->grad = (struct grad_params){.sqr = lcg_uniform(&x), .var = 10 * lcg_uniform(&x)};
            sj->lim = (struct bsz_limits){.init_bsz = 64,
                                          .max_bsz = 64 * (1 + 31 * lcg_uniform(&x)),
                                          .max_local = 256,
                                          .accumulation = 1};
            sj->max_profiled_replicas = (int)(9 * lcg_uniform(&x));
            sj->max_replicas = lcg_uniform(&x) < 0.2 ? 1 + (int)(3 * lcg_uniform(&x)) : 0;
            sj->min_replicas = lcg_uniform(&x) < 0.2 ? 2 + (int)(4 * lcg_uniform(&x)) : 0;
            sj->submit_time = NOW - 3000 * lcg_uniform(&x);
            sj->attained_service = 1e5 * lcg_uniform(&x);
            sj->restarts = (int)(5 * lcg_uniform(&x));
            for (int i = 0; i < nn; i++) {
                int n = (int)((gpn - used[i] + 1) * lcg_uniform(&x));

                if (n > 0 && lcg_uniform(&x) < 0.3) {
                    assert_int_equal(alloc_add(cur, j, i, n), 0);
                    used[i] += n;
                }
            }
        }
        s = (struct snapshot){
            .now = NOW, .nnodes = nn, .nodes = nodes, .njobs = nj, .jobs = jobs, .current = cur};
        assert_int_equal(decide_with("castor", &s, &cfg, (uint64_t)t, out), 0);
        assert_int_equal(decide_with("castor", &s, &cfg, (uint64_t)t, again), 0);
        memset(used, 0, sizeof(used));
        for (int j = 0; j < nj; j++) {
            /* never measured: 1; measured: the exploration limit (2x) binds only while GPUs are
             * contested, idle GPUs may take a job up to the cluster (no batch limit here) */
            int limit = jobs[j].max_profiled_replicas > 0 ? nn * gpn : 1;

            if (limit < jobs[j].min_replicas)
                limit = jobs[j].min_replicas;
            assert_true(alloc_job_equal(out, j, again, j));
            assert_true(out->count[j] <= limit);
            /* a gang: all of its minimum or nothing */
            /* a gang: all of its minimum or nothing */
            assert_true(out->count[j] == 0 || out->count[j] >= jobs[j].min_replicas);
            if (jobs[j].max_replicas > 0)
                assert_true(out->count[j] <= jobs[j].max_replicas);
            for (int i = 0; i < nn; i++) {
                int on = alloc_on_node(out, j, i);

                used[i] += on;
                if (on > 0 && alloc_nodes_used(out, j) > 1)
                    dist[i]++;
            }
        }
        for (int i = 0; i < nn; i++) {
            assert_true(used[i] <= gpn);
            assert_true(dist[i] <= 1);
        }
        alloc_free(cur);
        alloc_free(out);
        alloc_free(again);
    }
}

/* The registry entry is named, adaptive, and creates an instance. */
static void policy_castor__ops(void **state)
{
    (void)state;
    assert_ptr_equal(policy_find("castor"), &policy_castor);
    assert_string_equal(policy_castor.name, "castor");
    assert_int_equal(policy_castor.adaptive_batch, 1);
    assert_non_null(policy_castor.summary);
    assert_non_null(policy_castor.allocate);
}

#define WORLD_TEST(f) cmocka_unit_test_setup_teardown(f, world_setup, world_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        WORLD_TEST(castor_allocate__without_model_one_gpu_each),
        WORLD_TEST(castor_allocate__scaling_job_outgrows_sync_bound),
        WORLD_TEST(castor_allocate__hysteresis_keeps_balanced_jobs),
        WORLD_TEST(castor_allocate__unknown_length_gets_one_gpu_first),
        WORLD_TEST(castor_allocate__newcomer_takes_from_long_served_job),
        WORLD_TEST(castor_allocate__owner_and_exploration_limits_cap),
        WORLD_TEST(castor_allocate__no_jobs),
        WORLD_TEST(castor_allocate__gang_minimum_all_or_nothing),
        WORLD_TEST(castor_allocate__weight_claims_more),
        WORLD_TEST(castor_allocate__less_work_left_claims_more),
        WORLD_TEST(castor_allocate__unplaceable_count_decided_again),
        cmocka_unit_test(castor_allocate__random_snapshots_respect_constraints),
        cmocka_unit_test(policy_castor__ops),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
