/* tput_pollux.c: the throughput model as Pollux published it (OSDI'21, section 3.2; the artifact's
 * goodput.py): linear compute, a sync cost linear in replicas beyond two, different for one node
 * and for several, overlapped with compute through the exponent gamma. */
#include <math.h>
#include <string.h>

#include "model/tput.h"

enum { P_AC, P_BC, P_AN, P_BN, P_AR, P_BR, P_G, P_COUNT };

#define TINY 1e-8

static const char *const pollux_names[P_COUNT] = {"alpha_c", "beta_c", "alpha_n", "beta_n",
                                                  "alpha_r", "beta_r", "gamma"};
static const double pollux_init[P_COUNT] = {0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001};
static const double pollux_lower[P_COUNT] = {TINY, TINY, TINY, TINY, TINY, TINY, 1.0};
static const unsigned char pollux_time[P_COUNT] = {1, 1, 1, 1, 1, 1, 0};
static const double pollux_upper[P_COUNT] = {HUGE_VAL, HUGE_VAL, HUGE_VAL, HUGE_VAL,
                                             HUGE_VAL, HUGE_VAL, 10.0};

static void pollux_predict(const double *th, const struct tput_point *x, double *log_acc,
                           double *log_opt, double *d_acc, double *d_opt)
{
    double k = x->replicas - 2 > TINY ? x->replicas - 2 : TINY;
    double acc = th[P_AC] + th[P_BC] * x->local_bsz;
    double net, la, dacc, dnet, dg;
    int ia = -1, ib = -1;

    /* the reference tests nodes > 1 before replicas > 1 */
    if (x->nodes > 1) {
        net = th[P_AN] + th[P_BN] * k;
        ia = P_AN, ib = P_BN;
    } else if (x->replicas > 1) {
        net = th[P_AR] + th[P_BR] * k;
        ia = P_AR, ib = P_BR;
    } else {
        net = TINY + TINY * k;
    }
    la = log(acc);
    *log_acc = la;
    *log_opt = tput_overlap_log(la, log(net), th[P_G], &dacc, &dnet, &dg);
    if (!d_acc)
        return;
    /* chain rule: d log(acc) = d acc / acc, d log(net) = d net / net */
    dacc /= acc;
    dnet /= net;
    memset(d_acc, 0, P_COUNT * sizeof(double));
    memset(d_opt, 0, P_COUNT * sizeof(double));
    d_acc[P_AC] = 1.0 / acc;
    d_acc[P_BC] = x->local_bsz / acc;
    d_opt[P_AC] = dacc;
    d_opt[P_BC] = dacc * x->local_bsz;
    if (ia >= 0) {
        d_opt[ia] = dnet;
        d_opt[ib] = dnet * k;
    }
    d_opt[P_G] = dg;
}

/* 1e-3 (gamma - 1)^2 pulls gamma towards no overlap; 1e-2 ((beta/alpha)^2) prefers little
 * retrogression as replicas grow. */
static double pollux_regularizer(const double *th, double *grad)
{
    return tput_sync_regularizer(th, grad, P_G, P_AN, P_BN, P_AR, P_BR);
}

static void pollux_pin(const struct tput_coverage *cov, double *th, unsigned char *pinned)
{
    if (cov->distinct_local_bsz <= 1) {
        th[P_AC] = cov->mean_accum_time / 2.0;
        pinned[P_AC] = 1;
    }
    if (!cov->multi_node) {
        th[P_AN] = th[P_BN] = TINY;
        pinned[P_AN] = pinned[P_BN] = 1;
    }
    if (!cov->single_node_multi) { /* castor's addition: a measured all-reduce, if any */
        th[P_AR] = cov->sync_prior > 0 ? cov->sync_prior : TINY;
        th[P_BR] = TINY;
        pinned[P_AR] = pinned[P_BR] = 1;
    }
    if (!cov->replicas_over_two) {
        th[P_BN] = th[P_BR] = TINY;
        pinned[P_BN] = pinned[P_BR] = 1;
    }
}

/* Unexplored inter-node synchronisation is assumed 10% slower than intra-node. */
static void pollux_post_fit(const struct tput_coverage *cov, double *th)
{
    if (cov->multi_node)
        return;
    th[P_AN] = fmax(th[P_AN], 1.1 * th[P_AR]);
    th[P_BN] = fmax(th[P_BN], 1.1 * th[P_BR]);
}

const struct tput_model_ops tput_model_pollux = {
    .name = "pollux",
    .summary = "the published Pollux model: linear sync cost in replicas, one node vs several",
    .nparams = P_COUNT,
    .param_names = pollux_names,
    .init = pollux_init,
    .lower = pollux_lower,
    .upper = pollux_upper,
    .time_param = pollux_time,
    .predict = pollux_predict,
    .regularizer = pollux_regularizer,
    .pin = pollux_pin,
    .post_fit = pollux_post_fit,
};
