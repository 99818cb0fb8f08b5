/* fit.c: the throughput-model fit: RMSLE of compute and step times plus the model's regulariser,
 * minimised over the parameters that the priors leave free. */
#include "model/fit.h"

#include <math.h>
#include <string.h>

#include "util/error.h"
#include "util/minimize.h"

double fit_objective(const struct tput_model_ops *ops, const struct profile *prof,
                     const double *theta, double *grad, double *rmsle_acc, double *rmsle_opt)
{
    double sa = 0.0, so = 0.0, ga[TPUT_MAX_PARAMS] = {0}, go[TPUT_MAX_PARAMS] = {0};
    double da[TPUT_MAX_PARAMS], dop[TPUT_MAX_PARAMS];
    double n = (double)prof->n, ra, ro, f;
    int np = ops->nparams;

    for (size_t i = 0; i < prof->n; i++) {
        const struct profile_entry *e = &prof->entries[i];
        double lacc, lopt, ea, eo;

        ops->predict(theta, &e->x, &lacc, &lopt, grad ? da : NULL, grad ? dop : NULL);
        ea = lacc - e->log_accum;
        eo = lopt - e->log_optim;
        sa += ea * ea;
        so += eo * eo;
        if (grad) {
            for (int k = 0; k < np; k++) {
                ga[k] += ea * da[k];
                go[k] += eo * dop[k];
            }
        }
    }
    ra = sqrt(sa / n);
    ro = sqrt(so / n);
    f = ra + ro;
    if (grad) {
        for (int k = 0; k < np; k++)
            grad[k] = (ra > 0 ? ga[k] / (n * ra) : 0.0) + (ro > 0 ? go[k] / (n * ro) : 0.0);
    }
    if (ops->regularizer)
        f += ops->regularizer(theta, grad);
    if (rmsle_acc)
        *rmsle_acc = ra;
    if (rmsle_opt)
        *rmsle_opt = ro;
    return f;
}

/* The minimiser sees only the free parameters; the pinned ones are filled in from full[]. */
struct fit_ctx {
    const struct tput_model_ops *ops;
    const struct profile *prof;
    double full[TPUT_MAX_PARAMS];
    int map[TPUT_MAX_PARAMS];            /* free index -> parameter index */
    unsigned char logp[TPUT_MAX_PARAMS]; /* free parameter searched as its logarithm */
};

/* Positive parameters whose scale is unknown (seconds, seconds per sample) are searched in log
 * space: the minimum is the same, but the search no longer crawls along gradients that differ by
 * seven orders of magnitude between parameters. */
static double fit_to_param(const struct fit_ctx *c, int i, double x)
{
    return c->logp[i] ? exp(x) : x;
}

static double fit_thunk(int n, const double *x, double *grad, void *data)
{
    struct fit_ctx *c = data;
    double g[TPUT_MAX_PARAMS], f;

    for (int i = 0; i < n; i++)
        c->full[c->map[i]] = fit_to_param(c, i, x[i]);
    f = fit_objective(c->ops, c->prof, c->full, grad ? g : NULL, NULL, NULL);
    if (grad)
        for (int i = 0; i < n; i++)
            grad[i] = g[c->map[i]] * (c->logp[i] ? c->full[c->map[i]] : 1.0);
    return f;
}

int fit_tput(const struct tput_model_ops *ops, const struct profile *prof, struct tput_params *out,
             struct fit_report *rep)
{
    struct fit_ctx c = {.ops = ops, .prof = prof};
    struct tput_coverage cov;
    unsigned char pinned[TPUT_MAX_PARAMS] = {0};
    double x[TPUT_MAX_PARAMS], lo[TPUT_MAX_PARAMS], hi[TPUT_MAX_PARAMS], fmin = 0.0;
    int nfree = 0, evals = 0, npinned = 0, rc;
    struct fit_report r;

    if (prof->n == 0)
        return ERR_EMPTY;
    profile_coverage(prof, &cov);
    memcpy(c.full, ops->init, (size_t)ops->nparams * sizeof(double));
    if (ops->pin)
        ops->pin(&cov, c.full, pinned);
    for (int k = 0; k < ops->nparams; k++) {
        if (pinned[k]) {
            npinned++;
            continue;
        }
        c.map[nfree] = k;
        c.logp[nfree] = ops->lower[k] > 0;
        x[nfree] = c.logp[nfree] ? log(c.full[k]) : c.full[k];
        lo[nfree] = c.logp[nfree] ? log(ops->lower[k]) : ops->lower[k];
        hi[nfree] = c.logp[nfree] ? log(ops->upper[k]) : ops->upper[k];
        nfree++;
    }
    if (nfree > 0) {
        rc = minimize_bounded(nfree, fit_thunk, &c, lo, hi, NULL, x, &fmin, &evals);
        if (rc < 0)
            return rc;
        for (int i = 0; i < nfree; i++)
            c.full[c.map[i]] = fit_to_param(&c, i, x[i]);
    }
    memset(&r, 0, sizeof(r));
    r.loss = fit_objective(ops, prof, c.full, NULL, &r.rmsle_acc, &r.rmsle_opt);
    r.evals = evals;
    r.pinned = npinned;
    if (ops->post_fit)
        ops->post_fit(&cov, c.full);
    tput_params_init(out, ops);
    memcpy(out->theta, c.full, (size_t)ops->nparams * sizeof(double));
    if (rep)
        *rep = r;
    return 0;
}
