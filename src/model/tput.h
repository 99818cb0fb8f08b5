/* tput.h: throughput models, how long one training step takes for a placement and batch size.
 * Each model is a `const struct tput_model_ops`, chosen by name; its fitted parameters live in a
 * `struct tput_params`. Pure functions; no I/O, no clock. */
#ifndef CASTOR_MODEL_TPUT_H
#define CASTOR_MODEL_TPUT_H

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
     * Optional: predict n points that share nodes and replicas (per-GPU batches local_bsz[0..n)),
     * writing n values to log_acc and log_opt and, when d_acc is not NULL, n x nparams
     * derivatives (row-major) to d_acc and d_opt. Models whose synchronisation depends only on
     * (nodes, replicas) compute it once per group; the fit uses this when present.
     */
    void (*predict_group)(const double *theta, int nodes, int replicas, const double *local_bsz,
                          size_t n, double *log_acc, double *log_opt, double *d_acc, double *d_opt);
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

#endif
