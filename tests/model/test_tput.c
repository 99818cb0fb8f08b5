/* test_tput.c: the throughput models: the published formulas against hand-computed values, every
 * model's analytic gradients against finite differences, the registry, the exploration limit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/tput.h"

/* alpha_c 0.1, beta_c 0.01, alpha_n 0.2, beta_n 0.05, alpha_r 0.1, beta_r 0.02, gamma 2 */
static struct tput_params pollux_example(double gamma)
{
    struct tput_params p = {.ops = &tput_model_pollux,
                            .theta = {0.1, 0.01, 0.2, 0.05, 0.1, 0.02, gamma}};
    return p;
}

/* 2 nodes, 6 replicas, m = 10: T_acc = 0.1 + 0.01 * 10 = 0.2; T_net = 0.2 + 0.05 * (6 - 2) = 0.4;
 * T_opt = sqrt(0.2^2 + 0.4^2) = sqrt(0.2) = 0.447213595... */
static void tput_pollux__multi_node(void **state)
{
    struct tput_params p = pollux_example(2.0);
    struct tput_point x = {.nodes = 2, .replicas = 6, .local_bsz = 10};

    (void)state;
    assert_float_equal(tput_accum_time(&p, &x), 0.2, 1e-12);
    assert_float_equal(tput_step_time(&p, &x, 0), sqrt(0.2), 1e-12);
}

/* 1 node, 4 replicas, m = 10: T_net = 0.1 + 0.02 * 2 = 0.14; T_opt = sqrt(0.04 + 0.0196). */
static void tput_pollux__single_node(void **state)
{
    struct tput_params p = pollux_example(2.0);
    struct tput_point x = {.nodes = 1, .replicas = 4, .local_bsz = 10};

    (void)state;
    assert_float_equal(tput_step_time(&p, &x, 0), sqrt(0.0596), 1e-12);
}

/* Two replicas cost only alpha (r - 2 is clamped at 1e-8): T_opt = sqrt(0.04 + 0.01). One replica
 * has no sync: T_opt = T_acc. */
static void tput_pollux__two_and_one_replicas(void **state)
{
    struct tput_params p = pollux_example(2.0);
    struct tput_point two = {.nodes = 1, .replicas = 2, .local_bsz = 10};
    struct tput_point one = {.nodes = 1, .replicas = 1, .local_bsz = 10};

    (void)state;
    assert_float_equal(tput_step_time(&p, &two, 0), sqrt(0.05), 1e-9);
    assert_float_equal(tput_step_time(&p, &one, 0), 0.2, 1e-9);
}

/* gamma 1 is no overlap: T_opt = T_acc + T_net = 0.2 + 0.4; with 3 accumulation steps the step
 * takes 3 * 0.2 + 0.6 = 1.2 s for 6 * 10 * 4 = 240 samples: 200 samples/s. */
static void tput_pollux__no_overlap_and_accumulation(void **state)
{
    struct tput_params p = pollux_example(1.0);
    struct tput_point x = {.nodes = 2, .replicas = 6, .local_bsz = 10};

    (void)state;
    assert_float_equal(tput_step_time(&p, &x, 0), 0.6, 1e-12);
    assert_float_equal(tput_step_time(&p, &x, 3), 1.2, 1e-12);
    assert_float_equal(tput_throughput(&p, &x, 3), 200.0, 1e-9);
}

/* A large gamma approaches max(T_acc, T_net): (0.2^10 + 0.4^10)^(1/10) = 0.4 * (1 + 2^-10)^0.1. */
static void tput_overlap__large_gamma_is_nearly_max(void **state)
{
    double lt = tput_overlap_log(log(0.2), log(0.4), 10.0, NULL, NULL, NULL);

    (void)state;
    assert_float_equal(exp(lt), 0.4 * pow(1.0 + pow(0.5, 10), 0.1), 1e-12);
    /* and stays finite where a^g underflows: (1e-40)^10 = 1e-400 is below the smallest double */
    lt = tput_overlap_log(log(1e-40), log(0.3), 10.0, NULL, NULL, NULL);
    assert_float_equal(exp(lt), 0.3, 1e-15);
    /* gamma 1 is the sum: log(0.2 + 0.4) */
    assert_float_equal(tput_overlap_log(log(0.2), log(0.4), 1.0, NULL, NULL, NULL), log(0.6),
                       1e-12);
}

