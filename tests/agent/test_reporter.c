/* test_reporter.c: libcastor's report parts: pooling equals adding every step, merging equals
 * pooling at once, the body the API takes, allocations read back, decisions, backoff bounds. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/reporter.h"
#include "model/goodput.h"
#include "support/near.h"
#include "util/error.h"
#include "util/json.h"

/* Mean and population variance of v[0..n) computed directly. */
static void direct(const double *v, size_t n, double *mean, double *var)
{
    double s = 0, q = 0;

    for (size_t i = 0; i < n; i++)
        s += v[i];
    *mean = s / (double)n;
    for (size_t i = 0; i < n; i++)
        q += (v[i] - *mean) * (v[i] - *mean);
    *var = q / (double)n;
}

static void reporter_pool_add__pools_per_configuration(void **state)
{
    static const double t[] = {0.051, 0.049, 0.055, 0.047, 0.052, 0.060};
    struct reporter_pool *p = malloc(sizeof(*p));
    double mean, var;

    (void)state;
    reporter_pool_clear(p);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(reporter_pool_add(p, 1, 2, 32, 0, t[i], 0.01 * (double)i), 0);
    assert_int_equal(reporter_pool_add(p, 1, 2, 64, 0, 0.1, 0.02), 0);
    assert_int_equal(reporter_pool_add(p, 1, 2, 32, 1, 0.2, 0.02), 0);
    assert_int_equal(p->n, 3);
    direct(t, 6, &mean, &var);
    assert_int_equal(p->cfg[0].count, 6);
    assert_near(p->cfg[0].mean, mean, 1e-15);
    assert_near(p->cfg[0].m2 / 6, var, 1e-15);
    assert_near(p->cfg[0].sync_sum, 0.15, 1e-15);
    assert_int_equal(p->cfg[2].accum_steps, 1);
    free(p);
}

static void reporter_pool_merge__equals_pooling_at_once(void **state)
{
    struct reporter_pool *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)),
                         *all = malloc(sizeof(*all));
    uint64_t seed = 7;

    (void)state;
    reporter_pool_clear(a);
    reporter_pool_clear(b);
    reporter_pool_clear(all);
    for (int i = 0; i < 40; i++) {
        double t = 0.05 + reporter_backoff(1, 0.02, 1, &seed); /* 0.06 .. 0.07 */
        int bsz = i % 3 ? 32 : 48;

        assert_int_equal(reporter_pool_add(i < 25 ? a : b, 1, 1, bsz, 0, t, 0.001), 0);
        assert_int_equal(reporter_pool_add(all, 1, 1, bsz, 0, t, 0.001), 0);
    }
    assert_int_equal(reporter_pool_merge(a, b), 0);
    assert_int_equal(a->n, all->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->cfg[i].count, all->cfg[i].count);
        assert_near(a->cfg[i].mean, all->cfg[i].mean, 1e-14);
        assert_near(a->cfg[i].m2, all->cfg[i].m2, 1e-14);
        assert_near(a->cfg[i].sync_sum, all->cfg[i].sync_sum, 1e-14);
    }
    free(a);
    free(b);
    free(all);
}

static void reporter_pool_add__full_pool_counts_dropped(void **state)
{
    struct reporter_pool *p = malloc(sizeof(*p)), *q = malloc(sizeof(*q));

    (void)state;
    reporter_pool_clear(p);
    reporter_pool_clear(q);
    for (int i = 0; i < REPORTER_MAX_CONFIGS; i++)
        assert_int_equal(reporter_pool_add(p, 1, 1, 1 + i, 0, 0.1, 0), 0);
    assert_int_equal(reporter_pool_add(p, 1, 1, 1000, 0, 0.1, 0), ERR_RANGE);
    assert_int_equal(reporter_pool_add(p, 1, 1, 5, 0, 0.1, 0), 0); /* a known one still pools */
    assert_int_equal(p->dropped, 1);
    assert_int_equal(reporter_pool_add(q, 1, 1, 2000, 0, 0.1, 0), 0);
    assert_int_equal(reporter_pool_add(q, 1, 1, 2000, 0, 0.1, 0), 0);
    assert_int_equal(reporter_pool_merge(p, q), ERR_RANGE);
    assert_int_equal(p->dropped, 3);
    free(p);
    free(q);
}

