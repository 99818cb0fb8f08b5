/* test_accuracy.c: relative errors and their quantiles. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/accuracy.h"
#include "util/error.h"

/* Linear interpolation between order statistics, as numpy's default: for 1..5, the median is 3,
 * the 90th percentile is at position 0.9 * 4 = 3.6: 4 + 0.6 * (5 - 4) = 4.6. */
static void accuracy_quantile__linear_interpolation(void **state)
{
    double v[] = {5, 1, 4, 2, 3};

    (void)state;
    assert_float_equal(accuracy_quantile(v, 5, 0.5), 3.0, 1e-12);
    assert_float_equal(accuracy_quantile(v, 5, 0.9), 4.6, 1e-12);
    assert_float_equal(accuracy_quantile(v, 5, 1.0), 5.0, 1e-12);
    assert_float_equal(accuracy_quantile(v, 5, 0.0), 1.0, 1e-12);
    assert_float_equal(accuracy_quantile(v, 1, 0.9), 1.0, 1e-12);
}

/* A model whose step time is 0.2 s on one GPU at m = 10 (gamma 1, T_acc = 0.1 + 0.01 m) against
 * measurements of 0.25, 0.2 and 0.1 s: errors 0.2, 0, 1 (|0.2 - 0.25| / 0.25, 0, |0.2 - 0.1| /
 * 0.1); median 0.2, p90 0.2 + 0.8 * 0.8 = 0.84. */
static void accuracy_eval__relative_errors(void **state)
{
    struct tput_params p = {.ops = &tput_model_pollux,
                            .theta = {0.1, 0.01, 0.1, 0.0, 0.1, 0.0, 1.0}};
    struct tput_sample s[3] = {{{1, 1, 10}, 0.25, 0}, {{1, 1, 10}, 0.2, 0}, {{1, 1, 10}, 0.1, 0}};
    const struct tput_sample *ps[3] = {&s[0], &s[1], &s[2]};
    double scratch[3];
    struct accuracy a = {0};

    (void)state;
    assert_int_equal(accuracy_eval(&p, ps, 3, scratch, &a), 0);
    assert_int_equal(a.n, 3);
    /* (the single-GPU "sync" of 2e-8 s shifts the errors by about 1e-7) */
    assert_float_equal(a.median, 0.2, 1e-6);
    assert_float_equal(a.p90, 0.84, 1e-6);
    assert_float_equal(a.max, 1.0, 1e-6);
    a.n = 77;
    assert_int_equal(accuracy_eval(&p, ps, 0, scratch, &a), ERR_EMPTY);
    assert_int_equal(a.n, 77);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accuracy_quantile__linear_interpolation),
        cmocka_unit_test(accuracy_eval__relative_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
