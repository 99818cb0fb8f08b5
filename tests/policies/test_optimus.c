/* test_optimus.c: Optimus+Oracle against allocations worked out by hand on a tiny cluster. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "policies/alloc_rows.h"

#include "policies/policy.h"
#include "util/error.h"

#define NODES 2
#define GPUS_PER_NODE 4
#define JOBS 3

/* The fake ground truth: T_j(r) = a_j + c_j / r + d_j r seconds per step (NaN from r = nan_from_j
 * on, when that is > 0), and rem_j steps left. The gain of a GPU is (T(r) - T(r+1)) rem. */
struct fake {
    double a[JOBS], c[JOBS], d[JOBS], rem[JOBS];
    int nan_from[JOBS];
    int calls; /* step_time calls */
};

static double fake_step_time(void *ctx, int j, int r)
{
    struct fake *f = ctx;

    f->calls++;
    if (f->nan_from[j] > 0 && r >= f->nan_from[j])
        return NAN;
    return f->a[j] + f->c[j] / r + f->d[j] * r;
}

static double fake_iterations_left(void *ctx, int j)
{
    struct fake *f = ctx;

    return f->rem[j];
}

/* A world of NODES x GPUS_PER_NODE GPUs and JOBS jobs that each may take 32 replicas (batch 1024,
 * at least 32 per GPU), holding nothing. */
struct world {
    struct fake fake;
    struct snap_oracle oracle;
    struct snap_node nodes[NODES];
    struct snap_job jobs[JOBS];
    struct alloc *cur, *out;
    struct snapshot s;
};

static int world_setup(void **state)
{
    static const char *names[JOBS] = {"a", "b", "c"};
    struct world *w = test_calloc(1, sizeof(*w));

    assert_non_null(w);
    w->oracle = (struct snap_oracle){&w->fake, fake_iterations_left, fake_step_time};
    for (int i = 0; i < NODES; i++)
        w->nodes[i].gpus = GPUS_PER_NODE;
    for (int j = 0; j < JOBS; j++) {
        w->jobs[j].name = names[j];
        w->jobs[j].req_batch = 1024;
        w->jobs[j].lim.min_local = 32;
        w->fake.rem[j] = 1;
    }
    assert_int_equal(alloc_new(JOBS, NODES, NODES * GPUS_PER_NODE, &w->cur), 0);
    assert_int_equal(alloc_new(JOBS, NODES, NODES * GPUS_PER_NODE, &w->out), 0);
    w->s = (struct snapshot){.now = 60,
                             .nnodes = NODES,
                             .nodes = w->nodes,
                             .njobs = JOBS,
                             .jobs = w->jobs,
                             .current = w->cur,
                             .oracle = &w->oracle};
    *state = w;
    return 0;
}

static int world_teardown(void **state)
{
    struct world *w = *state;

    alloc_free(w->cur);
    alloc_free(w->out);
    test_free(w);
    return 0;
}

/* Decide as the caller does: out starts as a copy of the current allocation. */
static int decide(struct world *w)
{
    alloc_copy(w->out, w->cur);
    return policy_optimus.allocate(NULL, &w->s, 7, w->out);
}

/* T = c/r, so a GPU more at r gains c rem / (r (r+1)); weights c rem = 12 (c 6, rem 2), 6, 2.
 * All start at 1 (5 left), gains 6, 3, 1: a->2 (gain 12/6 = 2); b->2 (gain 6/6 = 1); a->3 (gain
 * 12/12 = 1); now a, b, c all gain exactly 1 (4-3, 3-2, 2-1): the tie goes to a->4 (gain 0.6);
 * then b->3 with the last GPU: (4, 3, 1). Placed by count ascending: c on node 0 (tie, lowest
 * index; free 3, 4), b on node 1 (free 3, 1), a takes node 0's 3 then node 1's last one. */
static void optimus_allocate__greedy_marginal_gain_ties_to_first(void **state)
{
    struct world *w = *state;

    w->fake.c[0] = 6;
    w->fake.rem[0] = 2;
    w->fake.c[1] = 6;
    w->fake.c[2] = 2;
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0, 1}, 4);
    assert_row(w->out, 1, (int[]){1, 1, 1}, 3);
    assert_row(w->out, 2, (int[]){0}, 1);
}

/* Same weights (12, 6, 2); a may take floor(100 / 32) = 3 replicas, b only 1 (its owner's limit,
 * though 1024 / 32 would allow 32). Start 1 each, gains 6, 0, 1: a->2 (gain 2), a->3 (gain 0: 4 >
 * 3), then c takes the 3 left (gains 1/3, 1/6, 1/10 all positive): (3, 1, 4). Placed: b on node
 * 0 (free 3, 4), a on node 1 (free 3, 1), c on node 0's 3 then node 1's last. */
static void optimus_allocate__max_replicas_caps_growth(void **state)
{
    struct world *w = *state;

    w->fake.c[0] = 6;
    w->fake.rem[0] = 2;
    w->fake.c[1] = 6;
    w->fake.c[2] = 2;
    w->jobs[0].req_batch = 100;
    w->jobs[1].max_replicas = 1;
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){1, 1, 1}, 3);
    assert_row(w->out, 1, (int[]){0}, 1);
    assert_row(w->out, 2, (int[]){0, 0, 0, 1}, 4);
}