/* castor's model, gamma 1 (no overlap): alpha_c .1, beta_c .01, alpha_n .2, beta_n .05,
 * gamma_2 .03, alpha_r .1, beta_r .02, delta_k .04; m = 10.
 * 2 nodes x 3: k - 1 = 2, compute .1 + .1 + .04 * 2 = .28, sync .2 + .05 sqrt(5) + .03 * 2
 *   = .371803399; step .651803399.
 * 3 nodes x 2: k - 1 = 1, compute .24, sync .2 + .05 sqrt(5) = .311803399 (no two-node term);
 *   step .551803399.
 * 1 node x 4: k - 1 = 3, compute .32, sync .1 + .02 sqrt(3) = .134641016; step .454641016. */
static void tput_castor__hand_computed(void **state)
{
    struct tput_params p = {.ops = &tput_model_castor,
                            .theta = {0.1, 0.01, 0.2, 0.05, 0.03, 0.1, 0.02, 1.0, 0.04}};
    struct tput_point two = {.nodes = 2, .replicas = 6, .local_bsz = 10};
    struct tput_point three = {.nodes = 3, .replicas = 6, .local_bsz = 10};
    struct tput_point one = {.nodes = 1, .replicas = 4, .local_bsz = 10};
    struct tput_point single = {.nodes = 1, .replicas = 1, .local_bsz = 10};

    (void)state;
    assert_float_equal(tput_accum_time(&p, &two), 0.28, 1e-12);
    assert_float_equal(tput_step_time(&p, &two, 0), 0.28 + 0.2 + 0.05 * sqrt(5) + 0.06, 1e-12);
    assert_float_equal(tput_step_time(&p, &three, 0), 0.24 + 0.2 + 0.05 * sqrt(5), 1e-12);
    assert_float_equal(tput_step_time(&p, &one, 0), 0.32 + 0.1 + 0.02 * sqrt(3), 1e-12);
    /* one GPU: no sync (1e-8), no per-node term */
    assert_float_equal(tput_step_time(&p, &single, 0), 0.2, 1e-7);
}

/* Each model's analytic derivatives (of the log-times) match central differences at points of
 * every kind. */
static void tput_predict__gradients_match_differences(void **state)
{
    const struct tput_point xs[] = {{1, 1, 32},  {1, 2, 16},  {1, 4, 64},  {2, 2, 8},
                                    {2, 8, 128}, {4, 13, 40}, {16, 64, 32}};

    (void)state;
    for (size_t k = 0; tput_models[k]; k++) {
        const struct tput_model_ops *ops = tput_models[k];
        double th[TPUT_MAX_PARAMS];

        /* an interior point: the initial point, nudged so that no parameter sits on a bound */
        for (int i = 0; i < ops->nparams; i++)
            th[i] = ops->init[i] * (1.0 + 0.37 * (i + 1) / ops->nparams) +
                    (ops->lower[i] == ops->init[i] ? 0.05 : 0.0);
        for (size_t j = 0; j < sizeof(xs) / sizeof(xs[0]); j++) {
            double acc, opt, da[TPUT_MAX_PARAMS], dop[TPUT_MAX_PARAMS];

            ops->predict(th, &xs[j], &acc, &opt, da, dop);
            for (int i = 0; i < ops->nparams; i++) {
                double h = 1e-6 * fmax(fabs(th[i]), 1e-3), save = th[i];
                double a1, o1, a2, o2;

                th[i] = save + h;
                ops->predict(th, &xs[j], &a1, &o1, NULL, NULL);
                th[i] = save - h;
                ops->predict(th, &xs[j], &a2, &o2, NULL, NULL);
                th[i] = save;
                assert_float_equal(da[i], (a1 - a2) / (2 * h), 1e-5 * fmax(1.0, fabs(da[i])));
                assert_float_equal(dop[i], (o1 - o2) / (2 * h), 1e-5 * fmax(1.0, fabs(dop[i])));
                (void)acc;
                (void)opt;
            }
        }
    }
}

/* A deterministic pseudo-random number in [0, 1) (xorshift64*), so the test is repeatable. */
static double test_uniform(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* A model's plan (the fit's sums with per-profile work done once) agrees with the sums from its
 * point prediction, values and gradients, to 1e-12 relative, at random parameters, on rows that
 * share compute configurations across groups (k1 = 1 on (1, 2), (2, 4), (3, 6), ...), repeat
 * groups, with counts above 1 and targets far from the prediction. */
