/* soak.c: a long simulated soak of the controller's loop: jobs keep arriving for HOURS of virtual
 * time (a seeded Poisson stream drawn from workload-1's jobs, at its rate) on the paper's 16 x 4
 * cluster, the full loop (observe, fit, decide, apply) ticks every 60 virtual seconds, and the
 * process's resident memory is sampled every simulated hour. The README quotes its output; flat
 * memory means the loop keeps nothing per tick (a leak would grow with the ticks).
 *
 *   castor-bench-soak [--hours 24] [--policy castor] [--seed 1] [--profiles data/profiles]
 *                     [--workload data/workloads/workload-1.csv] */
#define _GNU_SOURCE /* mkstemps */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/sim_run.h"
#include "control/loop.h"
#include "model/tput.h"
#include "policies/policy.h"
#include "sim/app.h"
#include "sim/workload.h"
#include "sim/world.h"

#define SOAK_INTERVAL 60
#define SOAK_MAX_HOURS 24 * 30

/* Resident memory now, MiB (/proc/self/statm). */
static double soak_rss_mib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (!f)
        return NAN;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

/* A uniform draw in (0, 1) (xorshift64*). */
static double soak_uniform(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return ((double)((*s * 2685821657736338717ULL) >> 11) + 0.5) / 9007199254740992.0;
}

/* Write a trace of jobs drawn from base's, arriving as a Poisson stream at base's mean rate, for
 * hours, to path. 0 or -1. */
static int soak_trace(const struct workload *base, double hours, uint64_t seed, const char *path,
                      size_t *njobs)
{
    double span = base->jobs[base->n - 1].submit_time - base->jobs[0].submit_time;
    double gap = span / (double)(base->n - 1), t = 0;
    uint64_t s = seed ? seed : 1;
    FILE *f = fopen(path, "w");
    size_t n = 0;

    if (!f)
        return -1;
    fprintf(f, "name,time,application,num_replicas,batch_size\n");
    for (;;) {
        const struct workload_job *j;

        t += -gap * log(soak_uniform(&s));
        if (t >= hours * 3600)
            break;
        j = &base->jobs[(size_t)(soak_uniform(&s) * (double)base->n) % base->n];
        fprintf(f, "%s-%zu,%.0f,%s,%d,%g\n", j->application, n, t, j->application, j->num_replicas,
                j->batch_size);
        n++;
    }
    *njobs = n;
    return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *profiles = "data/profiles", *base_path = "data/workloads/workload-1.csv";
    const char *policy = "castor";
    double hours = 24, start = 0, rss0 = NAN, rss_min = HUGE_VAL, rss_max = 0, rss_settled = NAN;
    uint64_t seed = 1;
    struct workload *base = NULL;
    struct sim_run run = {0};
    struct error e = {0};
    char trace[] = "/tmp/castor-soak-XXXXXX.csv", buf[512], **apps = NULL;
    struct timespec t0, t1;
    size_t njobs = 0;
    int fd, rc = 1, hour = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--hours") == 0 && i + 1 < argc)
            hours = atof(argv[++i]);
        else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc)
            policy = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--profiles") == 0 && i + 1 < argc)
            profiles = argv[++i];
        else if (strcmp(argv[i], "--workload") == 0 && i + 1 < argc)
            base_path = argv[++i];
        else {
            fprintf(stderr, "usage: castor-bench-soak [--hours H] [--policy P] [--seed S] "
                            "[--profiles DIR] [--workload CSV]\n");
            return 2;
        }
    }
    if (!(hours >= 1 && hours <= SOAK_MAX_HOURS) || !policy_find(policy)) {
        fprintf(stderr, "castor-bench-soak: --hours must be 1 to %d and --policy known\n",
                SOAK_MAX_HOURS);
        return 2;
    }
    apps = app_list(profiles);
    if (!apps || workload_load(base_path, (const char *const *)apps, &base, &e) < 0 ||
        base->n < 2) {
        fprintf(stderr, "castor-bench-soak: %s\n", err_format(&e, buf, sizeof(buf)));
        goto out;
    }
    if ((fd = mkstemps(trace, 4)) < 0)
        goto out;
    close(fd);
    if (soak_trace(base, hours, seed, trace, &njobs) < 0) {
        fprintf(stderr, "castor-bench-soak: cannot write %s\n", trace);
        goto out;
    }
    {
        struct sim_run_spec spec = {.path = trace,
                                    .apps = (const char *const *)apps,
                                    .cfg = {.nodes = 16,
                                            .gpus_per_node = 4,
                                            .interference = 0.25,
                                            .profiles = profiles,
                                            .model = tput_model_find("default")},
                                    .policy = policy,
                                    .interval = SOAK_INTERVAL,
                                    .seed = seed};

        if (sim_run_open(&spec, &run, &e) < 0) {
            fprintf(stderr, "castor-bench-soak: %s\n", err_format(&e, buf, sizeof(buf)));
            goto out;
        }
    }
    printf("# castor-bench-soak: %.0f simulated hours, %zu jobs arriving (workload-1's mix and "
           "rate), policy %s, 16 x 4 GPUs, a tick every %d s\n",
           hours, njobs, policy, SOAK_INTERVAL);
    printf("# hour  ticks  jobs-finished  rss-MiB\n");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    start = sim_world_now(run.w);
    while (sim_world_now(run.w) - start < hours * 3600) {
        if (loop_tick(&run.l) < 0) {
            fprintf(stderr, "castor-bench-soak: a tick failed\n");
            goto out;
        }
        if (sim_world_now(run.w) - start >= (hour + 1) * 3600.0) {
            int done = 0;
            double rss = soak_rss_mib();

            hour++;
            for (int i = 0; i < sim_world_njobs(run.w); i++)
                done += sim_job_done(sim_world_job(run.w, i));
            printf("%6d %6ld %14d %8.1f\n", hour, run.l.ticks, done, rss);
            fflush(stdout);
            if (hour == 1)
                rss0 = rss;
            if (hour == 4)
                rss_settled = rss;
            if (hour >= 4) {
                rss_min = fmin(rss_min, rss);
                rss_max = fmax(rss_max, rss);
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rss_settled > 0)
        printf("# resident memory: %.1f MiB after hour 1, %.1f after hour 4, %.1f to %.1f from "
               "hour 4 on: %+.1f%% from hour 4 to the end",
               rss0, rss_settled, rss_min, rss_max, 100.0 * (rss_max - rss_settled) / rss_settled);
    else /* fewer than 4 hours: nothing settled to compare with */
        printf("# resident memory: %.1f MiB after hour 1 (the growth is measured from hour 4)",
               rss0);
    printf(" (%ld ticks, %.1f s wall)\n", run.l.ticks,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    rc = 0;
out:
    unlink(trace);
    sim_run_close(&run);
    workload_free(base);
    if (apps)
        app_list_free(apps);
    return rc;
}
