/* test_gns.c: gradient noise statistics against hand-computed cases, synthetic Gaussian gradients
 * and bad input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/gns.h"
#include "util/error.h"

#define DIM_MAX 64
#define GRADS_MAX 8

static double sqnorm(const double *v, int d)
{
    double s = 0.0;

    for (int k = 0; k < d; k++)
        s += v[k] * v[k];
    return s;
}

/* Norms of a step from its n micro-batch gradients of dimension d (row-major grads[n][d]). */
static struct gns_norms norms_of(const double *grads, int n, int d)
{
    struct gns_norms nm = {0};
    double avg[DIM_MAX] = {0};

    for (int i = 0; i < n; i++) {
        nm.local_sqr += sqnorm(grads + i * d, d);
        for (int k = 0; k < d; k++)
            avg[k] += grads[i * d + k] / n;
    }
    nm.total_sqr = sqnorm(avg, d);
    return nm;
}

/* Norms of a single-gradient step paired with the previous gradient. */
static struct gns_norms norms_pair(const double *prev, const double *cur, int d)
{
    double pair[DIM_MAX];
    struct gns_norms nm = {0};

    for (int k = 0; k < d; k++)
        pair[k] = (prev[k] + cur[k]) / 2.0;
    nm.local_sqr = nm.total_sqr = sqnorm(cur, d);
    nm.has_prev = 1;
    nm.prev_sqr = sqnorm(prev, d);
    nm.pair_sqr = sqnorm(pair, d);
    return nm;
}

/* Four micro-batches (1 replica, 3 accumulation steps) of 16 samples, M0 = 32, scale 2.
 * g = (1,0), (0,1), (1,1), (2,0): norms 1, 1, 2, 4, mean 2; average (1, 0.5), total 1.25.
 * sqr = (4 * 1.25 - 2) / 3 = 1; var = (2 - 1.25) * 2 / 3 = 0.5. */
static const struct gns_step ACCUM_STEP = {
    .local_bsz = 16, .init_bsz = 32, .replicas = 1, .accum_steps = 3};
static const double ACCUM_GRADS[] = {1, 0, 0, 1, 1, 1, 2, 0};

static void gns_estimate__micro_batches(void **state)
{
    struct gns_norms nm = norms_of(ACCUM_GRADS, 4, 2);
    struct grad_params g;
    double scale;
    int biased = -1;

    (void)state;
    assert_int_equal(gns_estimate(&ACCUM_STEP, &nm, &g, &scale, &biased), 0);
    assert_float_equal(g.sqr, 1.0, 1e-15);
    assert_float_equal(g.var, 0.5, 1e-15);
    assert_float_equal(scale, 2.0, 1e-15);
    assert_int_equal(biased, 0);
}

/* Replicas and accumulation multiply: 2 replicas x 2 micro-batches of 8 samples, M0 = 8, so n = 4
 * and scale = 4. The same four gradients: sqr 1, var = 0.75 * 4 / 3 = 1. */
static void gns_estimate__replicas_times_micro_batches(void **state)
{
    struct gns_step st = {.local_bsz = 8, .init_bsz = 8, .replicas = 2, .accum_steps = 1};
    struct gns_norms nm = norms_of(ACCUM_GRADS, 4, 2);
    struct grad_params g;
    double scale;

    (void)state;
    assert_int_equal(gns_estimate(&st, &nm, &g, &scale, NULL), 0);
    assert_float_equal(g.sqr, 1.0, 1e-15);
    assert_float_equal(g.var, 1.0, 1e-15);
    assert_float_equal(scale, 4.0, 1e-15);
}

/* Gradients that cancel: (1,0) and (-1,0). total 0, local mean 1: sqr = -1 (an unbiased estimate
 * may be negative), var = 1 * scale. Two replicas of 4 samples, M0 = 4: scale 2. */
