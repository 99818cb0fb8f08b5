/* test_minimize.c: the bounded L-BFGS wrapper on functions with known minima, and its errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/minimize.h"

/* sum_i (x_i - c_i)^2 with c in the context; counts its evaluations. */
struct quad {
    const double *c;
    int calls;
};

static double quadratic(int n, const double *x, double *grad, void *ctx)
{
    struct quad *q = ctx;
    double f = 0.0;

    q->calls++;
    for (int i = 0; i < n; i++) {
        double d = x[i] - q->c[i];

        f += d * d;
        if (grad)
            grad[i] = 2.0 * d;
    }
    return f;
}

/* Rosenbrock: (1 - x)^2 + 100 (y - x^2)^2, minimum 0 at (1, 1). */
static double rosenbrock(int n, const double *x, double *grad, void *ctx)
{
    double a = 1.0 - x[0], b = x[1] - x[0] * x[0];

    (void)n;
    if (ctx)
        ++*(int *)ctx;
    if (grad) {
        grad[0] = -2.0 * a - 400.0 * x[0] * b;
        grad[1] = 200.0 * b;
    }
    return a * a + 100.0 * b * b;
}

static double always_nan(int n, const double *x, double *grad, void *ctx)
{
    (void)x;
    (void)ctx;
    if (grad)
        for (int i = 0; i < n; i++)
            grad[i] = NAN;
    return NAN;
}

/* A quadratic centred at (1, -2, 3), inside the box [-10, 10]^3, from the origin: the centre is
 * recovered within 1e-6, f there is ~0, and *evals matches the calls the objective counted. */
static void minimize_bounded__quadratic_inside(void **state)
{
    const double c[3] = {1.0, -2.0, 3.0};
    const double lo[3] = {-10, -10, -10}, hi[3] = {10, 10, 10};
    double x[3] = {0, 0, 0}, fmin = -1.0;
    struct quad q = {.c = c};
    int evals = -1;

    (void)state;
    assert_int_equal(minimize_bounded(3, quadratic, &q, lo, hi, NULL, x, &fmin, &evals), 0);
    for (int i = 0; i < 3; i++)
        assert_float_equal(x[i], c[i], 1e-6);
    assert_float_equal(fmin, 0.0, 1e-12);
    assert_true(evals > 0);
    assert_int_equal(evals, q.calls);
}

/* HUGE_VAL bounds mean no bound; fmin and evals may be NULL. */
static void minimize_bounded__unbounded_and_null_outputs(void **state)
{
    const double c[2] = {-250.0, 1e3};
    const double lo[2] = {-HUGE_VAL, -HUGE_VAL}, hi[2] = {HUGE_VAL, HUGE_VAL};
    double x[2] = {0.5, 0.5};
    struct quad q = {.c = c};

    (void)state;
    assert_int_equal(minimize_bounded(2, quadratic, &q, lo, hi, NULL, x, NULL, NULL), 0);
    assert_float_equal(x[0], c[0], 1e-6);
    assert_float_equal(x[1], c[1], 1e-6);
}

/* Centre (5, -5) outside the box [-1, 2] x [-3, 4]: the minimiser over the box is the nearest
 * corner (2, -3), where f = 3^2 + 2^2 = 13. */
static void minimize_bounded__minimum_outside_box(void **state)
{
    const double c[2] = {5.0, -5.0};
    const double lo[2] = {-1, -3}, hi[2] = {2, 4};
    double x[2] = {0, 0}, fmin = 0.0;
    struct quad q = {.c = c};

    (void)state;
    assert_int_equal(minimize_bounded(2, quadratic, &q, lo, hi, NULL, x, &fmin, NULL), 0);
    assert_float_equal(x[0], 2.0, 1e-9);
    assert_float_equal(x[1], -3.0, 1e-9);
    assert_float_equal(fmin, 13.0, 1e-9);
}

/* One coordinate bound, the other free: centre (5, 1.5) in [-1, 2] x [-3, 4] -> (2, 1.5). */
static void minimize_bounded__one_bound_active(void **state)
{
    const double c[2] = {5.0, 1.5};
    const double lo[2] = {-1, -3}, hi[2] = {2, 4};
    double x[2] = {0, 0};
    struct quad q = {.c = c};

    (void)state;
    assert_int_equal(minimize_bounded(2, quadratic, &q, lo, hi, NULL, x, NULL, NULL), 0);
    assert_float_equal(x[0], 2.0, 1e-9);
    assert_float_equal(x[1], 1.5, 1e-6);
}

/* Rosenbrock from the classic start (-1.2, 1) in [-5, 5]^2 reaches (1, 1) within 1e-4. */
static void minimize_bounded__rosenbrock(void **state)
{
    const double lo[2] = {-5, -5}, hi[2] = {5, 5};
    double x[2] = {-1.2, 1.0}, fmin = -1.0;

    (void)state;
    assert_int_equal(minimize_bounded(2, rosenbrock, NULL, lo, hi, NULL, x, &fmin, NULL), 0);
    assert_float_equal(x[0], 1.0, 1e-4);
    assert_float_equal(x[1], 1.0, 1e-4);
    assert_true(fmin >= 0.0 && fmin < 1e-8);
}

