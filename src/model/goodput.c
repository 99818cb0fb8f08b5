/* goodput.c: statistical efficiency and the AdaScale gain from gradient statistics. */
#include "model/goodput.h"

#include <math.h>

double goodput_gain(const struct grad_params *g, double scale)
{
    double den = g->var / scale + g->sqr, gain, m;

    if (!(den > 0.0))
        return 1.0;
    gain = (g->var + g->sqr) / den;
    if (isfinite(gain))
        return gain;
    /* statistics near the largest double overflow the sums: the same ratio over their scale */
    m = fmax(g->var, g->sqr);
    gain = (g->var / m + g->sqr / m) / (g->var / m / scale + g->sqr / m);
    return isfinite(gain) && gain > 0 ? gain : 1.0;
}

double goodput_efficiency(const struct grad_params *g, double init_bsz, double batch)
{
    double scale = batch / init_bsz;

    return goodput_gain(g, scale) / scale;
}

double goodput_noise_scale(const struct grad_params *g, double init_bsz)
{
    if (!(g->sqr > 0.0))
        return HUGE_VAL;
    return init_bsz * g->var / g->sqr;
}
