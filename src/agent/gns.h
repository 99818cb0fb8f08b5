/* gns.h: gradient noise statistics (|g|^2 and the gradient variance) from per-step squared norms,
 * with Pollux's bias-corrected moving average. Pure: no clock, no I/O. */
#ifndef CASTOR_AGENT_GNS_H
#define CASTOR_AGENT_GNS_H

#include <stddef.h>

#include "model/goodput.h"

/*
 * What the estimator sees and what it yields (pollux-reference section 2):
 *
 * Each optimizer step averages n = replicas x (accum_steps + 1) independent micro-batch gradients
 * g_1..g_n of local_bsz samples each. With per-sample gradient covariance Sigma and true gradient
 * g, E|g_i|^2 = |g|^2 + tr(Sigma)/local_bsz. With local = sum_i |g_i|^2 / n, the mean squared
 * norm of the micro-batch gradients, and total = |mean_i g_i|^2, that of their average:
 *
 *   sqr = (n total - local) / (n - 1)        unbiased for |g|^2
 *   var = (local - total) scale / (n - 1)    unbiased for tr(Sigma)/M0 (scale = n local_bsz/M0)
 *
 * which are struct grad_params' sqr and var (model/goodput.h): var is the variance of a gradient
 * averaged over M0 samples, so that var/scale + sqr is E|gradient at batch M|^2.
 *
 * With a single gradient (one replica, no accumulation) there is nothing to difference within the
 * step; the "differenced" estimator pairs this step's gradient with the previous step's (n = 2,
 * scale = 2 local_bsz/M0). Consecutive gradients are taken at different parameters, so the
 * estimate is biased; the state remembers that, and the first step with n > 1 after it restarts
 * the averages from scratch.
 *
 * Each estimate enters a bias-corrected exponential moving average with theta = 0.999^scale (a
 * step that averages more samples moves the average more):
 *
 *   biased = theta biased + (1 - theta) x
 *   unbias = theta unbias + (1 - theta)
 *   value  = biased / unbias
 *
 * so the first estimate after a reset is taken whole. The averages are kept per parameter
 * group (an optimizer's groups); the reported statistics are sum(max(sqr, 0)) and
 * sum(max(var, 1e-6)) over groups.
 *
 * Preconditioned optimizers (Adam): the norms are those of the preconditioned gradients g / P,
 * element-wise, P = sqrt(exp_avg_sq / (1 - beta2^t)) + eps (gns_adam_precond), from the t-th Adam
 * step with t >= GNS_ADAM_WARMUP; before that (and for SGD) P = 1, plain gradients. Every norm of
 * one step, the previous gradient's included, uses the same P, the one of this step.
 *
 * Mixed precision: the norms are of unscaled gradients (a local norm computed on loss-scaled
 * gradients is divided by the loss scale squared). A step whose norms overflowed (inf or NaN) is
 * refused with ERR_INVAL and changes nothing; the caller skips it.
 */

/* Per unit of scale, the moving average keeps this much of its past: theta = 0.999^scale. */
#define GNS_SMOOTHING 0.999
/* Reported variance floor per group. */
#define GNS_VAR_FLOOR 1e-6
/* The Adam preconditioner applies from this Adam step count on (the production reference). */
#define GNS_ADAM_WARMUP 5
/* Bounds on the step description, far above any real job, so that counts stay exact. */
#define GNS_MAX_GROUPS 4096
#define GNS_MAX_COUNT 1048576

/* One optimizer step's shape. */
struct gns_step {
    double local_bsz; /* samples per micro-batch on one replica, > 0 */
    double init_bsz;  /* M0, the batch size the job's learning rate is tuned for, > 0 */
    int replicas;     /* data-parallel replicas, >= 1 */
    int accum_steps;  /* extra micro-batches per replica per optimizer step (bsz.h), >= 0 */
};

/*
 * One parameter group's squared norms for the step (after preconditioning, unscaled), all finite
 * and >= 0:
 * - local_sqr: the sum over all replicas x (accum_steps + 1) micro-batch gradients of |g_i|^2,
 *   summed across replicas (the all-reduce of each rank's own sum);
 * - total_sqr: |mean_i g_i|^2, the norm of the averaged (all-reduced) gradient; with a single
 *   gradient it equals local_sqr and is not read;
 * - with a single gradient only (replicas = 1, accum_steps = 0): has_prev is 1 when the previous
 *   step's gradient g_prev was kept, prev_sqr = |g_prev|^2 and pair_sqr = |(g_prev + g) / 2|^2.
 *   When has_prev is 0 (the first such step) the step only starts the pairing: nothing changes.
 */