/* max_evals is honoured and reaching it is success: at most 5 calls, and x is the best point
 * seen, so f(x) is no worse than f at the start (24.2 = 2.2^2 + 100 * 0.44^2). */
static void minimize_bounded__max_evals_is_success(void **state)
{
    const double lo[2] = {-5, -5}, hi[2] = {5, 5};
    const struct minimize_opts opts = {.max_evals = 5};
    double x[2] = {-1.2, 1.0}, fmin = -1.0;
    int calls = 0, evals = -1;

    (void)state;
    assert_float_equal(rosenbrock(2, x, NULL, NULL), 24.2, 1e-12);
    assert_int_equal(minimize_bounded(2, rosenbrock, &calls, lo, hi, &opts, x, &fmin, &evals), 0);
    assert_true(calls <= 5);
    assert_int_equal(evals, calls);
    assert_true(fmin <= 24.2);
    assert_float_equal(rosenbrock(2, x, NULL, NULL), fmin, 0.0);
}

/* A start outside the box (one coordinate above, one below, or NaN) is ERR_INVAL; x is unchanged
 * and the objective is never called. */
static void minimize_bounded__start_outside_box(void **state)
{
    const double c[2] = {0, 0};
    const double lo[2] = {-1, -1}, hi[2] = {1, 1};
    double above[2] = {0.0, 1.5}, below[2] = {-1.0001, 0.0}, nan_x[2] = {NAN, 0.0};
    struct quad q = {.c = c};

    (void)state;
    assert_int_equal(minimize_bounded(2, quadratic, &q, lo, hi, NULL, above, NULL, NULL),
                     ERR_INVAL);
    assert_float_equal(above[1], 1.5, 0.0);
    assert_int_equal(minimize_bounded(2, quadratic, &q, lo, hi, NULL, below, NULL, NULL),
                     ERR_INVAL);
    assert_float_equal(below[0], -1.0001, 0.0);
    assert_int_equal(minimize_bounded(2, quadratic, &q, lo, hi, NULL, nan_x, NULL, NULL),
                     ERR_INVAL);
    assert_true(isnan(nan_x[0]));
    assert_int_equal(q.calls, 0);
}

/* A start on the bound itself is inside. */
static void minimize_bounded__start_on_bound(void **state)
{
    const double c[1] = {0.25};
    const double lo[1] = {-1}, hi[1] = {1};
    double x[1] = {1.0};
    struct quad q = {.c = c};

    (void)state;
    assert_int_equal(minimize_bounded(1, quadratic, &q, lo, hi, NULL, x, NULL, NULL), 0);
    assert_float_equal(x[0], 0.25, 1e-6);
}

/* n = 0 (and negative n) is ERR_INVAL, touching nothing. */
static void minimize_bounded__no_dimensions(void **state)
{
    const double c[1] = {0};
    const double lo[1] = {-1}, hi[1] = {1};
    double x[1] = {0.5}, fmin = 7.0;
    struct quad q = {.c = c};
    int evals = 7;

    (void)state;
    assert_int_equal(minimize_bounded(0, quadratic, &q, lo, hi, NULL, x, &fmin, &evals), ERR_INVAL);
    assert_int_equal(minimize_bounded(-1, quadratic, &q, lo, hi, NULL, x, &fmin, &evals),
                     ERR_INVAL);
    assert_float_equal(x[0], 0.5, 0.0);
    assert_float_equal(fmin, 7.0, 0.0);
    assert_int_equal(evals, 7);
    assert_int_equal(q.calls, 0);
}

/* An objective that is NaN everywhere gives ERR_NOCONV with x, fmin and evals unchanged. */
static void minimize_bounded__nan_everywhere(void **state)
{
    const double lo[2] = {-1, -1}, hi[2] = {1, 1};
    double x[2] = {0.25, -0.5}, fmin = 7.0;
    int evals = 7;

    (void)state;
    assert_int_equal(minimize_bounded(2, always_nan, NULL, lo, hi, NULL, x, &fmin, &evals),
                     ERR_NOCONV);
    assert_float_equal(x[0], 0.25, 0.0);
    assert_float_equal(x[1], -0.5, 0.0);
    assert_float_equal(fmin, 7.0, 0.0);
    assert_int_equal(evals, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(minimize_bounded__quadratic_inside),
        cmocka_unit_test(minimize_bounded__unbounded_and_null_outputs),
        cmocka_unit_test(minimize_bounded__minimum_outside_box),
        cmocka_unit_test(minimize_bounded__one_bound_active),
        cmocka_unit_test(minimize_bounded__rosenbrock),
        cmocka_unit_test(minimize_bounded__max_evals_is_success),
        cmocka_unit_test(minimize_bounded__start_outside_box),
        cmocka_unit_test(minimize_bounded__start_on_bound),
        cmocka_unit_test(minimize_bounded__no_dimensions),
        cmocka_unit_test(minimize_bounded__nan_everywhere),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
