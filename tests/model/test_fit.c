/* test_fit.c: the throughput-model fit: parameters recovered from synthetic observations, the
 * priors for configurations not yet seen, the objective's gradient, bad input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/fit.h"
#include "util/error.h"

/* Observations of p on a grid of placements (nodes up to max_nodes, 1 to 4 GPUs per node) and
 * local batches; the sync time recorded is the step time minus the compute time. */
static void synth(const struct tput_params *p, int max_nodes, int max_per_node,
                  struct profile *prof)
{
    const double bsz[] = {16, 32, 64, 128, 256};

    profile_init(prof);
    for (int n = 1; n <= max_nodes; n++) {
        for (int r = n; r <= max_per_node * n; r++) {
            for (size_t b = 0; b < sizeof(bsz) / sizeof(bsz[0]); b++) {
                struct tput_point x = {.nodes = n, .replicas = r, .local_bsz = bsz[b]};
                double acc, opt;

                tput_predict(p, &x, &acc, &opt);
                assert_int_equal(profile_add(prof, &x, opt, opt - acc), 0);
            }
        }
    }
}

/* Known parameters (step times of tens to hundreds of ms, like the measured jobs) are recovered
 * within 1% from noise-free observations on up to 4 nodes. */
static void fit_tput__recovers_pollux_parameters(void **state)
{
    struct tput_params truth = {.ops = &tput_model_pollux,
                                .theta = {0.02, 0.0015, 0.09, 0.004, 0.03, 0.002, 1.8}};
    struct tput_params got;
    struct fit_report rep;
    struct profile prof;

    (void)state;
    synth(&truth, 4, 4, &prof);
    assert_int_equal(fit_tput(&tput_model_pollux, &prof, &got, &rep), 0);
    for (int i = 0; i < tput_model_pollux.nparams; i++)
        assert_float_equal(got.theta[i], truth.theta[i], 0.01 * truth.theta[i]);
    assert_true(rep.rmsle_opt < 1e-3);
    assert_int_equal(rep.pinned, 0);
    profile_free(&prof);
}

/* Every registered model fits its own synthetic observations: each parameter that influences the
 * predictions is recovered within 1%, checked through the predictions on placements never seen
 * (8 and 16 nodes) being within 1%. */
static void fit_tput__every_model_predicts_its_own_data(void **state)
{
    (void)state;
    for (size_t k = 0; tput_models[k]; k++) {
        const struct tput_model_ops *ops = tput_models[k];
        struct tput_params truth, got;
        struct profile prof;
        const struct tput_point far[] = {{8, 32, 64}, {16, 64, 32}, {16, 40, 128}};

        tput_params_init(&truth, ops);
        /* move away from the initial point so that the fit has work to do */
        for (int i = 0; i < ops->nparams; i++) {
            double v = ops->init[i] * (0.2 + 0.1 * i);

            truth.theta[i] = v >= ops->lower[i] && v <= ops->upper[i] ? v : ops->init[i] + 0.5;
        }
        synth(&truth, 4, 4, &prof);
        assert_int_equal(fit_tput(ops, &prof, &got, NULL), 0);
        for (size_t j = 0; j < sizeof(far) / sizeof(far[0]); j++) {
            double want = tput_step_time(&truth, &far[j], 0);

            assert_float_equal(tput_step_time(&got, &far[j], 0), want, 0.01 * want);
        }
        profile_free(&prof);
    }
}

/* Only one GPU at one batch size: alpha_c is pinned at half the mean compute time, every sync
 * parameter at 1e-8, and the prediction for more GPUs is near-perfect scaling. */
static void fit_tput__priors_single_observation(void **state)
{
    struct tput_point x = {.nodes = 1, .replicas = 1, .local_bsz = 64};
    struct tput_params got;
    struct fit_report rep;
    struct profile prof;

    (void)state;
    profile_init(&prof);
    assert_int_equal(profile_add(&prof, &x, 0.10, 0.0), 0);
    assert_int_equal(fit_tput(&tput_model_pollux, &prof, &got, &rep), 0);
    assert_int_equal(rep.pinned, 5);               /* alpha_c, alpha_n, beta_n, alpha_r, beta_r */
    assert_float_equal(got.theta[0], 0.05, 1e-12); /* 0.10 / 2 */
    /* beta_c is what is left: 0.05 + 64 beta_c = 0.10 */
    assert_float_equal(got.theta[1], 0.05 / 64, 1e-6);
    x.nodes = 4;
    x.replicas = 16;
    assert_float_equal(tput_step_time(&got, &x, 0), 0.10, 1e-4);
    profile_free(&prof);
}