static void gns_estimate__negative_sqr_is_kept(void **state)
{
    struct gns_step st = {.local_bsz = 4, .init_bsz = 4, .replicas = 2, .accum_steps = 0};
    const double grads[] = {1, 0, -1, 0};
    struct gns_norms nm = norms_of(grads, 2, 2);
    struct grad_params g;

    (void)state;
    assert_int_equal(gns_estimate(&st, &nm, &g, NULL, NULL), 0);
    assert_float_equal(g.sqr, -1.0, 1e-15);
    assert_float_equal(g.var, 2.0, 1e-15);
}

/* Differenced: one gradient of 8 samples, M0 = 4, the previous gradient (3,1), this one (1,1):
 * norms 10 and 2 (local mean 6), pair (2,1) -> 5, n = 2, scale = 2 * 8 / 4 = 4.
 * sqr = (2 * 5 - 6) / 1 = 4; var = (6 - 5) * 4 / 1 = 4. */
static const struct gns_step SINGLE_STEP = {
    .local_bsz = 8, .init_bsz = 4, .replicas = 1, .accum_steps = 0};

static void gns_estimate__differenced(void **state)
{
    const double prev[] = {3, 1}, cur[] = {1, 1};
    struct gns_norms nm = norms_pair(prev, cur, 2);
    struct grad_params g;
    double scale;
    int biased = -1;

    (void)state;
    assert_int_equal(gns_estimate(&SINGLE_STEP, &nm, &g, &scale, &biased), 0);
    assert_float_equal(g.sqr, 4.0, 1e-15);
    assert_float_equal(g.var, 4.0, 1e-15);
    assert_float_equal(scale, 4.0, 1e-15);
    assert_int_equal(biased, 1);
}

/* Without a previous gradient a single-gradient step has no estimate. */
static void gns_estimate__single_without_prev_is_invalid(void **state)
{
    struct gns_norms nm = {.local_sqr = 2.0, .total_sqr = 2.0};
    struct grad_params g = {7, 7};

    (void)state;
    assert_int_equal(gns_estimate(&SINGLE_STEP, &nm, &g, NULL, NULL), ERR_INVAL);
    assert_float_equal(g.sqr, 7.0, 0.0);
}

/* Per-gradient norms in gradstats' layout (n norms, then the average's): summed, and one bad
 * norm refuses the whole (a -1 beside a 5 must not pass as a 4). The hand case's norms 1, 1, 2, 4
 * and 1.25 give the same estimate as above. */
static void gns_norms_from__sums_and_checks(void **state)
{
    const double stats[] = {1, 1, 2, 4, 1.25}, bad[] = {5, -1, 1};
    struct gns_norms nm = {.local_sqr = -3};
    struct grad_params g;

    (void)state;
    assert_int_equal(gns_norms_from(bad, 2, &nm), ERR_INVAL);
    assert_int_equal(gns_norms_from(stats, 0, &nm), ERR_INVAL);
    assert_float_equal(nm.local_sqr, -3.0, 0.0);
    assert_int_equal(gns_norms_from(stats, 4, &nm), 0);
    assert_float_equal(nm.local_sqr, 8.0, 0.0);
    assert_float_equal(nm.total_sqr, 1.25, 0.0);
    assert_int_equal(nm.has_prev, 0);
    assert_int_equal(gns_estimate(&ACCUM_STEP, &nm, &g, NULL, NULL), 0);
    assert_float_equal(g.sqr, 1.0, 1e-15);
    assert_float_equal(g.var, 0.5, 1e-15);
    const double inf_avg[] = {1, 1, INFINITY};
    assert_int_equal(gns_norms_from(inf_avg, 2, &nm), ERR_INVAL);
}

/* Before any step: the reference's initial values (sqr 1, var 0 per group), reported with the
 * floor: 2 groups -> (2, 2e-6). */
static void gns_params__initial_state(void **state)
{
    struct gns *s = NULL;
    struct grad_params p;

    (void)state;
    assert_int_equal(gns_new(2, &s), 0);
    gns_params(s, &p);
    assert_float_equal(p.sqr, 2.0, 1e-15);
    assert_float_equal(p.var, 2e-6, 1e-18);
    assert_int_equal(gns_steps(s), 0);
    assert_int_equal(gns_biased(s), 0);
    gns_free(s);
}

