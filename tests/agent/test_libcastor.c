/* test_libcastor.c: libcastor through its shared library against the controller's real API server
 * on loopback: reports carry each configuration's steps and the gradient statistics to the state,
 * an unreachable or hanging controller never holds a step up and loses nothing, bad input is
 * skipped and counted, decisions follow the allocation, the environment, the saved state. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "castor/castor.h"

#include "agent/gns.h"
#include "control/api.h"
#include "control/state.h"
#include "model/goodput.h"
#include "support/loopback_http.h"
#include "util/db_fixture.h"
#include "support/near.h"
#include "util/error.h"
#include "util/http_server.h"
#include "util/json.h"

#define TOKEN_NODE "node-token-0123456789abcdef"
#define TOKEN_JOB "job-token-0123456789abcdef"
#define TOKEN_USER "user-token-0123456789abcdef"

#define JOB_SPEC(name)                                                                 \
    "{\"name\":\"" name "\",\"command\":[\"python\",\"train.py\"],\"workdir\":\"/w\"," \
    "\"init_batch_size\":32,\"max_batch_size\":512,\"max_local_bsz\":64,\"max_replicas\":8}"

struct fixture {
    struct tmpdb db;
    struct state *st;
    struct api *api;
    struct http_server *server;
    char url[64];
    int port;
};

static double fake_clock(void *ctx)
{
    (void)ctx;
    return 1714564800.0;
}

static double mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Start the API on port (0: any) over the fixture's state. */
static int serve(struct fixture *f, int port)
{
    struct api_tokens tokens = {{strdup(TOKEN_NODE), strdup(TOKEN_JOB), strdup(TOKEN_USER), NULL}};
    struct http_server_config hc = {.port = port};
    struct api_config cfg = {.state = f->st, .clock = fake_clock, .tokens = &tokens};
    int rc = api_new(&cfg, &f->api, NULL);

    api_tokens_clear(&tokens);
    if (rc == 0)
        rc = http_server_start(&hc, api_handle, f->api, &f->server, NULL);
    if (rc < 0)
        return -1;
    f->port = http_server_port(f->server);
    snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", f->port);
    return 0;
}

static void unserve(struct fixture *f)
{
    http_server_stop(f->server);
    api_free(f->api);
    f->server = NULL;
    f->api = NULL;
}

