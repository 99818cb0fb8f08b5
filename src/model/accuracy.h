/* accuracy.h: how well a throughput model predicts measured step times: the relative error of
 * each prediction and its median and 90th percentile. Pure. */
#ifndef CASTOR_MODEL_ACCURACY_H
#define CASTOR_MODEL_ACCURACY_H

#include <stddef.h>

#include "model/tput.h"

struct accuracy {
    size_t n;      /* samples compared */
    double median; /* relative error |predicted - measured| / measured, as a fraction */
    double p90;    /* 90th percentile, linear interpolation between order statistics */
    double max;
};

/* The relative error of tp's step time (no accumulation) on one sample. */
double accuracy_rel_error(const struct tput_params *tp, const struct tput_sample *s);

/*
 * Compare tp's predictions with n samples. scratch must hold n doubles (caller's, may be
 * reused). Errors: ERR_EMPTY when n == 0 (*out untouched).
 */
int accuracy_eval(const struct tput_params *tp, const struct tput_sample *const *samples, size_t n,
                  double *scratch, struct accuracy *out);

/* The q-quantile (q in [0, 1]) of v[0..n), which it sorts in place; n > 0. Linear interpolation
 * between order statistics (numpy's default). */
double accuracy_quantile(double *v, size_t n, double q);

#endif
