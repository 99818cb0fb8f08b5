/* job.h: one emulated training job: its true speed from the measured profile of its model, its
 * progress through epochs, restarts, and the goodput model it learns from its own measurements.
 * Semantics of the Pollux artifact's simulator (reference section 6). */
#ifndef CASTOR_SIM_JOB_H
#define CASTOR_SIM_JOB_H

#include "model/bsz.h"
#include "model/fit.h"
#include "model/goodput.h"
#include "model/profile.h"
#include "sim/app.h"
#include "sim/family.h"
#include "sim/workload.h"

/* Seconds a job spends checkpointing and restarting after each reallocation. */
#define SIM_RESTART_DELAY 30

#define SIM_MAX_NODES 256

struct sim_job {
    const struct workload_job *spec;    /* borrowed from the workload */
    struct app *app;                    /* borrowed: the model's ground truth */
    const struct tput_model_ops *model; /* how the job models its own throughput */
    /* the total batch the job is fixed at (the baselines use the trace's; Pollux pins ncf's);
     * 0: adaptive, the goodput-optimal batch for its placement, re-chosen as it learns */
    double fixed_batch;
    int max_replicas; /* the owner's limit (0: none) */
    /* a batch change between placements needs this factor of predicted goodput (the reference's
     * 1.05; 0: re-chosen whenever better, as the artifact's simulator does) */
    double hysteresis;
    /* 1: a voluntary new configuration (batch size, accumulation) restarts the job as a new
     * placement does, from a checkpoint taken first (reconfigure: restart); 0: it is taken in
     * flight, for free */
    int reconf_restart;
    /* 1: rescale_left is a new configuration's restart not yet begun (found at the end of the last
     * step): a placement made now is the same restart, not another */
    int reconf_pending;
    /* 1: the job declared its length (the planner sees its work left), so a new configuration
     * that restarts it must also save more than the restart on the work it has left */
    int length_known;

    /* where it runs: GPUs per node, in order; nplace 0 when waiting */
    int place[SIM_MAX_NODES];
    int nplace;
    double local_bsz;
    int accum_steps;

    double now;         /* the job's own clock, seconds */
    int rescale_left;   /* seconds of restart still to go */
    double progress;    /* in iterations at the initial batch size */
    int epoch;          /* completed epochs */
    double attained;    /* GPU-seconds held */
    int restarts;       /* -1 before the first start */
    double completion;  /* completion time, or -1 */
    double first_start; /* when it first got GPUs, or -1 */

    /* checkpoints: every checkpoint_s seconds of running (0: only on restarts and notices) */
    double checkpoint_s;
    double since_ckpt;    /* seconds run since the last checkpoint */
    double ckpt_progress; /* progress and epoch saved by the last checkpoint */
    int ckpt_epoch;
    double lost_s;   /* seconds of running lost to preemptions */
    int preemptions; /* times a preemption took its GPUs */

    /* what the job has learned about itself */
    struct profile prof;
    int has_model;
    struct tput_params tput;
    struct grad_params grad;
    int max_profiled;
    long fits;
    int reported; /* 1 once it has measured a step */
    /* its model family (borrowed; NULL: none): it adds what it measures there and may start from
     * what the family measured before (sim_job_seed) */
    struct sim_family *family;
};

/* Set up job for spec with ground truth app (both borrowed). */
void sim_job_init(struct sim_job *job, const struct workload_job *spec, struct app *app,
                  const struct tput_model_ops *model, double fixed_batch, int max_replicas);

void sim_job_free(struct sim_job *job);

/* Move the job to a placement (GPUs per node, in order; n == 0 takes its GPUs away): it
 * checkpoints, then restarts in SIM_RESTART_DELAY seconds (the first start too, as every system
 * pays it alike). Errors:
 * ERR_RANGE (too many nodes), what choosing the batch size returns. */
int sim_job_place(struct sim_job *job, const int *place, int n);

/*
 * A job without a model of its own yet takes its family's: the family's measurements merged into
 * its profile and fitted, its exploration limit from the replicas they cover, and, before its own
 * first step, the family's start gradient statistics. Returns 1 when it took them, 0 when there
 * was nothing to take (no family, a model already, the family not ready). Errors: ERR_NOMEM and
 * what the fit returns (the job may then hold the merged measurements, without a model).
 */
int sim_job_seed(struct sim_job *job);

/* Advance the job by seconds (whole seconds), slowed by the interference fraction. Errors: what
 * the ground truth or the fit return (the job is then left as it was at the failing step). */
int sim_job_step(struct sim_job *job, int seconds, double interference);

/* Save the job's progress now (a notice, a voluntary restart). */
void sim_job_checkpoint(struct sim_job *job);

/* A preemption took the job's GPUs: it goes back to its last checkpoint and waits for GPUs. */
void sim_job_preempt(struct sim_job *job);

/*
 * A lower bound on the GPU-seconds the whole job needs on nodes of gpn GPUs: each epoch's work at
 * the best goodput per GPU of its ground truth over 1 to 2 gpn GPUs packed, local batch sizes on a
 * grid of the measured range, no accumulation. Errors: ERR_RANGE if no configuration is feasible.
 */
int sim_job_min_gpu_seconds(struct sim_job *job, int gpn, double *out);

/* What the ground truth gives at one configuration: the measured step, the gradient statistics
 * and the progress they make. */
struct sim_rate {
    double step;     /* one step of local_bsz per GPU, synchronisation included, seconds */
    double sync;     /* the part of step spent synchronising gradients */
    double opt_step; /* one optimizer step: step + accum_steps x (step - sync) */
    double sqr, var; /* gradient statistics at the total batch and epoch */
    double gain;     /* progress (iterations at the initial batch) per optimizer step */
    double goodput;  /* gain / opt_step: progress per second */
};

/* The rate of app's job on placement (GPUs per node, nplace entries) at local_bsz per GPU and
 * accum_steps accumulation steps during epoch, into *out (written only on success). Errors: those
 * of app_throughput and app_grad_stats (ERR_RANGE outside the measured batches or epochs). */
int sim_job_rate(struct app *a, const int *place, int nplace, double local_bsz, int accum_steps,
                 int epoch, struct sim_rate *out);

/* The fixed-batch rule: split batch over replicas, accumulating when a replica's share does not
 * fit app's largest local batch; a single GPU above the initial batch accumulates at least once.
 * Writes *local_bsz and *accum. Cannot fail (replicas >= 1). */
void sim_fixed_config(const struct app *a, double batch, int replicas, double *local_bsz,
                      int *accum);

/* The bsz limits of the job's model (from its app). */
void sim_job_limits(const struct sim_job *job, struct bsz_limits *lim);

/* 1 once finished. */
int sim_job_done(const struct sim_job *job);

/* 1 when the job has a deadline (seconds from its submission) and has not finished within it:
 * finished later, or not yet. */
int sim_job_missed_deadline(const struct sim_job *job);

#endif
