/* test_tiresias.c: Tiresias over several rounds against allocations worked out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "policies/alloc_rows.h"

#include "policies/policy.h"
#include "util/error.h"

#define NODES 2
#define GPUS_PER_NODE 4
#define MAX_JOBS 4

/*
 * A world of NODES x GPUS_PER_NODE GPUs that applies every decision: each round's current
 * allocation is the last decision, row by row for the jobs still there (matched by name).
 */
struct world {
    void *ctx; /* the policy instance */
    struct snap_node nodes[NODES];
    struct snap_job jobs[MAX_JOBS];
    struct alloc *cur, *out;
    struct snapshot s;
};

static int world_setup(void **state)
{
    struct world *w = test_calloc(1, sizeof(*w));

    assert_non_null(w);
    for (int i = 0; i < NODES; i++)
        w->nodes[i].gpus = GPUS_PER_NODE;
    w->s = (struct snapshot){.nnodes = NODES, .nodes = w->nodes, .jobs = w->jobs};
    assert_int_equal(policy_tiresias.create(&(struct policy_config){0}, &w->ctx), 0);
    *state = w;
    return 0;
}

static int world_teardown(void **state)
{
    struct world *w = *state;

    policy_tiresias.destroy(w->ctx);
    alloc_free(w->cur);
    alloc_free(w->out);
    test_free(w);
    return 0;
}

/* Start the round at `now` with jobs names[i] of gang gangs[i]; those seen in the last round
 * hold what it gave them. */
static void next_round(struct world *w, double now, int n, const char *const *names,
                       const int *gangs)
{
    struct alloc *cur;

    assert_true(n <= MAX_JOBS);
    assert_int_equal(alloc_new(n, NODES, NODES * GPUS_PER_NODE, &cur), 0);
    for (int j = 0; j < n; j++)
        for (int k = 0; w->out && k < w->s.njobs; k++)
            if (names[j] && w->jobs[k].name && strcmp(w->jobs[k].name, names[j]) == 0)
                for (int i = 0; i < w->out->count[k]; i++)
                    assert_int_equal(alloc_add(cur, j, w->out->node[k * w->out->width + i], 1), 0);
    alloc_free(w->cur);
    alloc_free(w->out);
    w->cur = cur;
    w->out = NULL;
    memset(w->jobs, 0, sizeof(w->jobs));
    for (int j = 0; j < n; j++) {
        w->jobs[j].name = names[j];
        w->jobs[j].req_replicas = gangs[j];
    }
    w->s.now = now;
    w->s.njobs = n;
    w->s.current = cur;
}

/* Decide as the caller does: out starts as a copy of the current allocation. */
static int decide(struct world *w)
{
    assert_int_equal(alloc_new(w->s.njobs, NODES, NODES * GPUS_PER_NODE, &w->out), 0);
    alloc_copy(w->out, w->cur);
    return policy_tiresias.allocate(w->ctx, &w->s, 3, w->out);
}

/* 8 GPUs, gangs a 4, b 6, c 2 in queue 0: a runs (4 left), b does not fit and waits, c, behind
 * it, still runs (no head-of-line blocking; 2 left). a takes node 0 (tie, lowest index), c the
 * most free node, 1. */
static void tiresias_allocate__gangs_in_order_without_head_of_line_blocking(void **state)
{
    struct world *w = *state;

    next_round(w, 60, 3, (const char *[]){"a", "b", "c"}, (int[]){4, 6, 2});
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0, 0}, 4);
    assert_row(w->out, 1, NULL, 0);
    assert_row(w->out, 2, (int[]){1, 1}, 2);
}

/* Round 1: a 4 on node 0; b 2 on node 1 (free 0, 4); c 2 on node 1 (free 0, 2). Round 2: a and b
 * are gone, d (6) arrives. c keeps node 1 (refilled, it would go to node 0, the most free); d
 * takes node 0's 4, then node 1's 2, split across nodes. */
static void tiresias_allocate__running_jobs_keep_nodes_new_ones_split(void **state)
{
    struct world *w = *state;

    next_round(w, 60, 3, (const char *[]){"a", "b", "c"}, (int[]){4, 2, 2});
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0, 0}, 4);
    assert_row(w->out, 1, (int[]){1, 1}, 2);
    assert_row(w->out, 2, (int[]){1, 1}, 2);
    next_round(w, 120, 2, (const char *[]){"c", "d"}, (int[]){2, 6});
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){1, 1}, 2);
    assert_row(w->out, 1, (int[]){0, 0, 0, 0, 1, 1}, 6);
}