/* A state with node n1 (4 GPUs) and job j submitted, running 2 replicas on n1. */
static int setup(void **state)
{
    struct state_node node = {
        .instance_id = "n1", .provider = "static", .offer = "static", .zone = "local", .gpus = 4};
    struct state_alloc rows[] = {{"n1", 2, 0}};
    struct fixture *f = calloc(1, sizeof(*f));
    void *tmp = NULL;

    if (!f || tmpdb_setup(&tmp) < 0)
        return -1;
    f->db = *(struct tmpdb *)tmp;
    free(tmp);
    if (state_open(f->db.path, &f->st, NULL) < 0 || state_node_register(f->st, &node, 1.0) < 0 ||
        state_job_submit(f->st, "j", JOB_SPEC("j"), 1.0) < 0 ||
        state_job_set_state(f->st, "j", STATE_JOB_RUNNING, 1.0) < 0 ||
        state_alloc_replace(f->st, "j", rows, 1, 1.0) < 0 || serve(f, 0) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    struct tmpdb *t = malloc(sizeof(*t));

    unserve(f);
    state_close(f->st);
    *t = f->db;
    free(f);
    return tmpdb_teardown((void **)&t);
}

/* Options for job j at the fixture's server: reports only when flushed. */
static struct castor_options options(const struct fixture *f, int world, double local, int accum)
{
    struct castor_options o = {0};

    o.url = f ? f->url : NULL;
    o.job = "j";
    o.token = TOKEN_JOB;
    o.world_size = world;
    o.nodes = 1;
    o.local_bsz = local;
    o.accum_steps = accum;
    o.init_bsz = 32;
    o.report_interval = 3600;
    o.timeout_ms = 2000;
    o.seed = 1;
    return o;
}

static struct castor *open_handle(const struct castor_options *o)
{
    struct castor *h = NULL;
    char msg[256] = "";
    int rc = castor_new(o, sizeof(*o), &h, msg, sizeof(msg));

    if (rc != 0)
        fail_msg("castor_new: %s (%s)", castor_strerror(rc), msg);
    return h;
}

/* Synthetic gradients: n micro-batch gradients of dimension 4 around a common mean; sqr[i] their
 * squared norms, *avg that of their average. */
static void synth(uint64_t *seed, size_t n, double *sqr, double *avg)
{
    double mean[4] = {0}, g[4];

    for (size_t i = 0; i < n; i++) {
        sqr[i] = 0;
        for (int d = 0; d < 4; d++) {
            g[d] = 1.0 + 0.5 * d + ((double)(crash_rand(seed) >> 11) / 9007199254740992.0 - 0.5);
            sqr[i] += g[d] * g[d];
            mean[d] += g[d] / (double)n;
        }
    }
    *avg = 0;
    for (int d = 0; d < 4; d++)
        *avg += mean[d] * mean[d];
}

/* The statistics and progress libcastor should have: the same steps through gns directly. */
struct expect {
    struct gns *g;
    double progress;
};

static void expect_step(struct expect *e, double local, int world, int accum, const double *sqr,
                        size_t n, double avg)
{
    struct gns_step st = {local, 32, world, accum};
    double buf[16];
    struct gns_norms nm;
    struct grad_params p;

    memcpy(buf, sqr, n * sizeof(double));
    buf[n] = avg;
    assert_int_equal(gns_norms_from(buf, n, &nm), 0);
    assert_int_equal(gns_update(e->g, &st, &nm), 0);
    gns_params(e->g, &p);
    e->progress += goodput_gain(&p, world * local * (accum + 1) / 32.0);
}

static void castor_step__reports_reach_the_server_per_configuration(void **state)
{
    struct fixture *f = *state;
    struct castor_options o = options(f, 2, 16, 0);
    struct castor *h = open_handle(&o);
    struct expect e = {NULL, 0};
    struct state_report_config *rows = NULL;
    struct state_job job;
    struct castor_stats s;
    double t[10], mean = 0, var = 0, sqr[4], avg;
    uint64_t seed = 3;
    size_t n = 0;

    assert_int_equal(gns_new(1, &e.g), 0);
    for (int i = 0; i < 10; i++) {
        t[i] = i == 0 ? 5.0 : 0.05 + 0.001 * i * i; /* the first 100 times slower: setup */
        mean += t[i] / 10;
        synth(&seed, 2, sqr, &avg);
        assert_int_equal(castor_step(h, t[i], 0.01, sqr, 2, avg), 0);
        expect_step(&e, 16, 2, 0, sqr, 2, avg);
    }
    /* the first step of the handle and of each batch is setup: its time is left out */
    mean = (mean * 10 - t[0]) / 9;
    for (int i = 1; i < 10; i++)
        var += (t[i] - mean) * (t[i] - mean) / 9;
    assert_int_equal(castor_set_batch(h, 24, 1), 0);
    for (int i = 0; i < 5; i++) {
        synth(&seed, 4, sqr, &avg);
        assert_int_equal(castor_step(h, 0.09, 0.02, sqr, 4, avg), 0);
        expect_step(&e, 24, 2, 1, sqr, 4, avg);
    }
    assert_int_equal(castor_flush(h, 5000), 0);

    assert_int_equal(state_report_configs(f->st, "j", &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].nodes, 1);
    assert_int_equal(rows[0].replicas, 2);
    assert_near(rows[0].local_bsz, 16, 0);
    assert_int_equal(rows[0].accum_steps, 0);
    assert_int_equal(rows[0].count, 9);
    assert_near(rows[0].step_mean, mean, 1e-12);
    assert_near(rows[0].step_sd, sqrt(var), 1e-9);
    assert_near(rows[0].sync_mean, 0.01, 1e-12);
    assert_near(rows[1].local_bsz, 24, 0);
    assert_int_equal(rows[1].accum_steps, 1);
    assert_int_equal(rows[1].count, 4);
    assert_near(rows[1].step_mean, 0.09, 1e-12);
    assert_near(rows[1].step_sd, 0, 1e-9);
    free(rows);

    struct grad_params p;

    gns_params(e.g, &p);
    assert_int_equal(state_job_get(f->st, "j", &job), 0);
    assert_near(job.grad_sqr, p.sqr, 1e-12 * fabs(p.sqr));
    assert_near(job.grad_var, p.var, 1e-12 * fabs(p.var));
    assert_near(job.progress, e.progress, 1e-12 * e.progress);
    assert_true(e.progress > 15); /* gains above 1: the var term counts */
    state_job_clear(&job);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_int_equal(s.steps, 15);
    assert_int_equal(s.time_warmup, 2);
    assert_int_equal(s.time_skipped, 0);
    assert_int_equal(s.reports_sent, 1);
    assert_near(s.grad_sqr, p.sqr, 0);

    /* a second report without new steps adds no steps to the state */
    assert_int_equal(castor_flush(h, 5000), 0);
    assert_int_equal(state_report_configs(f->st, "j", &rows, &n), 0);
    assert_int_equal(rows[0].count, 9);
    assert_int_equal(rows[1].count, 4);
    free(rows);
    castor_free(h);
    gns_free(e.g);
}

/* The longest a castor_step call may take while the controller is down or hangs. A step that
 * waited for the network would take the request timeout (300 ms or more in these tests); a step
 * that only queues its report takes microseconds, but on a loaded two-core machine under
 * AddressSanitizer the scheduler alone can stall a thread for several milliseconds (a CI run saw
 * more than 5 ms), so the bound sits between the two, well below any timeout. */
#define STEP_NEVER_WAITS_S 0.1

/* Steps every 10 ms for secs seconds; returns the longest castor_step call, in seconds. */
static double step_for(struct castor *h, double secs, int *count)
{
    double end = mono() + secs, worst = 0, sqr[2], avg;
    uint64_t seed = 11;

    while (mono() < end) {
        double t0;

        synth(&seed, 2, sqr, &avg);
        t0 = mono();
        assert_int_equal(castor_step(h, 0.05, 0.005, sqr, 2, avg), 0);
        worst = fmax(worst, mono() - t0);
        (*count)++;
        sleep_s(0.01);
    }
    return worst;
}

static void castor_step__unreachable_server_keeps_steps_and_retries(void **state)
{
    struct fixture *f = *state;
    struct castor_options o = options(f, 2, 16, 0);
    struct state_report_config *rows = NULL;
    struct castor_stats s;
    struct castor *h;
    int count = 0, port = f->port;
    size_t n = 0;
    double worst;

    unserve(f); /* nothing listens on the port now */
    o.report_interval = 0.05;
    o.timeout_ms = 500;
    h = open_handle(&o);
    worst = step_for(h, 1.5, &count);
    assert_true(worst < STEP_NEVER_WAITS_S);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_true(s.reports_failed >= 3); /* retried, with backoff: 0.05 s doubling */
    assert_true(s.reports_failed <= 8);
    assert_int_equal(s.reports_sent, 0);
    assert_int_equal(castor_flush(h, 2000), CASTOR_EIO);

    /* the controller comes back on the same port: every step reaches it, none twice */
    assert_int_equal(serve(f, port), 0);
    worst = step_for(h, 0.2, &count);
    assert_int_equal(castor_flush(h, 5000), 0);
    assert_int_equal(state_report_configs(f->st, "j", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].count, count - 1); /* the handle's first step is setup */
    free(rows);
    castor_free(h);
}

static void hang(void *arg, const struct lh_request *req, struct lh_reply *reply)
{
    (void)arg;
    (void)req;
    reply->action = LH_HANG;
}

static void castor_step__hanging_server_never_blocks_steps(void **state)
{
    struct castor_options o = options(*state, 2, 16, 0);
    struct lh_server *lh = NULL;
    struct castor_stats s;
    struct castor *h;
    char url[64];
    int count = 0;
    double t0;

    assert_int_equal(lh_start(hang, NULL, &lh), 0);
    lh_url(lh, url, sizeof(url));
    o.url = url;
    o.report_interval = 0.02;
    o.timeout_ms = 300;
    h = open_handle(&o);
    assert_true(step_for(h, 1.0, &count) < STEP_NEVER_WAITS_S);
    assert_int_equal(castor_flush(h, 50), CASTOR_EAGAIN); /* still waiting for the answer */
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_true(s.reports_failed >= 1);
    t0 = mono();
    castor_free(h); /* waits at most for the request in flight */
    assert_true(mono() - t0 < 0.6);
    lh_stop(lh);
}

/* A slow controller: every answer comes 0.8 s after its request, within the request timeout. */
static void slow(void *arg, const struct lh_request *req, struct lh_reply *reply)
{
    (void)arg;
    sleep_s(0.8);
    lh_reply_text(reply, 200, "application/json",
                  strcmp(req->method, "GET") == 0
                      ? "{\"state\":\"running\",\"nodes\":[\"n1\"],\"world_size\":2,"
                        "\"local_bsz\":16,\"accum_steps\":0,\"lr_gain\":1}"
                      : "{}");
}

/* castor_free waits at most one request timeout, also for a slow controller whose every answer
 * comes within it: the attempt in flight makes no further request (the allocation after the
 * report, a report after a checkpoint notice) once the handle is being freed. */
static void castor_free__waits_one_timeout_for_a_slow_controller(void **state)
{
    struct castor_options o = options(*state, 2, 16, 0);
    struct lh_server *lh = NULL;
    struct castor *h;
    char url[64];
    double t0, sqr[2] = {4.0, 3.0};

    assert_int_equal(lh_start(slow, NULL, &lh), 0);
    lh_url(lh, url, sizeof(url));
    o.url = url;
    o.timeout_ms = 1000;
    h = open_handle(&o);
    assert_int_equal(castor_step(h, 0.05, 0.0, sqr, 2, 2.5), 0);
    assert_int_equal(castor_flush(h, 100), CASTOR_EAGAIN); /* the report is on its way */
    t0 = mono();
    castor_free(h);
    assert_true(mono() - t0 < 1.0);
    lh_stop(lh);
}

/* A controller busy at first: the next `busy` requests are answered 429 with Retry-After: 1 and
 * the API's reason; the others 200, counting what reports and checkpoint notices carried. */
struct busy {
    pthread_mutex_t mu;
    int busy;
    double last429;     /* when the last 429 was answered (monotonic) */
    double first_after; /* when the first request after it came; 0: none yet */
    long steps;         /* the steps of the reports answered 200 */
    double ckpt;        /* the progress of the last checkpoint notice answered 200; -1: none */
};

static void busy_handle(void *arg, const struct lh_request *req, struct lh_reply *reply)
{
    struct busy *b = arg;
    struct jv *v = NULL;
    const struct jv *configs;
    long long count;
    double progress;

    pthread_mutex_lock(&b->mu);
    if (b->busy > 0) {
        b->busy--;
        b->last429 = mono();
        b->first_after = 0;
        lh_reply_text(reply, 429, "application/json",
                      "{\"error\":\"too many requests; retry later\"}");
        snprintf(reply->header, sizeof(reply->header), "Retry-After: 1");
        pthread_mutex_unlock(&b->mu);
        return;
    }
    if (b->first_after == 0)
        b->first_after = mono();
    if (strcmp(req->method, "POST") == 0 && jv_parse(req->body, req->body_len, &v, NULL) == 0) {
        configs = jv_get(v, "configs");
        for (size_t i = 0; i < jv_size(configs); i++)
            if (jv_integer_value(jv_get(jv_at(configs, i), "count"), &count) == 0)
                b->steps += (long)count;
        if (strstr(req->target, "/checkpoint") &&
            jv_number_value(jv_get(v, "progress"), &progress) == 0)
            b->ckpt = progress;
    }
    jv_free(v);
    lh_reply_text(reply, 200, "application/json",
                  strcmp(req->method, "GET") == 0
                      ? "{\"state\":\"running\",\"nodes\":[\"n1\"],\"world_size\":2,"
                        "\"local_bsz\":16,\"accum_steps\":0,\"lr_gain\":1}"
                      : "{}");
    pthread_mutex_unlock(&b->mu);
}

/*
 * HTTP 429 (too many requests) is not a refusal: a checkpoint notice answered 429 is kept and
 * sent again by the reporting thread, a report's steps are kept and sent with the next attempt,
 * no request is made before the answer's Retry-After (1 s, where the backoff alone would retry
 * at once), and the log says what the controller answered (status and reason).
 */
static void castor_step__too_many_requests_keeps_data_and_waits(void **state)
{
    struct castor_options o = options(*state, 2, 16, 0);
    struct busy b = {.mu = PTHREAD_MUTEX_INITIALIZER, .busy = 1, .ckpt = -1};
    char url[64], path[] = "/tmp/castor-test-log-XXXXXX", *log;
    double sqr[2] = {1.0, 1.2}, avg = 1.0;
    struct lh_server *lh = NULL;
    struct castor_stats s;
    struct castor *h;
    int fd, saved;
    FILE *f;

    assert_int_equal(lh_start(busy_handle, &b, &lh), 0);
    lh_url(lh, url, sizeof(url));
    o.url = url;
    o.timeout_ms = 2000;
    fd = mkstemp(path); /* the library logs on stderr: into a file for a while */
    assert_true(fd >= 0);
    fflush(stderr);
    saved = dup(2);
    assert_true(saved >= 0 && dup2(fd, 2) == 2);
    h = open_handle(&o);
    for (int i = 0; i < 10; i++)
        assert_int_equal(castor_step(h, 0.05, 0.005, sqr, 2, avg), 0);
    assert_int_equal(castor_set_progress(h, 42), 0);
    assert_int_equal(castor_checkpointed(h), CASTOR_EIO); /* busy: not refused */
    assert_int_equal(castor_flush(h, 5000), 0); /* the thread sends it, after the Retry-After */
    pthread_mutex_lock(&b.mu);
    assert_true(b.ckpt == 42);
    assert_int_equal(b.steps, 9); /* the first step is setup, its time left out */
    assert_true(b.first_after - b.last429 >= 0.95);
    b.busy = 1;
    pthread_mutex_unlock(&b.mu);

    for (int i = 0; i < 5; i++)
        assert_int_equal(castor_step(h, 0.05, 0.005, sqr, 2, avg), 0);
    assert_int_equal(castor_flush(h, 5000), CASTOR_EIO); /* the report answered 429 */
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_int_equal(s.reports_refused, 0);
    assert_int_equal(s.steps_dropped, 0);
    assert_int_equal(castor_flush(h, 5000), 0);
    pthread_mutex_lock(&b.mu);
    assert_int_equal(b.steps, 14); /* none dropped, none twice */
    assert_true(b.first_after - b.last429 >= 0.95);
    pthread_mutex_unlock(&b.mu);
    castor_free(h);

    fflush(stderr);
    assert_true(dup2(saved, 2) == 2);
    close(saved);
    close(fd);
    f = fopen(path, "r");
    assert_non_null(f);
    log = calloc(1, 65536);
    assert_non_null(log);
    assert_true(fread(log, 1, 65535, f) > 0);
    fclose(f);
    unlink(path);
    assert_non_null(strstr(log, "the checkpoint notice: HTTP 429, too many requests; retry later"));
    assert_non_null(strstr(log, "the report: HTTP 429, too many requests; retry later"));
    assert_null(strstr(log, "conflicts with existing data"));
    free(log);
    lh_stop(lh);
}

static void castor_step__bad_input_is_skipped_and_counted(void **state)
{
    struct castor_options o = options(NULL, 1, 8, 1);
    struct castor *h = open_handle(&o);
    struct castor_stats s0, s;
    double good[2] = {4.0, 3.0}, bad[2] = {4.0, NAN};
    double before_progress;

    (void)state;
    assert_int_equal(castor_step(h, 0.05, 0.0, good, 2, 2.5), 0);
    assert_int_equal(castor_get_stats(h, &s0, sizeof(s0)), 0);
    assert_false(isnan(s0.grad_sqr));
    before_progress = s0.progress;

    /* the gradient part refused: NaN, infinite, negative, a wrong count, a NaN average */
    bad[1] = NAN;
    assert_int_equal(castor_step(h, 0.05, 0.0, bad, 2, 2.5), CASTOR_EINVAL);
    bad[1] = INFINITY;
    assert_int_equal(castor_step(h, 0.05, 0.0, bad, 2, 2.5), CASTOR_EINVAL);
    bad[1] = -1.0;
    assert_int_equal(castor_step(h, 0.05, 0.0, bad, 2, 2.5), CASTOR_EINVAL);
    assert_int_equal(castor_step(h, 0.05, 0.0, good, 1, 2.5), CASTOR_EINVAL);
    assert_int_equal(castor_step(h, 0.05, 0.0, good, 2, NAN), CASTOR_EINVAL);
    assert_int_equal(castor_step(h, 0.05, 0.0, NULL, 2, 2.5), CASTOR_EINVAL);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_int_equal(s.grad_skipped, 6);
    assert_int_equal(s.time_skipped, 0);
    assert_near(s.grad_sqr, s0.grad_sqr, 0);
    assert_near(s.grad_var, s0.grad_var, 0);
    assert_near(s.progress, before_progress, 0);

    /* the timing refused: NaN, negative, zero, sync not below the step, negative sync */
    assert_int_equal(castor_step(h, NAN, 0.0, NULL, 0, 0), CASTOR_EINVAL);
    assert_int_equal(castor_step(h, -0.05, 0.0, NULL, 0, 0), CASTOR_EINVAL);
    assert_int_equal(castor_step(h, 0.0, 0.0, NULL, 0, 0), CASTOR_EINVAL);
    assert_int_equal(castor_step(h, 0.05, 0.05, NULL, 0, 0), CASTOR_EINVAL);
    assert_int_equal(castor_step(h, 0.05, -0.01, NULL, 0, 0), CASTOR_EINVAL);
    /* a bad time with good norms: the statistics still count */
    assert_int_equal(castor_step(h, INFINITY, 0.0, good, 2, 2.0), CASTOR_EINVAL);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_int_equal(s.time_skipped, 6);
    assert_int_equal(s.grad_skipped, 6);
    assert_int_equal(s.steps, 13);
    assert_true(s.grad_sqr != s0.grad_sqr);
    assert_true(s.progress > before_progress);

    assert_int_equal(castor_step(NULL, 0.05, 0.0, good, 2, 2.5), CASTOR_EINVAL);
    assert_int_equal(castor_set_batch(h, -1, 0), CASTOR_EINVAL);
    assert_int_equal(castor_set_batch(h, 8, -1), CASTOR_EINVAL);
    assert_int_equal(castor_flush(h, 10), 0); /* no controller: nothing to wait for */
    castor_free(h);
}

/* A refused step changes nothing, also one that names another number of parameter groups: the
 * statistics measured so far stay (a step accepted with a new group count starts them anew). */
static void castor_step_groups__a_refused_step_keeps_the_statistics(void **state)
{
    struct castor_options o = options(NULL, 1, 8, 1);
    struct castor *h = open_handle(&o);
    struct castor_stats s0, s;
    double good[2] = {4.0, 3.0}, bad[4] = {4.0, 3.0, NAN, 1.0}, avg2[2] = {2.5, 2.5};

    (void)state;
    assert_int_equal(castor_step(h, 0.05, 0.0, good, 2, 2.5), 0);
    assert_int_equal(castor_get_stats(h, &s0, sizeof(s0)), 0);
    assert_false(isnan(s0.grad_sqr));
    /* two groups, one norm NaN: refused */
    assert_int_equal(castor_step_groups(h, 0.05, 0.0, 2, bad, 2, avg2), CASTOR_EINVAL);
    /* two groups, an average NaN: refused */
    bad[2] = 4.0;
    avg2[1] = NAN;
    assert_int_equal(castor_step_groups(h, 0.05, 0.0, 2, bad, 2, avg2), CASTOR_EINVAL);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_int_equal(s.grad_skipped, 2);
    assert_near(s.grad_sqr, s0.grad_sqr, 0);
    assert_near(s.grad_var, s0.grad_var, 0);
    assert_near(s.progress, s0.progress, 0);
    /* the same group count goes on from them */
    assert_int_equal(castor_step(h, 0.05, 0.0, good, 2, 2.5), 0);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_true(s.progress > s0.progress);
    castor_free(h);
}

/* Steps that found the report full (a 65th configuration) are counted in steps_dropped, a
 * counter: it stays counted after a report reached the controller, and drops after it add on. */
static void castor_get_stats__steps_dropped_stays_counted(void **state)
{
    struct fixture *f = *state;
    struct castor_options o = options(f, 1, 8, 0);
    struct castor *h = open_handle(&o);
    struct state_report_config *rows = NULL;
    struct castor_stats s;
    size_t n = 0;

    /* 65 batches, each its first (setup) step and one step pooled: 64 fit, one is dropped */
    for (int i = 0; i < 65; i++) {
        assert_int_equal(castor_set_batch(h, 8 + i, 0), 0);
        assert_int_equal(castor_step(h, 0.05, 0.0, NULL, 0, 0), 0);
        assert_int_equal(castor_step(h, 0.05, 0.0, NULL, 0, 0), 0);
    }
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_int_equal(s.steps_dropped, 1);
    assert_int_equal(castor_flush(h, 5000), 0);
    assert_int_equal(state_report_configs(f->st, "j", &rows, &n), 0);
    assert_int_equal(n, 64);
    free(rows);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_int_equal(s.reports_sent, 1);
    assert_int_equal(s.steps_dropped, 1); /* still counted once the report went */

    /* another 65 new configurations: 64 fit the next report, one more dropped */
    for (int i = 0; i < 65; i++) {
        assert_int_equal(castor_set_batch(h, 100 + i, 0), 0);
        assert_int_equal(castor_step(h, 0.05, 0.0, NULL, 0, 0), 0);
        assert_int_equal(castor_step(h, 0.05, 0.0, NULL, 0, 0), 0);
    }
    assert_int_equal(castor_flush(h, 5000), 0);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_int_equal(s.reports_sent, 2);
    assert_int_equal(s.steps_dropped, 2);
    castor_free(h);
}

static void castor_step__single_gradient_pairs_with_the_previous(void **state)
{
    struct castor_options o = options(NULL, 1, 16, 0);
    struct castor *h = open_handle(&o);
    struct gns_step st = {16, 32, 1, 0};
    struct gns_norms nm = {5.0, 5.0, 1, 4.0, 4.25};
    struct grad_params want;
    struct gns *g = NULL;
    struct castor_stats s;

    (void)state;
    /* the first only starts the pairing; the second is the differenced estimate */
    assert_int_equal(castor_step(h, 0.05, 0.0, (double[]){4.0}, 1, NAN), 0);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_true(isnan(s.grad_sqr));
    assert_int_equal(castor_step(h, 0.05, 0.0, (double[]){5.0}, 1, 4.25), 0);
    assert_int_equal(gns_new(1, &g), 0);
    assert_int_equal(gns_update(g, &st, &nm), 0);
    gns_params(g, &want);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_near(s.grad_sqr, want.sqr, 1e-15);
    assert_near(s.grad_var, want.var, 1e-15);
    assert_int_equal(s.grad_biased, 1);
    /* a new batch size breaks the pair: the next step only starts a new one */
    assert_int_equal(castor_set_batch(h, 24, 0), 0);
    assert_int_equal(castor_step(h, 0.05, 0.0, (double[]){5.0}, 1, 1.0), 0);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_near(s.grad_sqr, want.sqr, 0);
    gns_free(g);
    castor_free(h);
}

static void castor_get_decision__follows_the_allocation(void **state)
{
    struct fixture *f = *state;
    struct castor_options o = options(f, 2, 16, 0);
    struct castor *h = open_handle(&o);
    struct state_alloc three[] = {{"n1", 3, 0}};
    struct castor_decision d;

    /* before any answer: the starting configuration */
    assert_int_equal(castor_get_decision(h, &d, sizeof(d)), 0);
    assert_int_equal(d.version, 0);
    assert_near(d.local_bsz, 16, 0);
    assert_near(d.lr_gain, 1, 0);

    assert_int_equal(state_job_set_config(f->st, "j", 64, 1, 1.25), 0);
    assert_int_equal(castor_flush(h, 5000), 0);
    assert_int_equal(castor_get_decision(h, &d, sizeof(d)), 0);
    assert_int_equal(d.version, 1);
    assert_int_equal(d.world_size, 2);
    assert_near(d.local_bsz, 64, 0);
    assert_int_equal(d.accum_steps, 1);
    assert_near(d.lr_gain, 1.25, 0);
    assert_true(d.from_controller);

    assert_int_equal(state_alloc_replace(f->st, "j", three, 1, 2.0), 0);
    assert_int_equal(state_job_set_config(f->st, "j", 48, 0, 1.5), 0);
    assert_int_equal(castor_flush(h, 5000), 0);
    assert_int_equal(castor_get_decision(h, &d, sizeof(d)), 0);
    assert_int_equal(d.version, 2);
    assert_int_equal(d.world_size, 3);
    assert_int_equal(d.nodes, 1);
    assert_near(d.local_bsz, 48, 0);
    assert_int_equal(d.accum_steps, 0);
    assert_near(d.lr_gain, 1.5, 0);
    assert_int_equal(castor_flush(h, 5000), 0); /* the same answer: the same version */
    assert_int_equal(castor_get_decision(h, &d, sizeof(d)), 0);
    assert_int_equal(d.version, 2);
    castor_free(h);
}

/* castor_checkpointed and castor_finished reach the controller with the progress of the moment;
 * an unreachable controller is CASTOR_EIO and a refusal CASTOR_EREFUSED, and neither stops the
 * handle; on other ranks and without a controller they do nothing. */
static void castor_checkpointed__tells_the_controller(void **state)
{
    struct fixture *f = *state;
    struct castor_options o = options(f, 2, 16, 0), other = o, none = options(NULL, 1, 16, 0);
    struct castor *h = open_handle(&o), *h1, *hn;
    struct state_job job;
    double sqr[2] = {1.0, 1.2}, avg = 1.0;

    assert_int_equal(castor_checkpointed(NULL), CASTOR_EINVAL);
    assert_int_equal(castor_finished(NULL), CASTOR_EINVAL);
    assert_int_equal(castor_set_progress(h, 120.5), 0);
    assert_int_equal(castor_checkpointed(h), 0);
    assert_int_equal(state_job_get(f->st, "j", &job), 0);
    assert_near(job.checkpoint_progress, 120.5, 1e-9);
    assert_int_equal(job.state, STATE_JOB_RUNNING);
    state_job_clear(&job);

    /* a rank other than 0 and a handle without a controller say nothing */
    other.rank = 1;
    h1 = open_handle(&other);
    hn = open_handle(&none);
    assert_int_equal(castor_set_progress(h1, 999), 0);
    assert_int_equal(castor_checkpointed(h1), 0);
    assert_int_equal(castor_finished(h1), 0);
    assert_int_equal(castor_finished(hn), 0);
    assert_int_equal(state_job_get(f->st, "j", &job), 0);
    assert_near(job.checkpoint_progress, 120.5, 1e-9);
    state_job_clear(&job);
    castor_free(h1);
    castor_free(hn);

    /* the controller away: CASTOR_EIO, and the handle goes on stepping */
    unserve(f);
    assert_int_equal(castor_set_progress(h, 130), 0);
    assert_int_equal(castor_checkpointed(h), CASTOR_EIO);
    assert_int_equal(castor_step(h, 0.05, 0.01, sqr, 2, avg), 0);
    assert_int_equal(serve(f, 0), 0);
    castor_free(h); /* the handle's URL named the old port */
    o = options(f, 2, 16, 0);
    h = open_handle(&o);

    assert_int_equal(castor_set_progress(h, 150), 0);
    assert_int_equal(castor_finished(h), 0);
    assert_int_equal(state_job_get(f->st, "j", &job), 0);
    assert_int_equal(job.state, STATE_JOB_FINISHED);
    assert_near(job.progress, 150, 1e-9);
    state_job_clear(&job);
    /* a checkpoint after the end is refused (the job is final): CASTOR_EREFUSED */
    assert_int_equal(castor_checkpointed(h), CASTOR_EREFUSED);
    castor_free(h);
}

/* With the node's all-reduce bandwidth (1 GB/s) and the gradients' size (4 MB), the job's sync
 * prior (4 ms) reaches the controller with the next report; bad sizes and bandwidths are refused;
 * without a bandwidth no prior is sent. */
static void castor_set_grad_bytes__sends_the_sync_prior(void **state)
{
    struct fixture *f = *state;
    struct castor_options o = options(f, 2, 16, 0), bad = o;
    struct castor *h = NULL;
    struct state_job job;
    char msg[256] = "";

    bad.allreduce_busbw = -1;
    assert_int_equal(castor_new(&bad, sizeof(bad), &h, msg, sizeof(msg)), CASTOR_EINVAL);
    assert_non_null(strstr(msg, "allreduce_busbw"));
    o.allreduce_busbw = 1e9;
    h = open_handle(&o);
    assert_int_equal(castor_set_grad_bytes(NULL, 1), CASTOR_EINVAL);
    assert_int_equal(castor_set_grad_bytes(h, -1), CASTOR_EINVAL);
    assert_int_equal(castor_set_grad_bytes(h, NAN), CASTOR_EINVAL);
    assert_int_equal(castor_flush(h, 5000), 0);
    assert_int_equal(state_job_get(f->st, "j", &job), 0);
    assert_true(isnan(job.sync_prior));
    state_job_clear(&job);
    assert_int_equal(castor_set_grad_bytes(h, 4e6), 0);
    assert_int_equal(castor_flush(h, 5000), 0);
    assert_int_equal(state_job_get(f->st, "j", &job), 0);
    assert_near(job.sync_prior, 0.004, 1e-15);
    state_job_clear(&job);
    castor_free(h);

    /* no bandwidth measured: the size alone gives no prior */
    o.allreduce_busbw = 0;
    h = open_handle(&o);
    assert_int_equal(castor_set_grad_bytes(h, 8e6), 0);
    assert_int_equal(castor_flush(h, 5000), 0);
    assert_int_equal(state_job_get(f->st, "j", &job), 0);
    assert_near(job.sync_prior, 0.004, 1e-15); /* the earlier one stays */
    state_job_clear(&job);
    castor_free(h);
}

static void castor_get_decision__without_a_plan_chooses_locally(void **state)
{
    struct fixture *f = *state;
    struct castor_options o = options(f, 2, 16, 0);
    struct castor_decision d;
    struct castor_stats s;
    struct grad_params g;
    struct castor *h;
    uint64_t seed = 5;
    double sqr[4], avg;

    o.max_bsz = 512;
    o.max_local_bsz = 64;
    o.accumulation = 1;
    o.lr_gain = 2; /* no choice has this gain: the first answer is a new decision */
    h = open_handle(&o);
    for (int i = 0; i < 40; i++) {
        synth(&seed, 2, sqr, &avg);
        assert_int_equal(castor_step(h, 0.05 + 0.0001 * (i % 3), 0.01, sqr, 2, avg), 0);
    }
    assert_int_equal(castor_set_batch(h, 32, 0), 0);
    for (int i = 0; i < 40; i++) {
        synth(&seed, 2, sqr, &avg);
        assert_int_equal(castor_step(h, 0.09 + 0.0001 * (i % 3), 0.01, sqr, 2, avg), 0);
    }
    assert_int_equal(castor_flush(h, 5000), 0);
    assert_int_equal(castor_get_decision(h, &d, sizeof(d)), 0);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    g.sqr = s.grad_sqr;
    g.var = s.grad_var;
    assert_false(d.from_controller);
    assert_int_equal(d.version, 1);
    assert_int_equal(d.world_size, 2);
    assert_true(d.local_bsz >= 1 && d.local_bsz <= 64);
    assert_true(2 * d.local_bsz * (d.accum_steps + 1) >= 32 - 1e-9);
    assert_true(2 * d.local_bsz * (d.accum_steps + 1) <= 520); /* whole micro-batches */
    assert_near(d.lr_gain, goodput_gain(&g, 2 * d.local_bsz * (d.accum_steps + 1) / 32), 1e-12);
    castor_free(h);
}

static void castor_step__other_ranks_only_count(void **state)
{
    struct fixture *f = *state;
    struct castor_options o = options(f, 2, 16, 0);
    struct state_report_config *rows = NULL;
    struct castor_stats s;
    struct castor *h;
    size_t n = 5;

    o.rank = 1;
    o.report_interval = 0.01;
    h = open_handle(&o);
    assert_int_equal(castor_step(h, 0.05, 0.01, (double[]){1, 2}, 2, 1.2), 0);
    assert_int_equal(castor_flush(h, 100), 0);
    sleep_s(0.05);
    assert_int_equal(castor_get_stats(h, &s, sizeof(s)), 0);
    assert_int_equal(s.steps, 1);
    assert_true(isnan(s.grad_sqr));
    assert_int_equal(state_report_configs(f->st, "j", &rows, &n), 0);
    assert_int_equal(n, 0);
    free(rows);
    castor_free(h);
}

static void castor_new__refuses_bad_options(void **state)
{
    struct castor_options base = options(*state, 2, 16, 0), o;
    struct castor *h = NULL;
    char msg[256];

    o = base;
    o.rank = 2;
    assert_int_equal(castor_new(&o, sizeof(o), &h, msg, sizeof(msg)), CASTOR_EINVAL);
    assert_non_null(strstr(msg, "rank"));
    o = base;
    o.nodes = 3;
    assert_int_equal(castor_new(&o, sizeof(o), &h, msg, sizeof(msg)), CASTOR_EINVAL);
    o = base;
    o.url = "ftp://127.0.0.1/";
    assert_int_equal(castor_new(&o, sizeof(o), &h, msg, sizeof(msg)), CASTOR_EINVAL);
    o = base;
    o.job = "../etc";
    assert_int_equal(castor_new(&o, sizeof(o), &h, msg, sizeof(msg)), CASTOR_EINVAL);
    o = base;
    o.token = "short secret";
    assert_int_equal(castor_new(&o, sizeof(o), &h, msg, sizeof(msg)), CASTOR_EINVAL);
    assert_null(strstr(msg, "short secret"));
    o = base;
    o.local_bsz = NAN;
    assert_int_equal(castor_new(&o, sizeof(o), &h, msg, sizeof(msg)), CASTOR_EINVAL);
    o = base;
    o.max_bsz = 16; /* below init_bsz 32 */
    assert_int_equal(castor_new(&o, sizeof(o), &h, msg, sizeof(msg)), CASTOR_EINVAL);
    assert_null(h);
    assert_int_equal(castor_new(NULL, 0, &h, NULL, 0), CASTOR_EINVAL);
    assert_int_equal(castor_version(), CASTOR_VERSION_NUMBER);
    for (int c = 0; c >= -16; c--)
        assert_non_null(castor_strerror(c));
}

static const char *const env_names[] = {"CASTOR_URL",
                                        "CASTOR_JOB",
                                        "CASTOR_JOB_TOKEN",
                                        "CASTOR_JOB_TOKEN_FILE",
                                        "CASTOR_RANK",
                                        "CASTOR_WORLD_SIZE",
                                        "CASTOR_NODES",
                                        "CASTOR_LOCAL_BSZ",
                                        "CASTOR_ACCUM_STEPS",
                                        "CASTOR_LR_GAIN",
                                        "CASTOR_INIT_BSZ",
                                        "CASTOR_MAX_BSZ",
                                        "CASTOR_MAX_LOCAL_BSZ",
                                        "CASTOR_ACCUMULATION",
                                        "CASTOR_REPORT_INTERVAL",
                                        "CASTOR_TIMEOUT_MS",
                                        "CASTOR_CA_FILE",
                                        "CASTOR_SEED",
                                        "CASTOR_ALLREDUCE_BUSBW"};

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof(env_names) / sizeof(env_names[0]); i++)
        unsetenv(env_names[i]);
}