/* Bias correction: the first estimate is taken whole; the second weighs in with the unbias term.
 * Step 1 at scale 2 (theta1 = 0.999^2) gives x1 = (1, 0.5); step 2, two replicas of 4 samples at
 * M0 = 8 (scale 1, theta2 = 0.999), gradients (2,0) and (0,0): local mean 2, total 1, so
 * x2 = (0, 1). value = (theta2 (1 - theta1) x1 + (1 - theta2) x2) / (theta2 (1 - theta1) + 1 -
 * theta2). With theta1 = 0.998001, theta2 = 0.999: weights 0.001997001 and 0.001, sum 0.002997001:
 * sqr = 0.001997001 / 0.002997001 = 0.66633299..., var = (0.0009985005 + 0.001) / 0.002997001. */
static void gns_update__bias_correction_first_steps(void **state)
{
    struct gns_step st2 = {.local_bsz = 4, .init_bsz = 8, .replicas = 2, .accum_steps = 0};
    const double grads2[] = {2, 0, 0, 0};
    struct gns_norms n1 = norms_of(ACCUM_GRADS, 4, 2), n2 = norms_of(grads2, 2, 2);
    struct gns *s = NULL;
    struct grad_params p;

    (void)state;
    assert_int_equal(gns_new(1, &s), 0);
    assert_int_equal(gns_update(s, &ACCUM_STEP, &n1), 0);
    assert_int_equal(gns_group(s, 0, &p), 0);
    assert_float_equal(p.sqr, 1.0, 1e-12);
    assert_float_equal(p.var, 0.5, 1e-12);

    assert_int_equal(gns_update(s, &st2, &n2), 0);
    assert_int_equal(gns_group(s, 0, &p), 0);
    assert_float_equal(p.sqr, 0.001997001 / 0.002997001, 1e-12);
    assert_float_equal(p.var, (0.0009985005 + 0.001) / 0.002997001, 1e-12);
    assert_int_equal(gns_steps(s), 2);
    gns_free(s);
}

/* With the same estimate every step, the average stays on it (the bias correction is exact). */
static void gns_update__constant_input_is_fixed_point(void **state)
{
    struct gns_norms nm = norms_of(ACCUM_GRADS, 4, 2);
    struct gns *s = NULL;
    struct grad_params p;

    (void)state;
    assert_int_equal(gns_new(1, &s), 0);
    for (int i = 0; i < 50; i++)
        assert_int_equal(gns_update(s, &ACCUM_STEP, &nm), 0);
    assert_int_equal(gns_group(s, 0, &p), 0);
    assert_float_equal(p.sqr, 1.0, 1e-12);
    assert_float_equal(p.var, 0.5, 1e-12);
    gns_free(s);
}

/* The differenced estimator marks the state biased; the first step with several gradients after
 * it restarts the averages (its estimate is taken whole), while entering the differenced
 * estimator blends. */