/* Single-node observations only: the inter-node parameters are assumed 10% worse than the
 * intra-node ones (alpha_n = 1.1 alpha_r, beta_n = 1.1 beta_r), so two nodes cost more than one. */
static void fit_tput__priors_inter_node_ten_percent_worse(void **state)
{
    struct tput_params truth = {.ops = &tput_model_pollux,
                                .theta = {0.02, 0.0015, 0.09, 0.004, 0.03, 0.002, 1.8}};
    struct tput_params got;
    struct tput_point one = {.nodes = 1, .replicas = 4, .local_bsz = 32};
    struct tput_point two = {.nodes = 2, .replicas = 4, .local_bsz = 32};
    struct profile prof;

    (void)state;
    synth(&truth, 1, 4, &prof);
    assert_int_equal(fit_tput(&tput_model_pollux, &prof, &got, NULL), 0);
    assert_float_equal(got.theta[2], 1.1 * got.theta[4], 1e-12);
    assert_float_equal(got.theta[3], 1.1 * got.theta[5], 1e-12);
    assert_float_equal(got.theta[4], 0.03, 0.01 * 0.03);
    assert_true(tput_step_time(&got, &two, 0) > tput_step_time(&got, &one, 0));
    profile_free(&prof);
}

/* Observations on at most two replicas: beta_n and beta_r are pinned (no retrogression seen). */
static void fit_tput__priors_no_more_than_two_replicas(void **state)
{
    struct tput_params truth = {.ops = &tput_model_pollux,
                                .theta = {0.02, 0.0015, 0.09, 0.004, 0.03, 0.002, 1.8}};
    struct tput_params got;
    struct fit_report rep;
    struct profile prof;

    (void)state;
    synth(&truth, 2, 1, &prof); /* placements "1" and "11" */
    assert_int_equal(fit_tput(&tput_model_pollux, &prof, &got, &rep), 0);
    /* alpha_r, beta_r (no single-node multi-GPU), beta_n (no r > 2) */
    assert_int_equal(rep.pinned, 3);
    assert_float_equal(got.theta[3], 1e-8, 1e-20);
    /* post-fit: alpha_n >= 1.1 alpha_r holds trivially here; alpha_n is fitted */
    assert_true(got.theta[2] > 1e-3);
    profile_free(&prof);
}

/* castor's priors: single-node data with several GPUs per node pins the inter-node terms and the
 * two-node term but fits the per-node compute term; one GPU per node on 1-2 nodes pins the per-node
 * compute term too; data from two nodes only (with several GPUs each) puts growth in replicas on
 * the two-node term (beta_n pinned). */
static void fit_tput__castor_priors(void **state)
{
    struct tput_params truth = {
        .ops = &tput_model_castor,
        .theta = {0.02, 0.0015, 0.09, 0.004, 0.01, 0.03, 0.002, 1.5, 0.004}};
    struct tput_params got;
    struct fit_report rep;
    struct profile prof;

    (void)state;
    synth(&truth, 1, 4, &prof); /* one node, 1-4 GPUs */
    assert_int_equal(fit_tput(&tput_model_castor, &prof, &got, &rep), 0);
    assert_int_equal(rep.pinned, 3);                             /* alpha_n, beta_n, gamma_2 */
    assert_float_equal(got.theta[8], 0.004, 0.01 * 0.004);       /* delta_k recovered */
    assert_float_equal(got.theta[2], 1.1 * got.theta[5], 1e-12); /* alpha_n = 1.1 alpha_r */
    profile_free(&prof);

    synth(&truth, 2, 1, &prof); /* "1" and "11": one GPU per node */
    assert_int_equal(fit_tput(&tput_model_castor, &prof, &got, &rep), 0);
    assert_float_equal(got.theta[8], 0.0, 0);  /* delta_k pinned at 0 */
    assert_float_equal(got.theta[4], 1e-8, 0); /* gamma_2 pinned */
    profile_free(&prof);

    synth(&truth, 2, 4, &prof); /* up to 2 nodes x 4 */
    assert_int_equal(fit_tput(&tput_model_castor, &prof, &got, &rep), 0);
    assert_float_equal(got.theta[3], 1e-8, 0); /* beta_n pinned: no trend in nodes seen */
    assert_true(got.theta[4] > 1e-4);          /* gamma_2 carries the growth */
    profile_free(&prof);
}

