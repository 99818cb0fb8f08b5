/* api_bench.c: load on the controller's API over loopback: C clients, each over its own kept-alive
 * connection, post training-job reports at an aggregate rate R for a bounded number of requests,
 * while a second connection to the state writes a decision every tick; prints latency
 * percentiles. A benchmark, not a timed test. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control/api.h"
#include "control/state.h"
#include "util/error.h"
#include "util/http_client.h"
#include "util/http_server.h"

#define AB_TOKEN_NODE "bench-node-token-0123456789"
#define AB_TOKEN_JOB "bench-job-token-0123456789"
#define AB_TOKEN_USER "bench-user-token-0123456789"

struct ab_opts {
    int clients;
    long requests; /* in all */
    double rate;   /* requests per second, in all */
    unsigned threads;
    int tick_ms;
    const char *dir;
};

struct ab_client {
    int index;
    int port;
    const struct ab_opts *o;
    double start;    /* when the run began (monotonic seconds) */
    long n;          /* requests this client sends */
    double *sched;   /* latency from the scheduled time, per request */
    double *service; /* latency from the send */
    long failed;
};

static double ab_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double ab_wall(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void ab_sleep_until(double t)
{
    double d = t - ab_now();
    struct timespec ts;

    if (d <= 0)
        return;
    ts.tv_sec = (time_t)d;
    ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

/* One client: its job's reports, one every clients / rate seconds, offset by its index. */
static void *ab_client_run(void *arg)
{
    struct ab_client *c = arg;
    const struct http_client_header headers[] = {{"Authorization", "Bearer " AB_TOKEN_JOB},
                                                 {"Content-Type", "application/json"}};
    double period = c->o->clients / c->o->rate;
    struct http_client_request req = {.method = "POST", .headers = headers, .nheaders = 2};
    struct http_client_response r;
    struct http_client *hc = NULL;
    char url[128], body[512];

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/jobs/job-%d/reports", c->port, c->index);
    req.url = url;
    if (http_client_new(&hc) < 0) {
        c->failed = c->n;
        return NULL;
    }
    for (long k = 0; k < c->n; k++) {
        double sched = c->start + period * ((double)k + (double)c->index / c->o->clients), sent;

        ab_sleep_until(sched);
        snprintf(body, sizeof(body),
                 "{\"configs\":[{\"nodes\":1,\"replicas\":%d,\"local_bsz\":64,\"accum_steps\":0,"
                 "\"count\":30,\"step_mean\":%.4f,\"step_sd\":0.01,\"sync_mean\":0.02}],"
                 "\"grad\":{\"sqr\":0.5,\"var\":2.0},\"progress\":%ld}",
                 1 + (int)(k % 4), 0.2 + 0.01 * (double)(k % 4), k);
        req.body = body;
        req.body_len = strlen(body);
        sent = ab_now();
        if (http_client_do(hc, &req, &r, NULL) < 0 || r.status != 200)
            c->failed++;
        else
            http_client_response_clear(&r);
        c->service[k] = ab_now() - sent;
        c->sched[k] = ab_now() - (sched > sent ? sent : sched);
    }
    http_client_free(hc);
    return NULL;
}

struct ab_ticker {
    const char *path;
    int tick_ms;
    volatile int stop;
    long ticks;
    long errors;
};

/* The loop's stand-in: its own connection to the state, one decision written every tick. */
static void *ab_tick_run(void *arg)
{
    struct ab_ticker *t = arg;
    struct state *st = NULL;

    if (state_open(t->path, &st, NULL) < 0) {
        t->errors++;
        return NULL;
    }
    while (!t->stop) {
        double next = ab_now() + t->tick_ms / 1000.0;

        if (state_decision_append(st, t->ticks, ab_wall(NULL), "{\"bench\":true}") < 0)
            t->errors++;
        t->ticks++;
        ab_sleep_until(next);
    }
    state_close(st);
    return NULL;
}

static int ab_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double ab_pct(const double *sorted, long n, double p)
{
    long i = (long)ceil(p * (double)n) - 1;

    return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static void ab_report(const char *what, double *v, long n)
{
    qsort(v, (size_t)n, sizeof(*v), ab_cmp);
    printf("  %-22s p50 %7.2f ms   p90 %7.2f ms   p99 %7.2f ms   max %7.2f ms\n", what,
           1e3 * ab_pct(v, n, 0.50), 1e3 * ab_pct(v, n, 0.90), 1e3 * ab_pct(v, n, 0.99),
           1e3 * v[n - 1]);
}

static int ab_usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--clients N] [--requests N] [--rate R] [--threads T] [--tick-ms MS] "
            "[--dir DIR]\n"
            "  T = 0: a thread per connection (default); MS = 0: no ticking\n",
            prog);
    return 2;
}