static void castor_new_from_env__reads_the_environment(void **state)
{
    struct fixture *f = *state;
    struct castor_decision d;
    struct castor *h = NULL;
    char msg[256], path[128];
    FILE *tf;

    clear_env();
    assert_int_equal(castor_new_from_env(&h, msg, sizeof(msg)), 0); /* no controller */
    assert_int_equal(castor_flush(h, 10), 0);
    castor_free(h);
    h = NULL;

    snprintf(path, sizeof(path), "%s/token", f->db.dir);
    tf = fopen(path, "w");
    assert_non_null(tf);
    fprintf(tf, "%s\n", TOKEN_JOB);
    fclose(tf);
    chmod(path, 0600);
    setenv("CASTOR_URL", f->url, 1);
    setenv("CASTOR_JOB", "j", 1);
    setenv("CASTOR_JOB_TOKEN_FILE", path, 1);
    setenv("CASTOR_RANK", "0", 1);
    setenv("CASTOR_WORLD_SIZE", "2", 1);
    setenv("CASTOR_LOCAL_BSZ", "16", 1);
    setenv("CASTOR_ACCUM_STEPS", "1", 1);
    setenv("CASTOR_LR_GAIN", "1.5", 1);
    setenv("CASTOR_REPORT_INTERVAL", "3600", 1);
    assert_int_equal(castor_new_from_env(&h, msg, sizeof(msg)), 0);
    assert_int_equal(castor_get_decision(h, &d, sizeof(d)), 0);
    assert_int_equal(d.world_size, 2);
    assert_near(d.local_bsz, 16, 0);
    assert_int_equal(d.accum_steps, 1);
    assert_near(d.lr_gain, 1.5, 0);
    assert_int_equal(castor_flush(h, 5000), 0); /* the token from the file is accepted */
    castor_free(h);
    h = NULL;

    chmod(path, 0644);
    assert_int_equal(castor_new_from_env(&h, msg, sizeof(msg)), CASTOR_EINVAL);
    assert_non_null(strstr(msg, "CASTOR_JOB_TOKEN_FILE"));
    assert_null(strstr(msg, TOKEN_JOB));
    unlink(path);
    assert_int_equal(castor_new_from_env(&h, msg, sizeof(msg)), CASTOR_ENOENT);
    unsetenv("CASTOR_JOB_TOKEN_FILE");
    assert_int_equal(castor_new_from_env(&h, msg, sizeof(msg)), CASTOR_ENOENT);
    setenv("CASTOR_JOB_TOKEN", "tiny", 1);
    assert_int_equal(castor_new_from_env(&h, msg, sizeof(msg)), CASTOR_EINVAL);
    assert_null(strstr(msg, "tiny"));
    setenv("CASTOR_JOB_TOKEN", TOKEN_JOB, 1);
    setenv("CASTOR_RANK", "2", 1);
    assert_int_equal(castor_new_from_env(&h, msg, sizeof(msg)), CASTOR_EINVAL);
    assert_non_null(strstr(msg, "CASTOR_RANK"));
    setenv("CASTOR_RANK", "0", 1);
    setenv("CASTOR_LOCAL_BSZ", "16x", 1);
    assert_int_equal(castor_new_from_env(&h, msg, sizeof(msg)), CASTOR_EINVAL);
    assert_non_null(strstr(msg, "CASTOR_LOCAL_BSZ"));
    setenv("CASTOR_LOCAL_BSZ", "16", 1);
    setenv("CASTOR_ALLREDUCE_BUSBW", "fast", 1);
    assert_int_equal(castor_new_from_env(&h, msg, sizeof(msg)), CASTOR_EINVAL);
    assert_non_null(strstr(msg, "CASTOR_ALLREDUCE_BUSBW"));
    setenv("CASTOR_ALLREDUCE_BUSBW", "2e9", 1); /* the node's: 8 MB of gradients take 4 ms */
    assert_int_equal(castor_new_from_env(&h, msg, sizeof(msg)), 0);
    assert_int_equal(castor_set_grad_bytes(h, 8e6), 0);
    assert_int_equal(castor_flush(h, 5000), 0);
    {
        struct state_job job;

        assert_int_equal(state_job_get(f->st, "j", &job), 0);
        assert_near(job.sync_prior, 0.004, 1e-15);
        state_job_clear(&job);
    }
    castor_free(h);
    h = NULL;
    assert_null(h);
    clear_env();
}