/* A measured all-reduce (the profile's sync_prior) seen only on one GPU: both models take it as
 * alpha_r, so that two GPUs of one node are predicted to pay it (overlapped with compute as the
 * model says) instead of nothing; without it two GPUs cost what one does. Once a multi-GPU
 * placement is observed, the data decide and the prior is ignored. */
static void fit_tput__sync_prior_seeds_unseen_placements(void **state)
{
    const struct tput_model_ops *models[] = {&tput_model_pollux, &tput_model_castor};
    const int ar[] = {4, 5}; /* alpha_r's index in each */
    struct tput_point one = {.nodes = 1, .replicas = 1, .local_bsz = 64};
    struct tput_point two = {.nodes = 1, .replicas = 2, .local_bsz = 64};
    struct tput_params free_sync, seeded, seen;
    struct profile prof;

    (void)state;
    for (int m = 0; m < 2; m++) {
        profile_init(&prof);
        assert_int_equal(profile_add(&prof, &one, 0.10, 0.0), 0);
        assert_int_equal(fit_tput(models[m], &prof, &free_sync, NULL), 0);
        prof.sync_prior = 0.25; /* slower than the compute: the sync shows through the overlap */
        assert_int_equal(fit_tput(models[m], &prof, &seeded, NULL), 0);
        assert_float_equal(seeded.theta[ar[m]], 0.25, 1e-12);
        assert_float_equal(tput_step_time(&free_sync, &two, 0), tput_step_time(&free_sync, &one, 0),
                           1e-3 * 0.10);
        assert_true(tput_step_time(&seeded, &two, 0) >= 0.25);
        assert_float_equal(tput_step_time(&seeded, &one, 0), 0.10, 1e-3 * 0.10);

        /* a two-GPU observation at 0.12 s: the data win */
        assert_int_equal(profile_add(&prof, &two, 0.12, 0.03), 0);
        assert_int_equal(fit_tput(models[m], &prof, &seen, NULL), 0);
        assert_float_equal(tput_step_time(&seen, &two, 0), 0.12, 0.05 * 0.12);
        profile_free(&prof);
    }
}

/* An empty profile is an error, and leaves the output alone. */
static void fit_tput__empty_profile(void **state)
{
    struct tput_params got = {.ops = NULL, .theta = {42.0}};
    struct profile prof;

    (void)state;
    profile_init(&prof);
    assert_int_equal(fit_tput(&tput_model_pollux, &prof, &got, NULL), ERR_EMPTY);
    assert_null(got.ops);
    assert_float_equal(got.theta[0], 42.0, 0);
}

/* The objective's gradient matches central differences (so the minimiser is told the truth). */
static void fit_objective__gradient_matches_differences(void **state)
{
    struct tput_params truth = {.ops = &tput_model_pollux,
                                .theta = {0.02, 0.0015, 0.09, 0.004, 0.03, 0.002, 1.8}};
    struct profile prof;

    (void)state;
    synth(&truth, 3, 4, &prof);
    for (size_t k = 0; tput_models[k]; k++) {
        const struct tput_model_ops *ops = tput_models[k];
        double th[TPUT_MAX_PARAMS], g[TPUT_MAX_PARAMS];

        for (int i = 0; i < ops->nparams; i++) {
            double v = ops->init[i] * 0.3;

            th[i] = v >= ops->lower[i] && v <= ops->upper[i] ? v : ops->init[i] + 0.4;
        }
        fit_objective(ops, &prof, th, g, NULL, NULL);
        for (int i = 0; i < ops->nparams; i++) {
            double h = 1e-6 * fabs(th[i]), save = th[i], f1, f2;

            th[i] = save + h;
            f1 = fit_objective(ops, &prof, th, NULL, NULL, NULL);
            th[i] = save - h;
            f2 = fit_objective(ops, &prof, th, NULL, NULL, NULL);
            th[i] = save;
            assert_float_equal(g[i], (f1 - f2) / (2 * h), 1e-5 * fmax(1.0, fabs(g[i])));
        }
    }
    profile_free(&prof);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fit_tput__recovers_pollux_parameters),
        cmocka_unit_test(fit_tput__every_model_predicts_its_own_data),
        cmocka_unit_test(fit_tput__priors_single_observation),
        cmocka_unit_test(fit_tput__priors_inter_node_ten_percent_worse),
        cmocka_unit_test(fit_tput__priors_no_more_than_two_replicas),
        cmocka_unit_test(fit_tput__castor_priors),
        cmocka_unit_test(fit_tput__sync_prior_seeds_unseen_placements),
        cmocka_unit_test(fit_tput__empty_profile),
        cmocka_unit_test(fit_objective__gradient_matches_differences),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
