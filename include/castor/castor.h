/* castor.h: libcastor, the library a training job calls once per optimizer step: it keeps the
 * job's step times per configuration and its gradient noise statistics, reports them to the castor
 * controller, and hands back the batch size, accumulation steps and learning-rate gain to use. */
#ifndef CASTOR_CASTOR_H
#define CASTOR_CASTOR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Versions. The header's version is CASTOR_VERSION_NUMBER; the library's is castor_version().
 * Within one major version the library keeps every function and struct field of an older minor
 * version (the shared object's name, libcastor.so.MAJOR, changes with the major version only);
 * structs that may grow are passed with their size, so an older caller keeps working.
 */
#define CASTOR_VERSION_MAJOR 0
#define CASTOR_VERSION_MINOR 2
#define CASTOR_VERSION_PATCH 0
#define CASTOR_VERSION_NUMBER \
    (CASTOR_VERSION_MAJOR * 10000 + CASTOR_VERSION_MINOR * 100 + CASTOR_VERSION_PATCH)

/* The library's version, encoded as CASTOR_VERSION_NUMBER is. Never fails. */
unsigned castor_version(void);

/*
 * Errors. Every function that can fail returns 0 or one of these negative codes. A function that
 * fails changes nothing and writes no out-parameter, unless it says otherwise.
 */
#define CASTOR_OK 0
#define CASTOR_ENOMEM (-1)    /* out of memory */
#define CASTOR_EINVAL (-2)    /* an argument or an environment variable out of range */
#define CASTOR_EIO (-3)       /* the controller cannot be reached, or a file cannot be read */
#define CASTOR_ENOENT (-4)    /* a required environment variable or file is missing */
#define CASTOR_EPARSE (-5)    /* the controller's answer or a saved state does not parse */
#define CASTOR_ERANGE (-7)    /* a value or a buffer out of range (too small: see the function) */
#define CASTOR_EAGAIN (-10)   /* timed out; the operation goes on in the background */
#define CASTOR_EREFUSED (-13) /* the controller refused (an unknown or ended job, a bad token) */

/* A message for a code, in English; static storage, never NULL. */
const char *castor_strerror(int code);

/* A handle: one per training process. Opaque. */
struct castor;

/*
 * How to reach the controller and where the job runs; what castor_new_from_env reads from the
 * environment. Zero-initialise, set what is known, pass with its size.
 */
struct castor_options {
    /* The controller's base URL (http:// or https://host[:port]); NULL: no controller (the
     * statistics are kept and can be read, nothing is reported, the configuration stays). */
    const char *url;
    const char *job;      /* the job's name; required with url */
    const char *token;    /* the job token; required with url; copied, and the copy wiped at free */
    const char *ca_file;  /* PEM file of certificates to trust for https; NULL: the system's */
    int rank;             /* this process's rank, 0 .. world_size - 1; only rank 0 reports */
    int world_size;       /* replicas in all, >= 1 (0: 1) */
    int nodes;            /* nodes the replicas run on, 1 .. world_size (0: 1) */
    double local_bsz;     /* samples per micro-batch per replica; 0: not known yet (set_batch) */
    int accum_steps;      /* extra micro-batches per optimizer step, >= 0 */
    double lr_gain;       /* the learning-rate gain the job starts with, > 0 (0: 1) */
    double init_bsz;      /* M0, the batch the job's learning rate was tuned at; 0: the first
                           * total batch (world_size x local_bsz x (accum_steps + 1)) */
    double max_bsz;       /* the largest total batch the job allows; 0: init_bsz */
    double max_local_bsz; /* the largest micro-batch that fits on one GPU; 0: max_bsz */
    int accumulation;     /* 1: the local batch-size choice may accumulate gradients */
    double report_interval;  /* seconds between reports, > 0 (0: 30) */
    long timeout_ms;         /* per request to the controller (0: 5000) */
    unsigned long long seed; /* the retry jitter's seed */
    /* (0.2) the all-reduce bus bandwidth between two GPUs of this node in bytes per second, as
     * castor-node measured it (CASTOR_ALLREDUCE_BUSBW); 0: not known. With castor_set_grad_bytes
     * it gives the synchronisation time of placements the job has not run yet. */
    double allreduce_busbw;
};

/*
 * A new handle from options (opt_size = sizeof(struct castor_options) as the caller compiled it).
 * On rank 0 with a url, starts the background thread that reports every report_interval seconds.
 * Errors: CASTOR_EINVAL (a field out of range, a url that is not http(s), a job name that is not
 * 1 to 128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit, a token that is not 16
 * to 512 printable characters without spaces), CASTOR_ENOMEM, CASTOR_EIO (the thread cannot
 * start). msg (may be NULL; msg_size bytes) receives the reason in words on error, naming the
 * field but never the token's value. On success *out owns the handle (castor_free).
 */
int castor_new(const struct castor_options *opt, size_t opt_size, struct castor **out, char *msg,
               size_t msg_size);

/*
 * A new handle from the environment castor-node sets for each replica:
 *   CASTOR_URL            the controller's URL (unset: no controller, as url NULL above)
 *   CASTOR_JOB            the job's name
 *   CASTOR_JOB_TOKEN      the job token, or CASTOR_JOB_TOKEN_FILE: a file holding it (readable
 *                         by its owner only, mode 600; a final newline is dropped)
 *   CASTOR_RANK, CASTOR_WORLD_SIZE, CASTOR_NODES
 *   CASTOR_LOCAL_BSZ, CASTOR_ACCUM_STEPS, CASTOR_LR_GAIN   the configuration the plan gave
 *   CASTOR_INIT_BSZ, CASTOR_MAX_BSZ, CASTOR_MAX_LOCAL_BSZ, CASTOR_ACCUMULATION   the job's limits
 *   CASTOR_REPORT_INTERVAL (seconds), CASTOR_TIMEOUT_MS, CASTOR_CA_FILE, CASTOR_SEED
 * each read into the field of struct castor_options of the same name (unset: 0 or NULL).
 * Errors as castor_new, plus CASTOR_ENOENT (CASTOR_URL set without CASTOR_JOB or a token; a token
 * file that does not exist), CASTOR_EINVAL (a number that does not parse; a token file readable
 * by others), CASTOR_EIO (a token file that cannot be read); msg names the variable.
 */
int castor_new_from_env(struct castor **out, char *msg, size_t msg_size);

/* Stop the background thread (waiting for a request in flight, at most timeout_ms), wipe the
 * token and free the handle. Reports not sent yet are lost: call castor_flush first to send
 * them. NULL is ignored. */
void castor_free(struct castor *h);

/*
 * One optimizer step, called once per step after the optimizer has stepped, with:
 *   step_seconds   the step's wall time (every micro-batch's forward and backward, the gradient
 *                  synchronisation and the optimizer), > 0
 *   sync_seconds   the part of it spent waiting for the gradient all-reduce, 0 <= sync < step
 *   micro_sqr      the squared L2 norms of the step's n micro-batch gradients, all replicas'
 *                  (n = world_size x (accum_steps + 1)): |g_i|^2 of each replica's gradient of
 *                  each micro-batch before the all-reduce, unscaled (divided by the mixed-
 *                  precision loss scale squared) and preconditioned (g / P for Adam); NULL with
 *                  n 0 for a step without gradient statistics (timing only)
 *   avg_sqr        the squared norm of the average of those n gradients (the all-reduced
 *                  gradient, divided by accum_steps + 1). With a single gradient (n = 1: one
 *                  replica, no accumulation): the squared norm of the average of this step's
 *                  gradient and the previous step's, which the caller kept; NAN for none
 * On rank 0 it pools the step time under the current configuration (castor_set_batch), folds the
 * norms into the gradient noise statistics (the estimators and moving averages of the Pollux
 * paper), and advances the progress by the step's AdaScale gain. It never waits for the network:
 * the background thread reports. On other ranks it only counts the step.
 * Bad input never stops training: a time that is not finite, <= 0, or a sync not in [0, step)
 * skips the step's timing; a norm that is NaN, infinite or negative (a mixed-precision overflow)
 * or an n that does not match the configuration skips its statistics (and its progress); each is
 * counted (castor_get_stats) and CASTOR_EINVAL is returned, and what was valid is kept.
 * Returns 0, CASTOR_EINVAL as said, CASTOR_ENOMEM.
 */
int castor_step(struct castor *h, double step_seconds, double sync_seconds, const double *micro_sqr,
                size_t n, double avg_sqr);

/* As castor_step with ngroups >= 1 parameter groups (an optimizer's groups, kept apart as the
 * reference does): micro_sqr holds ngroups x n norms, group by group (micro_sqr[g * n + i]), and
 * avg_sqr ngroups values. The group count is the first step's; a different one restarts the
 * statistics. */
int castor_step_groups(struct castor *h, double step_seconds, double sync_seconds, size_t ngroups,
                       const double *micro_sqr, size_t n, const double *avg_sqr);

/* The job now runs local_bsz (> 0) samples per micro-batch with accum_steps (>= 0) extra
 * micro-batches per step: the configuration the next steps are pooled under. Call it when the
 * job applies a new decision (its world size and nodes are those of the process). The first
 * call fixes init_bsz when it was 0. CASTOR_EINVAL for values out of range. */
int castor_set_batch(struct castor *h, double local_bsz, int accum_steps);

/*
 * The size in bytes of one replica's gradients (the parameters' elements times their size). With
 * the node's all-reduce bandwidth (allreduce_busbw) known, bytes / busbw - what one ring
 * all-reduce between two GPUs takes - is the job's synchronisation prior: its throughput model,
 * here and at the controller (sent with each report), takes it as the sync time on one node until
 * a multi-GPU placement has been measured, instead of assuming synchronisation free. 0 bytes: no
 * prior. CASTOR_EINVAL for a NULL handle or bytes negative or not finite.
 */
int castor_set_grad_bytes(struct castor *h, double bytes);

/* What the job should run at. */
struct castor_decision {
    int world_size;      /* replicas the controller allocated; a change asks for a restart */
    int nodes;           /* nodes they are on */
    double local_bsz;    /* samples per micro-batch per replica */
    int accum_steps;     /* extra micro-batches per optimizer step */
    double lr_gain;      /* multiply the base learning rate by this (AdaScale) */
    int from_controller; /* 1: the controller's plan; 0: libcastor's own choice or the start */
    long long version;   /* 0 at the start, +1 each time a report brought a different decision */
};

/*
 * The current decision into *out (a copy; sizeof(struct castor_decision) as compiled: the fields
 * that fit are written). Before the first answer from the controller it is the starting
 * configuration (the options). After each report the background thread asks the controller for
 * the job's allocation: the plan's local batch, accumulation and gain when it gave them, else the
 * batch-size optimizer's choice for the allocated replicas from the throughput model fitted to the
 * job's step times and the AdaScale gain of that batch. Cheap (a lock and a copy): call it every
 * step. On ranks other than 0 it stays the starting configuration: rank 0 must share it (the
 * Python adapter broadcasts it). CASTOR_EINVAL for NULL arguments or a size too small.
 */
int castor_get_decision(struct castor *h, struct castor_decision *out, size_t size);

/* Counters and the current statistics. */
struct castor_stats {
    long long steps;           /* castor_step calls */
    long long time_skipped;    /* steps whose timing was refused */
    long long grad_skipped;    /* steps whose norms were refused */
    long long reports_sent;    /* reports the controller accepted */
    long long reports_failed;  /* attempts that failed (unreachable, timeout, 5xx): retried */
    long long reports_refused; /* reports the controller refused (4xx): their data dropped */
    long long steps_dropped;   /* step times that found the report full (64 configurations) */
    double grad_sqr;           /* the gradient statistics a report carries; NAN before any */
    double grad_var;
    double progress;       /* sum of the steps' AdaScale gains: iterations at init_bsz */
    int grad_biased;       /* 1 while the statistics come from the differenced estimator */
    long long time_warmup; /* steps whose timing was left out: the first of the handle and the
                            * first after each batch change (setup, not the steady step time) */
};

/* The counters into *out (sizeof(struct castor_stats) as compiled). CASTOR_EINVAL for NULL
 * arguments or a size too small. */
int castor_get_stats(struct castor *h, struct castor_stats *out, size_t size);

/*
 * Report now and wait, at most timeout_ms (>= 0), for the outcome: 0 (the report and the
 * allocation came through; the decision is updated); that attempt's error: CASTOR_EIO (the
 * controller unreachable or failing: the data is kept for the next attempt), CASTOR_EREFUSED (a
 * 4xx answer: the report's data dropped), CASTOR_EPARSE (an allocation that does not parse),
 * CASTOR_ENOMEM; or CASTOR_EAGAIN (not done in time: the attempt goes on in the background).
 * Without a controller or on a rank other than 0: 0 at once. CASTOR_EINVAL for a NULL handle or a
 * negative timeout. Call it before a checkpoint or an exit.
 */
int castor_flush(struct castor *h, long timeout_ms);

/*
 * Tell the controller, once and from the caller's thread, that a checkpoint of the job's progress
 * now is on disk (castor_checkpointed: a restart resumes there, and the controller counts work
 * after it as lost on a preemption), or that the job completed its work (castor_finished: the
 * controller releases its GPUs and records it finished). Each waits at most the handle's timeout:
 * 0; CASTOR_EIO (unreachable, failing or busy - 429, 408 - : worth calling again; a checkpoint
 * notice is also sent again by the reporting thread until accepted or refused), CASTOR_EREFUSED
 * (another 4xx answer: it would be refused again), CASTOR_ENOMEM. Without a controller or on a
 * rank other than 0: 0 at once. CASTOR_EINVAL for a NULL handle. Training goes on whatever they
 * return.
 */
int castor_checkpointed(struct castor *h);
int castor_finished(struct castor *h);

/* The job's progress (iterations at init_bsz) into *out, and set it (>= 0, finite), for a job
 * that restores a checkpoint without castor_load_state. CASTOR_EINVAL for bad arguments. */
int castor_get_progress(struct castor *h, double *out);
int castor_set_progress(struct castor *h, double progress);

/*
 * Save the state a restart should keep (the progress and the gradient statistics' moving
 * averages) as text into buf (size bytes, NUL-terminated); *len (may be NULL) receives the
 * length without the NUL, also when the buffer is too small (CASTOR_ERANGE: call again with
 * *len + 1 bytes). CASTOR_EINVAL, CASTOR_ENOMEM.
 */
int castor_save_state(struct castor *h, char *buf, size_t size, size_t *len);

/* Restore what castor_save_state wrote (len bytes). CASTOR_EPARSE for text it cannot have
 * written; the handle is then unchanged. CASTOR_EINVAL, CASTOR_ENOMEM. */
int castor_load_state(struct castor *h, const char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
