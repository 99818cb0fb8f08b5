/* gns.c: gradient noise statistics from per-step squared norms, smoothed with Pollux's
 * bias-corrected moving average. */
#include "agent/gns.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "util/error.h"

struct gns_group {
    double sqr_biased; /* running sums of the moving average (0 after a reset) */
    double var_biased;
    double sqr; /* current values: biased / unbias, or the initial (1, 0) */
    double var;
};

struct gns {
    size_t ngroups;
    double unbias; /* the weight the running sums carry, shared by all groups */
    long steps;
    int biased;
    struct gns_group group[];
};

static int finite_nonneg(double x)
{
    return isfinite(x) && x >= 0.0;
}

/* n, the independent gradients of one step, checked; 0 for a bad step. */
static double step_count(const struct gns_step *step)
{
    if (!step || !(isfinite(step->local_bsz) && step->local_bsz > 0.0) ||
        !(isfinite(step->init_bsz) && step->init_bsz > 0.0) || step->replicas < 1 ||
        step->replicas > GNS_MAX_COUNT || step->accum_steps < 0 ||
        step->accum_steps >= GNS_MAX_COUNT)
        return 0.0;
    double n = (double)step->replicas * (double)(step->accum_steps + 1);
    return n <= GNS_MAX_COUNT ? n : 0.0;
}

int gns_estimate(const struct gns_step *step, const struct gns_norms *norms,
                 struct grad_params *out, double *scale, int *biased)
{
    double n = step_count(step), local, total, sc;
    int diff = 0;

    if (n == 0.0 || !norms || !out || !finite_nonneg(norms->local_sqr))
        return ERR_INVAL;
    if (n > 1.0) {
        if (!finite_nonneg(norms->total_sqr))
            return ERR_INVAL;
        local = norms->local_sqr / n;
        total = norms->total_sqr;
    } else {
        /* Differenced: this step's gradient and the previous one, two gradients of local_bsz. */
        if (!norms->has_prev || !finite_nonneg(norms->prev_sqr) || !finite_nonneg(norms->pair_sqr))
            return ERR_INVAL;
        n = 2.0;
        local = (norms->prev_sqr + norms->local_sqr) / 2.0;
        total = norms->pair_sqr;
        diff = 1;
    }
    sc = n * step->local_bsz / step->init_bsz;

    struct grad_params g = {
        .sqr = (n * total - local) / (n - 1.0),
        .var = (local - total) * sc / (n - 1.0),
    };
    if (!isfinite(g.sqr) || !isfinite(g.var) || !isfinite(sc))
        return ERR_RANGE;
    *out = g;
    if (scale)
        *scale = sc;
    if (biased)
        *biased = diff;
    return 0;
}

int gns_norms_from(const double *sqr, size_t n, struct gns_norms *out)
{
    struct gns_norms nm = {0};

    if (!sqr || !out || n == 0)
        return ERR_INVAL;
    for (size_t i = 0; i <= n; i++)
        if (!finite_nonneg(sqr[i]))
            return ERR_INVAL;
    for (size_t i = 0; i < n; i++)
        nm.local_sqr += sqr[i];
    nm.total_sqr = sqr[n];
    *out = nm;
    return 0;
}

int gns_new(size_t ngroups, struct gns **out)
{
    struct gns *s;

    if (!out || ngroups < 1 || ngroups > GNS_MAX_GROUPS)
        return ERR_INVAL;
    s = malloc(sizeof(*s) + ngroups * sizeof(s->group[0]));
    if (!s)
        return ERR_NOMEM;
    s->ngroups = ngroups;
    gns_reset(s);
    *out = s;
    return 0;
}

void gns_free(struct gns *s)
{
    free(s);
}

/* Restart the moving averages; the current values stay until the next step replaces them. */
static void restart_averages(struct gns *s)
{
    for (size_t g = 0; g < s->ngroups; g++) {
        s->group[g].sqr_biased = 0.0;
        s->group[g].var_biased = 0.0;
    }
    s->unbias = 0.0;
    s->steps = 0;
}

void gns_reset(struct gns *s)
{
    restart_averages(s);
    for (size_t g = 0; g < s->ngroups; g++) {
        s->group[g].sqr = 1.0;
        s->group[g].var = 0.0;
    }
    s->biased = 0;
}

