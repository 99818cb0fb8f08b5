/* tput.h: throughput models, how long one training step takes for a placement and batch size.
 * Each model is a `const struct tput_model_ops`, chosen by name; its fitted parameters live in a
 * `struct tput_params`. Pure functions; no I/O, no clock. */
#ifndef CASTOR_MODEL_TPUT_H
#define CASTOR_MODEL_TPUT_H

#include <math.h>
#include <stddef.h>

#define TPUT_MAX_PARAMS 12

/* Where and how a job runs: nodes used, replicas (GPUs) in all, per-GPU (atomic) batch. */
struct tput_point {
    int nodes;
    int replicas;
    double local_bsz;
};

/* One measurement: a step of step_time seconds at x, sync_time of it synchronising gradients. */
struct tput_sample {
    struct tput_point x;
    double step_time;
    double sync_time;
};

/* What a fit has seen, which decides the priors for what it has not. */
struct tput_coverage {
    int distinct_local_bsz; /* distinct atomic batch sizes observed: 0, 1, or 2 for "several" */
    int multi_node;         /* any observation with nodes > 1 */
    int single_node_multi;  /* any observation with nodes == 1 and replicas > 1 */
    int replicas_over_two;  /* any observation with replicas > 2 */
    int max_replicas;       /* largest replica count observed */
    int max_nodes;          /* largest node count observed */
    int several_per_node;   /* any observation with more GPUs than nodes (replicas > nodes) */
    int two_node_several;   /* any observation on 2 nodes with more than one GPU per node */
    int three_nodes;        /* any observation on 3 or more nodes */
    double mean_accum_time; /* mean observed compute time, seconds */
    double sync_prior;      /* the profile's sync_prior (seconds; 0: none) */
};

/* One configuration of a profile as a fit sees it: where, how many observations it stands for,
 * and their mean log compute time and mean log step time (in the fit's unit of time). */
struct tput_fit_row {
    struct tput_point x;
    double count;
    double log_acc;
    double log_opt;
};

struct tput_model_ops {
    const char *name;
    const char *summary;
    int nparams;
    const char *const *param_names;
    const double *init;  /* the fit's initial point, nparams values */
    const double *lower; /* bounds, nparams values each (HUGE_VAL for none) */
    const double *upper;
    /* 1 for parameters measured in seconds (or seconds per sample): predictions must scale by s
     * when all of them do, which lets the fit work in units of the job's own step time. */
    const unsigned char *time_param;
    /*
     * The logarithms of the predicted compute time of one micro-batch (log_acc) and of one
     * optimizer step without accumulation (log_opt: compute plus synchronisation), in log-seconds:
     * the fit works in log space, and so does the overlap, so models hand back logs. When d_acc
     * and d_opt are not NULL, write the partial derivatives of log_acc and log_opt by each
     * parameter (nparams values each).
     */
    void (*predict)(const double *theta, const struct tput_point *x, double *log_acc,
                    double *log_opt, double *d_acc, double *d_opt);
    /*
     * Optional, together: the fit's sums over a profile, with what does not depend on the
     * parameters worked out once per fit. plan_new prepares rows[0..n) (it need not keep rows) and
     * returns 0 or ERR_NOMEM; plan_sums writes, at theta, *sa = sum of count * (log_acc -
     * rows' log_acc)^2 and *so the same for log_opt and, when ga is not NULL, their halved
     * gradients ga[k] = sum of count * (log_acc error) * d log_acc / d theta[k] and go likewise
     * (nparams values each); plan_free releases the plan. The fit uses these when present and the
     * sums from predict otherwise; both give the same values up to rounding.
     */
    int (*plan_new)(const struct tput_fit_row *rows, size_t n, void **plan);
    void (*plan_sums)(void *plan, const double *theta, double *sa, double *so, double *ga,
                      double *go);
    void (*plan_free)(void *plan);
    /* Optional, with a plan: a better initial point than init, from the plan's rows (in the fit's
     * unit of time): overwrites theta[k] for the parameters not pinned, within the bounds. */
    void (*plan_guess)(void *plan, const unsigned char *pinned, double *theta);
    /* The fit's regulariser at theta; adds its gradient into grad when not NULL. May be NULL. */
    double (*regularizer)(const double *theta, double *grad);
    /* Priors before the fit: for what cov says is unobserved, set pinned[i] = 1 and theta[i] to the
     * assumed value. May be NULL. */
    void (*pin)(const struct tput_coverage *cov, double *theta, unsigned char *pinned);
    /* Priors after the fit (for example: unexplored links assumed slower). May be NULL. */
    void (*post_fit)(const struct tput_coverage *cov, double *theta);
};