static void gns_update__switching_estimators(void **state)
{
    const double prev[] = {3, 1}, cur[] = {1, 1};
    struct gns_norms first = {.local_sqr = 10.0}, pair = norms_pair(prev, cur, 2);
    struct gns_norms accum = norms_of(ACCUM_GRADS, 4, 2);
    struct gns *s = NULL;
    struct grad_params p;

    (void)state;
    assert_int_equal(gns_new(1, &s), 0);
    /* Unbiased first: x = (1, 0.5). Then a differenced step (4, 4) at scale 4 blends:
     * theta = 0.999^4; sqr = (theta (1 - 0.999^2) 1 + (1 - theta) 4) / (theta (1 - 0.999^2) + 1 -
     * theta): with theta = 0.996005996001, weights 0.001991011... and 0.003994003999. */
    assert_int_equal(gns_update(s, &ACCUM_STEP, &accum), 0);
    assert_int_equal(gns_update(s, &SINGLE_STEP, &first), 0); /* no previous: nothing */
    assert_int_equal(gns_steps(s), 1);
    assert_int_equal(gns_biased(s), 0);
    assert_int_equal(gns_update(s, &SINGLE_STEP, &pair), 0);
    assert_int_equal(gns_biased(s), 1);
    assert_int_equal(gns_group(s, 0, &p), 0);
    {
        double w1 = 0.996005996001 * 0.001999, w2 = 0.003994003999;
        assert_float_equal(p.sqr, (w1 * 1.0 + w2 * 4.0) / (w1 + w2), 1e-12);
        assert_float_equal(p.var, (w1 * 0.5 + w2 * 4.0) / (w1 + w2), 1e-12);
    }
    /* Back to several gradients: restart, the estimate is taken whole. */
    assert_int_equal(gns_update(s, &ACCUM_STEP, &accum), 0);
    assert_int_equal(gns_biased(s), 0);
    assert_int_equal(gns_steps(s), 1);
    assert_int_equal(gns_group(s, 0, &p), 0);
    assert_float_equal(p.sqr, 1.0, 1e-12);
    assert_float_equal(p.var, 0.5, 1e-12);
    gns_free(s);
}

/* Groups are averaged separately and reported as sums with the clamps: group 0 has the
 * cancelling gradients (sqr -1 -> 0, var 2), group 1 noiseless ones (sqr 4, var 0 -> 1e-6). */
static void gns_params__groups_sum_with_clamps(void **state)
{
    struct gns_step st = {.local_bsz = 4, .init_bsz = 4, .replicas = 2, .accum_steps = 0};
    const double cancel[] = {1, 0, -1, 0}, same[] = {2, 0, 2, 0};
    struct gns_norms nm[2] = {norms_of(cancel, 2, 2), norms_of(same, 2, 2)};
    struct gns *s = NULL;
    struct grad_params p;

    (void)state;
    assert_int_equal(gns_new(2, &s), 0);
    assert_int_equal(gns_groups(s), 2);
    assert_int_equal(gns_update(s, &st, nm), 0);
    assert_int_equal(gns_group(s, 0, &p), 0);
    assert_float_equal(p.sqr, -1.0, 1e-12);
    assert_int_equal(gns_group(s, 1, &p), 0);
    assert_float_equal(p.sqr, 4.0, 1e-12);
    assert_float_equal(p.var, 0.0, 1e-12);
    assert_int_equal(gns_group(s, 2, &p), ERR_RANGE);
    gns_params(s, &p);
    assert_float_equal(p.sqr, 4.0, 1e-12);
    assert_float_equal(p.var, 2.0 + 1e-6, 1e-12);
    gns_free(s);
}

/* Snapshot of everything observable, to check that a refused step changes nothing. */
struct observed {
    struct grad_params g[2];
    long steps;
    int biased;
};

static struct observed observe(const struct gns *s)
{
    struct observed o;

    for (size_t g = 0; g < 2; g++)
        assert_int_equal(gns_group(s, g, &o.g[g]), 0);
    o.steps = gns_steps(s);
    o.biased = gns_biased(s);
    return o;
}

static void assert_unchanged(const struct gns *s, const struct observed *before)
{
    struct observed now = observe(s);

    assert_memory_equal(now.g, before->g, sizeof(now.g)); /* bit for bit */
    assert_int_equal(now.steps, before->steps);
    assert_int_equal(now.biased, before->biased);
}

/* NaN, infinite or negative norms (mixed-precision overflow) and bad step shapes are refused
 * and the running estimate is untouched; the next good step still counts. */