/* a (gang 8) runs from t = 0; b (4) waits. At 7199 a has held its GPUs 7199 s: 7199 x 8 = 57592
 * < 57600, so it stays in queue 0 and keeps its nodes. At 7200 (7200 x 8 = 57600) it moves to
 * queue 1: b runs first (node 0, lowest of the tie), a no longer fits in the 4 left and is
 * preempted. At 7260 nothing changes (b keeps node 0). At 7320 b is gone and a runs again. */
static void tiresias_allocate__demotes_at_threshold(void **state)
{
    struct world *w = *state;
    const char *names[] = {"a", "b"};
    const int gangs[] = {8, 4};

    next_round(w, 0, 2, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0, 0, 1, 1, 1, 1}, 8);
    assert_row(w->out, 1, NULL, 0);
    next_round(w, 7199, 2, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0, 0, 1, 1, 1, 1}, 8);
    assert_row(w->out, 1, NULL, 0);
    next_round(w, 7200, 2, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, NULL, 0);
    assert_row(w->out, 1, (int[]){0, 0, 0, 0}, 4);
    next_round(w, 7260, 2, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, NULL, 0);
    assert_row(w->out, 1, (int[]){0, 0, 0, 0}, 4);
    next_round(w, 7320, 1, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0, 0, 1, 1, 1, 1}, 8);
}

/* a (8) runs, b (8) waits. At 7200 a moves to queue 1 and b runs: had b's 7200 s of waiting
 * counted, it would have moved too, behind a, and a would run. At 14400 b reaches 7200 s x 8 and
 * goes to the end of queue 1, behind a: a runs again, b is preempted. */
static void tiresias_allocate__waiting_accrues_nothing_demoted_go_last(void **state)
{
    struct world *w = *state;
    const char *names[] = {"a", "b"};
    const int gangs[] = {8, 8};
    static const int all[] = {0, 0, 0, 0, 1, 1, 1, 1};

    next_round(w, 0, 2, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, all, 8);
    assert_row(w->out, 1, NULL, 0);
    next_round(w, 7200, 2, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, NULL, 0);
    assert_row(w->out, 1, all, 8);
    next_round(w, 14400, 2, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, all, 8);
    assert_row(w->out, 1, NULL, 0);
}

/* a (2) on node 0, b (4) on node 1 (free 2, 4). At 14400 b reaches 14400 x 4 = 57600 and moves
 * to queue 1; a (28800) stays; both still run. At 28800 a reaches 28800 x 2 and goes to the end
 * of queue 1, behind b; c (4) arrives in queue 0. Queue 0 first: c runs (4 left), then queue 1 in
 * demotion order: b runs (0 left), a is preempted. c takes node 0, freed by a. */
static void tiresias_allocate__queue1_in_demotion_order(void **state)
{
    struct world *w = *state;
    const char *names[] = {"a", "b", "c"};
    const int gangs[] = {2, 4, 4};

    next_round(w, 0, 2, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0}, 2);
    assert_row(w->out, 1, (int[]){1, 1, 1, 1}, 4);
    next_round(w, 14400, 2, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0}, 2);
    assert_row(w->out, 1, (int[]){1, 1, 1, 1}, 4);
    next_round(w, 28800, 3, names, gangs);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, NULL, 0);
    assert_row(w->out, 1, (int[]){1, 1, 1, 1}, 4);
    assert_row(w->out, 2, (int[]){0, 0, 0, 0}, 4);
}

/* Two jobs of one name, a job without a name, a gang of 0 GPUs: ERR_INVAL, and the state is
 * untouched, so a valid round afterwards decides as a first round would: b, listed first, is
 * first in queue 0 and runs on all 8 GPUs; a waits (had a failed round kept a in queue 0, a
 * would be ahead of b and run). */
static void tiresias_allocate__invalid_snapshots_refused(void **state)
{
    struct world *w = *state;

    next_round(w, 60, 2, (const char *[]){"a", "a"}, (int[]){1, 1});
    assert_int_equal(decide(w), ERR_INVAL);
    next_round(w, 60, 2, (const char *[]){"a", NULL}, (int[]){1, 1});
    assert_int_equal(decide(w), ERR_INVAL);
    next_round(w, 60, 2, (const char *[]){"a", "b"}, (int[]){1, 0});
    assert_int_equal(decide(w), ERR_INVAL);
    next_round(w, 120, 2, (const char *[]){"b", "a"}, (int[]){8, 8});
    alloc_clear_job(w->cur, 0);
    alloc_clear_job(w->cur, 1);
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0, 0, 1, 1, 1, 1}, 8);
    assert_row(w->out, 1, NULL, 0);
}