static void reporter_body__carries_what_the_api_reads(void **state)
{
    struct reporter_pool *p = malloc(sizeof(*p));
    struct grad_params g = {0.25, 3.5};
    const struct jv *c;
    struct jv *v = NULL;
    char *text = NULL;
    double x;
    long long k;

    (void)state;
    reporter_pool_clear(p);
    assert_int_equal(reporter_pool_add(p, 2, 4, 16, 1, 0.2, 0.05), 0);
    assert_int_equal(reporter_pool_add(p, 2, 4, 16, 1, 0.4, 0.07), 0);
    assert_int_equal(reporter_body(p, &g, 12.5, 0.004, &text), 0);
    assert_int_equal(jv_parse(text, strlen(text), &v, NULL), 0);
    c = jv_at(jv_get(v, "configs"), 0);
    assert_int_equal(jv_integer_value(jv_get(c, "nodes"), &k), 0);
    assert_int_equal(k, 2);
    assert_int_equal(jv_integer_value(jv_get(c, "replicas"), &k), 0);
    assert_int_equal(k, 4);
    assert_int_equal(jv_integer_value(jv_get(c, "accum_steps"), &k), 0);
    assert_int_equal(k, 1);
    assert_int_equal(jv_integer_value(jv_get(c, "count"), &k), 0);
    assert_int_equal(k, 2);
    assert_int_equal(jv_number_value(jv_get(c, "step_mean"), &x), 0);
    assert_near(x, 0.3, 1e-15);
    assert_int_equal(jv_number_value(jv_get(c, "step_sd"), &x), 0);
    assert_near(x, 0.1, 1e-15);
    assert_int_equal(jv_number_value(jv_get(c, "sync_mean"), &x), 0);
    assert_near(x, 0.06, 1e-15);
    assert_int_equal(jv_number_value(jv_get(jv_get(v, "grad"), "var"), &x), 0);
    assert_near(x, 3.5, 0);
    assert_int_equal(jv_number_value(jv_get(v, "progress"), &x), 0);
    assert_near(x, 12.5, 0);
    assert_int_equal(jv_number_value(jv_get(v, "sync_prior"), &x), 0);
    assert_near(x, 0.004, 0);
    jv_free(v);
    free(text);

    /* without statistics or progress: neither field */
    assert_int_equal(reporter_body(p, NULL, NAN, 0, &text), 0);
    assert_int_equal(jv_parse(text, strlen(text), &v, NULL), 0);
    assert_null(jv_get(v, "grad"));
    assert_null(jv_get(v, "progress"));
    assert_null(jv_get(v, "sync_prior"));
    jv_free(v);
    free(text);

    g.var = NAN;
    text = NULL;
    assert_int_equal(reporter_body(p, &g, 1, 0, &text), ERR_INVAL);
    assert_int_equal(reporter_body(p, NULL, -1, 0, &text), ERR_INVAL);
    assert_int_equal(reporter_body(p, NULL, NAN, -0.5, &text), ERR_INVAL);
    assert_int_equal(reporter_body(p, NULL, NAN, INFINITY, &text), ERR_INVAL);
    assert_null(text);
    free(p);
}

