/* test_profile.c: observed step times averaged per configuration, and what they cover. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/profile.h"
#include "util/error.h"

/* Two steps at the same configuration: (0.2 s, 0.05 sync) and (0.4 s, 0.15 sync) average to
 * optim 0.3, sync 0.1, accum (0.15 + 0.25) / 2 = 0.2. A third configuration is a new entry. */
static void profile_add__averages_per_configuration(void **state)
{
    struct tput_point a = {.nodes = 2, .replicas = 4, .local_bsz = 32};
    struct tput_point b = {.nodes = 2, .replicas = 4, .local_bsz = 64};
    struct profile p;

    (void)state;
    profile_init(&p);
    assert_int_equal(profile_add(&p, &a, 0.2, 0.05), 0);
    assert_int_equal(profile_add(&p, &a, 0.4, 0.15), 0);
    assert_int_equal(profile_add(&p, &b, 0.5, 0.1), 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.entries[0].count, 2);
    assert_float_equal(p.entries[0].optim_time, 0.3, 1e-12);
    assert_float_equal(p.entries[0].sync_time, 0.1, 1e-12);
    assert_float_equal(p.entries[0].accum_time, 0.2, 1e-12);
    /* the log-time summary: mean of log 0.2 and log 0.4 is log sqrt(0.08); squared deviations
     * 2 * (log 2 / 2)^2 = (log 2)^2 / 2 */
    assert_float_equal(p.entries[0].log_optim, log(sqrt(0.08)), 1e-12);
    assert_float_equal(p.entries[0].ss_optim, log(2) * log(2) / 2, 1e-12);
    assert_float_equal(p.entries[0].log_accum, log(sqrt(0.15 * 0.25)), 1e-12);
    assert_float_equal(p.entries[1].accum_time, 0.4, 1e-12);
    profile_free(&p);
}

/* Bad observations are refused and change nothing. */
static void profile_add__rejects_bad_observations(void **state)
{
    struct tput_point ok = {.nodes = 1, .replicas = 1, .local_bsz = 8};
    struct tput_point bad_nodes = {.nodes = 0, .replicas = 1, .local_bsz = 8};
    struct tput_point bad_replicas = {.nodes = 3, .replicas = 2, .local_bsz = 8};
    struct tput_point bad_bsz = {.nodes = 1, .replicas = 1, .local_bsz = 0};
    struct profile p;

    (void)state;
    profile_init(&p);
    assert_int_equal(profile_add(&p, &bad_nodes, 0.1, 0), ERR_INVAL);
    assert_int_equal(profile_add(&p, &bad_replicas, 0.1, 0), ERR_INVAL);
    assert_int_equal(profile_add(&p, &bad_bsz, 0.1, 0), ERR_INVAL);
    assert_int_equal(profile_add(&p, &ok, -0.1, 0), ERR_INVAL);
    assert_int_equal(profile_add(&p, &ok, 0.1, 0.1), ERR_INVAL); /* sync == step */
    assert_int_equal(profile_add(&p, &ok, 0.1, -0.01), ERR_INVAL);
    assert_int_equal(profile_add(&p, &ok, NAN, 0), ERR_INVAL);
    assert_int_equal(profile_add(&p, &ok, INFINITY, 0), ERR_INVAL);
    assert_int_equal(p.n, 0);
    profile_free(&p);
}

/* Coverage: what the priors look at. */
static void profile_coverage__flags(void **state)
{
    struct tput_point one = {.nodes = 1, .replicas = 1, .local_bsz = 8};
    struct tput_point four = {.nodes = 1, .replicas = 4, .local_bsz = 8};
    struct tput_point spread = {.nodes = 3, .replicas = 3, .local_bsz = 16};
    struct tput_coverage c;
    struct profile p;

    (void)state;
    profile_init(&p);
    profile_coverage(&p, &c);
    assert_int_equal(c.distinct_local_bsz, 0);
    assert_int_equal(c.max_replicas, 0);

    assert_int_equal(profile_add(&p, &one, 0.1, 0), 0);
    profile_coverage(&p, &c);
    assert_int_equal(c.distinct_local_bsz, 1);
    assert_false(c.multi_node);
    assert_false(c.single_node_multi);
    assert_false(c.replicas_over_two);
    assert_float_equal(c.mean_accum_time, 0.1, 1e-12);

    assert_int_equal(profile_add(&p, &four, 0.3, 0.1), 0);
    profile_coverage(&p, &c);
    assert_int_equal(c.distinct_local_bsz, 1);
    assert_true(c.single_node_multi);
    assert_true(c.replicas_over_two);
    assert_false(c.multi_node);
    assert_float_equal(c.mean_accum_time, 0.15, 1e-12); /* (0.1 + 0.2) / 2 */

    assert_int_equal(profile_add(&p, &spread, 0.5, 0.2), 0);
    profile_coverage(&p, &c);
    assert_int_equal(c.distinct_local_bsz, 2);
    assert_true(c.multi_node);
    assert_int_equal(c.max_replicas, 4);
    assert_int_equal(c.max_nodes, 3);
    profile_free(&p);
}

/* Merging another job's profile: its configurations that dst lacks come over with their whole
 * summary (two observations at b: count 2, optim 0.3); the configuration both have keeps dst's own
 * measurement (0.2 s, not src's 0.9 s); src is unchanged; the sync prior fills only a gap. */
static void profile_merge__adds_only_what_is_missing(void **state)
{
    struct tput_point a = {.nodes = 1, .replicas = 2, .local_bsz = 32};
    struct tput_point b = {.nodes = 2, .replicas = 8, .local_bsz = 32};
    struct profile dst, src;

    (void)state;
    profile_init(&dst);
    profile_init(&src);
    assert_int_equal(profile_add(&dst, &a, 0.2, 0.05), 0);
    assert_int_equal(profile_add(&src, &a, 0.9, 0.05), 0);
    assert_int_equal(profile_add(&src, &b, 0.2, 0.1), 0);
    assert_int_equal(profile_add(&src, &b, 0.4, 0.1), 0);
    src.sync_prior = 0.01;
    assert_int_equal(profile_merge(&dst, &src), 0);
    assert_int_equal(dst.n, 2);
    assert_float_equal(dst.entries[0].optim_time, 0.2, 1e-12);
    assert_int_equal(dst.entries[0].count, 1);
    assert_int_equal(dst.entries[1].x.replicas, 8);
    assert_int_equal(dst.entries[1].count, 2);
    assert_float_equal(dst.entries[1].optim_time, 0.3, 1e-12);
    assert_float_equal(dst.entries[1].ss_optim, src.entries[1].ss_optim, 0);
    assert_float_equal(dst.sync_prior, 0.01, 0);
    assert_int_equal(src.n, 2);
    /* merging again adds nothing; a prior of dst's own is kept */
    dst.sync_prior = 0.02;
    assert_int_equal(profile_merge(&dst, &src), 0);
    assert_int_equal(dst.n, 2);
    assert_float_equal(dst.sync_prior, 0.02, 0);
    profile_free(&dst);
    profile_free(&src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(profile_add__averages_per_configuration),
        cmocka_unit_test(profile_add__rejects_bad_observations),
        cmocka_unit_test(profile_coverage__flags),
        cmocka_unit_test(profile_merge__adds_only_what_is_missing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
