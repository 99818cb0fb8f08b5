/* reporter.c: libcastor's reports: pooled step times, the report's JSON, the allocation read back,
 * the next configuration, and the backoff between failed reports. */
#include "agent/reporter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/json.h"

void reporter_pool_clear(struct reporter_pool *p)
{
    p->n = 0;
    p->dropped = 0;
}

static int reporter_same(const struct reporter_config *c, int nodes, int replicas, double local_bsz,
                         int accum_steps)
{
    return c->nodes == nodes && c->replicas == replicas && c->local_bsz == local_bsz &&
           c->accum_steps == accum_steps;
}

/* The pool's entry for the configuration, a new empty one, or NULL when the pool is full. */
static struct reporter_config *reporter_slot(struct reporter_pool *p, int nodes, int replicas,
                                             double local_bsz, int accum_steps)
{
    struct reporter_config *c;

    for (size_t i = 0; i < p->n; i++)
        if (reporter_same(&p->cfg[i], nodes, replicas, local_bsz, accum_steps))
            return &p->cfg[i];
    if (p->n == REPORTER_MAX_CONFIGS)
        return NULL;
    c = &p->cfg[p->n++];
    memset(c, 0, sizeof(*c));
    c->nodes = nodes;
    c->replicas = replicas;
    c->local_bsz = local_bsz;
    c->accum_steps = accum_steps;
    return c;
}

/* Chan et al.'s pairwise update: c pools the count, mean, m2 and sync sum of another set. */
static void reporter_combine(struct reporter_config *c, long long count, double mean, double m2,
                             double sync_sum)
{
    double n = (double)(c->count + count), d = mean - c->mean;

    if (count == 0)
        return;
    c->mean += d * (double)count / n;
    c->m2 += m2 + d * d * (double)c->count * (double)count / n;
    c->sync_sum += sync_sum;
    c->count += count;
}

int reporter_pool_add(struct reporter_pool *p, int nodes, int replicas, double local_bsz,
                      int accum_steps, double step, double sync)
{
    struct reporter_config *c = reporter_slot(p, nodes, replicas, local_bsz, accum_steps);

    if (!c) {
        p->dropped++;
        return ERR_RANGE;
    }
    reporter_combine(c, 1, step, 0.0, sync);
    return 0;
}

int reporter_pool_merge(struct reporter_pool *into, const struct reporter_pool *from)
{
    int rc = 0;

    for (size_t i = 0; i < from->n; i++) {
        const struct reporter_config *f = &from->cfg[i];
        struct reporter_config *c =
            reporter_slot(into, f->nodes, f->replicas, f->local_bsz, f->accum_steps);

        if (!c) {
            into->dropped += f->count;
            rc = ERR_RANGE;
            continue;
        }
        reporter_combine(c, f->count, f->mean, f->m2, f->sync_sum);
    }
    into->dropped += from->dropped;
    return rc;
}

/* A configuration the API takes (docs/api.md, POST /v1/jobs/{name}/reports). */
static int reporter_config_ok(const struct reporter_config *c)
{
    double sync = c->count > 0 ? c->sync_sum / (double)c->count : 0.0;

    return c->nodes >= 1 && c->replicas >= c->nodes && isfinite(c->local_bsz) && c->local_bsz > 0 &&
           c->accum_steps >= 0 && c->count >= 1 && isfinite(c->mean) && c->mean > 0 &&
           isfinite(c->m2) && c->m2 >= 0 && isfinite(sync) && sync >= 0 && sync < c->mean;
}

int reporter_body(const struct reporter_pool *p, const struct grad_params *grad, double progress,
                  double sync_prior, char **out)
{
    struct jv *o = NULL, *arr = NULL, *g = NULL;
    char *text = NULL;
    int rc = 0;

    if (!p || !out || p->n > REPORTER_MAX_CONFIGS)
        return ERR_INVAL;
    if (grad && !(isfinite(grad->sqr) && grad->sqr >= 0 && isfinite(grad->var) && grad->var >= 0))
        return ERR_INVAL;
    if (!isnan(progress) && !(isfinite(progress) && progress >= 0))
        return ERR_INVAL;
    if (!(isfinite(sync_prior) && sync_prior >= 0))
        return ERR_INVAL;
    o = jv_object();
    arr = jv_array();
    if (!o || !arr) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; rc == 0 && i < p->n; i++) {
        const struct reporter_config *c = &p->cfg[i];
        struct jv *e;

        if (!reporter_config_ok(c)) {
            rc = ERR_INVAL;
            goto out;
        }
        e = jv_object();
        if (!e) {
            rc = ERR_NOMEM;
            goto out;
        }
        rc = jv_set(e, "nodes", jv_integer(c->nodes));
        if (rc == 0)
            rc = jv_set(e, "replicas", jv_integer(c->replicas));
        if (rc == 0)
            rc = jv_set(e, "local_bsz", jv_number(c->local_bsz));
        if (rc == 0)
            rc = jv_set(e, "accum_steps", jv_integer(c->accum_steps));
        if (rc == 0)
            rc = jv_set(e, "count", jv_integer(c->count));
        if (rc == 0)
            rc = jv_set(e, "step_mean", jv_number(c->mean));
        if (rc == 0)
            rc = jv_set(e, "step_sd", jv_number(sqrt(c->m2 / (double)c->count)));
        if (rc == 0)
            rc = jv_set(e, "sync_mean", jv_number(c->sync_sum / (double)c->count));
        if (rc < 0) {
            jv_free(e);
            goto out;
        }
        rc = jv_push(arr, e);
    }
    if (rc < 0)
        goto out;
    rc = jv_set(o, "configs", arr);
    arr = NULL;
    if (rc == 0 && grad) {
        g = jv_object();
        rc = g ? jv_set(g, "sqr", jv_number(grad->sqr)) : ERR_NOMEM;
        if (rc == 0)
            rc = jv_set(g, "var", jv_number(grad->var));
        if (rc == 0)
            rc = jv_set(o, "grad", g);
        else
            jv_free(g);
    }
    if (rc == 0 && !isnan(progress))
        rc = jv_set(o, "progress", jv_number(progress));
    if (rc == 0 && sync_prior > 0)
        rc = jv_set(o, "sync_prior", jv_number(sync_prior));
    if (rc == 0)
        rc = jv_dump(o, &text);
    if (rc == 0)
        *out = text;
