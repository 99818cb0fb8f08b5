/* goodput.h: statistical efficiency (gradient noise scale, AdaScale gain) and goodput, Pollux's
 * model of how much a larger batch still helps. Pure functions; no I/O, no clock. */
#ifndef CASTOR_MODEL_GOODPUT_H
#define CASTOR_MODEL_GOODPUT_H

/* Gradient statistics at the initial batch size M0: sqr estimates |g|^2, var estimates the
 * gradient variance tr(Sigma)/M0. GRAD_PARAMS_NONE is what a job that reported nothing gets. */
struct grad_params {
    double sqr;
    double var;
};

#define GRAD_PARAMS_NONE ((struct grad_params){.sqr = 0.0, .var = 1.0})

/* AdaScale gain at scale = M/M0 (>= 1): (var + sqr) / (var/scale + sqr), or 1 when the
 * denominator is not positive. This is also the learning-rate factor and the progress made per
 * optimizer step, in iterations at M0. */
double goodput_gain(const struct grad_params *g, double scale);

/* Statistical efficiency of total batch M against M0: gain(M/M0) / (M/M0), in (0, 1]. */
double goodput_efficiency(const struct grad_params *g, double init_bsz, double batch);

/* The pre-conditioned gradient noise scale phi = M0 * var / sqr (HUGE_VAL when sqr <= 0). */
double goodput_noise_scale(const struct grad_params *g, double init_bsz);

#endif
