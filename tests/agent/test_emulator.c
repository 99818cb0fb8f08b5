/* test_emulator.c: the job emulator. In process: placements, configurations, progress by the
 * profile's goodput across epochs, checkpoints, and a report body the real API accepts. Then the
 * castor-job-emulator program against the API: a run to completion that reports, a SIGTERM that
 * checkpoints and a restart that continues from it, and a SIGKILL after which the restart claims
 * no progress beyond the last checkpoint. Profiles: data/profiles/cifar10 (about 40 emulated
 * seconds an epoch on one GPU). */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "agent/emulator.h"
#include "sim/app.h"
#include "sim/job.h"
#include "support/api_server.h"
#include "support/process.h"
#include "util/http_client.h"

#define CIFAR10 CASTOR_DATADIR "/profiles/cifar10"

static void emu_place_even__splits_the_world_over_nodes(void **state)
{
    struct emu_setup u = {0};

    (void)state;
    assert_int_equal(emu_place_even(5, 2, &u), 0);
    assert_int_equal(u.nplace, 3);
    assert_int_equal(u.place[0], 2);
    assert_int_equal(u.place[1], 2);
    assert_int_equal(u.place[2], 1);
    assert_int_equal(u.replicas, 5);
    assert_int_equal(emu_place_even(4, 8, &u), 0); /* more local than world: one node */
    assert_int_equal(u.nplace, 1);
    assert_int_equal(u.place[0], 4);
    u.nplace = 99;
    assert_int_equal(emu_place_even(0, 1, &u), ERR_INVAL);
    assert_int_equal(emu_place_even(1000, 1, &u), ERR_RANGE);
    assert_int_equal(u.nplace, 99);
}

static int app_setup(void **state)
{
    struct app *a = NULL;

    if (app_load(CIFAR10, &a, NULL) < 0)
        return -1;
    *state = a;
    return 0;
}

static int app_teardown(void **state)
{
    app_free(*state);
    return 0;
}

static void emu_configure__the_plan_held_in_limits_else_the_fixed_rule(void **state)
{
    struct app *a = *state;
    struct emu_setup u = {0};
    double local;
    int s;

    assert_int_equal(emu_place_even(2, 2, &u), 0);
    assert_int_equal(emu_configure(a, &u, 64, 1), 0);
    assert_true(u.local_bsz == 64 && u.accum_steps == 1);
    assert_int_equal(emu_configure(a, &u, 1e6, -1), 0); /* over the measured range */
    assert_true(u.local_bsz == a->max_local && u.accum_steps == 0);
    assert_int_equal(emu_configure(a, &u, NAN, -1), 0); /* no plan yet */
    sim_fixed_config(a, fmax(a->init_bsz, a->min_local * 2.0), 2, &local, &s);
    assert_true(u.local_bsz == local && u.accum_steps == s);
}

static void emu_advance__progress_by_goodput_across_epochs(void **state)
{
    struct app *a = *state;
    struct emu_setup u = {0};
    struct emu_state s = {0};
    struct sim_rate r0, r1;
    double steps = 0, t0, left;

    assert_int_equal(emu_place_even(1, 1, &u), 0);
    assert_int_equal(emu_configure(a, &u, 128, 0), 0);
    assert_int_equal(sim_job_rate(a, u.place, 1, 128, 0, 0, &r0), 0);
    assert_int_equal(sim_job_rate(a, u.place, 1, 128, 0, 1, &r1), 0);
    assert_int_equal(emu_advance(a, &u, 3, &s, 5.0, &steps), 0);
    assert_float_equal(s.progress, 5.0 * r0.goodput, 1e-9);
    assert_float_equal(steps, 5.0 / r0.opt_step, 1e-9);
    assert_int_equal(s.epoch, 0);
    /* across the end of epoch 0: the rest of the time at epoch 1's rate */
    t0 = app_progress_needed(a, 1) / r0.goodput;
    assert_int_equal(emu_epoch_left(a, &u, &s, &left), 0);
    assert_float_equal(left, t0 - 5.0, 1e-6);
    assert_int_equal(emu_advance(a, &u, 3, &s, t0 - 5.0 + 2.0, NULL), 0);
    assert_int_equal(s.epoch, 1);
    assert_float_equal(s.progress, app_progress_needed(a, 1) + 2.0 * r1.goodput, 1e-6);
    assert_float_equal(s.emulated_s, t0 + 2.0, 1e-6);
    /* never past the epochs asked for */
    assert_int_equal(emu_advance(a, &u, 3, &s, 1e9, NULL), 0);
    assert_int_equal(s.epoch, 3);
    assert_float_equal(s.progress, app_progress_needed(a, 3), 1e-9);
    assert_true(s.emulated_s < 1e6);
}