/* T = 1 + 0.1 r: a GPU more only slows a job (gain -0.1 rem), so every job keeps its one GPU and
 * 5 stay idle. Placed in order: a on node 0 (tie), b on node 1 (free 3, 4), c on node 0 (tie 3,
 * 3). */
static void optimus_allocate__no_gain_leaves_gpus_idle(void **state)
{
    struct world *w = *state;

    for (int j = 0; j < JOBS; j++) {
        w->fake.a[j] = 1;
        w->fake.d[j] = 0.1;
    }
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0}, 1);
    assert_row(w->out, 1, (int[]){1}, 1);
    assert_row(w->out, 2, (int[]){0}, 1);
}

/* The weights of the first test give (4, 3, 1). c held 1 GPU on node 1 and b 3 on node 0: same
 * counts, so they keep them; a held 2 on node 1 and needs 4: cleared and refilled on the most
 * free node first: free is 1 on node 0, 3 on node 1, so a gets node 1's 3, then node 0's 1. */
static void optimus_allocate__keeps_nodes_only_when_count_unchanged(void **state)
{
    struct world *w = *state;

    w->fake.c[0] = 6;
    w->fake.rem[0] = 2;
    w->fake.c[1] = 6;
    w->fake.c[2] = 2;
    set_row(w->cur, 0, (int[]){1, 1}, 2);
    set_row(w->cur, 1, (int[]){0, 0, 0}, 3);
    set_row(w->cur, 2, (int[]){1}, 1);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){1, 1, 1, 0}, 4);
    assert_row(w->out, 1, (int[]){0, 0, 0}, 3);
    assert_row(w->out, 2, (int[]){1}, 1);
}

/* One node of 2 GPUs and 3 jobs: a and b get one each in order, c none (it loses the GPU it
 * held); no GPU is left, so nobody grows although a's gain (12/2) is positive. */
static void optimus_allocate__more_jobs_than_gpus(void **state)
{
    struct world *w = *state;
    struct alloc *cur, *out;

    w->fake.c[0] = 12;
    w->nodes[0].gpus = 2;
    w->s.nnodes = 1;
    assert_int_equal(alloc_new(JOBS, 1, 2, &cur), 0);
    assert_int_equal(alloc_new(JOBS, 1, 2, &out), 0);
    set_row(cur, 2, (int[]){0}, 1);
    w->s.current = cur;
    alloc_copy(out, cur);
    assert_int_equal(policy_optimus.allocate(NULL, &w->s, 0, out), 0);
    assert_row(out, 0, (int[]){0}, 1);
    assert_row(out, 1, (int[]){0}, 1);
    assert_row(out, 2, NULL, 0);
    alloc_free(cur);
    alloc_free(out);
}

/* Only b speeds up (T = 8/r, gains 4, 4/3, 2/3, 2/5, ...), but the oracle calls 4 or more of its
 * GPUs impossible (NaN): b stops at 3, gaining nothing from a 4th. a and c keep T flat. Result
 * (1, 3, 1): a on node 0, c on node 1 (free 3, 4), b on node 0 (free 3, 3: tie, lowest). */
static void optimus_allocate__impossible_configuration_gains_nothing(void **state)
{
    struct world *w = *state;

    w->fake.a[0] = w->fake.a[2] = 1;
    w->fake.c[1] = 8;
    w->fake.nan_from[1] = 4;
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0}, 1);
    assert_row(w->out, 1, (int[]){0, 0, 0}, 3);
    assert_row(w->out, 2, (int[]){1}, 1);
}

/* The decision costs O(GPUs) oracle calls: T(1) and T(2) per job at the start, then one T(r+1)
 * per GPU handed out (T(r) is reused). The first test hands out 5: 3 x 2 + 5 = 11 calls. */
static void optimus_allocate__reuses_step_times(void **state)
{
    struct world *w = *state;

    w->fake.c[0] = 6;
    w->fake.rem[0] = 2;
    w->fake.c[1] = 6;
    w->fake.c[2] = 2;
    assert_int_equal(decide(w), 0);
    assert_int_equal(w->fake.calls, 11);
}

/* Optimus+Oracle needs the ground truth; a snapshot of another size is refused. */
static void optimus_allocate__without_oracle_is_invalid(void **state)
{
    struct world *w = *state;
    struct alloc *small;

    w->s.oracle = NULL;
    assert_int_equal(decide(w), ERR_INVAL);
    w->s.oracle = &w->oracle;
    assert_int_equal(alloc_new(JOBS - 1, NODES, NODES * GPUS_PER_NODE, &small), 0);
    assert_int_equal(policy_optimus.allocate(NULL, &w->s, 0, small), ERR_INVAL);
    alloc_free(small);
}

/* The registry entry is named and stateless. */
static void policy_optimus__ops(void **state)
{
    (void)state;
    assert_string_equal(policy_optimus.name, "optimus");
    assert_non_null(policy_optimus.summary);
    assert_non_null(policy_optimus.allocate);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(optimus_allocate__greedy_marginal_gain_ties_to_first,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(optimus_allocate__max_replicas_caps_growth, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(optimus_allocate__no_gain_leaves_gpus_idle, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(optimus_allocate__keeps_nodes_only_when_count_unchanged,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(optimus_allocate__more_jobs_than_gpus, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(optimus_allocate__impossible_configuration_gains_nothing,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(optimus_allocate__reuses_step_times, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(optimus_allocate__without_oracle_is_invalid, world_setup,
                                        world_teardown),
        cmocka_unit_test(policy_optimus__ops),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
