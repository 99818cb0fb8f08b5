/* tput_castor.c: castor's default throughput model. Pollux's structure (compute overlapped with
 * synchronisation) with three changes that the measured profiles support:
 *  - synchronisation grows as sqrt(r - 1) rather than linearly in r - 2: all-reduce cost per added
 *    replica falls as the ring grows (between ring-bandwidth saturation, 2(r-1)/r, and per-hop
 *    latency, r - 1), and sqrt ties growth in nodes to growth in GPUs per node;
 *  - compute grows with the GPUs per node k = r/N (d (k - 1)): GPUs on one node share its CPUs,
 *    host memory and PCIe complex (data loading, staging);
 *  - two nodes pay c2 (k - 1) more: every ring or tree hop then crosses the same NIC pair and,
 *    without GPUDirect RDMA, is staged through host memory on the local GPUs' PCIe path.
 * Fitted like Pollux's (log-space loss, same regularisers); see docs/throughput-model.md. */
#include <math.h>
#include <string.h>

#include "model/tput.h"

enum { C_AC, C_BC, C_AN, C_BN, C_C2, C_AR, C_BR, C_G, C_D, C_COUNT };

#define TINY 1e-8

static const char *const castor_names[C_COUNT] = {
    "alpha_c", "beta_c", "alpha_n", "beta_n", "gamma_2", "alpha_r", "beta_r", "gamma", "delta_k"};
static const double castor_init[C_COUNT] = {0.1, 0.01, 0.1, 0.01, 0.01, 0.1, 0.01, 1.001, 0.01};
static const double castor_lower[C_COUNT] = {TINY, TINY, TINY, TINY, TINY, TINY, TINY, 1.0, TINY};
static const double castor_upper[C_COUNT] = {HUGE_VAL, HUGE_VAL, HUGE_VAL, HUGE_VAL, HUGE_VAL,
                                             HUGE_VAL, HUGE_VAL, 10.0,     HUGE_VAL};
static const unsigned char castor_time[C_COUNT] = {1, 1, 1, 1, 1, 1, 1, 0, 1};

/* Points sharing (nodes, replicas): the synchronisation term and its logarithm once, then each
 * point's compute time and overlap. */
static void castor_predict_group(const double *th, int nodes, int replicas, const double *m,
                                 size_t n, double *log_acc, double *log_opt, double *d_acc,
                                 double *d_opt)
{
    double k1 = (double)replicas / nodes - 1.0; /* extra GPUs per node */
    double q = sqrt(replicas - 1.0);
    double net, lnet;
    int two = nodes == 2;

    if (nodes > 1)
        net = th[C_AN] + th[C_BN] * q + (two ? th[C_C2] * k1 : 0.0);
    else if (replicas > 1)
        net = th[C_AR] + th[C_BR] * q;
    else
        net = TINY;
    lnet = log(net);
    for (size_t i = 0; i < n; i++) {
        double acc = th[C_AC] + th[C_BC] * m[i] + th[C_D] * k1, la = log(acc), dacc, dnet, dg;
        double *da, *dop;

        log_acc[i] = la;
        log_opt[i] = tput_overlap_log(la, lnet, th[C_G], &dacc, &dnet, &dg);
        if (!d_acc)
            continue;
        da = d_acc + i * C_COUNT;
        dop = d_opt + i * C_COUNT;
        dacc /= acc;
        dnet /= net;
        memset(da, 0, C_COUNT * sizeof(double));
        memset(dop, 0, C_COUNT * sizeof(double));
        da[C_AC] = 1.0 / acc;
        da[C_BC] = m[i] / acc;
        da[C_D] = k1 / acc;
        dop[C_AC] = dacc;
        dop[C_BC] = dacc * m[i];
        dop[C_D] = dacc * k1;
        if (nodes > 1) {
            dop[C_AN] = dnet;
            dop[C_BN] = dnet * q;
            dop[C_C2] = two ? dnet * k1 : 0.0;
        } else if (replicas > 1) {
            dop[C_AR] = dnet;
            dop[C_BR] = dnet * q;
        }
        dop[C_G] = dg;
    }
}

static void castor_predict(const double *th, const struct tput_point *x, double *log_acc,
                           double *log_opt, double *d_acc, double *d_opt)
{
    castor_predict_group(th, x->nodes, x->replicas, &x->local_bsz, 1, log_acc, log_opt, d_acc,
                         d_opt);
}

/* As Pollux: gamma pulled towards no overlap, little growth of sync relative to its constant. */
static double castor_regularizer(const double *th, double *grad)
{
    return tput_sync_regularizer(th, grad, C_G, C_AN, C_BN, C_AR, C_BR);
}

static void castor_pin_at(double *th, unsigned char *pinned, int i, double v)
{
    th[i] = v;
    pinned[i] = 1;
}

/* Pollux's priors (the synchronisation not yet seen on one node: the measured all-reduce time when
 * the profile has one, else free), and: no term for what has not been seen (several GPUs per node,
 * two nodes with several each). With multi-node data from two nodes only, the growth with replicas
 * there is taken as two-node cost (c2), not as a trend in nodes. */
static void castor_pin(const struct tput_coverage *cov, double *th, unsigned char *pinned)
{
    if (cov->distinct_local_bsz <= 1)
        castor_pin_at(th, pinned, C_AC, cov->mean_accum_time / 2.0);
    if (!cov->multi_node) {
        castor_pin_at(th, pinned, C_AN, TINY);
        castor_pin_at(th, pinned, C_BN, TINY);
    }
    if (!cov->multi_node || !cov->two_node_several)
        castor_pin_at(th, pinned, C_C2, TINY);
    if (!cov->single_node_multi) { /* a measured all-reduce, else free (explore) */
        castor_pin_at(th, pinned, C_AR, cov->sync_prior > 0 ? cov->sync_prior : TINY);
        castor_pin_at(th, pinned, C_BR, TINY);
    }
    if (!cov->replicas_over_two) {
        castor_pin_at(th, pinned, C_BN, TINY);
        castor_pin_at(th, pinned, C_BR, TINY);
    }
    if (cov->multi_node && !cov->three_nodes && cov->two_node_several)
        castor_pin_at(th, pinned, C_BN, TINY);
    if (!cov->several_per_node)
        castor_pin_at(th, pinned, C_D, 0.0);
}

/* Unexplored inter-node synchronisation is assumed 10% slower than intra-node (as Pollux). */
static void castor_post_fit(const struct tput_coverage *cov, double *th)
{
    if (cov->multi_node)
        return;
    th[C_AN] = fmax(th[C_AN], 1.1 * th[C_AR]);
    th[C_BN] = fmax(th[C_BN], 1.1 * th[C_BR]);
}

const struct tput_model_ops tput_model_castor = {
    .name = "castor",
    .summary = "castor's: sync ~ sqrt(r-1), compute grows with GPUs per node, two-node cost",
    .nparams = C_COUNT,
    .param_names = castor_names,
    .init = castor_init,
    .lower = castor_lower,
    .upper = castor_upper,
    .time_param = castor_time,
    .predict = castor_predict,
    .predict_group = castor_predict_group,
    .regularizer = castor_regularizer,
    .pin = castor_pin,
    .post_fit = castor_post_fit,
};
