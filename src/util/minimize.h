/* minimize.h: bounded smooth minimisation (wraps NLopt's low-storage BFGS); nlopt.h stays here. */
#ifndef CASTOR_UTIL_MINIMIZE_H
#define CASTOR_UTIL_MINIMIZE_H

/* The objective: returns f(x); writes the gradient into grad (n values) when grad is not NULL. */
typedef double (*minimize_fn)(int n, const double *x, double *grad, void *ctx);

struct minimize_opts {
    double ftol_rel; /* stop when f changes by less than this fraction (0: the default 1e-10) */
    double xtol_rel; /* stop when every x changes by less than this fraction (0: default 1e-8) */
    int max_evals;   /* 0: the default 2000 */
};

/*
 * Minimise fn over the box [lower, upper] (HUGE_VAL for no bound) from x, which must lie inside.
 * On success x holds the minimiser, *fmin (if not NULL) its value, *evals (if not NULL) the number
 * of evaluations, and 0 is returned. Reaching max_evals or the limit of floating-point rounding
 * counts as success (x is the best point found). Errors: ERR_INVAL (n < 1, x outside the box),
 * ERR_NOMEM, ERR_NOCONV (the method failed; x is left unchanged).
 */
int minimize_bounded(int n, minimize_fn fn, void *ctx, const double *lower, const double *upper,
                     const struct minimize_opts *opts, double *x, double *fmin, int *evals);

#endif
