/* test_snapshot_file.c: the benchmark's snapshot files: a snapshot written and read back is the
 * same bit for bit (so pollux decides the same on it), and a damaged line is refused with its line
 * and field named, leaving the output untouched. */
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

#define NODES 3
#define JOBS 3

struct fixture {
    struct snap_node nodes[NODES];
    struct snap_job jobs[JOBS];
    struct alloc *cur;
    struct snapshot s;
};

static int setup(void **state)
{
    static const char *names[JOBS] = {"imagenet-11", "cifar10 \"quoted\"", "ncf-2"};
    struct fixture *f = test_calloc(1, sizeof(*f));

    assert_non_null(f);
    for (int k = 0; k < NODES; k++)
        f->nodes[k] = (struct snap_node){.gpus = 4, .offer = -1, .launched = 0.5 * k};
    for (int j = 0; j < JOBS; j++) {
        struct snap_job *sj = &f->jobs[j];

        sj->name = names[j];
        sj->submit_time = 100.0 / 3.0 * (j + 1);
        sj->attained_service = 1e-300 * (j + 1);
        sj->restarts = j;
        sj->epoch = 2 * j;
        sj->lim = (struct bsz_limits){
            .init_bsz = 128, .max_bsz = 4096.5, .max_local = 256, .accumulation = j != 1};
        sj->grad = (struct grad_params){.sqr = 0.1 * (j + 1), .var = 1.0 / 7.0};
        sj->max_profiled_replicas = 4;
        sj->req_replicas = j + 1;
        sj->req_batch = 128;
        sj->progress = 12345.678901234567;
        sj->progress_target = j == 2 ? 0 : 1e5;
        sj->checkpoint_s = 600;
        sj->weight = j == 0 ? 2.0 : 0.0;
    }
    /* two jobs with the published model, one without a model */
    for (int j = 0; j < 2; j++) {
        f->jobs[j].has_model = 1;
        f->jobs[j].tput.ops = &tput_model_pollux;
        for (int k = 0; k < TPUT_MAX_PARAMS; k++)
            f->jobs[j].tput.theta[k] = k < 7 ? (k + 1) * 0.0123456789 / (j + 1) : 0;
    }
    f->jobs[0].tput.theta[6] = 1.0 + 1.0 / 3.0; /* gamma */
    f->jobs[1].deadline = INFINITY;             /* non-finite values too */
    f->jobs[2].grad.sqr = NAN;
    assert_int_equal(alloc_new(JOBS, NODES, NODES * 4, &f->cur), 0);
    assert_int_equal(alloc_add(f->cur, 0, 0, 4), 0);
    assert_int_equal(alloc_add(f->cur, 0, 1, 2), 0);
    assert_int_equal(alloc_add(f->cur, 1, 1, 1), 0);
    f->s = (struct snapshot){.now = 3600.25,
                             .nnodes = NODES,
                             .nodes = f->nodes,
                             .njobs = JOBS,
                             .jobs = f->jobs,
                             .current = f->cur,
                             .min_billed_s = 60};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    alloc_free(f->cur);
    test_free(f);
    return 0;
}

/* The line snapfile_write makes of f's snapshot (owned by the caller). */
static char *written(const struct snapshot *s, const char *label, long tick)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);

    assert_non_null(m);
    assert_int_equal(snapfile_write(m, s, label, tick), 0);
    assert_int_equal(fclose(m), 0);
    assert_non_null(buf);
    assert_int_equal(buf[len - 1], '\n');
    assert_ptr_equal(strchr(buf, '\n'), buf + len - 1); /* exactly one line */
    return buf;
}

static void assert_same_bits(double a, double b)
{
    assert_memory_equal(&a, &b, sizeof(double));
}

