/* job.c: emulating one training job from the measured profile of its model. */
#include "sim/job.h"

#include <math.h>
#include <string.h>

#include "model/bsz.h"
#include "sim/family.h"
#include "util/error.h"

#define SIM_EPS 1e-8

void sim_job_init(struct sim_job *job, const struct workload_job *spec, struct app *app,
                  const struct tput_model_ops *model, double fixed_batch, int max_replicas)
{
    memset(job, 0, sizeof(*job));
    job->spec = spec;
    job->app = app;
    job->model = model;
    job->fixed_batch = fixed_batch;
    job->max_replicas = max_replicas;
    job->now = 0;
    job->restarts = -1;
    job->completion = -1;
    job->first_start = -1;
    job->grad = GRAD_PARAMS_NONE;
    profile_init(&job->prof);
}

void sim_job_free(struct sim_job *job)
{
    profile_free(&job->prof);
}

void sim_job_limits(const struct sim_job *job, struct bsz_limits *lim)
{
    lim->init_bsz = job->app->init_bsz;
    lim->max_bsz = job->app->max_bsz;
    lim->min_local = job->app->min_local;
    lim->max_local = job->app->max_local;
    lim->accumulation = 1;
}

int sim_job_done(const struct sim_job *job)
{
    return job->completion >= 0;
}

int sim_job_missed_deadline(const struct sim_job *job)
{
    return job->spec->deadline > 0 &&
           !(sim_job_done(job) && job->completion - job->spec->submit_time <= job->spec->deadline);
}

static int sim_job_gpus(const struct sim_job *job)
{
    int r = 0;

    for (int i = 0; i < job->nplace; i++)
        r += job->place[i];
    return r;
}

void sim_fixed_config(const struct app *a, double batch, int r, double *local_bsz, int *accum)
{
    double local = ceil(batch / r - SIM_EPS);
    int s = (int)ceil(local / a->max_local - SIM_EPS) - 1;

    if (s < 0)
        s = 0;
    if (r == 1 && batch > a->init_bsz && s < 1)
        s = 1;
    *accum = s;
    *local_bsz = ceil(local / (s + 1) - SIM_EPS);
}

/* The M0-equivalent samples job has left, as the planner knows them (NAN: its length not
 * declared). */
static double sim_job_samples_left(const struct sim_job *job)
{
    const struct app *a = job->app;
    double left = app_progress_needed(a, a->max_epochs) - job->progress;

    return job->length_known ? (left > 0 ? left : 0) * a->init_bsz : NAN;
}

/* Choose (local batch, accumulation) for the current placement; a voluntary change (not after a
 * placement) is made only when it improves the predicted goodput by the job's hysteresis and, for
 * a job that restarts into it, saves more than the restart on its work left (bsz_change_pays). */
static int sim_job_choose_batch(struct sim_job *job, int voluntary)
{
    const struct app *a = job->app;
    int r = sim_job_gpus(job), s;
    struct bsz_limits lim;
    double local;

    sim_job_limits(job, &lim);
    if (job->fixed_batch > 0) {
        sim_fixed_config(a, job->fixed_batch, r, &local, &s);
    } else if (!job->has_model) {
        sim_fixed_config(a, fmax(a->init_bsz, a->min_local * r), r, &local, &s);
    } else {
        struct bsz_choice c;
        int rc;

        rc = bsz_optimize(&job->tput, &job->grad, &lim, job->nplace, r, &c);
        if (rc == ERR_RANGE) {
            /* nothing fits the limits (more replicas than the batch can feed): fall back to
             * the smallest batch that gives every replica its minimum */
            sim_fixed_config(a, fmax(a->init_bsz, a->min_local * r), r, &local, &s);
        } else if (rc < 0) {
            return rc;
        } else if (voluntary && (job->hysteresis > 1 || job->reconf_restart) &&
                   job->local_bsz > 0 &&
                   !bsz_change_pays(bsz_goodput(&job->tput, &job->grad, lim.init_bsz, job->nplace,
                                                r, job->local_bsz, job->accum_steps),
                                    c.goodput, fmax(job->hysteresis, 1.0),
                                    sim_job_samples_left(job),
                                    job->reconf_restart ? SIM_RESTART_DELAY : 0)) {
            return 0; /* not worth a change: keep the configuration */
        } else {
            local = c.local_bsz;
            s = c.accum_steps;
        }
    }
    job->local_bsz = bsz_cap_local(&lim, r, s, local);
    job->accum_steps = s;
    return 0;
}