/*
 * One round's jobs split among calls at the same time (castor's planner with split markets calls
 * once per market with that market's jobs): each round, a (gang 4) alone, then b (gang 4) alone.
 * a's service builds up across rounds although every other call lacks it: at 14400 it has held 4
 * GPUs for 14400 s (57600) and goes to queue 1, so c (gang 8), new in a's call, runs before it.
 * Then b is in no call for a whole round (it ended): it is forgotten, and listed again it is a new
 * job in queue 0, ahead of a. (Each call replaced the state with its own jobs: a came back new
 * every round, stayed in queue 0 and kept its 4 GPUs ahead of c, which waited.)
 */
static void tiresias_allocate__service_kept_across_split_calls(void **state)
{
    struct world *w = *state;
    const char *a[] = {"a"}, *b[] = {"b"}, *ac[] = {"a", "c"}, *ab[] = {"a", "b"};
    static const int all[] = {0, 0, 0, 0, 1, 1, 1, 1};

    for (int round = 0; round < 2; round++) {
        next_round(w, 7200.0 * round, 1, a, (int[]){4});
        assert_int_equal(decide(w), 0);
        assert_int_equal(w->out->count[0], 4);
        next_round(w, 7200.0 * round, 1, b, (int[]){4});
        assert_int_equal(decide(w), 0);
        assert_int_equal(w->out->count[0], 4);
    }
    next_round(w, 14400, 2, ac, (int[]){4, 8});
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, NULL, 0);
    assert_row(w->out, 1, all, 8);
    /* b was last in a call at 7200: at 21600 the round of 14400 has passed without it */
    next_round(w, 21600, 2, ab, (int[]){8, 8});
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, NULL, 0);
    assert_row(w->out, 1, all, 8);
}

/*
 * A market whose part of the fleet holds no node for ten one-minute rounds (no call lists its job
 * b): b keeps its service. b (gang 8) runs alone from 0 to 7200 (57600 GPU-s: queue 1); from 7260
 * to 7800 only x's market is called; at 7860 b and c (gang 8, new) are in one call: c, in queue 0,
 * runs and b waits (forgotten after a round without a call, b came back new, ahead of c). An
 * hour and more with no call listing b (it ended): forgotten, and listed again with y (gang 8,
 * new) it is new, ahead of y.
 */
static void tiresias_allocate__service_kept_while_a_market_holds_no_node(void **state)
{
    struct world *w = *state;
    const char *b[] = {"b"}, *x[] = {"x"}, *bc[] = {"b", "c"}, *by[] = {"b", "y"};
    static const int all[] = {0, 0, 0, 0, 1, 1, 1, 1};

    for (int t = 0; t <= 7200; t += 60) {
        next_round(w, t, 1, b, (int[]){8});
        assert_int_equal(decide(w), 0);
        assert_int_equal(w->out->count[0], 8);
    }
    for (int t = 7260; t <= 7800; t += 60) {
        next_round(w, t, 1, x, (int[]){1});
        assert_int_equal(decide(w), 0);
    }
    next_round(w, 7860, 2, bc, (int[]){8, 8});
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, NULL, 0);
    assert_row(w->out, 1, all, 8);
    for (int t = 7920; t <= 11520; t += 60) {
        next_round(w, t, 1, x, (int[]){1});
        assert_int_equal(decide(w), 0);
    }
    next_round(w, 11580, 2, by, (int[]){8, 8});
    assert_int_equal(decide(w), 0);
    assert_row(w->out, 0, all, 8);
    assert_row(w->out, 1, NULL, 0);
}

/* The registry entry is named and keeps state. */
static void policy_tiresias__ops(void **state)
{
    (void)state;
    assert_string_equal(policy_tiresias.name, "tiresias");
    assert_non_null(policy_tiresias.summary);
    assert_non_null(policy_tiresias.create);
    assert_non_null(policy_tiresias.destroy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            tiresias_allocate__gangs_in_order_without_head_of_line_blocking, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(tiresias_allocate__running_jobs_keep_nodes_new_ones_split,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(tiresias_allocate__demotes_at_threshold, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(tiresias_allocate__waiting_accrues_nothing_demoted_go_last,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(tiresias_allocate__queue1_in_demotion_order, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(tiresias_allocate__invalid_snapshots_refused, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(tiresias_allocate__service_kept_across_split_calls,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(
            tiresias_allocate__service_kept_while_a_market_holds_no_node, world_setup,
            world_teardown),
        cmocka_unit_test(policy_tiresias__ops),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
