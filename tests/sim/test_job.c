/* test_job.c: one emulated job: the restart delay, epoch boundaries, interference, the batch
 * rules, and learning its model. Ground truth is the bundled cifar10 profile; expected values are
 * computed here from app_throughput and app_grad_stats independently of the job's own code. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "model/goodput.h"
#include "sim/job.h"

static struct app *cifar;
static const struct workload_job spec = {.name = "cifar10-0",
                                         .submit_time = 0,
                                         .application = "cifar10",
                                         .num_replicas = 2,
                                         .batch_size = 512};

static int setup(void **state)
{
    struct error e;

    (void)state;
    return app_load(CASTOR_DATADIR "/profiles/cifar10", &cifar, &e);
}

static int teardown(void **state)
{
    (void)state;
    app_free(cifar);
    return 0;
}

/* The true progress rate of a fixed batch on one node with r GPUs: gain / (step + s (step-sync)).
 */
static double true_rate(int r, double local, int s, int epoch)
{
    int place[1] = {r};
    double step, sync, sqr, var, batch = r * local * (s + 1);
    struct grad_params g;

    assert_int_equal(app_throughput(cifar, place, 1, local, &step, &sync), 0);
    assert_int_equal(app_grad_stats(cifar, batch, epoch, &sqr, &var), 0);
    g.sqr = sqr;
    g.var = var;
    return goodput_gain(&g, batch / cifar->init_bsz) / (step + s * (step - sync));
}

/* The trace's batch of 512: on 2 GPUs 256 each, no accumulation (256 <= max_local 1024); on one
 * GPU, above M0 = 128, so it accumulates once: 2 micro-batches of 256. */
static void sim_job_place__fixed_batch_rule(void **state)
{
    struct sim_job job;
    int two[1] = {2}, one[1] = {1};

    (void)state;
    sim_job_init(&job, &spec, cifar, &tput_model_pollux, 512, 0);
    assert_int_equal(sim_job_place(&job, two, 1), 0);
    assert_float_equal(job.local_bsz, 256, 0);
    assert_int_equal(job.accum_steps, 0);
    assert_int_equal(sim_job_place(&job, one, 1), 0);
    assert_float_equal(job.local_bsz, 256, 0);
    assert_int_equal(job.accum_steps, 1);
    sim_job_free(&job);
}

/* The first start is not a restart; every later move is. Taking GPUs away is not counted until
 * they are given back. */
static void sim_job_place__restarts_counted(void **state)
{
    struct sim_job job;
    int two[1] = {2}, spread[2] = {1, 1};

    (void)state;
    sim_job_init(&job, &spec, cifar, &tput_model_pollux, 512, 0);
    assert_int_equal(job.restarts, -1);
    assert_int_equal(sim_job_place(&job, two, 1), 0);
    assert_int_equal(job.restarts, 0);
    assert_int_equal(job.rescale_left, SIM_RESTART_DELAY);
    assert_int_equal(sim_job_place(&job, spread, 2), 0);
    assert_int_equal(job.restarts, 1);
    assert_int_equal(sim_job_place(&job, NULL, 0), 0);
    assert_int_equal(job.restarts, 1);
    assert_int_equal(job.nplace, 0);
    sim_job_free(&job);
}

/* A waiting job's clock runs but it gains nothing. After a start, 30 s pass with GPU-seconds
 * accrued and no progress; then progress runs at the true rate: 20 s -> nothing, 40 s -> 30 s of
 * restart and 10 s of progress. */
static void sim_job_step__restart_delay(void **state)
{
    struct sim_job job;
    int two[1] = {2};
    double rate = true_rate(2, 256, 0, 0);

    (void)state;
    sim_job_init(&job, &spec, cifar, &tput_model_pollux, 512, 0);
    assert_int_equal(sim_job_step(&job, 60, 0.0), 0);
    assert_float_equal(job.now, 60, 0);
    assert_float_equal(job.attained, 0, 0);
    assert_int_equal(sim_job_place(&job, two, 1), 0);
    assert_int_equal(sim_job_step(&job, 20, 0.0), 0);
    assert_float_equal(job.progress, 0, 0);
    assert_float_equal(job.attained, 40, 0); /* 20 s x 2 GPUs */
    assert_int_equal(job.rescale_left, 10);
    assert_int_equal(sim_job_step(&job, 40, 0.0), 0);
    assert_float_equal(job.progress, 30 * rate, 1e-9 * rate);
    assert_float_equal(job.attained, 120, 0);
    assert_float_equal(job.now, 120, 0);
    sim_job_free(&job);
}