static void reporter_parse_alloc__reads_config_or_null(void **state)
{
    static const char with[] =
        "{\"job\":\"a\",\"state\":\"running\",\"world_size\":3,\"nodes\":[{\"instance_id\":\"n1\","
        "\"replicas\":2,\"since\":1},{\"instance_id\":\"n2\",\"replicas\":1,\"since\":1}],"
        "\"local_bsz\":24,\"accum_steps\":2,\"lr_gain\":1.5}";
    static const char without[] = "{\"job\":\"a\",\"state\":\"pending\",\"world_size\":0,"
                                  "\"nodes\":[],\"local_bsz\":null,\"accum_steps\":null,"
                                  "\"lr_gain\":null}";
    static const char *const bad[] = {
        "",
        "[]",
        "{\"state\":\"running\",\"world_size\":1}",
        "{\"state\":\"running\",\"world_size\":-1,\"nodes\":[],\"local_bsz\":null}",
        "{\"state\":\"running\",\"world_size\":1,\"nodes\":[],\"local_bsz\":-4,\"accum_steps\":0,"
        "\"lr_gain\":1}",
        "{\"state\":\"running\",\"world_size\":1,\"nodes\":[],\"local_bsz\":4,\"accum_steps\":0,"
        "\"lr_gain\":null}"};
    struct reporter_alloc a, keep = {.world_size = 99};

    (void)state;
    assert_int_equal(reporter_parse_alloc(with, strlen(with), &a), 0);
    assert_true(a.running);
    assert_int_equal(a.world_size, 3);
    assert_int_equal(a.nodes, 2);
    assert_true(a.has_config);
    assert_near(a.local_bsz, 24, 0);
    assert_int_equal(a.accum_steps, 2);
    assert_near(a.lr_gain, 1.5, 0);
    assert_int_equal(reporter_parse_alloc(without, strlen(without), &a), 0);
    assert_false(a.running);
    assert_false(a.has_config);
    assert_int_equal(a.world_size, 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        a = keep;
        assert_int_equal(reporter_parse_alloc(bad[i], strlen(bad[i]), &a), ERR_PARSE);
        assert_int_equal(a.world_size, 99);
    }
}

static void reporter_decide__controller_config_wins(void **state)
{
    struct reporter_alloc a = {1, 4, 2, 1, 48, 1, 2.25};
    struct reporter_current cur = {1, 2, 32, 0, {.init_bsz = 64, .max_bsz = 1024}};
    struct reporter_decision d;

    (void)state;
    assert_int_equal(reporter_decide(&a, &cur, NULL, NULL, &d), 0);
    assert_int_equal(d.world_size, 4);
    assert_int_equal(d.nodes, 2);
    assert_near(d.local_bsz, 48, 0);
    assert_int_equal(d.accum_steps, 1);
    assert_near(d.lr_gain, 2.25, 0); /* no statistics measured: the controller's gain */
    assert_true(d.from_controller);
}

/* With statistics measured, the controller's batch keeps its gain current: the AdaScale gain of
 * that total batch (4 x 48 x 2 = 384 = 6 M0) under the statistics now, not the gain the
 * controller computed when it chose the batch (which a batch kept for hours would keep). */
static void reporter_decide__controller_batch_gain_of_the_statistics_now(void **state)
{
    struct reporter_alloc a = {1, 4, 2, 1, 48, 1, 2.25};
    struct reporter_current cur = {1, 2, 32, 0, {.init_bsz = 64, .max_bsz = 1024}};
    struct grad_params noisy = {.sqr = 0.01, .var = 10.0}, quiet = {.sqr = 1.0, .var = 10.0};
    struct reporter_decision d;

    (void)state;
    assert_int_equal(reporter_decide(&a, &cur, NULL, &noisy, &d), 0);
    assert_near(d.local_bsz, 48, 0);
    assert_int_equal(d.accum_steps, 1);
    assert_true(d.from_controller);
    /* (phi + 1) / (phi / 6 + 1), phi = var / sqr = 1000: 1001 / 167.67 = 5.970 */
    assert_near(d.lr_gain, goodput_gain(&noisy, 6.0), 1e-12);
    assert_near(d.lr_gain, 1001.0 / (1000.0 / 6.0 + 1.0), 1e-9);
    assert_int_equal(reporter_decide(&a, &cur, NULL, &quiet, &d), 0);
    /* phi = 10: 11 / (10 / 6 + 1) = 4.125 */
    assert_near(d.lr_gain, 11.0 / (10.0 / 6.0 + 1.0), 1e-9);
}