out:
    jv_free(arr);
    jv_free(o);
    return rc;
}

/* An integer member in [lo, hi] into *out; ERR_PARSE otherwise. */
static int reporter_int(const struct jv *o, const char *key, long long lo, long long hi, int *out)
{
    long long v;

    if (jv_integer_value(jv_get(o, key), &v) < 0 || v < lo || v > hi)
        return ERR_PARSE;
    *out = (int)v;
    return 0;
}

int reporter_parse_alloc(const char *body, size_t len, struct reporter_alloc *out)
{
    struct reporter_alloc a = {0};
    const struct jv *nodes, *lb;
    const char *state;
    struct jv *v = NULL;
    int rc;

    if (!body || !out)
        return ERR_INVAL;
    rc = jv_parse(body, len, &v, NULL);
    if (rc < 0)
        return rc == ERR_NOMEM ? rc : ERR_PARSE;
    rc = ERR_PARSE;
    state = jv_string_value(jv_get(v, "state"));
    nodes = jv_get(v, "nodes");
    if (!state || jv_type_of(nodes) != JV_ARRAY)
        goto out;
    a.running = strcmp(state, "running") == 0;
    a.nodes = (int)jv_size(nodes);
    if (reporter_int(v, "world_size", 0, 1000000, &a.world_size) < 0)
        goto out;
    lb = jv_get(v, "local_bsz");
    if (jv_type_of(lb) != JV_NULL) {
        if (jv_number_value(lb, &a.local_bsz) < 0 || !(a.local_bsz > 0) ||
            jv_number_value(jv_get(v, "lr_gain"), &a.lr_gain) < 0 || !(a.lr_gain > 0) ||
            reporter_int(v, "accum_steps", 0, 1000000, &a.accum_steps) < 0)
            goto out;
        a.has_config = 1;
    }
    *out = a;
    rc = 0;
out:
    jv_free(v);
    return rc;
}

int reporter_decide(const struct reporter_alloc *a, const struct reporter_current *cur,
                    const struct tput_params *tp, const struct grad_params *gp,
                    struct reporter_decision *out)
{
    struct grad_params g = gp ? *gp : GRAD_PARAMS_NONE;
    struct reporter_decision d = {0};
    struct bsz_choice choice;
    double m0;

    if (!a || !cur || !out || cur->nodes < 1 || cur->world_size < cur->nodes ||
        !(cur->local_bsz > 0) || cur->accum_steps < 0 || !(cur->limits.init_bsz > 0))
        return ERR_INVAL;
    m0 = cur->limits.init_bsz;
    d.world_size = cur->world_size;
    d.nodes = cur->nodes;
    if (a->world_size > 0 && a->nodes >= 1 && a->world_size >= a->nodes) {
        d.world_size = a->world_size;
        d.nodes = a->nodes;
    }
    if (a->has_config) {
        /* the controller's batch; the gain of that batch under the statistics measured now (the
         * controller's was computed from a report's when it chose the batch, and a batch kept
         * for hours keeps it), the controller's while none are measured */
        d.local_bsz = a->local_bsz;
        d.accum_steps = a->accum_steps;
        d.lr_gain = gp ? goodput_gain(&g, d.world_size * d.local_bsz * (d.accum_steps + 1) / m0)
                       : a->lr_gain;
        if (!(d.lr_gain > 0))
            d.lr_gain = a->lr_gain;
        d.from_controller = 1;
        *out = d;
        return 0;
    }
    d.local_bsz = cur->local_bsz;
    d.accum_steps = cur->accum_steps;
    if (tp && bsz_optimize(tp, &g, &cur->limits, d.nodes, d.world_size, &choice) == 0) {
        d.local_bsz =
            bsz_cap_local(&cur->limits, d.world_size, choice.accum_steps, choice.local_bsz);
        d.accum_steps = choice.accum_steps;
    }
    d.lr_gain = goodput_gain(&g, d.world_size * d.local_bsz * (d.accum_steps + 1) / m0);
    *out = d;
    return 0;
}

double reporter_backoff(int failures, double base, double cap, uint64_t *seed)
{
    uint64_t z = (*seed += 0x9e3779b97f4a7c15ULL);
    double d = base, u;

    for (int i = 1; i < failures && d < cap; i++)
        d *= 2.0;
    if (d > cap)
        d = cap;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    u = (double)(z >> 11) / 9007199254740992.0; /* [0, 1) from the top 53 bits */
    return d / 2.0 + u * d / 2.0;
}