/* Interference slows a distributed job's progress by its fraction: half (over 2 s, inside one
 * epoch: a cifar10 epoch takes about 10 s). */
static void sim_job_step__interference(void **state)
{
    struct sim_job a, b;
    int spread[2] = {1, 1};

    (void)state;
    sim_job_init(&a, &spec, cifar, &tput_model_pollux, 512, 0);
    sim_job_init(&b, &spec, cifar, &tput_model_pollux, 512, 0);
    assert_int_equal(sim_job_place(&a, spread, 2), 0);
    assert_int_equal(sim_job_place(&b, spread, 2), 0);
    a.rescale_left = b.rescale_left = 0;
    assert_int_equal(sim_job_step(&a, 2, 0.0), 0);
    assert_int_equal(sim_job_step(&b, 2, 0.5), 0);
    assert_int_equal(a.epoch, 0);
    assert_true(a.progress > 0);
    assert_float_equal(b.progress, a.progress / 2, 1e-12 * a.progress);
    sim_job_free(&a);
    sim_job_free(&b);
}

/* An epoch ends inside a step: 10.4 s into an 11 s step the epoch advances, progress snaps to the
 * boundary and the last 0.6 s (1 s after rounding) run in the new epoch. Completion is the
 * boundary's time rounded half to even: 2.5 s before it -> 2 s; 3.5 s -> 4 s. */
static void sim_job_step__epoch_boundary_and_completion(void **state)
{
    struct sim_job job;
    int two[1] = {2};
    double rate = true_rate(2, 256, 0, 0), next = app_progress_needed(cifar, 1);

    (void)state;
    sim_job_init(&job, &spec, cifar, &tput_model_pollux, 512, 0);
    assert_int_equal(sim_job_place(&job, two, 1), 0);
    job.rescale_left = 0;
    job.progress = next - 10.4 * rate;
    assert_int_equal(sim_job_step(&job, 11, 0.0), 0);
    assert_int_equal(job.epoch, 1);
    assert_float_equal(job.progress, next + true_rate(2, 256, 0, 1), 1e-9 * next);
    assert_false(sim_job_done(&job));
    assert_float_equal(job.now, 11, 0);

    for (int k = 0; k < 2; k++) {
        double before = k == 0 ? 2.5 : 3.5, want = k == 0 ? 2 : 4;
        int last = cifar->max_epochs - 1;
        double rate_last = true_rate(2, 256, 0, last);

        job.epoch = last;
        job.progress = app_progress_needed(cifar, last + 1) - before * rate_last;
        job.completion = -1;
        job.now = 1000;
        assert_int_equal(sim_job_step(&job, 5, 0.0), 0);
        assert_true(sim_job_done(&job));
        assert_float_equal(job.completion, 1000 + want, 0);
        assert_float_equal(job.now, 1005, 0);
    }
    sim_job_free(&job);
}

/* The job learns from its own steps: one profile point and one fit per new configuration. */
static void sim_job_step__learns_once_per_configuration(void **state)
{
    struct sim_job job;
    int two[1] = {2};

    (void)state;
    sim_job_init(&job, &spec, cifar, &tput_model_pollux, 512, 0);
    assert_false(job.has_model);
    assert_int_equal(sim_job_place(&job, two, 1), 0);
    assert_int_equal(sim_job_step(&job, 60, 0.0), 0);
    assert_true(job.has_model);
    assert_int_equal(job.prof.n, 1);
    assert_int_equal(job.max_profiled, 2);
    assert_int_equal(job.fits, 1);
    assert_int_equal(sim_job_step(&job, 60, 0.0), 0);
    assert_int_equal(job.fits, 1);
    sim_job_free(&job);
}

