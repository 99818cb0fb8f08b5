/* minimize.c: the NLopt wrapper: bounded L-BFGS, NLopt's codes translated to castor's. */
#include "util/minimize.h"

#include <math.h>
#include <nlopt.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

struct minimize_ctx {
    minimize_fn fn;
    void *ctx;
    int evals;
    double best_f;
    double *best_x;
};

static double minimize_thunk(unsigned n, const double *x, double *grad, void *data)
{
    struct minimize_ctx *m = data;
    double f = m->fn((int)n, x, grad, m->ctx);

    m->evals++;
    if (isfinite(f) && f < m->best_f) {
        m->best_f = f;
        memcpy(m->best_x, x, n * sizeof(double));
    }
    return f;
}

int minimize_bounded(int n, minimize_fn fn, void *ctx, const double *lower, const double *upper,
                     const struct minimize_opts *opts, double *x, double *fmin, int *evals)
{
    struct minimize_ctx m = {.fn = fn, .ctx = ctx, .best_f = HUGE_VAL};
    nlopt_opt opt = NULL;
    double *work = NULL, f = HUGE_VAL;
    nlopt_result res;
    int rc = 0;

    if (n < 1)
        return ERR_INVAL;
    for (int i = 0; i < n; i++)
        if (!(x[i] >= lower[i] && x[i] <= upper[i]))
            return ERR_INVAL;
    work = malloc(2 * (size_t)n * sizeof(double));
    opt = nlopt_create(NLOPT_LD_LBFGS, (unsigned)n);
    if (!work || !opt) {
        rc = ERR_NOMEM;
        goto out;
    }
    m.best_x = work + n;
    memcpy(work, x, (size_t)n * sizeof(double));
    memcpy(m.best_x, x, (size_t)n * sizeof(double));
    if (nlopt_set_lower_bounds(opt, lower) < 0 || nlopt_set_upper_bounds(opt, upper) < 0 ||
        nlopt_set_min_objective(opt, minimize_thunk, &m) < 0 ||
        nlopt_set_ftol_rel(opt, opts && opts->ftol_rel > 0 ? opts->ftol_rel : 1e-10) < 0 ||
        nlopt_set_xtol_rel(opt, opts && opts->xtol_rel > 0 ? opts->xtol_rel : 1e-8) < 0 ||
        nlopt_set_maxeval(opt, opts && opts->max_evals > 0 ? opts->max_evals : 2000) < 0) {
        rc = ERR_INVAL;
        goto out;
    }
    res = nlopt_optimize(opt, work, &f);
    if (res == NLOPT_OUT_OF_MEMORY) {
        rc = ERR_NOMEM;
        goto out;
    }
    /* A failure after progress (rounding, or a line search that gave up) still leaves the best
     * point seen, which is what a quasi-Newton user wants; only no finite value at all fails. */
    if (!isfinite(m.best_f)) {
        rc = ERR_NOCONV;
        goto out;
    }
    if (res < 0 && res != NLOPT_ROUNDOFF_LIMITED && res != NLOPT_FAILURE) {
        rc = res == NLOPT_INVALID_ARGS ? ERR_INVAL : ERR_NOCONV;
        goto out;
    }
    memcpy(x, m.best_x, (size_t)n * sizeof(double));
    if (fmin)
        *fmin = m.best_f;
    if (evals)
        *evals = m.evals;
out:
    if (opt)
        nlopt_destroy(opt);
    free(work);
    return rc;
}