static void gns_update__bad_input_leaves_state(void **state)
{
    struct gns_norms good[2] = {norms_of(ACCUM_GRADS, 4, 2), norms_of(ACCUM_GRADS, 4, 2)};
    struct gns *s = NULL;
    struct observed before;

    (void)state;
    assert_int_equal(gns_new(2, &s), 0);
    assert_int_equal(gns_update(s, &ACCUM_STEP, good), 0);
    before = observe(s);

    const double bad_values[] = {NAN, INFINITY, -INFINITY, -1.0};
    for (size_t b = 0; b < sizeof(bad_values) / sizeof(bad_values[0]); b++) {
        struct gns_norms nm[2] = {good[0], good[1]};

        nm[1].local_sqr = bad_values[b];
        assert_int_equal(gns_update(s, &ACCUM_STEP, nm), ERR_INVAL);
        assert_unchanged(s, &before);
        nm[1] = good[1];
        nm[0].total_sqr = bad_values[b];
        assert_int_equal(gns_update(s, &ACCUM_STEP, nm), ERR_INVAL);
        assert_unchanged(s, &before);

        /* Differenced steps check the previous and the pair norms too. */
        struct gns_norms pr[2] = {{.local_sqr = 2, .has_prev = 1, .prev_sqr = 10, .pair_sqr = 5},
                                  {.local_sqr = 2, .has_prev = 1, .prev_sqr = 10, .pair_sqr = 5}};
        pr[1].prev_sqr = bad_values[b];
        assert_int_equal(gns_update(s, &SINGLE_STEP, pr), ERR_INVAL);
        pr[1].prev_sqr = 10;
        pr[0].pair_sqr = bad_values[b];
        assert_int_equal(gns_update(s, &SINGLE_STEP, pr), ERR_INVAL);
        pr[0].pair_sqr = 5;
        pr[0].local_sqr = bad_values[b];
        pr[0].has_prev = pr[1].has_prev = 0; /* even a first single step checks its norm */
        assert_int_equal(gns_update(s, &SINGLE_STEP, pr), ERR_INVAL);
        assert_unchanged(s, &before);

        struct gns_step st = ACCUM_STEP;
        st.local_bsz = bad_values[b];
        assert_int_equal(gns_update(s, &st, good), ERR_INVAL);
        st = ACCUM_STEP;
        st.init_bsz = bad_values[b];
        assert_int_equal(gns_update(s, &st, good), ERR_INVAL);
        assert_unchanged(s, &before);
    }

    struct gns_step st = ACCUM_STEP;
    st.replicas = 0;
    assert_int_equal(gns_update(s, &st, good), ERR_INVAL);
    st = ACCUM_STEP;
    st.accum_steps = -1;
    assert_int_equal(gns_update(s, &st, good), ERR_INVAL);
    st.accum_steps = GNS_MAX_COUNT;
    assert_int_equal(gns_update(s, &st, good), ERR_INVAL);
    st = ACCUM_STEP;
    st.local_bsz = 0.0;
    assert_int_equal(gns_update(s, &st, good), ERR_INVAL);
    /* Groups that disagree on having a previous gradient. */
    struct gns_norms mixed[2] = {{.local_sqr = 2},
                                 {.local_sqr = 2, .has_prev = 1, .prev_sqr = 1, .pair_sqr = 1}};
    assert_int_equal(gns_update(s, &SINGLE_STEP, mixed), ERR_INVAL);
    assert_unchanged(s, &before);

    /* Finite norms whose estimate overflows: refused as out of range. */
    struct gns_norms huge[2] = {good[0], {.local_sqr = 1e308, .total_sqr = 1e308}};
    assert_int_equal(gns_update(s, &ACCUM_STEP, huge), ERR_RANGE);
    assert_unchanged(s, &before);

    assert_int_equal(gns_update(s, &ACCUM_STEP, good), 0);
    assert_int_equal(gns_steps(s), before.steps + 1);
    gns_free(s);
}

static void gns_new__bad_arguments(void **state)
{
    struct gns *s = NULL;

    (void)state;
    assert_int_equal(gns_new(0, &s), ERR_INVAL);
    assert_int_equal(gns_new(GNS_MAX_GROUPS + 1, &s), ERR_INVAL);
    assert_null(s);
    assert_int_equal(gns_new(1, NULL), ERR_INVAL);
}