void sim_job_checkpoint(struct sim_job *job)
{
    job->ckpt_progress = job->progress;
    job->ckpt_epoch = job->epoch;
    job->since_ckpt = 0;
}

void sim_job_preempt(struct sim_job *job)
{
    if (sim_job_done(job))
        return;
    job->progress = job->ckpt_progress;
    job->epoch = job->ckpt_epoch;
    job->lost_s += job->since_ckpt;
    job->since_ckpt = 0;
    job->preemptions++;
    job->nplace = 0;
    job->local_bsz = 0;
    job->accum_steps = 0;
}

int sim_job_place(struct sim_job *job, const int *place, int n)
{
    if (n > SIM_MAX_NODES)
        return ERR_RANGE;
    if (job->nplace > 0)
        sim_job_checkpoint(job);
    if (n == 0) {
        job->nplace = 0;
        job->local_bsz = 0;
        job->accum_steps = 0;
        return 0;
    }
    memcpy(job->place, place, (size_t)n * sizeof(int));
    job->nplace = n;
    job->rescale_left = SIM_RESTART_DELAY;
    if (job->restarts < 0)
        job->first_start = job->now;
    /* a new configuration's restart not begun yet is this one (one restart, as the controller
     * counts a move with a new configuration) */
    if (!job->reconf_pending)
        job->restarts = job->restarts < 0 ? 0 : job->restarts + 1;
    job->reconf_pending = 0;
    return sim_job_choose_batch(job, 0);
}

/* Learn from one step at the current configuration: the gradient statistics always, the step time
 * once per new (nodes, replicas, local batch), then refit. */
static int sim_job_learn(struct sim_job *job, int r, double step, double sync, double sqr,
                         double var)
{
    struct tput_point x = {.nodes = job->nplace, .replicas = r, .local_bsz = job->local_bsz};
    int rc;

    job->grad.sqr = sqr;
    job->grad.var = var;
    if (!job->reported) {
        job->reported = 1;
        if (job->family)
            sim_family_start(job->family, &job->grad);
    }
    for (size_t i = 0; i < job->prof.n; i++) {
        const struct tput_point *y = &job->prof.entries[i].x;

        if (y->nodes == x.nodes && y->replicas == x.replicas && y->local_bsz == x.local_bsz)
            return 0;
    }
    if ((rc = profile_add(&job->prof, &x, step, sync)) < 0)
        return rc;
    if (r > job->max_profiled)
        job->max_profiled = r;
    if (job->family && (rc = sim_family_learn(job->family, &job->prof)) < 0)
        return rc;
    if ((rc = fit_tput(job->model, &job->prof, &job->tput, NULL)) < 0)
        return rc;
    job->has_model = 1;
    job->fits++;
    return 0;
}

int sim_job_seed(struct sim_job *job)
{
    struct tput_coverage cov;
    int rc;

    if (!job->family || job->has_model || !sim_family_ready(job->family))
        return 0;
    if ((rc = profile_merge(&job->prof, &job->family->prof)) < 0)
        return rc;
    profile_coverage(&job->prof, &cov);
    if (cov.max_replicas > job->max_profiled)
        job->max_profiled = cov.max_replicas;
    if (!job->reported)
        job->grad = job->family->start;
    if ((rc = fit_tput(job->model, &job->prof, &job->tput, NULL)) < 0)
        return rc;
    job->has_model = 1;
    job->fits++;
    return 1;
}

int sim_job_rate(struct app *a, const int *place, int nplace, double local_bsz, int accum_steps,
                 int epoch, struct sim_rate *out)
{
    double batch, step, sync, sqr, var;
    struct grad_params g;
    int gpus = 0, rc;

    for (int i = 0; i < nplace; i++)
        gpus += place[i];
    batch = gpus * local_bsz * (accum_steps + 1);
    if ((rc = app_throughput(a, place, nplace, local_bsz, &step, &sync)) < 0 ||
        (rc = app_grad_stats(a, batch, epoch, &sqr, &var)) < 0)
        return rc;
    g.sqr = sqr;
    g.var = var;
    out->step = step;
    out->sync = sync;
    out->opt_step = step + accum_steps * (step - sync);
    out->sqr = sqr;
    out->var = var;
    out->gain = goodput_gain(&g, batch / a->init_bsz);
    out->goodput = out->gain / out->opt_step;
    return 0;
}