/* Adaptive jobs without a model start at max(M0, min_local x r) (here 128 on 2 GPUs: 64 each), and
 * once they have a model re-choose the goodput-optimal batch. */
static void sim_job_place__adaptive_batch(void **state)
{
    struct sim_job job;
    int two[1] = {2};

    (void)state;
    sim_job_init(&job, &spec, cifar, &tput_model_pollux, 0, 0);
    assert_int_equal(sim_job_place(&job, two, 1), 0);
    assert_float_equal(job.local_bsz, 64, 0);
    assert_int_equal(sim_job_step(&job, 120, 0.0), 0);
    assert_true(job.has_model);
    assert_true(job.local_bsz >= 64 && job.local_bsz <= cifar->max_local);
    sim_job_free(&job);
}

/* A new configuration chosen as it learns (adaptive, ten epochs before its end, where larger
 * batches pay, placed on 2 GPUs at 64 each; 120 s: 30 s of start, then a batch re-chosen after its
 * first measurement): in flight it costs nothing; a job that restarts into it checkpoints (nothing
 * lost) and restarts, counted, its 30 s without progress. In its last epoch with about 20 s of work
 * left at its start configuration (any gain saves less than the 30 s restart), a restarting job
 * that declared its length keeps the configuration it has; one that did not changes it and
 * restarts. */
static void sim_job_step__a_new_configuration_restarts_a_restart_job(void **state)
{
    struct sim_job flight, restart, near, blind;
    struct sim_job *jobs[] = {&flight, &restart, &near, &blind};
    int two[1] = {2};
    double end = app_progress_needed(cifar, cifar->max_epochs);

    (void)state;
    for (int k = 0; k < 4; k++) {
        sim_job_init(jobs[k], &spec, cifar, &tput_model_pollux, 0, 0);
        jobs[k]->hysteresis = 1.05;
        jobs[k]->reconf_restart = k > 0;
        jobs[k]->length_known = k < 3;
        assert_int_equal(sim_job_place(jobs[k], two, 1), 0);
        assert_float_equal(jobs[k]->local_bsz, 64, 0);
    }
    for (int k = 0; k < 2; k++) {
        jobs[k]->epoch = cifar->max_epochs - 10;
        jobs[k]->progress = app_progress_needed(cifar, cifar->max_epochs - 10);
    }
    for (int k = 2; k < 4; k++) {
        jobs[k]->epoch = cifar->max_epochs - 1;
        jobs[k]->progress = end - 20 * true_rate(2, 64, 0, cifar->max_epochs - 1);
        assert_true(jobs[k]->progress > app_progress_needed(cifar, cifar->max_epochs - 1));
    }
    assert_int_equal(sim_job_step(&flight, 120, 0.0), 0);
    assert_int_equal(sim_job_step(&restart, 120, 0.0), 0);
    assert_true(flight.local_bsz > 64);
    assert_int_equal(flight.restarts, 0);
    assert_true(restart.local_bsz > 64);
    assert_true(restart.restarts >= 1);
    assert_true(restart.ckpt_progress > 0);
    assert_true(restart.progress < flight.progress);
    assert_float_equal(restart.attained, flight.attained, 0); /* its GPUs held while restarting */

    /* a new configuration found at a step's end, then a move at that instant: one restart (the
     * controller writes both in one decision), one delay; the same move once that restart is
     * served: two */
    for (int served = 0; served < 2; served++) {
        struct sim_job moved;
        int four[1] = {4};

        sim_job_init(&moved, &spec, cifar, &tput_model_pollux, 0, 0);
        moved.hysteresis = 1.05;
        moved.reconf_restart = 1;
        moved.length_known = 1;
        moved.epoch = cifar->max_epochs - 10;
        moved.progress = app_progress_needed(cifar, cifar->max_epochs - 10);
        assert_int_equal(sim_job_place(&moved, two, 1), 0);
        for (int t = 0; t < 20 && moved.restarts < 1; t++)
            assert_int_equal(sim_job_step(&moved, 10, 0.0), 0);
        assert_int_equal(moved.restarts, 1);
        assert_int_equal(moved.rescale_left, SIM_RESTART_DELAY);
        if (served)
            assert_int_equal(sim_job_step(&moved, 30, 0.0), 0);
        assert_int_equal(sim_job_place(&moved, four, 1), 0);
        assert_int_equal(moved.restarts, 1 + served);
        assert_int_equal(moved.rescale_left, SIM_RESTART_DELAY);
        sim_job_free(&moved);
    }

    assert_int_equal(sim_job_step(&near, 10, 0.0), 0);
    assert_int_equal(sim_job_step(&blind, 10, 0.0), 0);
    assert_int_equal(near.restarts, 0); /* still in its start's 30 s */
    assert_int_equal(sim_job_step(&near, 25, 0.0), 0);
    assert_int_equal(sim_job_step(&blind, 25, 0.0), 0);
    assert_false(sim_job_done(&near));
    assert_float_equal(near.local_bsz, 64, 0);
    assert_int_equal(near.restarts, 0);
    assert_true(blind.local_bsz > 64);
    assert_int_equal(blind.restarts, 1);
    for (int k = 0; k < 4; k++)
        sim_job_free(jobs[k]);
}