static void tput_plan_sums__match_predict(void **state)
{
    const double m[] = {8, 32, 100, 700};
    const int shapes[][2] = {{1, 1},  {1, 2}, {1, 4}, {2, 2},  {2, 4},   {2, 6}, {3, 6},
                             {3, 12}, {4, 6}, {4, 4}, {8, 16}, {16, 64}, {6, 6}};
    enum { NSHAPES = sizeof(shapes) / sizeof(shapes[0]), NM = sizeof(m) / sizeof(m[0]) };
    struct tput_fit_row rows[NSHAPES * NM];
    unsigned long long seed = 0x9e3779b97f4a7c15ULL;
    size_t n = 0;

    (void)state;
    /* rows in an order unlike the plan's, with one compute configuration left out of a group */
    for (size_t b = 0; b < NM; b++)
        for (size_t sh = NSHAPES; sh-- > 0;) {
            if (sh == 5 && b == 2)
                continue;
            rows[n].x = (struct tput_point){shapes[sh][0], shapes[sh][1], m[b]};
            rows[n].count = 1 + (double)(n % 7);
            rows[n].log_acc = 4.0 * test_uniform(&seed) - 2.0;
            rows[n].log_opt = 4.0 * test_uniform(&seed) - 1.0;
            n++;
        }
    for (size_t k = 0; tput_models[k]; k++) {
        const struct tput_model_ops *ops = tput_models[k];
        void *plan = NULL;

        if (!ops->plan_sums)
            continue;
        assert_int_equal(ops->plan_new(rows, n, &plan), 0);
        for (int trial = 0; trial < 200; trial++) {
            double th[TPUT_MAX_PARAMS], sa = 0, so = 0, ga[TPUT_MAX_PARAMS] = {0},
                                        go[TPUT_MAX_PARAMS] = {0};
            double psa, pso, pga[TPUT_MAX_PARAMS], pgo[TPUT_MAX_PARAMS], nsa, nso;

            /* times log-uniform from 1e-4 to 10 and, every other trial, from 1e-30 to 1e30 (log-
             * times that span more than the exponential's range at gamma above 4: castor's plan
             * then overlaps row by row); gamma anywhere in its bounds */
            double lo10 = trial % 2 ? -30 : -4, hi10 = trial % 2 ? 30 : 1;

            for (int i = 0; i < ops->nparams; i++)
                th[i] = ops->upper[i] < HUGE_VAL
                            ? ops->lower[i] + (ops->upper[i] - ops->lower[i]) * test_uniform(&seed)
                            : pow(10.0, lo10 + (hi10 - lo10) * test_uniform(&seed));
            for (size_t r = 0; r < n; r++) {
                double la, lo, da[TPUT_MAX_PARAMS], dop[TPUT_MAX_PARAMS], ea, eo;

                ops->predict(th, &rows[r].x, &la, &lo, da, dop);
                ea = la - rows[r].log_acc;
                eo = lo - rows[r].log_opt;
                sa += rows[r].count * ea * ea;
                so += rows[r].count * eo * eo;
                for (int i = 0; i < ops->nparams; i++) {
                    ga[i] += rows[r].count * ea * da[i];
                    go[i] += rows[r].count * eo * dop[i];
                }
            }
            ops->plan_sums(plan, th, &psa, &pso, pga, pgo);
            assert_float_equal(psa, sa, 1e-12 * sa);
            assert_float_equal(pso, so, 1e-12 * so);
            /* The gradients as the fit uses them, by the logarithm of each parameter (theta[i]
             * times the derivative): terms cancel, so each is compared to the scale of its
             * largest term; plus the rounding of the log-times (1e-14 of the largest, at least
             * log 1e-8 for one GPU's sync) times the summed |errors|, which also covers the
             * overlap shares below e^-40 that the point form drops and the plan keeps. */
            double scale_a[TPUT_MAX_PARAMS] = {0}, scale_o[TPUT_MAX_PARAMS] = {0}, ltmax = 18.5,
                   sum_e = 0;

            for (size_t r = 0; r < n; r++) {
                double la, lo, da[TPUT_MAX_PARAMS], dop[TPUT_MAX_PARAMS];

                ops->predict(th, &rows[r].x, &la, &lo, da, dop);
                ltmax = fmax(ltmax, fmax(fabs(la), fabs(lo)));
                sum_e += rows[r].count * (fabs(la - rows[r].log_acc) + fabs(lo - rows[r].log_opt));
                for (int i = 0; i < ops->nparams; i++) {
                    scale_a[i] = fmax(scale_a[i],
                                      fabs(rows[r].count * (la - rows[r].log_acc) * da[i] * th[i]));
                    scale_o[i] = fmax(
                        scale_o[i], fabs(rows[r].count * (lo - rows[r].log_opt) * dop[i] * th[i]));
                }
            }
            for (int i = 0; i < ops->nparams; i++) {
                double floor = 1e-14 * ltmax * sum_e;

                assert_float_equal(pga[i] * th[i], ga[i] * th[i],
                                   1e-12 * scale_a[i] * (double)n + floor);
                assert_float_equal(pgo[i] * th[i], go[i] * th[i],
                                   1e-12 * scale_o[i] * (double)n + floor);
            }
            /* without gradients: the same sums */
            ops->plan_sums(plan, th, &nsa, &nso, NULL, NULL);
            assert_true(nsa == psa && nso == pso);
        }
        ops->plan_free(plan);
    }
}

