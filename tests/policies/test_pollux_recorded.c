/* test_pollux_recorded.c: the pollux policy on snapshots recorded from simulations where the
 * reference-style GA once found fitter allocations (tests/data/snapshots/README.md): each must now
 * be at least as fit as the GA's. Both need the last step, undoing the moves of large jobs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "snapshot_file.h"

#include "plan/alloc.h"
#include "policies/policy.h"
#include "util/error.h"

#define SNAPSHOTS CASTOR_TEST_DATA "/snapshots/pollux-held-out.jsonl"

/* Line lineno (from 1) of the recorded file, read back; the caller frees it. */
static void read_snapshot(int lineno, struct snapfile_snap *sn)
{
    FILE *f = fopen(SNAPSHOTS, "r");
    char *line = NULL, buf[768];
    size_t cap = 0;
    ssize_t n = -1;
    struct error e = {0};
    int rc;

    assert_non_null(f);
    for (int i = 0; i < lineno; i++)
        n = getline(&line, &cap, f);
    assert_true(n > 0);
    rc = snapfile_read(line, (size_t)n, SNAPSHOTS, lineno, sn, &e);
    if (rc < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    free(line);
    fclose(f);
}

/* pollux's fitness on the snapshot of line lineno, deciding as the simulator does. */
static double decide_fitness(int lineno, const char *label, double now)
{
    struct snapfile_snap sn;
    struct policy p;
    struct alloc *out;
    double fit;

    read_snapshot(lineno, &sn);
    assert_string_equal(sn.label, label);
    assert_true(sn.s.now == now);
    assert_int_equal(alloc_new(sn.s.njobs, sn.s.nnodes, sn.cur->width, &out), 0);
    alloc_copy(out, sn.s.current);
    assert_int_equal(policy_new("pollux", NULL, &p), 0);
    assert_int_equal(policy_allocate(&p, &sn.s, 1, out), 0);
    policy_free(&p);
    fit = policy_pollux_fitness(&(struct policy_config){0}, &sn.s, out);
    alloc_free(out);
    snapfile_free(&sn);
    return fit;
}

/* Fourteen jobs on 16 nodes: the search alone restarted two imagenet jobs (0.2333742216); the GA
 * kept one where it was, spread the other over three nodes and gave deepspeech2 two whole nodes
 * (0.2336278601). */
static void pollux_recorded__keeping_a_large_job_in_place(void **state)
{
    double fit = decide_fitness(1, "workloads-1.5/workload-4", 33120);

    (void)state;
    assert_true(fit >= 0.2336278601 - 1e-9);
}

/* Sixteen jobs: the search alone moved a 4-GPU deepspeech2 job off its node to let yolov3 grow
 * there (0.2503413923); the GA grew yolov3 in place and kept that job (0.2503619545). */
static void pollux_recorded__growing_in_place_instead_of_moving(void **state)
{
    double fit = decide_fitness(2, "workloads-1.5/workload-2", 31680);

    (void)state;
    assert_true(fit >= 0.2503619545 - 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pollux_recorded__keeping_a_large_job_in_place),
        cmocka_unit_test(pollux_recorded__growing_in_place_instead_of_moving),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
