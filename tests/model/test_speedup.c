/* test_speedup.c: memoised speedup tables. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/speedup.h"
#include "util/error.h"

/* gamma 1; T_acc = 0.1 + 0.001 m; single node syncs in 0.05 s, several nodes in 0.2 s. */
static const struct tput_params example = {.ops = &tput_model_pollux,
                                           .theta = {0.1, 0.001, 0.2, 0.0, 0.05, 0.0, 1.0}};

/* Fixed batch 64 (no scaling), no noise: on 1 GPU a step is 0.1 + 0.064 = 0.164 s; on 4 GPUs of
 * one node 0.1 + 0.016 + 0.05 = 0.166 s: speedup 0.164 / 0.166 (the fixed overhead does not
 * shrink). On 2 nodes x 2 GPUs: 0.1 + 0.016 + 0.2 = 0.316 s: 0.164 / 0.316. */
static void speedup_get__fixed_batch_hand_computed(void **state)
{
    struct grad_params gp = {.sqr = 1.0, .var = 0.0};
    struct bsz_limits lim = {.init_bsz = 64};
    struct speedup_table *t = NULL;

    (void)state;
    assert_int_equal(speedup_new(&example, &gp, &lim, 4, 16, 1, 1, &t), 0);
    assert_float_equal(speedup_base(t), 64 / 0.164, 1e-9);
    assert_float_equal(speedup_get(t, 1, 1), 1.0, 1e-12);
    assert_float_equal(speedup_get(t, 1, 4), 0.164 / 0.166, 1e-12);
    assert_float_equal(speedup_get(t, 2, 4), 0.164 / 0.316, 1e-12);
    speedup_free(t);
}

/* Each cell is computed once, however often it is asked for; impossible cells are 0 and cost
 * nothing. */
static void speedup_get__memoised(void **state)
{
    struct grad_params gp = {.sqr = 1.0, .var = 4.0};
    struct bsz_limits lim = {.init_bsz = 64, .max_bsz = 1024, .max_local = 256};
    struct speedup_table *t = NULL;
    double first;

    (void)state;
    assert_int_equal(speedup_new(&example, &gp, &lim, 4, 16, 1, 1, &t), 0);
    first = speedup_get(t, 2, 8);
    for (int i = 0; i < 10; i++)
        assert_float_equal(speedup_get(t, 2, 8), first, 0);
    assert_int_equal(speedup_computed(t), 1);
    assert_float_equal(speedup_get(t, 0, 0), 0, 0);
    assert_float_equal(speedup_get(t, 3, 2), 0, 0);  /* fewer replicas than nodes */
    assert_float_equal(speedup_get(t, 5, 8), 0, 0);  /* outside the table */
    assert_float_equal(speedup_get(t, 1, 17), 0, 0); /* outside the table */
    assert_int_equal(speedup_computed(t), 1);
    speedup_free(t);
}

/* A base other than one GPU (the fair share): speedup there is 1. With pure noise the job scales:
 * more GPUs, more speedup. */
static void speedup_new__fair_share_base(void **state)
{
    struct grad_params gp = {.sqr = 0.0, .var = 1.0};
    struct bsz_limits lim = {.init_bsz = 64, .max_bsz = 4096, .max_local = 256};
    struct speedup_table *t = NULL;

    (void)state;
    assert_int_equal(speedup_new(&example, &gp, &lim, 4, 16, 1, 2, &t), 0);
    assert_float_equal(speedup_get(t, 1, 2), 1.0, 1e-12);
    assert_true(speedup_get(t, 1, 4) > 1.0);
    assert_true(speedup_get(t, 1, 1) < 1.0);
    speedup_free(t);
}

static void speedup_new__invalid(void **state)
{
    struct grad_params gp = {.sqr = 1.0, .var = 1.0};
    struct bsz_limits lim = {.init_bsz = 64, .max_bsz = 128, .min_local = 64};
    struct speedup_table *t = NULL;

    (void)state;
    assert_int_equal(speedup_new(&example, &gp, &lim, 0, 4, 1, 1, &t), ERR_INVAL);
    assert_int_equal(speedup_new(&example, &gp, &lim, 4, 16, 5, 5, &t), ERR_INVAL);
    /* base of 4 GPUs x at least 64 = 256 > max 128: no feasible batch */
    assert_int_equal(speedup_new(&example, &gp, &lim, 4, 16, 1, 4, &t), ERR_RANGE);
    assert_null(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(speedup_get__fixed_batch_hand_computed),
        cmocka_unit_test(speedup_get__memoised),
        cmocka_unit_test(speedup_new__fair_share_base),
        cmocka_unit_test(speedup_new__invalid),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