int main(int argc, char **argv)
{
    struct ab_opts o = {
        .clients = 200, .requests = 20000, .rate = 1000, .tick_ms = 1000, .dir = "/tmp"};
    struct api_tokens tokens = {
        {strdup(AB_TOKEN_NODE), strdup(AB_TOKEN_JOB), strdup(AB_TOKEN_USER), NULL}};
    /* every client is on loopback, each with its own connection: no per-client limit */
    struct http_server_config hc = {.max_connections = 1024, .max_client_connections = 0};
    struct ab_ticker ticker = {0};
    struct http_server *server = NULL;
    struct ab_client *clients = NULL;
    pthread_t *threads = NULL, tick_thread;
    struct api_config cfg = {0};
    struct state *st = NULL;
    struct api *api = NULL;
    struct error e = {0};
    char dir[256], path[300] = "";
    double *sched = NULL, *service = NULL, t0, elapsed;
    long failed = 0, at = 0;
    int rc = 1;

    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!v)
            return ab_usage(argv[0]);
        if (strcmp(argv[i], "--clients") == 0)
            o.clients = atoi(v);
        else if (strcmp(argv[i], "--requests") == 0)
            o.requests = atol(v);
        else if (strcmp(argv[i], "--rate") == 0)
            o.rate = atof(v);
        else if (strcmp(argv[i], "--threads") == 0)
            o.threads = (unsigned)atoi(v);
        else if (strcmp(argv[i], "--tick-ms") == 0)
            o.tick_ms = atoi(v);
        else if (strcmp(argv[i], "--dir") == 0)
            o.dir = v;
        else
            return ab_usage(argv[0]);
        i++;
    }
    if (o.clients < 1 || o.requests < o.clients || !(o.rate > 0))
        return ab_usage(argv[0]);
    hc.threads = o.threads;
    snprintf(dir, sizeof(dir), "%s/castor-api-bench-XXXXXX", o.dir);
    if (!mkdtemp(dir) || snprintf(path, sizeof(path), "%s/state.db", dir) < 0 ||
        state_open(path, &st, &e) < 0) {
        fprintf(stderr, "api_bench: cannot open a state in %s: %s\n", o.dir, e.msg);
        goto out;
    }
    for (int i = 0; i < o.clients; i++) {
        char name[32];

        snprintf(name, sizeof(name), "job-%d", i);
        if (state_job_submit(st, name, "{}", ab_wall(NULL)) < 0)
            goto out;
    }
    cfg.state = st;
    cfg.clock = ab_wall;
    cfg.tokens = &tokens;
    if (api_new(&cfg, &api, &e) < 0 || http_server_start(&hc, api_handle, api, &server, &e) < 0) {
        fprintf(stderr, "api_bench: %s\n", e.msg);
        goto out;
    }
    clients = calloc((size_t)o.clients, sizeof(*clients));
    threads = calloc((size_t)o.clients, sizeof(*threads));
    sched = calloc((size_t)o.requests, sizeof(*sched));
    service = calloc((size_t)o.requests, sizeof(*service));
    if (!clients || !threads || !sched || !service)
        goto out;
    ticker.path = path;
    ticker.tick_ms = o.tick_ms;
    if (o.tick_ms > 0 && pthread_create(&tick_thread, NULL, ab_tick_run, &ticker) != 0)
        goto out;
    t0 = ab_now() + 0.2;
    for (int i = 0; i < o.clients; i++) {
        clients[i] =
            (struct ab_client){.index = i,
                               .port = http_server_port(server),
                               .o = &o,
                               .start = t0,
                               .n = o.requests / o.clients + (i < o.requests % o.clients ? 1 : 0)};
        clients[i].sched = sched + at;
        clients[i].service = service + at;
        at += clients[i].n;
        if (pthread_create(&threads[i], NULL, ab_client_run, &clients[i]) != 0)
            goto out;
    }
    for (int i = 0; i < o.clients; i++) {
        pthread_join(threads[i], NULL);
        failed += clients[i].failed;
    }
    elapsed = ab_now() - t0;
    if (o.tick_ms > 0) {
        ticker.stop = 1;
        pthread_join(tick_thread, NULL);
    }
    printf("api_bench: %d clients, %ld reports at %.0f/s offered, server %s, state on %s, "
           "a tick every %d ms\n",
           o.clients, o.requests, o.rate,
           o.threads ? "polling thread pool" : "a thread per connection", o.dir, o.tick_ms);
    printf("  served %.0f reports/s over %.2f s; %ld failed; %ld ticks written (%ld failed)\n",
           (double)o.requests / elapsed, elapsed, failed, ticker.ticks, ticker.errors);
    ab_report("from scheduled time:", sched, o.requests);
    ab_report("from send:", service, o.requests);
    rc = failed > 0 || ticker.errors > 0;
out:
    http_server_stop(server);
    api_free(api);
    state_close(st);
    api_tokens_clear(&tokens);
    free(clients);
    free(threads);
    free(sched);
    free(service);
    if (path[0]) {
        static const char *const suffixes[] = {"", "-wal", "-shm"};
        char file[320];

        for (int i = 0; i < 3; i++) {
            snprintf(file, sizeof(file), "%s%s", path, suffixes[i]);
            unlink(file);
        }
        rmdir(dir);
    }
    return rc;
}
