/* test_bsz.c: the batch-size optimizer against cases worked out by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/bsz.h"
#include "util/error.h"

/* Pollux model, gamma 1 (no overlap): T_acc = 0.1 + 0.001 m; one node syncs in 0.05 s flat
 * (alpha_r 0.05, beta_r 0); several nodes in 0.2 s flat. */
static const struct tput_params example = {.ops = &tput_model_pollux,
                                           .theta = {0.1, 0.001, 0.2, 0.0, 0.05, 0.0, 1.0}};

/* Pure noise (sqr 0): efficiency 1, so the largest feasible batch wins. Four GPUs, M0 64, max
 * 1024, at most 128 per GPU, no accumulation: candidates are 64 * 16^(i/49); the largest whose
 * per-GPU batch ceil(M/4) fits 128 is i = 36, M = 490.73, so m = 123, total 492.
 * Goodput = 492 / (0.1 + 0.123 + 0.05) = 1802.2... */
static void bsz_optimize__pure_noise_takes_largest_feasible(void **state)
{
    struct grad_params gp = {.sqr = 0.0, .var = 1.0};
    struct bsz_limits lim = {.init_bsz = 64, .max_bsz = 1024, .max_local = 128};
    struct bsz_choice c;

    (void)state;
    assert_int_equal(bsz_optimize(&example, &gp, &lim, 1, 4, &c), 0);
    assert_float_equal(c.local_bsz, 123, 0);
    assert_int_equal(c.accum_steps, 0);
    assert_float_equal(c.batch, 492, 0);
    assert_float_equal(c.goodput, 492 / 0.273, 1e-9);
}

/* No noise (var 0): a larger batch buys nothing, so the smallest batch wins: M0 = 64, m = 16. */
static void bsz_optimize__no_noise_takes_initial_batch(void **state)
{
    struct grad_params gp = {.sqr = 1.0, .var = 0.0};
    struct bsz_limits lim = {.init_bsz = 64, .max_bsz = 1024, .max_local = 128};
    struct bsz_choice c;

    (void)state;
    assert_int_equal(bsz_optimize(&example, &gp, &lim, 1, 4, &c), 0);
    assert_float_equal(c.local_bsz, 16, 0);
    assert_float_equal(c.batch, 64, 0);
    /* goodput = 64 / (0.1 + 0.016 + 0.05) at efficiency 1 */
    assert_float_equal(c.goodput, 64 / 0.166, 1e-9);
}

/* With accumulation, the per-GPU batch stays under max_local: 2 GPUs, M0 64, max 1024, at most 100
 * per GPU, pure noise. goodput = 2 m (s+1) / ((s+1)(0.1 + 0.001 m) + 0.05). The last candidate,
 * M = 1024 (512 per GPU: s = ceil(5.12) - 1 = 5, m = ceil(512/6) = 86) gives 1032 / 1.166 = 885;
 * the one before, M = 64 * 16^(48/49) = 967.67 (483.8 per GPU: s = 4, m = ceil(96.8) = 97) gives
 * 970 / 1.035 = 937.2, the best of the 50 (checked by enumerating them). */
static void bsz_optimize__accumulation_respects_max_local(void **state)
{
    struct grad_params gp = {.sqr = 0.0, .var = 1.0};
    struct bsz_limits lim = {.init_bsz = 64, .max_bsz = 1024, .max_local = 100, .accumulation = 1};
    struct bsz_choice c;

    (void)state;
    assert_int_equal(bsz_optimize(&example, &gp, &lim, 1, 2, &c), 0);
    assert_int_equal(c.accum_steps, 4);
    assert_float_equal(c.local_bsz, 97, 0);
    assert_float_equal(c.batch, 2 * 97 * 5, 0);
    assert_float_equal(c.goodput, 970 / 1.035, 1e-9);
    assert_float_equal(c.goodput, bsz_goodput(&example, &gp, 64, 1, 2, 97, 4), 1e-9);
}

/* A single GPU above M0 accumulates at least once (so gradient noise can be measured), even when
 * memory would allow one large micro-batch: M0 100, max 150, pure noise. M = 100: s = 0,
 * 100 / 0.2 = 500. M = 150: s = 1, m = 75, 150 / (2 * 0.175) = 428.6; without the rule it would
 * be 150 / 0.25 = 600 and win. So M0 wins. */
static void bsz_optimize__single_gpu_accumulates_above_m0(void **state)
{
    struct grad_params gp = {.sqr = 0.0, .var = 1.0};
    struct bsz_limits lim = {.init_bsz = 100, .max_bsz = 150, .max_local = 1000, .accumulation = 1};
    struct bsz_choice c;

    (void)state;
    assert_int_equal(bsz_optimize(&example, &gp, &lim, 1, 1, &c), 0);
    assert_float_equal(c.local_bsz, 100, 0);
    assert_int_equal(c.accum_steps, 0);
    assert_float_equal(c.goodput, 500, 1e-9);
}

