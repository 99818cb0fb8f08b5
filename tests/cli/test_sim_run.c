/* test_sim_run.c: one simulated run wired whole (src/cli/sim_run.c): the loop points at the run's
 * own provider and policy and runs a small trace to the end; a bad trace, an unknown policy or
 * fleet policy is refused with the reason and leaves the caller's run untouched (and, under
 * LeakSanitizer, nothing behind). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cli/sim_run.h"
#include "sim/app.h"

static char **apps;

static int setup(void **state)
{
    (void)state;
    apps = app_list(CASTOR_DATADIR "/profiles");
    return apps ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    app_list_free(apps);
    return 0;
}

static struct sim_run_spec spec_for(const char *trace, const char *policy)
{
    struct sim_run_spec spec = {.path = trace,
                                .apps = (const char *const *)apps,
                                .cfg = {.nodes = 2,
                                        .gpus_per_node = 4,
                                        .profiles = CASTOR_DATADIR "/profiles",
                                        .model = &tput_model_pollux},
                                .policy = policy,
                                .interval = 60,
                                .seed = 1};

    return spec;
}

/* Three jobs on 2 x 4 GPUs under each policy: the loop is wired to the run's own parts (not to a
 * copy that went out of scope), no fleet when none is named, and every job finishes. */
static void sim_run_open__runs_a_trace_to_the_end(void **state)
{
    static const char *const policies[] = {"pollux", "tiresias", "castor"};

    (void)state;
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        struct sim_run_spec spec = spec_for(CASTOR_TEST_DATA "/workloads/tiny.csv", policies[i]);
        struct sim_run run;
        struct error e = {0};
        int done = 0;

        assert_int_equal(sim_run_open(&spec, &run, &e), 0);
        assert_ptr_equal(run.l.provider, &run.prov);
        assert_ptr_equal(run.l.policy, &run.pol);
        assert_null(run.l.fleet);
        assert_int_equal(run.l.interval, 60);
        assert_string_equal(run.pol.ops->name, policies[i]);
        assert_int_equal(loop_run(&run.l, 100000), 0);
        for (int j = 0; j < sim_world_njobs(run.w); j++)
            done += sim_job_done(sim_world_job(run.w, j));
        assert_int_equal(done, 3);
        sim_run_close(&run);
        assert_null(run.w);
        assert_null(run.wl);
    }
}

/* Each refusal says why and writes nothing into the caller's run. */
static void sim_run_open__refusals_leave_the_run_untouched(void **state)
{
    struct {
        const char *trace, *policy, *fleet, *says;
        int code;
    } cases[] = {
        {CASTOR_TEST_DATA "/workloads/tiny.csv", "nosuch", NULL, "unknown policy 'nosuch'",
         ERR_INVAL},
        {CASTOR_TEST_DATA "/workloads_bad/unsorted.csv", "pollux", NULL, "unsorted.csv", 0},
        {CASTOR_TEST_DATA "/workloads/tiny.csv", "pollux", "nosuch", "fleet policy nosuch", 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sim_run_spec spec = spec_for(cases[i].trace, cases[i].policy);
        struct sim_run run, before;
        struct error e = {0};
        char buf[768];
        int rc;

        spec.fleet = cases[i].fleet;
        memset(&run, 0xab, sizeof(run));
        before = run;
        rc = sim_run_open(&spec, &run, &e);
        assert_true(rc < 0);
        if (cases[i].code)
            assert_int_equal(rc, cases[i].code);
        assert_int_equal(e.code, rc);
        assert_non_null(strstr(err_format(&e, buf, sizeof(buf)), cases[i].says));
        assert_memory_equal(&run, &before, sizeof(run));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_run_open__runs_a_trace_to_the_end),
        cmocka_unit_test(sim_run_open__refusals_leave_the_run_untouched),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
