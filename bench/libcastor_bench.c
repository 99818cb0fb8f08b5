/* libcastor_bench.c: what libcastor costs a training step: castor_step's time on the step's path
 * and the reporting thread's CPU, over steps of 50 ms reporting to a real controller API (in a
 * child process, on loopback). Prints the figures; the target is at most 1% of the step. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "castor/castor.h"

#include "control/api.h"
#include "control/state.h"
#include "util/http_server.h"

#define BENCH_TOKEN_NODE "bench-node-token-0123456789"
#define BENCH_TOKEN_JOB "bench-job-token-0123456789"
#define BENCH_TOKEN_USER "bench-user-token-0123456789"
#define BENCH_REPLICAS 4
#define BENCH_MICRO 2 /* micro-batches per replica per step */

static double bench_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double bench_clock(void *ctx)
{
    (void)ctx;
    return 1714564800.0;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* The controller's API in this (child) process: a job "bench" on 4 GPUs; writes the port to fd,
 * serves until fd's other end closes. */
static int bench_serve(int fd, const char *dir)
{
    struct api_tokens tokens = {
        {strdup(BENCH_TOKEN_NODE), strdup(BENCH_TOKEN_JOB), strdup(BENCH_TOKEN_USER), NULL}};
    struct state_node node = {.instance_id = "n1",
                              .provider = "static",
                              .offer = "static",
                              .zone = "local",
                              .gpus = BENCH_REPLICAS};
    struct state_alloc rows[] = {{"n1", BENCH_REPLICAS, 0}};
    struct http_server_config hc = {0};
    struct http_server *server = NULL;
    struct api_config cfg = {0};
    struct state *st = NULL;
    struct api *api = NULL;
    char path[256], c;
    int port, rc = 1;

    snprintf(path, sizeof(path), "%s/state.db", dir);
    if (state_open(path, &st, NULL) < 0 || state_node_register(st, &node, 1) < 0 ||
        state_job_submit(st, "bench",
                         "{\"name\":\"bench\",\"command\":[\"x\"],\"workdir\":\"/\","
                         "\"init_batch_size\":128,\"max_batch_size\":4096,\"max_local_bsz\":256,"
                         "\"max_replicas\":8}",
                         1) < 0 ||
        state_job_set_state(st, "bench", STATE_JOB_RUNNING, 1) < 0 ||
        state_alloc_replace(st, "bench", rows, 1, 1) < 0)
        goto out;
    cfg.state = st;
    cfg.clock = bench_clock;
    cfg.tokens = &tokens;
    if (api_new(&cfg, &api, NULL) < 0 || http_server_start(&hc, api_handle, api, &server, NULL) < 0)
        goto out;
    port = http_server_port(server);
    if (write(fd, &port, sizeof(port)) != (ssize_t)sizeof(port))
        goto out;
    while (read(fd, &c, 1) < 0 && errno == EINTR)
        ;
    rc = 0;
out:
    http_server_stop(server);
    api_free(api);
    state_close(st);
    api_tokens_clear(&tokens);
    snprintf(path, sizeof(path), "%s/state.db", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/state.db-wal", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/state.db-shm", dir);
    unlink(path);
    return rc;
}

/* Busy work for secs seconds: the training step's compute. */
static double bench_work(double secs)
{
    double end = bench_mono() + secs, x = 1.0;

    while (bench_mono() < end)
        for (int i = 0; i < 1000; i++)
            x = sqrt(x + 1.0);
    return x;
}

int main(int argc, char **argv)
{
    int steps = 200, sv[2], port = 0, rc;
    double step_s = 0.05, interval = 1.0, *lat, sink = 0, t_all, cpu_thread;
    double micro[BENCH_REPLICAS * BENCH_MICRO], avg;
    char dir[] = "/tmp/castor-bench-lib-XXXXXX", url[64], msg[256];
    struct castor_options o = {0};
    struct castor_stats stats;
    struct castor *h = NULL;
    struct timespec c0, c1, p0, p1;
    uint64_t seed = 1;
    pid_t child;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--steps") == 0)
            steps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--step-ms") == 0)
            step_s = atof(argv[i + 1]) / 1000.0;
        else if (strcmp(argv[i], "--interval") == 0)
            interval = atof(argv[i + 1]);
    }
    if (steps < 10 || !(step_s > 0) || !(interval > 0)) {
        fprintf(stderr, "usage: %s [--steps N>=10] [--step-ms MS] [--interval S]\n", argv[0]);
        return 2;
    }
    if (!mkdtemp(dir) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 1;
    child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        close(sv[0]);
        _exit(bench_serve(sv[1], dir));
    }
    close(sv[1]);
    if (read(sv[0], &port, sizeof(port)) != (ssize_t)sizeof(port)) {
        fprintf(stderr, "libcastor bench: the API server did not start\n");
        return 1;
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    o.url = url;
    o.job = "bench";
    o.token = BENCH_TOKEN_JOB;
    o.world_size = BENCH_REPLICAS;
    o.nodes = 1;
    o.local_bsz = 64;
    o.accum_steps = BENCH_MICRO - 1;
    o.init_bsz = 128;
    o.max_bsz = 4096;
    o.max_local_bsz = 256;
    o.accumulation = 1;
    o.report_interval = interval;
    rc = castor_new(&o, sizeof(o), &h, msg, sizeof(msg));
    if (rc < 0) {
        fprintf(stderr, "libcastor bench: castor_new: %s (%s)\n", castor_strerror(rc), msg);
        return 1;
    }
    lat = calloc((size_t)steps, sizeof(*lat));
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    t_all = bench_mono();
    for (int s = 0; s < steps; s++) {
        double t0, t1;

        sink += bench_work(step_s);
        avg = 0;
        for (int i = 0; i < BENCH_REPLICAS * BENCH_MICRO; i++) {
            micro[i] =
                1.0 + (double)((seed = seed * 6364136223846793005ULL + 1) >> 40) / 16777216.0;
            avg += micro[i] / (BENCH_REPLICAS * BENCH_MICRO) / 4;
        }
        if (s == steps / 2) /* a second configuration, as after a decision */
            castor_set_batch(h, 96, 0);
        t0 = bench_mono();
        castor_step(h, step_s * (1 + 0.01 * (s % 7)), step_s * 0.1, micro,
                    s >= steps / 2 ? BENCH_REPLICAS : BENCH_REPLICAS * BENCH_MICRO, avg);
        t1 = bench_mono();
        lat[s] = t1 - t0;
    }
    t_all = bench_mono() - t_all;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p1);
    castor_flush(h, 5000);
    castor_get_stats(h, &stats, sizeof(stats));
    castor_free(h);
    close(sv[0]);
    waitpid(child, NULL, 0);
    rmdir(dir);

    /* the reporting thread's CPU: the process's, less the stepping thread's */
    cpu_thread = ((double)(p1.tv_sec - p0.tv_sec) + (double)(p1.tv_nsec - p0.tv_nsec) * 1e-9) -
                 ((double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9);
    double sum = 0;

    for (int s = 0; s < steps; s++)
        sum += lat[s];
    qsort(lat, (size_t)steps, sizeof(*lat), bench_cmp);
    printf("libcastor bench: %d steps of %.0f ms, %d replicas, reports every %.1f s to the API on "
           "loopback (%lld sent, %lld failed)\n",
           steps, step_s * 1e3, BENCH_REPLICAS, interval, stats.reports_sent, stats.reports_failed);
    printf("castor_step: mean %.2f us, p50 %.2f us, p99 %.2f us, max %.2f us\n", sum / steps * 1e6,
           lat[steps / 2] * 1e6, lat[(int)(steps * 0.99)] * 1e6, lat[steps - 1] * 1e6);
    printf("on the step's path: %.4f%% of a %.0f ms step (target <= 1%%)\n",
           100.0 * sum / steps / step_s, step_s * 1e3);
    printf("reporting thread: %.1f ms of CPU over %.1f s (%.3f%% of one core; it runs beside the "
           "step)\n",
           cpu_thread * 1e3, t_all, 100.0 * cpu_thread / t_all);
    printf("total: %.4f%% (target <= 1%%)%s\n",
           100.0 * (sum + fmax(cpu_thread, 0)) / (steps * step_s), sink > 0 ? "" : " ");
    free(lat);
    return 0;
}
