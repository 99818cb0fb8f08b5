/* test_workload.c: loading workload traces, and every kind of bad trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "sim/workload.h"

#define BAD CASTOR_TEST_DATA "/workloads_bad/"

static const char *const known[] = {"cifar10", "ncf", "bert", "yolov3", NULL};

static void workload_load__ten_jobs(void **state)
{
    struct workload *w = NULL;
    struct error e;

    (void)state;
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/ten.csv", known, &w, &e), 0);
    assert_string_equal(w->name, "ten");
    assert_int_equal(w->n, 10);
    assert_string_equal(w->jobs[1].name, "ncf-1");
    assert_float_equal(w->jobs[1].submit_time, 20, 0);
    assert_string_equal(w->jobs[1].application, "ncf");
    assert_int_equal(w->jobs[6].num_replicas, 4);
    assert_float_equal(w->jobs[6].batch_size, 1024, 0);
    workload_free(w);
}

/* The optional deadline column: seconds after submission, empty for none. */
static void workload_load__deadlines(void **state)
{
    struct workload *w = NULL;
    struct error e;

    (void)state;
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/deadlines.csv", known, &w, &e), 0);
    assert_int_equal(w->n, 3);
    assert_float_equal(w->jobs[0].deadline, 3600, 0);
    assert_float_equal(w->jobs[1].deadline, 0, 0);
    assert_float_equal(w->jobs[2].deadline, 1e4, 0);
    workload_free(w);
    /* a trace without the column: no deadlines */
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/ten.csv", known, &w, &e), 0);
    for (size_t i = 0; i < w->n; i++)
        assert_float_equal(w->jobs[i].deadline, 0, 0);
    workload_free(w);
}

/* The optional checkpoint column: each job's seconds between checkpoints (0: only at restarts and
 * notices), empty for the world's interval (-1). */
static void workload_load__checkpoints(void **state)
{
    struct workload *w = NULL;
    struct error e;

    (void)state;
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/checkpoints.csv", known, &w, &e),
                     0);
    assert_int_equal(w->n, 3);
    assert_float_equal(w->jobs[0].checkpoint_s, 120, 0);
    assert_float_equal(w->jobs[1].checkpoint_s, -1, 0);
    assert_float_equal(w->jobs[2].checkpoint_s, 0, 0);
    workload_free(w);
    /* a trace without the column: the world's interval for every job */
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/ten.csv", known, &w, &e), 0);
    for (size_t i = 0; i < w->n; i++)
        assert_float_equal(w->jobs[i].checkpoint_s, -1, 0);
    workload_free(w);
}

/* The optional reconfigure column: restart or in_flight per job, empty for the world's. */
static void workload_load__reconfigure(void **state)
{
    struct workload *w = NULL;
    struct error e;

    (void)state;
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/reconfigure.csv", known, &w, &e),
                     0);
    assert_int_equal(w->n, 3);
    assert_int_equal(w->jobs[0].reconfigure, WORKLOAD_RECONF_RESTART);
    assert_int_equal(w->jobs[1].reconfigure, WORKLOAD_RECONF_WORLD);
    assert_int_equal(w->jobs[2].reconfigure, WORKLOAD_RECONF_IN_FLIGHT);
    workload_free(w);
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/ten.csv", known, &w, &e), 0);
    for (size_t i = 0; i < w->n; i++)
        assert_int_equal(w->jobs[i].reconfigure, WORKLOAD_RECONF_WORLD);
    workload_free(w);
}

/* Each bad trace: the code, the line and column of the offending cell, and *out untouched. */
static void expect_bad(const char *file, int code, int line, int column, const char *words)
{
    struct workload *w = (struct workload *)0x1;
    struct error e;

    memset(&e, 0, sizeof(e));
    assert_int_equal(workload_load(file, known, &w, &e), code);
    assert_ptr_equal(w, (struct workload *)0x1);
    assert_int_equal(e.line, line);
    assert_int_equal(e.column, column);
    assert_non_null(strstr(e.msg, words));
}

static void workload_load__bad_traces(void **state)
{
    (void)state;
    /* "b,10,resnet9000,...": the application starts at column 6 of line 3 */
    expect_bad(BAD "unknown_app.csv", ERR_UNKNOWN, 3, 6, "unknown model \"resnet9000\"");
    /* "b,10,...": 10 comes after 50 */
    expect_bad(BAD "unsorted.csv", ERR_PARSE, 3, 3, "sorted by time");
    expect_bad(BAD "negative.csv", ERR_PARSE, 2, 3, "cannot be negative");
    expect_bad(BAD "empty.csv", ERR_EMPTY, 1, 0, "no rows");
    expect_bad(BAD "missing_column.csv", ERR_PARSE, 1, 1, "missing column \"batch_size\"");
    expect_bad(BAD "duplicate.csv", ERR_PARSE, 3, 1, "used twice");
    expect_bad(BAD "zero_replicas.csv", ERR_RANGE, 2, 13, "outside [1,");
    expect_bad(BAD "no_such_file.csv", ERR_NOENT, 0, 0, "cannot open");
    /* "c,20,bert,2,12,0": a deadline at the submission is already past */
    expect_bad(BAD "past_deadline.csv", ERR_PARSE, 4, 16, "already past");
    /* "b,10,ncf,1,256,-5": the interval starts at column 16 of line 3 */
    expect_bad(BAD "negative_checkpoint.csv", ERR_PARSE, 3, 16, "0 (only at restarts");
    expect_bad(BAD "long_checkpoint.csv", ERR_PARSE, 2, 19, "found 90000");
    expect_bad(BAD "word_checkpoint.csv", ERR_PARSE, 2, 19, "checkpoint");
    expect_bad(BAD "word_reconfigure.csv", ERR_PARSE, 3, 20,
               "restart or in_flight, found \"Restart\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(workload_load__ten_jobs),    cmocka_unit_test(workload_load__bad_traces),
        cmocka_unit_test(workload_load__deadlines),   cmocka_unit_test(workload_load__checkpoints),
        cmocka_unit_test(workload_load__reconfigure),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
