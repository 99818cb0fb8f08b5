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

/* A model's group prediction (points sharing nodes and replicas) equals its point prediction,
 * values and derivatives. */
static void tput_predict_group__matches_predict(void **state)
{
    const double m[4] = {8, 32, 100, 700};
    const int shapes[][2] = {{1, 1}, {1, 4}, {2, 6}, {3, 12}, {16, 64}};

    (void)state;
    for (size_t k = 0; tput_models[k]; k++) {
        const struct tput_model_ops *ops = tput_models[k];
        double th[TPUT_MAX_PARAMS];

        if (!ops->predict_group)
            continue;
        for (int i = 0; i < ops->nparams; i++)
            th[i] = ops->init[i] * (1.0 + 0.3 * i) + (ops->lower[i] == ops->init[i] ? 0.1 : 0.0);
        for (size_t sh = 0; sh < sizeof(shapes) / sizeof(shapes[0]); sh++) {
            double la[4], lo[4], da[4 * TPUT_MAX_PARAMS], dop[4 * TPUT_MAX_PARAMS];

            ops->predict_group(th, shapes[sh][0], shapes[sh][1], m, 4, la, lo, da, dop);
            for (int i = 0; i < 4; i++) {
                struct tput_point x = {shapes[sh][0], shapes[sh][1], m[i]};
                double a, o, pa[TPUT_MAX_PARAMS], po[TPUT_MAX_PARAMS];

                ops->predict(th, &x, &a, &o, pa, po);
                assert_float_equal(la[i], a, 1e-14);
                assert_float_equal(lo[i], o, 1e-14);
                for (int q = 0; q < ops->nparams; q++) {
                    assert_float_equal(da[i * ops->nparams + q], pa[q], 1e-14);
                    assert_float_equal(dop[i * ops->nparams + q], po[q], 1e-14);
                }
            }
        }
    }
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
        cmocka_unit_test(tput_predict_group__matches_predict),
        cmocka_unit_test(tput_model_find__names),
        cmocka_unit_test(tput_exploration_limit__caps),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