/* A fitted (or assumed) model: the ops are static, theta is owned by value. */
struct tput_params {
    const struct tput_model_ops *ops;
    double theta[TPUT_MAX_PARAMS];
};

extern const struct tput_model_ops tput_model_pollux; /* the published model (Pollux, OSDI'21) */
extern const struct tput_model_ops tput_model_castor; /* castor's default */

/* The model called name, or NULL. "default" names castor's default. */
const struct tput_model_ops *tput_model_find(const char *name);

/* All models, NULL-terminated, for listings. */
extern const struct tput_model_ops *const tput_models[];

/* params = the model's initial point (before any fit). */
void tput_params_init(struct tput_params *params, const struct tput_model_ops *ops);

/* Predicted compute time of one micro-batch (*t_acc) and optimizer step time without
 * accumulation (*t_opt), seconds. */
void tput_predict(const struct tput_params *p, const struct tput_point *x, double *t_acc,
                  double *t_opt);

/* Compute time of one micro-batch of local_bsz samples at x. */
double tput_accum_time(const struct tput_params *p, const struct tput_point *x);

/* Seconds per optimizer step with accum_steps extra micro-batches: s * t_acc + t_opt. */
double tput_step_time(const struct tput_params *p, const struct tput_point *x, int accum_steps);

/* Samples per second: replicas * local_bsz * (accum_steps + 1) / step time. */
double tput_throughput(const struct tput_params *p, const struct tput_point *x, int accum_steps);

/*
 * The exploration limit: how many replicas a job may be given before more has been measured:
 * twice the largest replica count profiled (at least 1), and no more than user_max (when > 0) nor
 * max_bsz / min_local (the most replicas that can each hold a minimal batch; when both > 0).
 */
int tput_exploration_limit(const struct tput_coverage *cov, int user_max, double max_bsz,
                           double min_local);

/* Pollux's regulariser, for models that share its parameters (indices given): 1e-3 (gamma - 1)^2
 * pulls towards no overlap, 1e-2 ((beta_n/alpha_n)^2 + (beta_r/alpha_r)^2) prefers little growth
 * of synchronisation with replicas. Adds its gradient into grad when not NULL. */
double tput_sync_regularizer(const double *th, double *grad, int g, int an, int bn, int ar, int br);

/* Shared helper for models that overlap compute a and sync b with exponent g in [1, 10]: given
 * la = log a and lb = log b, returns log((a^g + b^g)^(1/g)), computed stably, and writes its
 * derivatives by la, lb and g when the pointers are not NULL. */
double tput_overlap_log(double la, double lb, double g, double *dla, double *dlb, double *dg);

/* tput_overlap_log for the fit's inner loops: the same arithmetic, inline; writes the derivative
 * by la (the one by lb is 1 minus it) and by g. */
static inline double tput_overlap_log_inline(double la, double lb, double g, double *dla,
                                             double *dg)
{
    /* log t = hi + log1p(exp(-g |la - lb|)) / g, where hi is the larger of la and lb; the
     * weights wa, wb (summing to 1) are the shares of a^g and b^g in the sum */
    double hi = la > lb ? la : lb, lo = la > lb ? lb : la, d = g * (lo - hi);
    /* below e^-40 the smaller term is lost to rounding: skip the exp and log (single GPUs, whose
     * sync time is 1e-8 s, take this path) */
    double q = d < -40.0 ? 0.0 : exp(d);
    double lt = q > 0.0 ? hi + log(1.0 + q) / g : hi;
    double wlo = q / (1.0 + q), whi = 1.0 - wlo;
    double wa = la > lb ? whi : wlo, wb = 1.0 - wa;

    *dla = wa;
    *dg = (wa * la + wb * lb - lt) / g;
    return lt;
}

#endif