static void snapfile__round_trip_is_exact(void **state)
{
    struct fixture *f = *state;
    char *line = written(&f->s, "workload-1", 420);
    struct snapfile_snap sn;
    struct error e = {0};
    struct alloc *a = NULL, *b = NULL;
    struct policy p;

    assert_int_equal(snapfile_read(line, strlen(line), "rec.jsonl", 1, &sn, &e), 0);
    assert_string_equal(sn.label, "workload-1");
    assert_int_equal(sn.tick, 420);
    assert_same_bits(sn.s.now, f->s.now);
    assert_same_bits(sn.s.min_billed_s, f->s.min_billed_s);
    assert_int_equal(sn.s.nnodes, NODES);
    assert_int_equal(sn.s.njobs, JOBS);
    for (int k = 0; k < NODES; k++) {
        assert_int_equal(sn.s.nodes[k].gpus, f->nodes[k].gpus);
        assert_int_equal(sn.s.nodes[k].offer, -1);
        assert_same_bits(sn.s.nodes[k].launched, f->nodes[k].launched);
    }
    for (int j = 0; j < JOBS; j++) {
        const struct snap_job *x = &sn.s.jobs[j], *y = &f->jobs[j];

        assert_string_equal(x->name, y->name);
        assert_ptr_equal(x->tput.ops, y->tput.ops);
        for (int k = 0; k < TPUT_MAX_PARAMS; k++)
            assert_same_bits(x->tput.theta[k], y->tput.theta[k]);
        assert_same_bits(x->submit_time, y->submit_time);
        assert_same_bits(x->attained_service, y->attained_service);
        assert_same_bits(x->grad.sqr, y->grad.sqr);
        assert_same_bits(x->grad.var, y->grad.var);
        assert_same_bits(x->lim.max_bsz, y->lim.max_bsz);
        assert_same_bits(x->progress, y->progress);
        assert_same_bits(x->deadline, y->deadline);
        assert_same_bits(x->weight, y->weight);
        assert_int_equal(x->lim.accumulation, y->lim.accumulation);
        assert_int_equal(x->restarts, y->restarts);
        assert_int_equal(x->epoch, y->epoch);
        assert_int_equal(x->has_model, y->has_model);
        assert_int_equal(x->req_replicas, y->req_replicas);
        assert_true(alloc_job_equal(sn.s.current, j, f->s.current, j));
    }
    /* what it is for: the same decision on both */
    assert_int_equal(alloc_new(JOBS, NODES, NODES * 4, &a), 0);
    assert_int_equal(alloc_new(JOBS, NODES, NODES * 4, &b), 0);
    assert_int_equal(policy_new("pollux", NULL, &p), 0);
    alloc_copy(a, f->s.current);
    alloc_copy(b, sn.s.current);
    assert_int_equal(policy_allocate(&p, &f->s, 1, a), 0);
    policy_free(&p);
    assert_int_equal(policy_new("pollux", NULL, &p), 0);
    assert_int_equal(policy_allocate(&p, &sn.s, 1, b), 0);
    policy_free(&p);
    for (int j = 0; j < JOBS; j++)
        assert_true(alloc_job_equal(a, j, b, j));
    alloc_free(a);
    alloc_free(b);
    snapfile_free(&sn);
    free(line);
}

/* Replaces the first occurrence of from in line by to (a new string, owned by the caller). */
static char *edited(const char *line, const char *from, const char *to)
{
    const char *at = strstr(line, from);
    char *out;

    assert_non_null(at);
    out = malloc(strlen(line) - strlen(from) + strlen(to) + 1);
    assert_non_null(out);
    memcpy(out, line, (size_t)(at - line));
    strcpy(out + (at - line), to);
    strcat(out, at + strlen(from));
    return out;
}

static void assert_refused(const char *line, const char *field)
{
    struct snapfile_snap sn;
    struct error e = {0};

    memset(&sn, 0x5a, sizeof(sn));
    assert_int_equal(snapfile_read(line, strlen(line), "rec.jsonl", 7, &sn, &e), ERR_PARSE);
    assert_string_equal(e.file, "rec.jsonl");
    assert_int_equal(e.line, 7);
    assert_non_null(strstr(e.msg, field));
    for (size_t i = 0; i < sizeof(sn); i++)
        assert_int_equal(((unsigned char *)&sn)[i], 0x5a); /* untouched */
}

static void snapfile__damaged_lines_are_refused_with_their_field(void **state)
{
    /* each: what is changed in a good line, to what, and the field the error must name */
    static const char *const cases[][3] = {
        {"\"grad_var\":", "\"grad_vax\":", "grad_var"},                          /* missing */
        {"\"tput_model\":\"pollux\"", "\"tput_model\":\"polux\"", "tput_model"}, /* unknown */
        {"\"current\":[0,0,0,0,1,1]", "\"current\":[0,0,0,0,1,3]", "current"},   /* no node 3 */
        {"\"restarts\":0", "\"restarts\":-1", "restarts"},                       /* negative */
        {"\"theta\":[", "\"theta\":[1.0,", "theta"},                             /* 13 numbers */
        {"\"progress\":", "\"progress\":\"lots\",\"x\":", "progress"},           /* a string */
    };
    struct fixture *f = *state;
    char *line = written(&f->s, "w", 1);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *bad = edited(line, cases[i][0], cases[i][1]);

        assert_refused(bad, cases[i][2]);
        free(bad);
    }
    /* not JSON at all: the parser's reason, at this line */
    assert_refused("{\"label\":", "");
    free(line);
}

static void snapfile__offers_are_not_written(void **state)
{
    struct fixture *f = *state;
    struct snap_offer o = {.name = "spot", .gpus = 4};
    FILE *m;
    char *buf = NULL;
    size_t len = 0;

    f->s.noffers = 1;
    f->s.offers = &o;
    m = open_memstream(&buf, &len);
    assert_non_null(m);
    assert_int_equal(snapfile_write(m, &f->s, "w", 1), ERR_INVAL);
    assert_int_equal(fclose(m), 0);
    assert_int_equal(len, 0);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(snapfile__round_trip_is_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(snapfile__damaged_lines_are_refused_with_their_field, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(snapfile__offers_are_not_written, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
