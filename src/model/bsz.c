/* bsz.c: the goodput-maximising batch size and accumulation for a placement. */
#include "model/bsz.h"

#include <math.h>

#include "util/error.h"

#define BSZ_EPS 1e-8

double bsz_goodput(const struct tput_params *tp, const struct grad_params *gp, double init_bsz,
                   int nodes, int replicas, double local_bsz, int accum_steps)
{
    struct tput_point x = {.nodes = nodes, .replicas = replicas, .local_bsz = local_bsz};
    double batch = replicas * local_bsz * (accum_steps + 1);

    return tput_throughput(tp, &x, accum_steps) * goodput_efficiency(gp, init_bsz, batch);
}

int bsz_optimize(const struct tput_params *tp, const struct grad_params *gp,
                 const struct bsz_limits *lim, int nodes, int replicas, struct bsz_choice *out)
{
    double m0 = lim->init_bsz;
    double max_bsz = lim->max_bsz > 0 ? lim->max_bsz : m0;
    double lo_local = lim->min_local > 0 ? lim->min_local : 1.0;
    double hi_local = lim->max_local > 0 ? lim->max_local : max_bsz;
    double first, ratio, acc, opt;
    struct bsz_choice best = {.goodput = -1.0};
    /* the step time is affine in accumulation steps, so one prediction per candidate suffices */
    struct tput_point x = {.nodes = nodes, .replicas = replicas};

    if (nodes < 1 || replicas < nodes || !(m0 > 0) || max_bsz < m0 || hi_local < lo_local)
        return ERR_INVAL;
    first = fmax(m0, lo_local * replicas);
    if (first > max_bsz * (1 + BSZ_EPS))
        return ERR_RANGE;
    ratio = BSZ_CANDIDATES > 1 ? pow(max_bsz / first, 1.0 / (BSZ_CANDIDATES - 1)) : 1.0;
    for (int i = 0; i < BSZ_CANDIDATES; i++) {
        double total = i == BSZ_CANDIDATES - 1 ? max_bsz : first * pow(ratio, i);
        double local = total / replicas, m, batch, g;
        int s = 0;

        if (lim->accumulation) {
            s = (int)ceil(local / hi_local - BSZ_EPS) - 1;
            if (s < 0)
                s = 0;
            if (replicas == 1 && local > m0 + BSZ_EPS && s < 1)
                s = 1;
            m = ceil(local / (s + 1) - BSZ_EPS);
        } else {
            m = ceil(local - BSZ_EPS);
        }
        if (m < lo_local - BSZ_EPS || m > hi_local + BSZ_EPS)
            continue;
        x.local_bsz = m;
        tput_predict(tp, &x, &acc, &opt);
        batch = replicas * m * (s + 1);
        g = batch / (s * acc + opt) * goodput_efficiency(gp, m0, batch);
        if (g > best.goodput) {
            best.goodput = g;
            best.local_bsz = m;
            best.accum_steps = s;
            best.batch = batch;
        }
    }
    if (best.goodput < 0)
        return ERR_RANGE;
    *out = best;
    return 0;
}

int bsz_change_pays(double cur, double next, double hysteresis, double samples_left,
                    double restart_s)
{
    if (!(cur > 0) || !isfinite(cur))
        return 1;
    if (!(next >= hysteresis * cur))
        return 0;
    if (restart_s > 0 && isfinite(samples_left)) {
        double left = fmax(samples_left, 0);

        return left / cur - left / next > restart_s;
    }
    return 1;
}

double bsz_cap_local(const struct bsz_limits *lim, int replicas, int accum_steps, double local)
{
    double max_bsz = lim->max_bsz > 0 ? lim->max_bsz : lim->init_bsz;
    double per = (double)replicas * (accum_steps + 1);
    double cap = floor(max_bsz / per);
    /* the floors win: the per-GPU minimum (at least 1) and M0 over all replicas */
    double lo = fmax(fmax(lim->min_local, 1.0), ceil(lim->init_bsz / per - BSZ_EPS));

    return fmin(local, fmax(cap, lo));
}
