/* test_bound.c: the completion-time bound. Its table against the job emulation's own rates, the
 * two ends of the trade (unlimited GPU-time: every epoch at its fastest; the GPU-time of a fixed
 * allocation: never above that allocation's completion time), and a simulated run that cannot
 * beat it. Ground truth: the bundled cifar10 profile. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "model/tput.h"
#include "sim/bound.h"
#include "sim/job.h"
#include "sim/world.h"

#define KMAX 16

static struct app *cifar;
static double *best;

static int setup(void **state)
{
    struct error e;

    (void)state;
    if (app_load(CASTOR_DATADIR "/profiles/cifar10", &cifar, &e) < 0)
        return -1;
    best = malloc((size_t)cifar->max_epochs * KMAX * sizeof(double));
    if (!best)
        return -1;
    sim_bound_goodputs(cifar, 4, KMAX, best);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(best);
    app_free(cifar);
    return 0;
}

static double work(int ep)
{
    return app_progress_needed(cifar, ep + 1) - app_progress_needed(cifar, ep);
}

static double at(int ep, int k)
{
    return best[(size_t)ep * KMAX + (size_t)(k - 1)];
}

/* The dollar bound's GPU-seconds (sim_job_min_gpu_seconds, at most two nodes of 4) are a lower
 * bound too: never above what the completion-time bound's table (accumulation included) needs at
 * its best k of 1 to 8 GPUs, epoch by epoch. bert, whose cheapest steps accumulate (2.7% below
 * what the runs without accumulation need). */
static void sim_job_min_gpu_seconds__with_accumulation(void **state)
{
    struct workload_job spec = {.name = "bert-0", .application = "bert"};
    struct app *bert = NULL;
    struct sim_job job;
    struct error e;
    double *table, need = 0, got = 0;

    (void)state;
    assert_int_equal(app_load(CASTOR_DATADIR "/profiles/bert", &bert, &e), 0);
    table = malloc((size_t)bert->max_epochs * 8 * sizeof(double));
    assert_non_null(table);
    sim_bound_goodputs(bert, 4, 8, table);
    for (int ep = 0; ep < bert->max_epochs; ep++) {
        double least = INFINITY;

        for (int k = 1; k <= 8; k++) {
            double g = table[(size_t)ep * 8 + (size_t)(k - 1)];

            if (g > 0 && k / g < least)
                least = k / g;
        }
        need += (app_progress_needed(bert, ep + 1) - app_progress_needed(bert, ep)) * least;
    }
    sim_job_init(&job, &spec, bert, &tput_model_pollux, 0, 0);
    assert_int_equal(sim_job_min_gpu_seconds(&job, 4, &got), 0);
    if (!(got <= need * (1 + 1e-9)))
        fail_msg("bound %.1f GPU-s, the table reaches %.1f", got, need);
    sim_job_free(&job);
    free(table);
    app_free(bert);
}

/* Each entry is a goodput the emulation itself gives (4 GPUs on one node at a local batch of the
 * grid, or 2 + 2 for the spread placement), and no configuration of the grid beats it. */
static void sim_bound_goodputs__the_best_of_the_grid(void **state)
{
    const struct app *a = cifar;
    int one[1] = {4}, two[2] = {2, 2};

    (void)state;
    for (int ep = 0; ep < a->max_epochs; ep += 25) {
        for (int i = 0; i <= 16; i++) {
            double local = floor(a->min_local * pow((double)a->max_local / a->min_local, i / 16.0));
            struct sim_rate r;

            if (local * 4 < a->init_bsz || local * 4 > a->max_bsz)
                continue;
            assert_int_equal(sim_job_rate(cifar, one, 1, local, 0, ep, &r), 0);
            assert_true(r.goodput <= at(ep, 4) * (1 + 1e-12));
            if (sim_job_rate(cifar, two, 2, local, 0, ep, &r) == 0)
                assert_true(r.goodput <= at(ep, 4) * (1 + 1e-12)); /* 4 GPUs on 2 nodes: k 4 */
        }
        assert_true(at(ep, 1) > 0);
    }
}

/* Unlimited GPU-time: the bound is every epoch at its fastest count. A fixed allocation of k GPUs
 * at its best goodput uses G_k GPU-seconds and takes T_k: the bound at G_k is at most T_k. */
static void sim_bound_avg_jct__between_fastest_and_fixed_allocations(void **state)
{
    const struct app *apps[1] = {cifar};
    const double *tables[1] = {best};
    int count[1] = {3};
    double fastest = 0;

    (void)state;
    for (int ep = 0; ep < cifar->max_epochs; ep++) {
        double top = 0;

        for (int k = 1; k <= KMAX; k++)
            top = at(ep, k) > top ? at(ep, k) : top;
        fastest += work(ep) / top;
    }
    assert_float_equal(sim_bound_avg_jct(1, apps, tables, count, KMAX, 1e15), fastest,
                       fastest * 1e-9);
    for (int k = 1; k <= KMAX; k *= 2) {
        double t = 0, g = 0, b;

        for (int ep = 0; ep < cifar->max_epochs; ep++) {
            t += work(ep) / at(ep, k);
            g += work(ep) * k / at(ep, k);
        }
        b = sim_bound_avg_jct(1, apps, tables, count, KMAX, 3 * g);
        assert_true(b <= t * (1 + 1e-9));
        assert_true(b >= fastest * (1 - 1e-9));
    }
    /* less GPU-time than the most frugal allocation needs: the bound grows past any fixed one */
    assert_true(sim_bound_avg_jct(1, apps, tables, count, KMAX, 1.0) >
                sim_bound_avg_jct(1, apps, tables, count, KMAX, 1e15) * 10);
}