static void emu_checkpoint__round_trip_and_refusals(void **state)
{
    char dir[] = "/tmp/castor-test-emu-XXXXXX", path[128], bad[128];
    struct emu_state s = {.progress = 1234.5678901234567,
                          .epoch = 7,
                          .emulated_s = 99.25,
                          .number = 12},
                     back;
    struct emu_state untouched = {.epoch = -5};
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/%s", dir, EMU_CKPT_FILE);
    snprintf(bad, sizeof(bad), "%s/bad", dir);
    assert_int_equal(emu_checkpoint_read(path, "cifar10", &untouched, NULL), ERR_NOENT);
    assert_int_equal(emu_checkpoint_write(path, "cifar10", &s, NULL), 0);
    assert_int_equal(emu_checkpoint_read(path, "cifar10", &back, NULL), 0);
    assert_true(back.progress == s.progress && back.epoch == 7 && back.emulated_s == 99.25);
    assert_int_equal(back.number, 12);
    assert_int_equal(emu_checkpoint_read(path, "bert", &untouched, NULL), ERR_PARSE);
    f = fopen(bad, "w");
    assert_non_null(f);
    fputs("{\"app\":\"cifar10\",\"progress\":-1,\"epoch\":0,\"emulated_s\":0}", f);
    fclose(f);
    assert_int_equal(emu_checkpoint_read(bad, "cifar10", &untouched, NULL), ERR_PARSE);
    /* a negative number is refused; one written before checkpoints were numbered reads as 0 */
    f = fopen(bad, "w");
    assert_non_null(f);
    fputs("{\"app\":\"cifar10\",\"progress\":1,\"epoch\":0,\"emulated_s\":0,\"number\":-2}", f);
    fclose(f);
    assert_int_equal(emu_checkpoint_read(bad, "cifar10", &untouched, NULL), ERR_PARSE);
    f = fopen(bad, "w");
    assert_non_null(f);
    fputs("{\"app\":\"cifar10\",\"progress\":1,\"epoch\":0,\"emulated_s\":0}", f);
    fclose(f);
    back.number = 5;
    assert_int_equal(emu_checkpoint_read(bad, "cifar10", &back, NULL), 0);
    assert_int_equal(back.number, 0);
    assert_int_equal(untouched.epoch, -5);
    unlink(path);
    unlink(bad);
    assert_int_equal(rmdir(dir), 0); /* no temporary file left behind */
}

/* ---- against the API ---- */

struct fx {
    struct api_server as;
    char work[160];
    char log[160];
    struct app *app;
};

static int fx_setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (!f || as_start(&f->as) < 0 || app_load(CIFAR10, &f->app, NULL) < 0 ||
        as_path(&f->as, "work", 1, f->work, sizeof(f->work)) < 0 ||
        as_path(&f->as, "emulator.log", 0, f->log, sizeof(f->log)) < 0)
        return -1;
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;

    proc_dump_log("emulator log", f->log);
    app_free(f->app);
    as_stop(&f->as);
    free(f);
    return 0;
}

static void submit(struct fx *f, const char *job)
{
    char spec[512];

    snprintf(
        spec, sizeof(spec),
        "{\"name\":\"%s\",\"command\":[\"castor-job-emulator\",\"cifar10\"],\"workdir\":\"%s\","
        "\"init_batch_size\":128,\"max_batch_size\":4096,\"max_local_bsz\":256,"
        "\"min_replicas\":1,\"max_replicas\":8}",
        job, f->work);
    assert_int_equal(state_job_submit(f->as.own, job, spec, as_wall(NULL)), 0);
}