struct gns_norms {
    double local_sqr;
    double total_sqr;
    int has_prev;
    double prev_sqr;
    double pair_sqr;
};

/* Norms of one group from per-gradient squared norms: sqr[0..n) those of the n micro-batch (or
 * replica) gradients, sqr[n] that of their average, the layout cuda/gradstats.h produces. Sets
 * local_sqr to the sum and total_sqr to sqr[n], has_prev to 0. Returns ERR_INVAL for NULL
 * pointers, n 0 or any value NaN, infinite or negative (one bad norm cannot hide in the sum);
 * *out written only on success. */
int gns_norms_from(const double *sqr, size_t n, struct gns_norms *out);

/* The running state; opaque. */
struct gns;

/* A new state for ngroups parameter groups (1..GNS_MAX_GROUPS), in the initial state (per group
 * sqr = 1, var = 0, as the reference starts). Returns 0 and *out (owned by the caller, freed with
 * gns_free); ERR_INVAL for a bad ngroups or NULL out, ERR_NOMEM. */
int gns_new(size_t ngroups, struct gns **out);

/* Frees a state; NULL is a no-op. */
void gns_free(struct gns *s);

/* Back to the initial state, as after gns_new. */
void gns_reset(struct gns *s);

/*
 * The raw estimate of one step for one group, without smoothing: *out (sqr, var), *scale (the
 * step's M/M0, or 2 local_bsz/M0 for the differenced estimator; may be NULL) and *biased (1 for
 * the differenced estimator; may be NULL). Returns ERR_INVAL for bad step fields, non-finite or
 * negative norms, or a single-gradient step without a previous gradient; ERR_RANGE when the
 * estimate overflows. Outputs are written only on success.
 */
int gns_estimate(const struct gns_step *step, const struct gns_norms *norms,
                 struct grad_params *out, double *scale, int *biased);

/*
 * Folds one step into the moving averages: norms[g] for each of the state's groups. Returns 0
 * (also for a first single-gradient step, which changes nothing: see gns_steps); ERR_INVAL (as
 * gns_estimate, for any group) or ERR_RANGE (an average would overflow) and the state is unchanged.
 */
int gns_update(struct gns *s, const struct gns_step *step, const struct gns_norms *norms);

/* What a job reports: sum over groups of max(sqr, 0) and of max(var, GNS_VAR_FLOOR). */
void gns_params(const struct gns *s, struct grad_params *out);

/* One group's smoothed (sqr, var), unclamped. ERR_RANGE for a group out of range. */
int gns_group(const struct gns *s, size_t group, struct grad_params *out);

/* Number of parameter groups. */
size_t gns_groups(const struct gns *s);

/* Steps folded in since the last reset (a reset by a switch of estimator included). */
long gns_steps(const struct gns *s);

/* 1 when the averages come from the differenced (biased) estimator, else 0. */
int gns_biased(const struct gns *s);

/* The state as numbers, for a checkpoint: GNS_SAVED_HEAD + 4 x ngroups doubles (the group
 * count, the shared weight, the step count, the estimator; then each group's running sums and
 * current values). */
#define GNS_SAVED_HEAD 4

/* The number of doubles gns_save writes for s. */
size_t gns_saved_len(const struct gns *s);

/* Write s into out (gns_saved_len(s) doubles). */
void gns_save(const struct gns *s, double *out);

/* A new state from n doubles written by gns_save. ERR_INVAL (a length or value that gns_save
 * cannot have written: a bad group count, non-finite or negative weights and counts), ERR_NOMEM.
 * On success *out owns the state (gns_free); on error it is untouched. */
int gns_load(const double *in, size_t n, struct gns **out);

/*
 * Adam's preconditioner for one element: sqrt(exp_avg_sq / (1 - beta2^step)) + eps, given the
 * second-moment estimate exp_avg_sq (>= 0), beta2 in (0, 1), the Adam step count (>= 1) and eps
 * (>= 0). Returns 1 (no preconditioning) while step < GNS_ADAM_WARMUP, and NaN for arguments out
 * of range (which gns_update then refuses through the norms).
 */
double gns_adam_precond(double exp_avg_sq, double beta2, long step, double eps);

#endif