static void castor_save_state__restores_progress_and_statistics(void **state)
{
    struct castor_options o = options(NULL, 2, 16, 0);
    struct castor *a = open_handle(&o), *b = open_handle(&o);
    struct castor_stats sa, sb;
    char small[8], *buf;
    uint64_t seed = 9;
    double sqr[2], avg;
    size_t len = 0;

    (void)state;
    for (int i = 0; i < 20; i++) {
        synth(&seed, 2, sqr, &avg);
        assert_int_equal(castor_step(a, 0.05, 0.0, sqr, 2, avg), 0);
    }
    assert_int_equal(castor_save_state(a, small, sizeof(small), &len), CASTOR_ERANGE);
    assert_true(len > sizeof(small));
    buf = malloc(len + 1);
    assert_int_equal(castor_save_state(a, buf, len + 1, &len), 0);
    assert_int_equal(strlen(buf), len);
    assert_int_equal(castor_load_state(b, "{\"castor_state\":2}", 18), CASTOR_EPARSE);
    assert_int_equal(castor_load_state(b, "not json", 8), CASTOR_EPARSE);
    assert_int_equal(castor_get_stats(b, &sb, sizeof(sb)), 0);
    assert_true(isnan(sb.grad_sqr));
    assert_int_equal(castor_load_state(b, buf, len), 0);
    for (int i = 0; i < 5; i++) {
        synth(&seed, 2, sqr, &avg);
        assert_int_equal(castor_step(a, 0.05, 0.0, sqr, 2, avg), 0);
        assert_int_equal(castor_step(b, 0.05, 0.0, sqr, 2, avg), 0);
    }
    assert_int_equal(castor_get_stats(a, &sa, sizeof(sa)), 0);
    assert_int_equal(castor_get_stats(b, &sb, sizeof(sb)), 0);
    assert_near(sa.grad_sqr, sb.grad_sqr, 0);
    assert_near(sa.grad_var, sb.grad_var, 0);
    assert_near(sa.progress, sb.progress, 1e-12);
    free(buf);
    castor_free(a);
    castor_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(castor_step__reports_reach_the_server_per_configuration,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(castor_step__unreachable_server_keeps_steps_and_retries,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(castor_step__hanging_server_never_blocks_steps, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(castor_free__waits_one_timeout_for_a_slow_controller, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(castor_step__too_many_requests_keeps_data_and_waits, setup,
                                        teardown),
        cmocka_unit_test(castor_step__bad_input_is_skipped_and_counted),
        cmocka_unit_test(castor_step__single_gradient_pairs_with_the_previous),
        cmocka_unit_test(castor_step_groups__a_refused_step_keeps_the_statistics),
        cmocka_unit_test_setup_teardown(castor_get_stats__steps_dropped_stays_counted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(castor_get_decision__follows_the_allocation, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(castor_checkpointed__tells_the_controller, setup, teardown),
        cmocka_unit_test_setup_teardown(castor_set_grad_bytes__sends_the_sync_prior, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(castor_get_decision__without_a_plan_chooses_locally, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(castor_step__other_ranks_only_count, setup, teardown),
        cmocka_unit_test_setup_teardown(castor_new__refuses_bad_options, setup, teardown),
        cmocka_unit_test_setup_teardown(castor_new_from_env__reads_the_environment, setup,
                                        teardown),
        cmocka_unit_test(castor_save_state__restores_progress_and_statistics),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
