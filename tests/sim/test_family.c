/* test_family.c: a model family pools its jobs' measurements (the first of each configuration)
 * and the mean of their first gradient statistics; it can seed a job once it has both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "sim/family.h"

/* The family's start statistics are the mean of its jobs' first ones, and its profile keeps the
 * first measurement of each configuration. */
static void sim_family__mean_start_and_first_measurements(void **state)
{
    struct sim_family fam;
    struct profile p, q;
    struct tput_point x = {.nodes = 1, .replicas = 2, .local_bsz = 64};
    struct tput_point y = {.nodes = 2, .replicas = 8, .local_bsz = 64};

    (void)state;
    sim_family_init(&fam);
    assert_false(sim_family_ready(&fam));
    sim_family_start(&fam, &(struct grad_params){.sqr = 1.0, .var = 4.0});
    sim_family_start(&fam, &(struct grad_params){.sqr = 3.0, .var = 8.0});
    assert_float_equal(fam.start.sqr, 2.0, 1e-12);
    assert_float_equal(fam.start.var, 6.0, 1e-12);
    assert_false(sim_family_ready(&fam)); /* nothing measured yet */
    profile_init(&p);
    profile_init(&q);
    assert_int_equal(profile_add(&p, &x, 0.2, 0.05), 0);
    assert_int_equal(profile_add(&q, &x, 0.7, 0.05), 0);
    assert_int_equal(profile_add(&q, &y, 0.5, 0.2), 0);
    assert_int_equal(sim_family_learn(&fam, &p), 0);
    assert_int_equal(sim_family_learn(&fam, &q), 0);
    assert_true(sim_family_ready(&fam));
    assert_int_equal(fam.prof.n, 2);
    assert_float_equal(fam.prof.entries[0].optim_time, 0.2, 1e-12);
    assert_float_equal(fam.prof.entries[1].optim_time, 0.5, 1e-12);
    profile_free(&p);
    profile_free(&q);
    sim_family_free(&fam);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_family__mean_start_and_first_measurements),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
