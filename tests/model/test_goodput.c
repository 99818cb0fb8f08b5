/* test_goodput.c: statistical efficiency and the AdaScale gain, against hand-computed values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/goodput.h"

/* sqr = 1, var = 3, scale 4: gain = (3 + 1) / (3/4 + 1) = 4 / 1.75 = 2.285714... */
static void goodput_gain__scale_four(void **state)
{
    struct grad_params g = {.sqr = 1.0, .var = 3.0};

    (void)state;
    assert_float_equal(goodput_gain(&g, 4.0), 4.0 / 1.75, 1e-12);
}

/* At scale 1 the gain is 1 whatever the statistics. */
static void goodput_gain__scale_one_is_one(void **state)
{
    struct grad_params g = {.sqr = 0.25, .var = 7.0};

    (void)state;
    assert_float_equal(goodput_gain(&g, 1.0), 1.0, 1e-12);
}

/* No noise (var = 0): a bigger batch gains nothing, gain 1, efficiency 1/scale. */
static void goodput_efficiency__noiseless_is_inverse_scale(void **state)
{
    struct grad_params g = {.sqr = 2.0, .var = 0.0};

    (void)state;
    assert_float_equal(goodput_efficiency(&g, 128, 512), 0.25, 1e-12);
}

/* Pure noise (sqr = 0): gain = scale, efficiency 1 (perfect scaling). */
static void goodput_efficiency__pure_noise_is_one(void **state)
{
    struct grad_params g = {.sqr = 0.0, .var = 5.0};

    (void)state;
    assert_float_equal(goodput_efficiency(&g, 128, 4096), 1.0, 1e-12);
}

/* The published identity: efficiency = (phi + M0) / (phi + M) with phi = M0 var / sqr.
 * sqr 0.5, var 2, M0 100: phi = 400; M = 300: (400 + 100) / (400 + 300) = 5/7. */
static void goodput_efficiency__matches_noise_scale_form(void **state)
{
    struct grad_params g = {.sqr = 0.5, .var = 2.0};

    (void)state;
    assert_float_equal(goodput_noise_scale(&g, 100), 400.0, 1e-9);
    assert_float_equal(goodput_efficiency(&g, 100, 300), 5.0 / 7.0, 1e-12);
}

/* A job that reported nothing (sqr 0, var 1) and a degenerate denominator give gain 1. */
static void goodput_gain__degenerate_denominator(void **state)
{
    struct grad_params none = GRAD_PARAMS_NONE, bad = {.sqr = -1.0, .var = 0.5};

    (void)state;
    assert_float_equal(goodput_gain(&none, 8.0), 8.0, 1e-12); /* (1+0)/(1/8+0) = 8 */
    assert_float_equal(goodput_gain(&bad, 2.0), 1.0, 1e-12);  /* 0.25 - 1 < 0 -> 1 */
    assert_true(isinf(goodput_noise_scale(&bad, 10)));
}

/* Statistics near the largest double (a crafted report) give the gain of their ratio, finite:
 * var = sqr at scale 2 is (1 + 1) / (1/2 + 1) = 4/3, at scale 1 exactly 1. */
static void goodput_gain__huge_statistics_stay_finite(void **state)
{
    struct grad_params huge = {.sqr = 1e308, .var = 1e308};

    (void)state;
    assert_float_equal(goodput_gain(&huge, 2.0), 4.0 / 3.0, 1e-12);
    assert_float_equal(goodput_gain(&huge, 1.0), 1.0, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(goodput_gain__scale_four),
        cmocka_unit_test(goodput_gain__scale_one_is_one),
        cmocka_unit_test(goodput_efficiency__noiseless_is_inverse_scale),
        cmocka_unit_test(goodput_efficiency__pure_noise_is_one),
        cmocka_unit_test(goodput_efficiency__matches_noise_scale_form),
        cmocka_unit_test(goodput_gain__degenerate_denominator),
        cmocka_unit_test(goodput_gain__huge_statistics_stay_finite),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