static void reporter_decide__without_config_uses_optimizer_and_gain(void **state)
{
    struct reporter_alloc a = {1, 4, 1, 0, 0, 0, 0};
    struct reporter_current cur = {
        1, 2, 32, 0, {.init_bsz = 64, .max_bsz = 1024, .max_local = 256}};
    struct grad_params g = {0.5, 8.0};
    struct tput_params tp;
    struct bsz_choice best;
    struct reporter_decision d;

    (void)state;
    tput_params_init(&tp, tput_model_find("default"));
    assert_int_equal(bsz_optimize(&tp, &g, &cur.limits, 1, 4, &best), 0);
    assert_int_equal(reporter_decide(&a, &cur, &tp, &g, &d), 0);
    assert_false(d.from_controller);
    assert_int_equal(d.world_size, 4);
    assert_near(d.local_bsz, best.local_bsz, 0);
    assert_int_equal(d.accum_steps, best.accum_steps);
    assert_near(d.lr_gain, goodput_gain(&g, best.batch / 64), 1e-12);
    assert_true(d.lr_gain > 1);

    /* 3 replicas wanting the largest batch, 700, which 234 each would pass (702): 233 */
    {
        struct reporter_alloc three = {1, 3, 1, 0, 0, 0, 0};
        struct reporter_current big = {
            1, 2, 32, 0, {.init_bsz = 64, .max_bsz = 700, .max_local = 1024}};
        struct grad_params noisy = {0.01, 1e6};

        assert_int_equal(bsz_optimize(&tp, &noisy, &big.limits, 1, 3, &best), 0);
        assert_true(3 * best.local_bsz * (best.accum_steps + 1) > 700);
        assert_int_equal(reporter_decide(&three, &big, &tp, &noisy, &d), 0);
        assert_int_equal(d.world_size, 3);
        assert_int_equal(d.accum_steps, best.accum_steps);
        assert_near(d.local_bsz, floor(700.0 / (3 * (best.accum_steps + 1))), 0);
    }

    /* not fitted yet: the batch stays, the gain is that of the new world size */
    a.world_size = 0;
    a.nodes = 0;
    assert_int_equal(reporter_decide(&a, &cur, NULL, &g, &d), 0);
    assert_int_equal(d.world_size, 2);
    assert_near(d.local_bsz, 32, 0);
    assert_near(d.lr_gain, goodput_gain(&g, 1.0), 1e-12);

    cur.local_bsz = 0;
    assert_int_equal(reporter_decide(&a, &cur, NULL, &g, &d), ERR_INVAL);
}

static void reporter_backoff__doubles_within_jitter_and_cap(void **state)
{
    uint64_t seed = 42;
    double prev_hi = 0;

    (void)state;
    for (int f = 1; f <= 12; f++) {
        double d = fmin(60.0, 0.5 * pow(2, f - 1));

        for (int k = 0; k < 50; k++) {
            double w = reporter_backoff(f, 0.5, 60.0, &seed);

            assert_true(w >= d / 2 && w <= d);
        }
        assert_true(d >= prev_hi);
        prev_hi = d;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reporter_pool_add__pools_per_configuration),
        cmocka_unit_test(reporter_pool_merge__equals_pooling_at_once),
        cmocka_unit_test(reporter_pool_add__full_pool_counts_dropped),
        cmocka_unit_test(reporter_body__carries_what_the_api_reads),
        cmocka_unit_test(reporter_parse_alloc__reads_config_or_null),
        cmocka_unit_test(reporter_decide__controller_config_wins),
        cmocka_unit_test(reporter_decide__controller_batch_gain_of_the_statistics_now),
        cmocka_unit_test(reporter_decide__without_config_uses_optimizer_and_gain),
        cmocka_unit_test(reporter_backoff__doubles_within_jitter_and_cap),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