/* castor's initial guess: on rows from known parameters without overlap (gamma 1, so step minus
 * compute time is the synchronisation time), the free multi-node synchronisation parameters are
 * recovered exactly by the least squares; every other parameter, and a pinned one, is left as it
 * was. */
static void tput_castor_plan_guess__recovers_sync(void **state)
{
    const struct tput_model_ops *ops = &tput_model_castor;
    /* alpha_c, beta_c, alpha_n, beta_n, gamma_2, alpha_r, beta_r, gamma, delta_k */
    const double truth[9] = {0.02, 0.003, 0.04, 0.005, 0.006, 0.07, 0.008, 1.0, 0.01};
    struct tput_fit_row rows[200];
    size_t n = 0;
    void *plan = NULL;

    (void)state;
    for (int nodes = 1; nodes <= 4; nodes++)
        for (int r = nodes; r <= 4 * nodes; r++)
            for (double m = 16; m <= 128; m *= 2) {
                struct tput_point x = {nodes, r, m};
                double la, lo;

                ops->predict(truth, &x, &la, &lo, NULL, NULL);
                rows[n] = (struct tput_fit_row){x, 1.0 + (double)(n % 3), la, lo};
                n++;
            }
    assert_int_equal(ops->plan_new(rows, n, &plan), 0);
    for (int pin_c2 = 0; pin_c2 < 2; pin_c2++) {
        unsigned char pinned[9] = {0};
        double th[9];

        for (int i = 0; i < 9; i++)
            th[i] = ops->init[i];
        pinned[4] = (unsigned char)pin_c2;
        if (pin_c2)
            th[4] = truth[4]; /* pinned at the truth: the other two still come out exact */
        ops->plan_guess(plan, pinned, th);
        for (int i = 0; i < 9; i++) {
            double want = i >= 2 && i <= 4 ? truth[i] : ops->init[i];

            if (pin_c2 && i == 4)
                want = truth[4];
            assert_float_equal(th[i], want, 1e-9 * fabs(want));
        }
    }
    ops->plan_free(plan);
}

static void tput_model_find__names(void **state)
{
    (void)state;
    assert_ptr_equal(tput_model_find("pollux"), &tput_model_pollux);
    assert_ptr_equal(tput_model_find("castor"), &tput_model_castor);
    assert_ptr_equal(tput_models[0], &tput_model_castor);
    assert_ptr_equal(tput_model_find("default"), tput_models[0]);
    assert_null(tput_model_find("optimus"));
    assert_null(tput_model_find(NULL));
}

/* Twice the largest profiled replica count, capped by the user and by max_bsz / min_local. */
static void tput_exploration_limit__caps(void **state)
{
    struct tput_coverage cov = {.max_replicas = 4};
    struct tput_coverage none = {0};

    (void)state;
    assert_int_equal(tput_exploration_limit(&cov, 0, 0, 0), 8);
    assert_int_equal(tput_exploration_limit(&cov, 6, 0, 0), 6);
    assert_int_equal(tput_exploration_limit(&cov, 0, 4096, 1024), 4); /* 4096 / 1024 */
    assert_int_equal(tput_exploration_limit(&none, 0, 0, 0), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tput_pollux__multi_node),
        cmocka_unit_test(tput_pollux__single_node),
        cmocka_unit_test(tput_pollux__two_and_one_replicas),
        cmocka_unit_test(tput_pollux__no_overlap_and_accumulation),
        cmocka_unit_test(tput_overlap__large_gamma_is_nearly_max),
        cmocka_unit_test(tput_castor__hand_computed),
        cmocka_unit_test(tput_predict__gradients_match_differences),
        cmocka_unit_test(tput_plan_sums__match_predict),
        cmocka_unit_test(tput_castor_plan_guess__recovers_sync),
        cmocka_unit_test(tput_model_find__names),
        cmocka_unit_test(tput_exploration_limit__caps),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