/* The inverse of the bound: the least GPU-time for a given average is what the bound needs to
 * reach it (the bound at that GPU-time is the average, and a little less GPU-time misses it);
 * an average below every job at its fastest is out of reach, one at the fastest needs no more
 * than the fastest allocation's GPU-time, and a slower average needs less GPU-time. */
static void sim_bound_least_gpu_seconds__inverts_the_bound(void **state)
{
    const struct app *apps[1] = {cifar};
    const double *tables[1] = {best};
    int count[1] = {3};
    double fastest = sim_bound_avg_jct(1, apps, tables, count, KMAX, 1e15), prev = INFINITY;

    (void)state;
    assert_true(isinf(sim_bound_least_gpu_seconds(1, apps, tables, count, KMAX, fastest * 0.99)));
    for (int k = 1; k <= KMAX; k *= 2) {
        double g = 0, jct, least;

        for (int ep = 0; ep < cifar->max_epochs; ep++)
            g += work(ep) * k / at(ep, k);
        jct = sim_bound_avg_jct(1, apps, tables, count, KMAX, 3 * g);
        least = sim_bound_least_gpu_seconds(1, apps, tables, count, KMAX, jct);
        assert_true(least > 0 && least <= 3 * g * (1 + 1e-9));
        assert_true(sim_bound_avg_jct(1, apps, tables, count, KMAX, least) <= jct * (1 + 1e-9));
        assert_true(sim_bound_avg_jct(1, apps, tables, count, KMAX, least * 0.98) > jct);
        /* twice the time needs less GPU-time */
        assert_true(sim_bound_least_gpu_seconds(1, apps, tables, count, KMAX, 2 * jct) < least);
    }
    for (double t = 1.2; t < 50; t *= 2) {
        double least = sim_bound_least_gpu_seconds(1, apps, tables, count, KMAX, t * fastest);

        assert_true(isfinite(least) && least < prev);
        prev = least;
    }
    count[0] = 0;
    assert_float_equal(sim_bound_least_gpu_seconds(1, apps, tables, count, KMAX, 1.0), 0, 0);
}

/* A simulated cifar10 job on 4 GPUs of one node, run to the end: its completion time is above the
 * bound for the GPU-time it held. */
static void sim_world_bounds__a_run_cannot_beat_them(void **state)
{
    static const char *const known[] = {"cifar10", NULL};
    struct sim_config cfg = {.profiles = CASTOR_DATADIR "/profiles",
                             .model = &tput_model_pollux,
                             .adaptive_batch = 1,
                             .nodes = 1,
                             .gpus_per_node = 4};
    struct workload *wl = NULL;
    struct sim_world *w = NULL;
    const struct snapshot *s;
    struct alloc *plan = NULL;
    struct sim_fleet_stats st;
    struct sim_bounds bounds;
    struct error e;
    double bound, jct = 0;

    (void)state;
    assert_int_equal(workload_load(CASTOR_TEST_DATA "/workloads/one_cifar10.csv", known, &wl, &e),
                     0);
    assert_int_equal(sim_world_new(&cfg, wl, &w, &e), 0);
    assert_int_equal(sim_world_observe(w, &s), 0);
    assert_int_equal(alloc_new(1, s->current->nnodes, s->current->width, &plan), 0);
    assert_int_equal(alloc_add(plan, 0, 0, 4), 0);
    assert_int_equal(sim_world_apply(w, plan), 0);
    alloc_free(plan);
    for (int t = 0; t < 100000 && !sim_world_finished(w); t += 60)
        assert_int_equal(sim_world_advance(w, 60), 0);
    assert_true(sim_world_finished(w));
    jct = sim_world_job(w, 0)->completion - sim_world_job(w, 0)->spec->submit_time;
    sim_world_fleet_stats(w, &st);
    assert_int_equal(sim_world_bounds(w, 4, st.held_gpu_hours, jct, &bounds), 0);
    bound = bounds.avg_jct;
    assert_true(bound > 0);
    assert_true(jct >= bound);
    assert_true(jct < 2 * bound); /* and not far: one restart delay, a batch learned online */
    /* nor could any run reach its completion time on fewer GPU-hours than the inverse says */
    assert_true(bounds.gpu_hours > 0);
    assert_true(st.held_gpu_hours >= bounds.gpu_hours);
    sim_world_free(w);
    workload_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_bound_goodputs__the_best_of_the_grid),
        cmocka_unit_test(sim_job_min_gpu_seconds__with_accumulation),
        cmocka_unit_test(sim_bound_avg_jct__between_fastest_and_fixed_allocations),
        cmocka_unit_test(sim_bound_least_gpu_seconds__inverts_the_bound),
        cmocka_unit_test(sim_world_bounds__a_run_cannot_beat_them),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
