/* accuracy.c: relative errors of predicted step times and their quantiles. */
#include "model/accuracy.h"

#include <math.h>
#include <stdlib.h>

#include "util/error.h"

double accuracy_rel_error(const struct tput_params *tp, const struct tput_sample *s)
{
    return fabs(tput_step_time(tp, &s->x, 0) - s->step_time) / s->step_time;
}

static int accuracy_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double accuracy_quantile(double *v, size_t n, double q)
{
    double pos, frac;
    size_t lo;

    qsort(v, n, sizeof(double), accuracy_cmp);
    pos = q * (double)(n - 1);
    lo = (size_t)floor(pos);
    if (lo >= n - 1)
        return v[n - 1];
    frac = pos - (double)lo;
    return v[lo] + frac * (v[lo + 1] - v[lo]);
}

int accuracy_eval(const struct tput_params *tp, const struct tput_sample *const *samples, size_t n,
                  double *scratch, struct accuracy *out)
{
    struct accuracy a;

    if (n == 0)
        return ERR_EMPTY;
    for (size_t i = 0; i < n; i++)
        scratch[i] = accuracy_rel_error(tp, samples[i]);
    a.n = n;
    a.p90 = accuracy_quantile(scratch, n, 0.9);
    a.median = accuracy_quantile(scratch, n, 0.5);
    a.max = scratch[n - 1];
    *out = a;
    return 0;
}