int gns_update(struct gns *s, const struct gns_step *step, const struct gns_norms *norms)
{
    double n = step_count(step), scale = 0.0, theta, unbias;
    int rc = 0, biased = 0, restart;
    struct grad_params *est = NULL;

    if (!s || !norms || n == 0.0)
        return ERR_INVAL;
    /* A first single-gradient step only starts the pairing (every group must agree on it). */
    if (n == 1.0 && !norms[0].has_prev) {
        for (size_t g = 1; g < s->ngroups; g++)
            if (norms[g].has_prev)
                return ERR_INVAL;
        for (size_t g = 0; g < s->ngroups; g++)
            if (!finite_nonneg(norms[g].local_sqr))
                return ERR_INVAL;
        return 0;
    }
    est = malloc(s->ngroups * sizeof(*est));
    if (!est)
        return ERR_NOMEM;
    for (size_t g = 0; g < s->ngroups; g++) {
        rc = gns_estimate(step, &norms[g], &est[g], &scale, &biased);
        if (rc < 0)
            goto out;
    }

    /* Leaving the differenced estimator restarts the averages; entering it does not. */
    restart = s->biased && !biased;
    theta = pow(GNS_SMOOTHING, scale);
    unbias = theta * (restart ? 0.0 : s->unbias) + (1.0 - theta);
    for (size_t g = 0; g < s->ngroups; g++) {
        const struct gns_group *gr = &s->group[g];
        double sb = theta * (restart ? 0.0 : gr->sqr_biased) + (1.0 - theta) * est[g].sqr;
        double vb = theta * (restart ? 0.0 : gr->var_biased) + (1.0 - theta) * est[g].var;

        if (!isfinite(sb) || !isfinite(vb) || !isfinite(sb / unbias) || !isfinite(vb / unbias)) {
            rc = ERR_RANGE;
            goto out;
        }
        est[g].sqr = sb; /* est now holds the new running sums */
        est[g].var = vb;
    }

    if (restart)
        restart_averages(s);
    for (size_t g = 0; g < s->ngroups; g++) {
        struct gns_group *gr = &s->group[g];

        gr->sqr_biased = est[g].sqr;
        gr->var_biased = est[g].var;
        gr->sqr = gr->sqr_biased / unbias;
        gr->var = gr->var_biased / unbias;
    }
    s->unbias = unbias;
    s->biased = biased;
    s->steps++;
out:
    free(est);
    return rc;
}

void gns_params(const struct gns *s, struct grad_params *out)
{
    struct grad_params p = {0.0, 0.0};

    for (size_t g = 0; g < s->ngroups; g++) {
        p.sqr += fmax(s->group[g].sqr, 0.0);
        p.var += fmax(s->group[g].var, GNS_VAR_FLOOR);
    }
    *out = p;
}

int gns_group(const struct gns *s, size_t group, struct grad_params *out)
{
    if (group >= s->ngroups)
        return ERR_RANGE;
    out->sqr = s->group[group].sqr;
    out->var = s->group[group].var;
    return 0;
}

size_t gns_groups(const struct gns *s)
{
    return s->ngroups;
}

long gns_steps(const struct gns *s)
{
    return s->steps;
}

int gns_biased(const struct gns *s)
{
    return s->biased;
}

size_t gns_saved_len(const struct gns *s)
{
    return GNS_SAVED_HEAD + 4 * s->ngroups;
}

void gns_save(const struct gns *s, double *out)
{
    out[0] = (double)s->ngroups;
    out[1] = s->unbias;
    out[2] = (double)s->steps;
    out[3] = (double)s->biased;
    for (size_t g = 0; g < s->ngroups; g++) {
        out[GNS_SAVED_HEAD + 4 * g] = s->group[g].sqr_biased;
        out[GNS_SAVED_HEAD + 4 * g + 1] = s->group[g].var_biased;
        out[GNS_SAVED_HEAD + 4 * g + 2] = s->group[g].sqr;
        out[GNS_SAVED_HEAD + 4 * g + 3] = s->group[g].var;
    }
}

int gns_load(const double *in, size_t n, struct gns **out)
{
    struct gns *s = NULL;
    size_t groups;
    int rc;

    if (!in || !out || n < GNS_SAVED_HEAD + 4 || !(in[0] >= 1 && in[0] <= GNS_MAX_GROUPS) ||
        in[0] != floor(in[0]))
        return ERR_INVAL;
    groups = (size_t)in[0];
    if (n != GNS_SAVED_HEAD + 4 * groups || !finite_nonneg(in[1]) || in[1] > 1.0 ||
        !finite_nonneg(in[2]) || in[2] != floor(in[2]) || in[2] > (double)LONG_MAX / 2 ||
        (in[3] != 0.0 && in[3] != 1.0))
        return ERR_INVAL;
    for (size_t i = GNS_SAVED_HEAD; i < n; i++)
        if (!isfinite(in[i]))
            return ERR_INVAL;
    rc = gns_new(groups, &s);
    if (rc < 0)
        return rc;
    s->unbias = in[1];
    s->steps = (long)in[2];
    s->biased = (int)in[3];
    for (size_t g = 0; g < groups; g++) {
        s->group[g].sqr_biased = in[GNS_SAVED_HEAD + 4 * g];
        s->group[g].var_biased = in[GNS_SAVED_HEAD + 4 * g + 1];
        s->group[g].sqr = in[GNS_SAVED_HEAD + 4 * g + 2];
        s->group[g].var = in[GNS_SAVED_HEAD + 4 * g + 3];
    }
    *out = s;
    return 0;
}

double gns_adam_precond(double exp_avg_sq, double beta2, long step, double eps)
{
    if (!finite_nonneg(exp_avg_sq) || !(beta2 > 0.0 && beta2 < 1.0) || step < 1 ||
        !finite_nonneg(eps))
        return NAN;
    if (step < GNS_ADAM_WARMUP)
        return 1.0;
    return sqrt(exp_avg_sq / (1.0 - pow(beta2, (double)step))) + eps;
}