/* Adam's preconditioner: 1 during warm-up; beta2 = 0.5 at step 5: 1 - 0.5^5 = 31/32, so
 * exp_avg_sq = 31/128 gives sqrt(0.25) + eps = 0.5 + 0.125. Bad arguments give NaN, which
 * gns_update refuses once it reaches a norm. */
/* A saved state, loaded again, continues exactly as the original does; bad saves are refused. */
static void gns_load__continues_as_saved(void **state)
{
    struct gns_step multi = {32, 64, 2, 1}, single = {32, 64, 1, 0};
    struct gns_norms m[2] = {{8.0, 1.5, 0, 0, 0}, {4.0, 0.5, 0, 0, 0}};
    struct gns_norms d[2] = {{2.0, 0, 1, 2.5, 1.25}, {1.0, 0, 1, 1.5, 0.75}};
    struct gns *a = NULL, *b = NULL, *c = NULL;
    struct grad_params pa, pb;
    double saved[GNS_SAVED_HEAD + 8], bad[GNS_SAVED_HEAD + 8];

    (void)state;
    assert_int_equal(gns_new(2, &a), 0);
    assert_int_equal(gns_update(a, &multi, m), 0);
    assert_int_equal(gns_update(a, &single, d), 0); /* now biased */
    assert_int_equal(gns_saved_len(a), GNS_SAVED_HEAD + 8);
    gns_save(a, saved);
    assert_int_equal(gns_load(saved, GNS_SAVED_HEAD + 8, &b), 0);
    assert_int_equal(gns_steps(b), 2);
    assert_int_equal(gns_biased(b), 1);
    /* the next unbiased step restarts both the same way */
    assert_int_equal(gns_update(a, &multi, m), 0);
    assert_int_equal(gns_update(b, &multi, m), 0);
    assert_int_equal(gns_update(a, &multi, m), 0);
    assert_int_equal(gns_update(b, &multi, m), 0);
    gns_params(a, &pa);
    gns_params(b, &pb);
    assert_true(pa.sqr == pb.sqr); /* exactly */
    assert_true(pa.var == pb.var);
    assert_int_equal(gns_steps(a), gns_steps(b));

    assert_int_equal(gns_load(saved, GNS_SAVED_HEAD + 4, &c), ERR_INVAL);
    memcpy(bad, saved, sizeof(bad));
    bad[0] = 3; /* groups that do not match the length */
    assert_int_equal(gns_load(bad, GNS_SAVED_HEAD + 8, &c), ERR_INVAL);
    memcpy(bad, saved, sizeof(bad));
    bad[3] = 0.5; /* an estimator flag that is neither 0 nor 1 */
    assert_int_equal(gns_load(bad, GNS_SAVED_HEAD + 8, &c), ERR_INVAL);
    memcpy(bad, saved, sizeof(bad));
    bad[GNS_SAVED_HEAD + 5] = NAN;
    assert_int_equal(gns_load(bad, GNS_SAVED_HEAD + 8, &c), ERR_INVAL);
    memcpy(bad, saved, sizeof(bad));
    bad[1] = -0.1;
    assert_int_equal(gns_load(bad, GNS_SAVED_HEAD + 8, &c), ERR_INVAL);
    assert_null(c);
    gns_free(a);
    gns_free(b);
}

static void gns_adam_precond__values(void **state)
{
    (void)state;
    assert_float_equal(gns_adam_precond(31.0 / 128.0, 0.5, GNS_ADAM_WARMUP - 1, 0.125), 1.0, 0.0);
    assert_float_equal(gns_adam_precond(31.0 / 128.0, 0.5, 5, 0.125), 0.625, 1e-15);
    assert_true(isnan(gns_adam_precond(-1.0, 0.5, 10, 0.0)));
    assert_true(isnan(gns_adam_precond(1.0, 1.0, 10, 0.0)));
    assert_true(isnan(gns_adam_precond(1.0, 0.5, 0, 0.0)));
    assert_true(isnan(gns_adam_precond(NAN, 0.5, 10, 0.0)));
}