/* A model family: the first job measures 2 GPUs (one configuration) and its first gradient
 * statistics, which the family keeps; a second job of the family, before it runs, takes them: a
 * model fitted to that configuration, an exploration limit of 2, the first job's statistics at its
 * first step (the true ones at batch 512, epoch 0). A job of no family, or one that has a model
 * already, takes nothing. */
static void sim_job_seed__starts_from_the_family(void **state)
{
    struct sim_family fam;
    struct sim_job a, b, alone;
    int two[1] = {2};
    double sqr, var;

    (void)state;
    sim_family_init(&fam);
    sim_job_init(&a, &spec, cifar, &tput_model_pollux, 512, 0);
    sim_job_init(&b, &spec, cifar, &tput_model_pollux, 512, 0);
    sim_job_init(&alone, &spec, cifar, &tput_model_pollux, 512, 0);
    a.family = &fam;
    b.family = &fam;
    assert_int_equal(sim_job_seed(&b), 0); /* the family has measured nothing yet */
    assert_false(b.has_model);
    assert_int_equal(sim_job_place(&a, two, 1), 0);
    assert_int_equal(sim_job_step(&a, 60, 0.0), 0);
    assert_int_equal(fam.prof.n, 1);
    assert_int_equal(fam.nstart, 1);
    assert_int_equal(app_grad_stats(cifar, 512, 0, &sqr, &var), 0);
    assert_float_equal(fam.start.sqr, sqr, 1e-12);
    assert_float_equal(fam.start.var, var, 1e-12);

    assert_int_equal(sim_job_seed(&b), 1);
    assert_true(b.has_model);
    assert_int_equal(b.prof.n, 1);
    assert_int_equal(b.max_profiled, 2);
    assert_float_equal(b.grad.sqr, sqr, 1e-12);
    assert_float_equal(b.grad.var, var, 1e-12);
    assert_memory_equal(&b.tput, &a.tput, sizeof(b.tput)); /* the same fit of the same point */
    assert_int_equal(sim_job_seed(&b), 0);                 /* it has a model now */
    assert_int_equal(sim_job_seed(&alone), 0);
    assert_false(alone.has_model);
    sim_job_free(&a);
    sim_job_free(&b);
    sim_job_free(&alone);
    sim_family_free(&fam);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_job_place__fixed_batch_rule),
        cmocka_unit_test(sim_job_seed__starts_from_the_family),
        cmocka_unit_test(sim_job_place__restarts_counted),
        cmocka_unit_test(sim_job_step__restart_delay),
        cmocka_unit_test(sim_job_step__interference),
        cmocka_unit_test(sim_job_step__epoch_boundary_and_completion),
        cmocka_unit_test(sim_job_step__learns_once_per_configuration),
        cmocka_unit_test(sim_job_place__adaptive_batch),
        cmocka_unit_test(sim_job_step__a_new_configuration_restarts_a_restart_job),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