int sim_job_step(struct sim_job *job, int seconds, double interference)
{
    const struct app *a = job->app;
    int gpus = sim_job_gpus(job), d, rc;

    if (job->nplace == 0 || sim_job_done(job)) {
        job->now += seconds;
        return 0;
    }
    while (seconds > 0 && !sim_job_done(job)) {
        int chunk = seconds;
        double goodput, next, local = job->local_bsz;
        int accum = job->accum_steps;
        struct sim_rate rate;

        if (job->rescale_left > 0) {
            /* restarting: its GPUs held, no progress */
            job->reconf_pending = 0;
            d = job->rescale_left < seconds ? job->rescale_left : seconds;
            job->now += d;
            job->attained += (double)d * gpus;
            job->rescale_left -= d;
            seconds -= d;
            continue;
        }
        if ((rc = sim_job_rate(job->app, job->place, job->nplace, job->local_bsz, job->accum_steps,
                               job->epoch, &rate)) < 0)
            return rc;
        if ((rc = sim_job_learn(job, gpus, rate.step, rate.sync, rate.sqr, rate.var)) < 0)
            return rc;
        goodput = rate.goodput * (1.0 - interference);
        next = app_progress_needed(a, job->epoch + 1);
        /* a periodic checkpoint inside this chunk: run up to it */
        if (job->checkpoint_s > 0 && job->since_ckpt + chunk >= job->checkpoint_s)
            chunk = (int)ceil(job->checkpoint_s - job->since_ckpt - SIM_EPS);
        if (chunk < 1)
            chunk = 1;
        if (job->progress + goodput * chunk < next) {
            job->progress += goodput * chunk;
            job->now += chunk;
            job->attained += (double)chunk * gpus;
            job->since_ckpt += chunk;
            seconds -= chunk;
            if (job->checkpoint_s > 0 && job->since_ckpt >= job->checkpoint_s - SIM_EPS)
                sim_job_checkpoint(job);
        } else {
            /* the epoch ends inside this step: the time to it, rounded to a whole second
             * (half to even) */
            double delta = rint((next - job->progress) / goodput);

            job->epoch++;
            if (job->epoch >= a->max_epochs)
                job->completion = job->now + delta;
            job->progress = next;
            job->now += delta;
            job->attained += delta * gpus;
            job->since_ckpt += delta;
            seconds -= (int)delta;
        }
        if ((rc = sim_job_choose_batch(job, 1)) < 0)
            return rc;
        /* a new configuration its replicas restart into: checkpointed first (a worker that
         * restarts for a new configuration saves its progress), then the restart's delay */
        if (job->reconf_restart && !sim_job_done(job) &&
            (job->local_bsz != local || job->accum_steps != accum)) {
            sim_job_checkpoint(job);
            job->rescale_left = SIM_RESTART_DELAY;
            job->restarts++;
            job->reconf_pending = 1;
        }
    }
    job->now += seconds;
    return 0;
}

int sim_job_min_gpu_seconds(struct sim_job *job, int gpn, double *out)
{
    struct app *a = job->app;
    double total = 0;

    for (int ep = 0; ep < a->max_epochs; ep++) {
        double work = app_progress_needed(a, ep + 1) - app_progress_needed(a, ep), best = 0;

        for (int r = 1; r <= 2 * gpn; r++) {
            int place[2] = {r < gpn ? r : gpn, r - gpn > 0 ? r - gpn : 0};
            int np = place[1] > 0 ? 2 : 1;

            for (int i = 0; i <= 16; i++) {
                double local = a->min_local * pow((double)a->max_local / a->min_local, i / 16.0);

                local = floor(local);
                /* accumulating pays only once the local batch is at its largest (as the
                 * completion-time bound's table, sim_bound_goodputs) */
                for (int acc = 0; acc <= (i == 16 ? 4 : 0); acc++) {
                    double batch = local * r * (acc + 1), step, sync, sqr, var, per_gpu;
                    struct grad_params g;

                    if (batch < a->init_bsz || batch > a->max_bsz ||
                        app_throughput(a, place, np, local, &step, &sync) < 0 ||
                        app_grad_stats(a, batch, ep, &sqr, &var) < 0 || !(step > 0))
                        continue;
                    g.sqr = sqr;
                    g.var = var;
                    /* an optimizer step: acc more micro-batches of compute before the sync */
                    per_gpu =
                        goodput_gain(&g, batch / a->init_bsz) / (step + acc * (step - sync)) / r;
                    if (per_gpu > best)
                        best = per_gpu;
                }
            }
        }
        if (!(best > 0))
            return ERR_RANGE;
        total += work / best;
    }
    *out = total;
    return 0;
}