/* --- Synthetic Gaussian gradients ------------------------------------------------------------ */

/* splitmix64, then Box-Muller: a seeded standard normal stream. */
struct rng {
    uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rng_normal(struct rng *r)
{
    double u1 = ((rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = ((rng_next(r) >> 11) + 0.5) / 9007199254740992.0;

    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/*
 * The world: per-sample gradients mu + e with e ~ N(0, sigma^2 I) in d dimensions, so |g|^2 =
 * |mu|^2 and tr(Sigma)/M0 = d sigma^2 / M0. A micro-batch of m samples has gradient mu + N(0,
 * s2 I), s2 = sigma^2 / m, drawn directly. For n gradients per step, the per-step estimates are
 * exactly distributed as (residual sum of squares R ~ s2 chi2(d(n-1)), independent of the mean):
 *   var_est = sigma^2/M0 chi2(d(n-1))/(n-1):     sd = (d sigma^2/M0) sqrt(2 / (d (n-1)))
 *   sqr_est = |mu + ebar|^2 - R/(n(n-1)):        sd^2 = 4 |mu|^2 s2/n + 2 d s2^2 / (n (n-1))
 * Tolerances are 4.5 standard errors of these (normal approximation), so a correct estimator
 * fails for about one seed in 150,000; the seed is fixed, so the test is deterministic. A bias of
 * the size of a missed n/(n-1) correction (25% at n = 4) is over 50 standard errors.
 */
#define SYN_D 50
#define SYN_SIGMA 1.0
#define SYN_STEPS 3000
#define SYN_TOL 4.5

struct syn {
    double mu[SYN_D];
    double mu_sqr;
    struct rng r;
};

static void syn_init(struct syn *w, uint64_t seed)
{
    w->r.s = seed;
    for (int k = 0; k < SYN_D; k++)
        w->mu[k] = 0.3 * rng_normal(&w->r);
    w->mu_sqr = sqnorm(w->mu, SYN_D);
}

static void syn_grad(struct syn *w, double m, double *g)
{
    double sd = SYN_SIGMA / sqrt(m);

    for (int k = 0; k < SYN_D; k++)
        g[k] = w->mu[k] + sd * rng_normal(&w->r);
}

/* Sum of squared normalised weights of a bias-corrected EMA with constant theta over t steps:
 * the variance of the average is the per-step variance times this. */
static double ema_weight_sqr(double theta, int t)
{
    double sum = 0.0, sum2 = 0.0, w = 1.0;

    for (int k = 0; k < t; k++, w *= theta) {
        sum += w;
        sum2 += w * w;
    }
    return sum2 / (sum * sum);
}

/* Runs SYN_STEPS steps of the given shape (single = differenced) through both the raw estimator
 * and the moving average, then checks the mean of the raw estimates and the smoothed value. */
static void check_synthetic(const struct gns_step *st, uint64_t seed)
{
    static double grads[GRADS_MAX * SYN_D];
    double prev[SYN_D];
    struct syn w;
    struct gns *s = NULL;
    int n = st->replicas * (st->accum_steps + 1), single = n == 1;
    double sum_sqr = 0.0, sum_var = 0.0, scale = 0.0;
    int used = 0;

    syn_init(&w, seed);
    assert_int_equal(gns_new(1, &s), 0);
    if (single)
        syn_grad(&w, st->local_bsz, prev);
    for (int t = 0; t < SYN_STEPS; t++) {
        struct gns_norms nm;
        struct grad_params g;

        for (int i = 0; i < n; i++)
            syn_grad(&w, st->local_bsz, grads + i * SYN_D);
        if (single) {
            nm = norms_pair(prev, grads, SYN_D);
            memcpy(prev, grads, sizeof(prev));
        } else {
            nm = norms_of(grads, n, SYN_D);
        }
        assert_int_equal(gns_estimate(st, &nm, &g, &scale, NULL), 0);
        assert_int_equal(gns_update(s, st, &nm), 0);
        sum_sqr += g.sqr;
        sum_var += g.var;
        used++;
    }

    int ne = single ? 2 : n;
    double s2 = SYN_SIGMA * SYN_SIGMA / st->local_bsz;
    double true_var = SYN_D * SYN_SIGMA * SYN_SIGMA / st->init_bsz;
    double sd_var = true_var * sqrt(2.0 / (SYN_D * (ne - 1.0)));
    double sd_sqr = sqrt(4.0 * w.mu_sqr * s2 / ne + 2.0 * SYN_D * s2 * s2 / (ne * (ne - 1.0)));
    double mean_sqr = sum_sqr / used, mean_var = sum_var / used;

    /* In the differenced case consecutive estimates share a gradient: a lag-1 correlation rho
     * (1/4 for the variance estimate) widens the standard error by sqrt(1 + 2 rho), at most
     * sqrt(2) for rho <= 1/2. */
    double k = single ? sqrt(2.0) : 1.0;

    assert_float_equal(scale, ne * st->local_bsz / st->init_bsz, 1e-12);
    assert_float_equal(mean_sqr, w.mu_sqr, k * SYN_TOL * sd_sqr / sqrt(used));
    assert_float_equal(mean_var, true_var, k * SYN_TOL * sd_var / sqrt(used));

    /* The smoothed value: the same check with the EMA's effective sample size. */
    struct grad_params avg;
    double wsq = ema_weight_sqr(pow(GNS_SMOOTHING, scale), used);

    assert_int_equal(gns_group(s, 0, &avg), 0);
    assert_float_equal(avg.sqr, w.mu_sqr, k * SYN_TOL * sd_sqr * sqrt(wsq));
    assert_float_equal(avg.var, true_var, k * SYN_TOL * sd_var * sqrt(wsq));
    gns_free(s);
}

static void gns_update__synthetic_micro_batches_converge(void **state)
{
    struct gns_step st = {.local_bsz = 16, .init_bsz = 32, .replicas = 2, .accum_steps = 1};

    (void)state;
    check_synthetic(&st, 20240611);
}

static void gns_update__synthetic_replicas_converge(void **state)
{
    struct gns_step st = {.local_bsz = 64, .init_bsz = 128, .replicas = 8, .accum_steps = 0};

    (void)state;
    check_synthetic(&st, 7);
}

static void gns_update__synthetic_differenced_converges(void **state)
{
    struct gns_step st = {.local_bsz = 32, .init_bsz = 32, .replicas = 1, .accum_steps = 0};

    (void)state;
    check_synthetic(&st, 99);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gns_estimate__micro_batches),
        cmocka_unit_test(gns_estimate__replicas_times_micro_batches),
        cmocka_unit_test(gns_estimate__negative_sqr_is_kept),
        cmocka_unit_test(gns_estimate__differenced),
        cmocka_unit_test(gns_estimate__single_without_prev_is_invalid),
        cmocka_unit_test(gns_norms_from__sums_and_checks),
        cmocka_unit_test(gns_params__initial_state),
        cmocka_unit_test(gns_update__bias_correction_first_steps),
        cmocka_unit_test(gns_update__constant_input_is_fixed_point),
        cmocka_unit_test(gns_update__switching_estimators),
        cmocka_unit_test(gns_params__groups_sum_with_clamps),
        cmocka_unit_test(gns_update__bad_input_leaves_state),
        cmocka_unit_test(gns_new__bad_arguments),
        cmocka_unit_test(gns_load__continues_as_saved),
        cmocka_unit_test(gns_adam_precond__values),
        cmocka_unit_test(gns_update__synthetic_micro_batches_converge),
        cmocka_unit_test(gns_update__synthetic_replicas_converge),
        cmocka_unit_test(gns_update__synthetic_differenced_converges),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
