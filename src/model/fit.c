/* fit.c: the throughput-model fit: RMSLE of compute and step times over every observation, plus
 * the model's regulariser, minimised over the parameters that the priors leave free. */
#include "model/fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/minimize.h"

/*
 * The loss at theta for times measured in units of exp(log_unit) seconds (0 for seconds). Each
 * profile entry stands for `count` observations: the sum over them of (prediction - log y)^2 is
 * count * (prediction - mean)^2 + the squared deviations, so the loss equals the fit on every
 * observation by itself.
 */
/* The loss from the sums over the profile: sa, so (sums of count * squared log error, spreads
 * included), n observations, halved gradients ga, go of the sums (when grad is not NULL): the two
 * RMSLEs plus the regulariser, its gradient into grad. */
static double fit_finish(const struct tput_model_ops *ops, const double *theta, double sa,
                         double so, double n, const double *ga, const double *go, double *grad,
                         double *rmsle_acc, double *rmsle_opt)
{
    double ra = sqrt(sa / n), ro = sqrt(so / n), f = ra + ro;

    if (grad) {
        for (int k = 0; k < ops->nparams; k++)
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

/*
 * The loss at theta for times measured in units of exp(log_unit) seconds (0 for seconds), one
 * prediction per profile entry. Each entry stands for `count` observations: the sum over them of
 * (prediction - log y)^2 is count * (prediction - mean)^2 + the squared deviations, so the loss
 * equals the fit on every observation by itself.
 */
static double fit_loss(const struct tput_model_ops *ops, const struct profile *prof,
                       const double *theta, double log_unit, double *grad, double *rmsle_acc,
                       double *rmsle_opt)
{
    double sa = 0.0, so = 0.0, n = 0.0, ga[TPUT_MAX_PARAMS] = {0}, go[TPUT_MAX_PARAMS] = {0};
    double da[TPUT_MAX_PARAMS], dop[TPUT_MAX_PARAMS];
    int np = ops->nparams;

    for (size_t i = 0; i < prof->n; i++) {
        const struct profile_entry *e = &prof->entries[i];
        double c = (double)e->count, lacc, lopt, ea, eo;

        ops->predict(theta, &e->x, &lacc, &lopt, grad ? da : NULL, grad ? dop : NULL);
        ea = lacc - (e->log_accum - log_unit);
        eo = lopt - (e->log_optim - log_unit);
        sa += c * ea * ea + e->ss_accum;
        so += c * eo * eo + e->ss_optim;
        n += c;
        if (grad) {
            for (int k = 0; k < np; k++) {
                ga[k] += c * ea * da[k];
                go[k] += c * eo * dop[k];
            }
        }
    }
    return fit_finish(ops, theta, sa, so, n, ga, go, grad, rmsle_acc, rmsle_opt);
}

double fit_objective(const struct tput_model_ops *ops, const struct profile *prof,
                     const double *theta, double *grad, double *rmsle_acc, double *rmsle_opt)
{
    return fit_loss(ops, prof, theta, 0.0, grad, rmsle_acc, rmsle_opt);
}

/* The minimiser sees only the free parameters; the pinned ones are filled in from full[]. */
struct fit_ctx {
    const struct tput_model_ops *ops;
    const struct profile *prof;
    void *plan;    /* the model's, when it has plan_sums; else the loss predicts entry by entry */
    double ss_acc; /* with a plan: the entries' summed spreads of log compute time, */
    double ss_opt; /* of log step time, */
    double nobs;   /* and the number of observations */
    double log_unit;
    double full[TPUT_MAX_PARAMS];
    int map[TPUT_MAX_PARAMS];            /* free index -> parameter index */
    unsigned char logp[TPUT_MAX_PARAMS]; /* free parameter searched as its logarithm */
};

/* Positive parameters whose scale is unknown (seconds, seconds per sample) are searched in log
 * space: the minimum is the same, but the search no longer crawls along gradients that differ by
 * orders of magnitude between parameters. */
static double fit_to_param(const struct fit_ctx *c, int i, double x)
{
    return c->logp[i] ? exp(x) : x;
}

/* The objective as the minimiser sees it: the free parameters x (logarithms where logp says),
 * the gradient by them. */
static double fit_thunk(int n, const double *x, double *grad, void *data)
{
    struct fit_ctx *c = data;
    double g[TPUT_MAX_PARAMS], f;

    for (int i = 0; i < n; i++)
        c->full[c->map[i]] = fit_to_param(c, i, x[i]);
    if (c->plan) {
        double sa, so, ga[TPUT_MAX_PARAMS], go[TPUT_MAX_PARAMS];

        c->ops->plan_sums(c->plan, c->full, &sa, &so, grad ? ga : NULL, grad ? go : NULL);
        f = fit_finish(c->ops, c->full, sa + c->ss_acc, so + c->ss_opt, c->nobs, ga, go,
                       grad ? g : NULL, NULL, NULL);
    } else {
        f = fit_loss(c->ops, c->prof, c->full, c->log_unit, grad ? g : NULL, NULL, NULL);
    }
    if (grad)
        for (int i = 0; i < n; i++)
            grad[i] = g[c->map[i]] * (c->logp[i] ? c->full[c->map[i]] : 1.0);
    return f;
}

/* The model's plan for c's profile in the fit's unit of time, with the sums it leaves to the fit.
 * Errors: ERR_NOMEM. */
static int fit_plan_new(struct fit_ctx *c)
{
    const struct profile *prof = c->prof;
    struct tput_fit_row *rows = malloc((prof->n ? prof->n : 1) * sizeof(*rows));
    int rc;

    if (!rows)
        return ERR_NOMEM;
    c->ss_acc = c->ss_opt = c->nobs = 0.0;
    for (size_t i = 0; i < prof->n; i++) {
        const struct profile_entry *e = &prof->entries[i];

        rows[i].x = e->x;
        rows[i].count = (double)e->count;
        rows[i].log_acc = e->log_accum - c->log_unit;
        rows[i].log_opt = e->log_optim - c->log_unit;
        c->ss_acc += e->ss_accum;
        c->ss_opt += e->ss_optim;
        c->nobs += (double)e->count;
    }
    rc = c->ops->plan_new(rows, prof->n, &c->plan);
    free(rows);
    return rc;
}

/* The median step time, in log-seconds: the unit the fit measures time in, so that one initial
 * point suits jobs whose steps take milliseconds and jobs whose steps take seconds alike. */
static int fit_log_unit(const struct profile *prof, double *log_unit)
{
    double *v = malloc(prof->n * sizeof(double));
    size_t n = prof->n;

    if (!v)
        return ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        v[i] = prof->entries[i].log_optim;
    /* nth-smallest by a partial selection sort is O(n^2); n is small but not tiny, so sort */
    for (size_t gap = n / 2; gap > 0; gap /= 2)
        for (size_t i = gap; i < n; i++)
            for (size_t j = i; j >= gap && v[j - gap] > v[j]; j -= gap) {
                double t = v[j];

                v[j] = v[j - gap];
                v[j - gap] = t;
            }
    *log_unit = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    free(v);
    return 0;
}

int fit_tput(const struct tput_model_ops *ops, const struct profile *prof, struct tput_params *out,
             struct fit_report *rep)
{
    struct fit_ctx c = {.ops = ops, .prof = prof};
    struct tput_coverage cov;
    unsigned char pinned[TPUT_MAX_PARAMS] = {0};
    double x[TPUT_MAX_PARAMS], lo[TPUT_MAX_PARAMS], hi[TPUT_MAX_PARAMS], unit, fmin = 0.0;
    int nfree = 0, evals = 0, npinned = 0, rc;
    struct fit_report r;

    if (prof->n == 0)
        return ERR_EMPTY;
    if ((rc = fit_log_unit(prof, &c.log_unit)) < 0)
        return rc;
    unit = exp(c.log_unit);
    profile_coverage(prof, &cov);
    memcpy(c.full, ops->init, (size_t)ops->nparams * sizeof(double));
    if (ops->pin)
        ops->pin(&cov, c.full, pinned);
    for (int k = 0; k < ops->nparams; k++) {
        /* priors were set in seconds; the search works in units of the median step */
        if (pinned[k] && ops->time_param[k])
            c.full[k] /= unit;
        npinned += pinned[k];
    }
    if (npinned < ops->nparams && ops->plan_sums && (rc = fit_plan_new(&c)) < 0)
        return rc;
    if (c.plan && ops->plan_guess)
        ops->plan_guess(c.plan, pinned, c.full);
    for (int k = 0; k < ops->nparams; k++) {
        if (pinned[k])
            continue;
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
            goto out;
        for (int i = 0; i < nfree; i++)
            c.full[c.map[i]] = fit_to_param(&c, i, x[i]);
    }
    /* back to seconds: the models are homogeneous of degree one in their time parameters */
    for (int k = 0; k < ops->nparams; k++)
        if (ops->time_param[k])
            c.full[k] *= unit;
    /* the report's figures take one more pass over the profile: only when asked for */
    memset(&r, 0, sizeof(r));
    if (rep)
        r.loss = fit_objective(ops, prof, c.full, NULL, &r.rmsle_acc, &r.rmsle_opt);
    r.evals = evals;
    r.pinned = npinned;
    if (ops->post_fit)
        ops->post_fit(&cov, c.full);
    tput_params_init(out, ops);
    memcpy(out->theta, c.full, (size_t)ops->nparams * sizeof(double));
    if (rep)
        *rep = r;
out:
    if (c.plan)
        ops->plan_free(c.plan);
    return rc;
}
