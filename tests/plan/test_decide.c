/* test_decide.c: the decide step's checks on a policy's answer: node capacity, the owner's replica
 * limit and gang minimums; a refused answer leaves the current allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "plan/decide.h"
#include "policies/small_world.h"
#include "util/error.h"

/* A policy that answers whatever rows the test put in `answer`. */
static struct alloc *answer;

static int canned_allocate(void *ctx, const struct snapshot *s, uint64_t seed, struct alloc *out)
{
    (void)ctx;
    (void)s;
    (void)seed;
    alloc_copy(out, answer);
    return 0;
}

static const struct policy_ops canned = {.name = "canned", .allocate = canned_allocate};

/* Decide with the canned answer rows; returns plan_decide's code. */
static int decide_canned(struct world *w)
{
    struct policy p = {.ops = &canned};

    return plan_decide(&w->s, &p, 1, w->out);
}

/*
 * Job a holds one GPU on node 0. Answers: a on 3 GPUs of node 0 (fine); with a's minimum at 4, the
 * same answer is a gang cut short: refused, and a keeps its one GPU; 4 GPUs pass; 5 on node 0
 * overfill it (4 GPUs): refused; with an owner's limit of 3, 4 GPUs are refused.
 */
static void plan_decide__checks_capacity_limits_and_gangs(void **state)
{
    struct world *w = *state;

    assert_int_equal(alloc_new(JOBS, NODES, GPUS, &answer), 0);
    set_row(w->cur, 0, (int[]){0}, 1);
    set_row(answer, 0, (int[]){0, 0, 0}, 3);
    assert_int_equal(decide_canned(w), 0);
    assert_row(w->out, 0, (int[]){0, 0, 0}, 3);

    w->jobs[0].min_replicas = 4;
    assert_int_equal(decide_canned(w), ERR_INTERNAL);
    assert_row(w->out, 0, (int[]){0}, 1);
    set_row(answer, 0, (int[]){0, 0, 0, 0}, 4);
    assert_int_equal(decide_canned(w), 0);

    w->jobs[0].min_replicas = 0;
    set_row(answer, 0, (int[]){0, 0, 0, 0, 0}, 5);
    assert_int_equal(decide_canned(w), ERR_INTERNAL);
    assert_row(w->out, 0, (int[]){0}, 1);

    w->jobs[0].max_replicas = 3;
    set_row(answer, 0, (int[]){0, 0, 0, 0}, 4);
    assert_int_equal(decide_canned(w), ERR_INTERNAL);
    alloc_free(answer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(plan_decide__checks_capacity_limits_and_gangs, world_setup,
                                        world_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
