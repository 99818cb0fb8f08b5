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
/* The profile's entries ordered by (nodes, replicas), for models that predict a group of points
 * sharing them at once (predict_group), with the buffers that takes. */
struct fit_groups {
    size_t n;    /* entries */
    size_t *idx; /* entry index, in group order */
    double *m;   /* their per-GPU batches, in group order */
    size_t ngroups;
    size_t *start;    /* ngroups + 1 offsets into idx */
    double *la, *lo;  /* n predictions */
    double *da, *dop; /* n x nparams derivatives */
};

static void fit_groups_free(struct fit_groups *g)
{
    free(g->idx);
    free(g->m);
    free(g->start);
    free(g->la);
    free(g->lo);
    free(g->da);
    free(g->dop);
}

struct fit_key {
    int nodes, replicas;
    size_t idx;
};

static int fit_key_cmp(const void *a, const void *b)
{
    const struct fit_key *x = a, *y = b;

    if (x->nodes != y->nodes)
        return x->nodes - y->nodes;
    if (x->replicas != y->replicas)
        return x->replicas - y->replicas;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Errors: ERR_NOMEM (g is then freed). */
static int fit_groups_build(const struct profile *prof, int np, struct fit_groups *g)
{
    size_t n = prof->n;
    struct fit_key *keys = malloc(n * sizeof(*keys));

    memset(g, 0, sizeof(*g));
    g->n = n;
    g->idx = malloc(n * sizeof(size_t));
    g->m = malloc(n * sizeof(double));
    g->start = malloc((n + 1) * sizeof(size_t));
    g->la = malloc(n * sizeof(double));
    g->lo = malloc(n * sizeof(double));
    g->da = malloc(n * (size_t)np * sizeof(double));
    g->dop = malloc(n * (size_t)np * sizeof(double));
    if (!keys || !g->idx || !g->m || !g->start || !g->la || !g->lo || !g->da || !g->dop) {
        free(keys);
        fit_groups_free(g);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i].nodes = prof->entries[i].x.nodes;
        keys[i].replicas = prof->entries[i].x.replicas;
        keys[i].idx = i;
    }
    qsort(keys, n, sizeof(*keys), fit_key_cmp);
    for (size_t i = 0; i < n; i++) {
        g->idx[i] = keys[i].idx;
        g->m[i] = prof->entries[keys[i].idx].x.local_bsz;
        if (i == 0 || keys[i].nodes != keys[i - 1].nodes ||
            keys[i].replicas != keys[i - 1].replicas)
            g->start[g->ngroups++] = i;
    }
    g->start[g->ngroups] = n;
    free(keys);
    return 0;
}

static double fit_loss(const struct tput_model_ops *ops, const struct profile *prof,
                       struct fit_groups *groups, const double *theta, double log_unit,
                       double *grad, double *rmsle_acc, double *rmsle_opt)
{
    double sa = 0.0, so = 0.0, n = 0.0, ga[TPUT_MAX_PARAMS] = {0}, go[TPUT_MAX_PARAMS] = {0};
    double da[TPUT_MAX_PARAMS], dop[TPUT_MAX_PARAMS];
    double ra, ro, f;
    int np = ops->nparams;

    if (groups && ops->predict_group) {
        for (size_t gi = 0; gi < groups->ngroups; gi++) {
            size_t s0 = groups->start[gi], len = groups->start[gi + 1] - s0;
            const struct tput_point *x = &prof->entries[groups->idx[s0]].x;

            ops->predict_group(theta, x->nodes, x->replicas, groups->m + s0, len, groups->la + s0,
                               groups->lo + s0, grad ? groups->da + s0 * (size_t)np : NULL,
                               grad ? groups->dop + s0 * (size_t)np : NULL);
        }
    }
    for (size_t i = 0; i < prof->n; i++) {
        size_t ei = groups && ops->predict_group ? groups->idx[i] : i;
        const struct profile_entry *e = &prof->entries[ei];
        double c = (double)e->count, lacc, lopt, ea, eo;

        if (groups && ops->predict_group) {
            lacc = groups->la[i];
            lopt = groups->lo[i];
            if (grad) {
                memcpy(da, groups->da + i * (size_t)np, (size_t)np * sizeof(double));
                memcpy(dop, groups->dop + i * (size_t)np, (size_t)np * sizeof(double));
            }
        } else {
            ops->predict(theta, &e->x, &lacc, &lopt, grad ? da : NULL, grad ? dop : NULL);
        }
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

double fit_objective(const struct tput_model_ops *ops, const struct profile *prof,
                     const double *theta, double *grad, double *rmsle_acc, double *rmsle_opt)
{
    return fit_loss(ops, prof, NULL, theta, 0.0, grad, rmsle_acc, rmsle_opt);
}

/* The minimiser sees only the free parameters; the pinned ones are filled in from full[]. */
struct fit_ctx {
    const struct tput_model_ops *ops;
    const struct profile *prof;
    struct fit_groups groups;
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

static double fit_thunk(int n, const double *x, double *grad, void *data)
{
    struct fit_ctx *c = data;
    double g[TPUT_MAX_PARAMS], f;

    for (int i = 0; i < n; i++)
        c->full[c->map[i]] = fit_to_param(c, i, x[i]);
    f = fit_loss(c->ops, c->prof, &c->groups, c->full, c->log_unit, grad ? g : NULL, NULL, NULL);
    if (grad)
        for (int i = 0; i < n; i++)
            grad[i] = g[c->map[i]] * (c->logp[i] ? c->full[c->map[i]] : 1.0);
    return f;
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
        if (ops->predict_group && (rc = fit_groups_build(prof, ops->nparams, &c.groups)) < 0)
            return rc;
        rc = minimize_bounded(nfree, fit_thunk, &c, lo, hi, NULL, x, &fmin, &evals);
        fit_groups_free(&c.groups);
        if (rc < 0)
            return rc;
        for (int i = 0; i < nfree; i++)
            c.full[c.map[i]] = fit_to_param(&c, i, x[i]);
    }
    /* back to seconds: the models are homogeneous of degree one in their time parameters */
    for (int k = 0; k < ops->nparams; k++)
        if (ops->time_param[k])
            c.full[k] *= unit;
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