static void emu_report_body__accepted_by_the_api(void **state)
{
    struct fx *f = *state;
    struct emu_setup u = {0};
    struct http_client *c = NULL;
    struct state_report_config *rows = NULL;
    struct state_job j;
    size_t n = 0;
    char *body = NULL, url[128];
    const struct http_client_header h[] = {{"Authorization", "Bearer " AS_TOKEN_JOB}};
    struct http_client_request req = {.method = "POST", .url = url, .headers = h, .nheaders = 1};
    struct http_client_response r = {0};

    submit(f, "rep");
    assert_int_equal(emu_place_even(3, 2, &u), 0);
    assert_int_equal(emu_configure(f->app, &u, 64, 1), 0);
    assert_int_equal(emu_report_body(&u, 42, 0.5, 0.1, 2.0, 3.0, 17.25, &body), 0);
    snprintf(url, sizeof(url), "%s/v1/jobs/rep/reports", f->as.url);
    req.body = body;
    req.body_len = strlen(body);
    assert_int_equal(http_client_new(&c), 0);
    assert_int_equal(http_client_do(c, &req, &r, NULL), 0);
    assert_int_equal(r.status, 200);
    http_client_response_clear(&r);
    free(body);
    assert_int_equal(state_report_configs(f->as.own, "rep", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_true(rows[0].nodes == 2 && rows[0].replicas == 3 && rows[0].local_bsz == 64 &&
                rows[0].accum_steps == 1 && rows[0].count == 42 && rows[0].step_mean == 0.5 &&
                rows[0].sync_mean == 0.1);
    free(rows);
    assert_int_equal(state_job_get(f->as.own, "rep", &j), 0);
    assert_true(j.progress == 17.25 && j.grad_sqr == 2.0 && j.grad_var == 3.0);
    state_job_clear(&j);
    /* no step yet: an empty list of configurations, still accepted */
    assert_int_equal(emu_report_body(&u, 0, 0.5, 0.1, NAN, NAN, 18, &body), 0);
    req.body = body;
    req.body_len = strlen(body);
    assert_int_equal(http_client_do(c, &req, &r, NULL), 0);
    assert_int_equal(r.status, 200);
    http_client_response_clear(&r);
    free(body);
    http_client_free(c);
}

/* Run castor-job-emulator cifar10 for job in f->work with "NAME=VALUE" settings. */
static pid_t spawn_emulator(struct fx *f, const char *job, const char *const *extra)
{
    static char *const argv[] = {"castor-job-emulator", "cifar10", NULL};
    char job_env[128], url_env[128];
    const char *const env[] = {job_env,
                               url_env,
                               "CASTOR_JOB_TOKEN=" AS_TOKEN_JOB,
                               "CASTOR_RANK=0",
                               "CASTOR_WORLD_SIZE=1",
                               "CASTOR_LOCAL_BSZ=128",
                               "CASTOR_EMULATOR_LOG_LEVEL=debug",
                               NULL};
    pid_t pid;

    snprintf(job_env, sizeof(job_env), "CASTOR_JOB=%s", job);
    snprintf(url_env, sizeof(url_env), "CASTOR_URL=%s", f->as.url);
    pid = proc_spawn(CASTOR_EMULATOR_BIN, argv, f->work, f->log, env, extra);
    assert_true(pid > 0);
    return pid;
}

/* The emulated seconds cifar10 needs for epochs epochs on one GPU at batch 128. */
static double total_time(struct fx *f, int epochs)
{
    struct emu_setup u = {0};
    struct emu_state s = {0};

    assert_int_equal(emu_place_even(1, 1, &u), 0);
    assert_int_equal(emu_configure(f->app, &u, 128, 0), 0);
    assert_int_equal(emu_advance(f->app, &u, epochs, &s, 1e9, NULL), 0);
    return s.emulated_s;
}

static void read_state(struct fx *f, const char *file, struct emu_state *s)
{
    char path[256];

    snprintf(path, sizeof(path), "%s/%s", f->work, file);
    assert_int_equal(emu_checkpoint_read(path, "cifar10", s, NULL), 0);
}

static void emulator__runs_to_completion_and_reports(void **state)
{
    static const char *const env[] = {"CASTOR_EMULATOR_SPEED=200", "CASTOR_EMULATOR_EPOCHS=2",
                                      "CASTOR_EMULATOR_REPORT_S=10", NULL};
    struct fx *f = *state;
    struct state_report_config *rows = NULL;
    struct emu_state done;
    struct state_job j;
    size_t n = 0;
    int status;

    submit(f, "full");
    status = proc_wait_exit(spawn_emulator(f, "full", env), 20);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    read_state(f, EMU_DONE_FILE, &done);
    assert_int_equal(done.epoch, 2);
    assert_float_equal(done.progress, app_progress_needed(f->app, 2), 1e-9);
    assert_float_equal(done.emulated_s, total_time(f, 2), 1e-6);
    /* the controller heard: the final progress, step times at (1 node, 1 replica, 128) */
    assert_int_equal(state_job_get(f->as.own, "full", &j), 0);
    assert_float_equal(j.progress, done.progress, 1e-6);
    assert_false(isnan(j.grad_sqr));
    state_job_clear(&j);
    assert_int_equal(state_report_configs(f->as.own, "full", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_true(rows[0].nodes == 1 && rows[0].replicas == 1 && rows[0].local_bsz == 128);
    assert_true(rows[0].count >= 1);
    free(rows);
    /* a replica started again after the end does nothing */
    status = proc_wait_exit(spawn_emulator(f, "full", env), 10);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    read_state(f, EMU_CKPT_FILE, &done);
    assert_int_equal(done.epoch, 2);
}

static void emulator__sigterm_checkpoints_and_the_restart_continues(void **state)
{
    static const char *const env[] = {"CASTOR_EMULATOR_SPEED=150", "CASTOR_EMULATOR_EPOCHS=6",
                                      "CASTOR_CHECKPOINT_INTERVAL=100000", NULL};
    struct fx *f = *state;
    struct emu_state mid, done;
    pid_t pid;
    int status;

    submit(f, "term");
    pid = spawn_emulator(f, "term", env);
    proc_sleep(0.6);
    assert_int_equal(kill(pid, SIGTERM), 0);
    status = proc_wait_exit(pid, 5);
    /* 75: checkpointed, restart me (0 would tell castor-node the job's work is done) */
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 75);
    read_state(f, EMU_CKPT_FILE, &mid); /* written at SIGTERM (no periodic one in this run) */
    assert_true(mid.progress > 0 && mid.epoch < 6);
    assert_int_equal(mid.number, 1);
    status = proc_wait_exit(spawn_emulator(f, "term", env), 20);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    read_state(f, EMU_DONE_FILE, &done);
    assert_int_equal(done.epoch, 6);
    /* numbered on from the checkpoint it resumed: the last one is the second written */
    assert_int_equal(done.number, 2);
    /* continued from the checkpoint: the emulated time over both runs is one run's */
    assert_float_equal(done.emulated_s, total_time(f, 6), 1e-6);
}

/* A stop (SIGTERM) reports the steps run since the last report before the replica exits: the
 * controller's step times and progress lose nothing at a restart (here the only report due
 * before it was the start's, with no steps). */
static void emulator__a_stop_reports_its_steps(void **state)
{
    static const char *const env[] = {"CASTOR_EMULATOR_SPEED=150", "CASTOR_EMULATOR_EPOCHS=6",
                                      "CASTOR_CHECKPOINT_INTERVAL=100000",
                                      "CASTOR_EMULATOR_REPORT_S=100000", NULL};
    struct fx *f = *state;
    struct state_report_config *rows = NULL;
    struct emu_state mid;
    struct state_job j;
    size_t n = 0;
    pid_t pid;
    int status;

    submit(f, "stopr");
    pid = spawn_emulator(f, "stopr", env);
    proc_sleep(0.6);
    assert_int_equal(kill(pid, SIGTERM), 0);
    status = proc_wait_exit(pid, 10);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 75);
    read_state(f, EMU_CKPT_FILE, &mid);
    assert_int_equal(state_report_configs(f->as.own, "stopr", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_true(rows[0].count >= 1);
    free(rows);
    assert_int_equal(state_job_get(f->as.own, "stopr", &j), 0);
    assert_float_equal(j.progress, mid.progress, 1e-9);
    state_job_clear(&j);
}

struct progress_at {
    struct fx *f;
    const char *job;
    double want;
};

static int progress_is(void *ctx)
{
    struct progress_at *p = ctx;
    struct state_job j;
    int ok;

    if (state_job_get(p->f->as.own, p->job, &j) < 0)
        return 0;
    ok = fabs(j.progress - p->want) <= 1e-9 * fmax(1, p->want);
    state_job_clear(&j);
    return ok;
}

static int checkpoint_exists(void *ctx)
{
    struct fx *f = ctx;
    char path[256];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/%s", f->work, EMU_CKPT_FILE);
    return stat(path, &sb) == 0;
}

/* With CASTOR_EMULATOR_STOP_S the checkpoint on SIGTERM comes that much later (a large model's
 * write), with the progress at the signal: the replica is alive meanwhile, and the restart
 * continues from it as from one written at once. */
static void emulator__a_slow_stop_checkpoint(void **state)
{
    static const char *const env[] = {"CASTOR_EMULATOR_SPEED=150", "CASTOR_EMULATOR_EPOCHS=6",
                                      "CASTOR_CHECKPOINT_INTERVAL=100000",
                                      "CASTOR_EMULATOR_STOP_S=0.8", NULL};
    struct fx *f = *state;
    struct emu_state mid, done;
    double sent, ended;
    pid_t pid;
    int status;

    submit(f, "slow");
    pid = spawn_emulator(f, "slow", env);
    proc_sleep(0.6);
    sent = proc_now();
    assert_int_equal(kill(pid, SIGTERM), 0);
    proc_sleep(0.4);
    assert_false(checkpoint_exists(f)); /* not yet written */
    assert_true(proc_alive(pid));
    status = proc_wait_exit(pid, 5);
    ended = proc_now();
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 75);
    assert_true(ended - sent >= 0.75);
    read_state(f, EMU_CKPT_FILE, &mid);
    /* the state at the signal: about 0.6 s of training at x150, not 1.4 s */
    assert_true(mid.emulated_s > 0 && mid.emulated_s < 150 * 1.1);
    status = proc_wait_exit(spawn_emulator(f, "slow", env), 20);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    read_state(f, EMU_DONE_FILE, &done);
    assert_float_equal(done.emulated_s, total_time(f, 6), 1e-6);
}

static void emulator__after_sigkill_resumes_from_the_last_checkpoint(void **state)
{
    static const char *const env[] = {"CASTOR_EMULATOR_SPEED=150", "CASTOR_EMULATOR_EPOCHS=8",
                                      "CASTOR_CHECKPOINT_INTERVAL=15", "CASTOR_EMULATOR_REPORT_S=5",
                                      NULL};
    static const char *const quiet[] = {"CASTOR_EMULATOR_SPEED=150", "CASTOR_EMULATOR_EPOCHS=8",
                                        "CASTOR_CHECKPOINT_INTERVAL=15",
                                        "CASTOR_EMULATOR_REPORT_S=100000", NULL};
    struct fx *f = *state;
    struct progress_at at = {.f = f, .job = "kill"};
    struct emu_state last, done;
    pid_t pid;
    int status;

    submit(f, "kill");
    pid = spawn_emulator(f, "kill", env);
    assert_true(proc_wait_for(checkpoint_exists, f, 5));
    proc_sleep(0.45);
    assert_int_equal(kill(pid, SIGKILL), 0);
    status = proc_wait_exit(pid, 5);
    assert_true(WIFSIGNALED(status));
    read_state(f, EMU_CKPT_FILE, &last);
    assert_true(last.progress > 0 && last.epoch < 8);
    /* the restart announces the checkpoint's progress at once, nothing beyond it */
    at.want = last.progress;
    pid = spawn_emulator(f, "kill", quiet);
    assert_true(proc_wait_for(progress_is, &at, 5));
    status = proc_wait_exit(pid, 20);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    read_state(f, EMU_DONE_FILE, &done);
    assert_int_equal(done.epoch, 8);
    assert_float_equal(done.emulated_s, total_time(f, 8), 1e-6);
}

static void emulator__other_ranks_end_with_rank_0(void **state)
{
    static const char *const rank0[] = {"CASTOR_EMULATOR_SPEED=300", "CASTOR_EMULATOR_EPOCHS=2",
                                        "CASTOR_WORLD_SIZE=2", "CASTOR_LOCAL_WORLD_SIZE=2", NULL};
    static const char *const rank1[] = {"CASTOR_EMULATOR_SPEED=3", "CASTOR_EMULATOR_EPOCHS=2",
                                        "CASTOR_WORLD_SIZE=2",     "CASTOR_LOCAL_WORLD_SIZE=2",
                                        "CASTOR_RANK=1",           NULL};
    struct fx *f = *state;
    struct state_report_config *rows = NULL;
    struct emu_state done;
    size_t n = 0;
    pid_t p1;
    int status;

    submit(f, "pair");
    p1 = spawn_emulator(f, "pair", rank1); /* alone it would take about 25 s */
    status = proc_wait_exit(spawn_emulator(f, "pair", rank0), 20);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    status = proc_wait_exit(p1, 2);
    assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    read_state(f, EMU_DONE_FILE, &done);
    assert_int_equal(done.epoch, 2);
    /* only rank 0 reported: two replicas on one node */
    assert_int_equal(state_report_configs(f->as.own, "pair", &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_true(rows[0].nodes == 1 && rows[0].replicas == 2 && rows[0].local_bsz == 128);
    free(rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(emu_place_even__splits_the_world_over_nodes),
        cmocka_unit_test_setup_teardown(emu_configure__the_plan_held_in_limits_else_the_fixed_rule,
                                        app_setup, app_teardown),
        cmocka_unit_test_setup_teardown(emu_advance__progress_by_goodput_across_epochs, app_setup,
                                        app_teardown),
        cmocka_unit_test(emu_checkpoint__round_trip_and_refusals),
        cmocka_unit_test_setup_teardown(emu_report_body__accepted_by_the_api, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(emulator__runs_to_completion_and_reports, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(emulator__sigterm_checkpoints_and_the_restart_continues,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(emulator__a_stop_reports_its_steps, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(emulator__a_slow_stop_checkpoint, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(emulator__after_sigkill_resumes_from_the_last_checkpoint,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(emulator__other_ranks_end_with_rank_0, fx_setup,
                                        fx_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
