/* profile.c: running means of observed step times per (nodes, replicas, local batch). */
#include "model/profile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

void profile_init(struct profile *p)
{
    memset(p, 0, sizeof(*p));
}

void profile_free(struct profile *p)
{
    free(p->entries);
    profile_init(p);
}

static int profile_same(const struct tput_point *a, const struct tput_point *b)
{
    return a->nodes == b->nodes && a->replicas == b->replicas && a->local_bsz == b->local_bsz;
}

/* Room for at least n entries in p (growing by doubling, from 32). ERR_NOMEM: p unchanged. */
static int profile_reserve(struct profile *p, size_t n)
{
    size_t cap = p->cap ? p->cap : 32;
    struct profile_entry *grown;

    if (n <= p->cap)
        return 0;
    while (cap < n)
        cap *= 2;
    if (!(grown = realloc(p->entries, cap * sizeof(*grown))))
        return ERR_NOMEM;
    p->entries = grown;
    p->cap = cap;
    return 0;
}

/* p's entry for configuration x, or NULL; only the first n entries are looked at. */
static struct profile_entry *profile_find(const struct profile *p, size_t n,
                                          const struct tput_point *x)
{
    for (size_t i = 0; i < n; i++)
        if (profile_same(&p->entries[i].x, x))
            return &p->entries[i];
    return NULL;
}

int profile_add(struct profile *p, const struct tput_point *x, double step_time, double sync_time)
{
    struct profile_entry *e;
    double w, la, lo, d;

    if (x->nodes < 1 || x->replicas < x->nodes || !(x->local_bsz > 0) || !isfinite(x->local_bsz))
        return ERR_INVAL;
    if (!isfinite(step_time) || !isfinite(sync_time) || !(step_time > 0) || sync_time < 0 ||
        sync_time >= step_time)
        return ERR_INVAL;
    if (!(e = profile_find(p, p->n, x))) {
        if (profile_reserve(p, p->n + 1) < 0)
            return ERR_NOMEM;
        e = &p->entries[p->n++];
        memset(e, 0, sizeof(*e));
        e->x = *x;
    }
    e->count++;
    w = 1.0 / (double)e->count;
    e->accum_time += w * ((step_time - sync_time) - e->accum_time);
    e->optim_time += w * (step_time - e->optim_time);
    e->sync_time += w * (sync_time - e->sync_time);
    /* Welford's update of the mean and squared deviations of the log-times */
    la = log(step_time - sync_time);
    lo = log(step_time);
    d = la - e->log_accum;
    e->log_accum += w * d;
    e->ss_accum += d * (la - e->log_accum);
    d = lo - e->log_optim;
    e->log_optim += w * d;
    e->ss_optim += d * (lo - e->log_optim);
    return 0;
}

int profile_merge(struct profile *dst, const struct profile *src)
{
    size_t n = dst->n; /* only dst's own entries are compared: src has each configuration once */

    if (profile_reserve(dst, dst->n + src->n) < 0)
        return ERR_NOMEM;
    for (size_t i = 0; i < src->n; i++)
        if (!profile_find(dst, n, &src->entries[i].x))
            dst->entries[dst->n++] = src->entries[i];
    if (!(isfinite(dst->sync_prior) && dst->sync_prior > 0))
        dst->sync_prior = src->sync_prior;
    return 0;
}

void profile_coverage(const struct profile *p, struct tput_coverage *cov)
{
    double sum = 0.0, distinct[2] = {0.0, 0.0};

    memset(cov, 0, sizeof(*cov));
    for (size_t i = 0; i < p->n; i++) {
        const struct profile_entry *e = &p->entries[i];

        /* the priors only ask whether one or more than one batch size was seen */
        if (cov->distinct_local_bsz < 2 &&
            (cov->distinct_local_bsz == 0 || distinct[0] != e->x.local_bsz))
            distinct[cov->distinct_local_bsz++] = e->x.local_bsz;
        cov->multi_node |= e->x.nodes > 1;
        cov->single_node_multi |= e->x.nodes == 1 && e->x.replicas > 1;
        cov->replicas_over_two |= e->x.replicas > 2;
        cov->several_per_node |= e->x.replicas > e->x.nodes;
        cov->two_node_several |= e->x.nodes == 2 && e->x.replicas > 2;
        cov->three_nodes |= e->x.nodes >= 3;
        if (e->x.replicas > cov->max_replicas)
            cov->max_replicas = e->x.replicas;
        if (e->x.nodes > cov->max_nodes)
            cov->max_nodes = e->x.nodes;
        sum += e->accum_time;
    }
    if (p->n)
        cov->mean_accum_time = sum / (double)p->n;
    if (isfinite(p->sync_prior) && p->sync_prior > 0)
        cov->sync_prior = p->sync_prior;
}