/* Limits that leave nothing feasible, and bad arguments: errors, and *out untouched. */
static void bsz_optimize__infeasible_and_invalid(void **state)
{
    struct grad_params gp = {.sqr = 1.0, .var = 1.0};
    struct bsz_limits lim = {.init_bsz = 64, .max_bsz = 256, .min_local = 32, .max_local = 64};
    struct bsz_choice c = {.goodput = -7};

    (void)state;
    /* 16 GPUs x at least 32 each = 512 > 256 */
    assert_int_equal(bsz_optimize(&example, &gp, &lim, 4, 16, &c), ERR_RANGE);
    assert_int_equal(bsz_optimize(&example, &gp, &lim, 2, 1, &c), ERR_INVAL);
    assert_int_equal(bsz_optimize(&example, &gp, &lim, 0, 0, &c), ERR_INVAL);
    lim.max_bsz = 32; /* below M0 */
    assert_int_equal(bsz_optimize(&example, &gp, &lim, 1, 1, &c), ERR_INVAL);
    assert_float_equal(c.goodput, -7, 0);
}

/* Without max_bsz the job does not scale its batch: M0 split over the GPUs. */
static void bsz_optimize__no_max_means_fixed_batch(void **state)
{
    struct grad_params gp = {.sqr = 0.0, .var = 1.0};
    struct bsz_limits lim = {.init_bsz = 256};
    struct bsz_choice c;

    (void)state;
    assert_int_equal(bsz_optimize(&example, &gp, &lim, 2, 8, &c), 0);
    assert_float_equal(c.batch, 256, 0);
    assert_float_equal(c.local_bsz, 32, 0);
}

/* The largest batch holds after rounding: 3 replicas with 2 accumulation steps under 1024 may
 * have 1024 / 9 = 113.8, so 113 each (114 would make 1026); a smaller local stays; 1024 over 8 is
 * exactly 128. The floors win: without a largest batch (M0 is it), 64 over 3 stays 22 (21 would
 * make 63, below M0); M0 3, largest 4, 3 replicas accumulating once: 1 each, not 0 (4 / 6); a
 * per-GPU minimum of 2 under 16 over 3 x 3: 2, not 1. */
static void bsz_cap_local__the_largest_batch_holds(void **state)
{
    const struct bsz_limits lim = {.init_bsz = 64, .max_bsz = 1024, .max_local = 128},
                            fixed = {.init_bsz = 64}, tiny = {.init_bsz = 3, .max_bsz = 4},
                            wide = {.init_bsz = 16, .max_bsz = 16, .min_local = 2};

    (void)state;
    assert_float_equal(bsz_cap_local(&lim, 3, 2, 114), 113, 0);
    assert_float_equal(bsz_cap_local(&lim, 3, 2, 100), 100, 0);
    assert_float_equal(bsz_cap_local(&lim, 4, 1, 128), 128, 0);
    assert_float_equal(bsz_cap_local(&fixed, 3, 0, 22), 22, 0);
    assert_float_equal(bsz_cap_local(&tiny, 3, 1, 1), 1, 0);
    assert_float_equal(bsz_cap_local(&wide, 3, 2, 2), 2, 0);
}

/* A change on the same GPUs, from goodput 100 to next (samples per second), hand-computed:
 * - the hysteresis alone: 104 < 1.05 x 100 keeps, 110 changes (in flight, or length unknown);
 * - a restart of 30 s on 32,000 samples left: 320 s at 100, 290.9 s at 110, saves 29.1 s, not
 *   more than 30: keeps; on 34,100: 341 - 310 = 31 s: changes; on none left (0, or below): keeps;
 * - nothing to keep (cur 0, NAN or infinite): changes. */
static void bsz_change_pays__hysteresis_then_the_restart(void **state)
{
    (void)state;
    assert_int_equal(bsz_change_pays(100, 104, 1.05, NAN, 0), 0);
    assert_int_equal(bsz_change_pays(100, 110, 1.05, NAN, 0), 1);
    assert_int_equal(bsz_change_pays(100, 110, 1.05, NAN, 30), 1);
    assert_int_equal(bsz_change_pays(100, 110, 1.05, INFINITY, 30), 1);
    assert_int_equal(bsz_change_pays(100, 110, 1.05, 32000, 0), 1);
    assert_int_equal(bsz_change_pays(100, 110, 1.05, 32000, 30), 0);
    assert_int_equal(bsz_change_pays(100, 110, 1.05, 34100, 30), 1);
    assert_int_equal(bsz_change_pays(100, 104, 1.05, 1e9, 30), 0);
    assert_int_equal(bsz_change_pays(100, 110, 1.05, 0, 30), 0);
    assert_int_equal(bsz_change_pays(100, 110, 1.05, -5, 30), 0);
    assert_int_equal(bsz_change_pays(0, 1, 1.05, 100, 30), 1);
    assert_int_equal(bsz_change_pays(NAN, 1, 1.05, 100, 30), 1);
    assert_int_equal(bsz_change_pays(INFINITY, 1, 1.05, 100, 30), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bsz_optimize__pure_noise_takes_largest_feasible),
        cmocka_unit_test(bsz_optimize__no_noise_takes_initial_batch),
        cmocka_unit_test(bsz_optimize__accumulation_respects_max_local),
        cmocka_unit_test(bsz_optimize__single_gpu_accumulates_above_m0),
        cmocka_unit_test(bsz_optimize__infeasible_and_invalid),
        cmocka_unit_test(bsz_optimize__no_max_means_fixed_batch),
        cmocka_unit_test(bsz_change_pays__hysteresis_then_the_restart),
        cmocka_unit_test(bsz_cap_local__the_largest_batch_holds),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
