/* fleet.c: the registry of fleet policies, what they share, and the fixed fleet. */
#include "policies/fleet.h"

#include <stdlib.h>
#include <string.h>

#include "model/bsz.h"
#include "util/error.h"

const struct fleet_ops *const fleet_registry[] = {&fleet_fixed, &fleet_pollux, &fleet_castor, NULL};

const struct fleet_ops *fleet_find(const char *name)
{
    for (size_t i = 0; fleet_registry[i]; i++)
        if (strcmp(fleet_registry[i]->name, name) == 0)
            return fleet_registry[i];
    return NULL;
}

int fleet_new(const char *name, const struct fleet_config *cfg, struct fleet_policy *out)
{
    const struct fleet_ops *ops = fleet_find(name);
    void *ctx = NULL;
    int rc;

    if (!ops)
        return ERR_UNKNOWN;
    if (ops->create && (rc = ops->create(cfg, &ctx)) < 0)
        return rc;
    out->ops = ops;
    out->ctx = ctx;
    return 0;
}

int fleet_plan(struct fleet_policy *p, const struct snapshot *s, struct policy *pol, uint64_t seed,
               struct alloc *a, struct fleet_plan *f)
{
    return p->ops->plan(p->ctx, s, pol, seed, a, f);
}

void fleet_free(struct fleet_policy *p)
{
    if (p && p->ops && p->ops->destroy)
        p->ops->destroy(p->ctx);
}

void fleet_policy_defaults(const char *fleet, const char *policy, struct policy_config *pcfg)
{
    if (!fleet || !policy || strcmp(fleet, "castor") != 0 || strcmp(policy, "pollux") != 0)
        return;
    pcfg->deadline_start = 1;
    if (pcfg->p_mean_set)
        return;
    pcfg->p_mean = FLEET_CASTOR_P_MEAN;
    pcfg->p_mean_set = 1;
}

int fleet_allocate_part(const struct snapshot *s, const unsigned char *keep_nodes,
                        const unsigned char *keep_jobs, struct policy *pol, uint64_t seed,
                        struct alloc *a)
{
    struct snapshot *ns = NULL, *js = NULL;
    struct alloc *sa = NULL;
    unsigned char *all = NULL;
    int *map = NULL, *jmap = NULL, *back = NULL, any = 0, rc;

    for (int k = 0; k < s->nnodes; k++)
        any |= keep_nodes[k];
    for (int j = 0; j < a->njobs; j++)
        if (!keep_jobs || keep_jobs[j])
            alloc_clear_job(a, j);
    if (!any || s->njobs == 0)
        return 0;
    if (!keep_jobs && (all = malloc((size_t)s->njobs)))
        memset(all, 1, (size_t)s->njobs);
    map = malloc((size_t)s->nnodes * sizeof(int));
    jmap = malloc(((size_t)s->njobs + 1) * sizeof(int));
    back = malloc((size_t)s->nnodes * sizeof(int));
    if ((!keep_jobs && !all) || !map || !jmap || !back) {
        rc = ERR_NOMEM;
        goto out;
    }
    if ((rc = snapshot_sub_new(s, keep_nodes, map, &ns)) < 0 ||
        (rc = snapshot_jobs_new(ns, keep_jobs ? keep_jobs : all, jmap, &js)) < 0)
        goto out;
    if (js->njobs == 0)
        goto out;
    if ((rc = alloc_new(js->njobs, js->nnodes, js->current->width, &sa)) < 0)
        goto out;
    alloc_copy(sa, js->current);
    if ((rc = policy_allocate(pol, js, seed, sa)) < 0)
        goto out;
    for (int k = 0; k < s->nnodes; k++)
        if (map[k] >= 0)
            back[map[k]] = k;
    for (int i = 0; i < js->njobs && rc == 0; i++) {
        const int *row = sa->node + (size_t)i * (size_t)sa->width;

        for (int r = 0; r < sa->count[i] && rc == 0; r++)
            rc = alloc_add(a, jmap[i], back[row[r]], 1);
    }
out:
    alloc_free(sa);
    snapshot_jobs_free(js);
    snapshot_sub_free(ns);
    free(all);
    free(map);
    free(jmap);
    free(back);
    return rc;
}

int fleet_allocate_kept(const struct snapshot *s, const unsigned char *keep, struct policy *pol,
                        uint64_t seed, struct alloc *a)
{
    return fleet_allocate_part(s, keep, NULL, pol, seed, a);
}

void fleet_cancel_newest(const struct snapshot *s, int spot, int n, struct fleet_plan *f)
{
    for (; n > 0; n--) {
        int newest = -1;

        for (int b = 0; b < s->nbooting; b++)
            if (!f->cancel[b] && (spot < 0 || s->offers[s->booting[b].offer].spot == spot) &&
                (newest < 0 || s->booting[b].launched >= s->booting[newest].launched))
                newest = b;
        if (newest < 0)
            return;
        f->cancel[newest] = 1;
    }
}

int fleet_shrink_to(const struct snapshot *s, struct policy *pol, uint64_t seed, int want,
                    struct alloc *a, struct fleet_plan *f)
{
    int *used = calloc((size_t)s->nnodes + 1, sizeof(int)), kept = 0, extra, rc;
    unsigned char *keep = calloc((size_t)s->nnodes + 1, 1);

    if (!used || !keep) {
        rc = ERR_NOMEM;
        goto out;
    }
    if (s->nnodes > 0)
        alloc_node_usage(s->current, used);
    /* the most used first: a stable selection, want times */
    for (int i = 0; i < want && i < s->nnodes; i++) {
        int best = -1;

        for (int k = 0; k < s->nnodes; k++)
            if (!keep[k] && (best < 0 || used[k] > used[best]))
                best = k;
        keep[best] = 1;
    }
    for (int k = 0; k < s->nnodes; k++) {
        if (!keep[k] && s->now - s->nodes[k].launched < s->min_billed_s)
            keep[k] = 1;
        kept += keep[k];
        f->release[k] = !keep[k];
    }
    extra = kept + s->nbooting - (want > kept ? want : kept);
    fleet_cancel_newest(s, -1, extra, f);
    rc = fleet_allocate_kept(s, keep, pol, seed, a);
out:
    free(used);
    free(keep);
    return rc;
}

double fleet_job_goodput(const struct snap_job *sj, int gpn, int r)
{
    struct bsz_choice c;

    if (r <= 0 || !sj->has_model ||
        bsz_optimize(&sj->tput, &sj->grad, &sj->lim, (r + gpn - 1) / gpn, r, &c) < 0)
        return 0.0;
    return c.goodput;
}

double fleet_job_speedup(const struct snap_job *sj, int gpn, int r)
{
    struct bsz_choice one, c;

    if (r <= 0)
        return 0.0;
    if (!sj->has_model)
        return (double)r;
    if (bsz_optimize(&sj->tput, &sj->grad, &sj->lim, 1, 1, &one) < 0 || !(one.goodput > 0))
        return (double)r;
    if (bsz_optimize(&sj->tput, &sj->grad, &sj->lim, (r + gpn - 1) / gpn, r, &c) < 0)
        return 0.0;
    return c.goodput / one.goodput;
}

/* The fixed fleet: hold cfg->nodes nodes of one offer, replacing those that go, with at most
 * max(nodes, max_nodes) of it alive (a noticed node is alive until it goes). */
struct fleet_fixed_state {
    int offer;
    int nodes;
    int most;
};

static int fixed_create(const struct fleet_config *cfg, void **ctx)
{
    struct fleet_fixed_state *st;

    if (cfg->offer < 0 || cfg->nodes < 0)
        return ERR_INVAL;
    if (!(st = calloc(1, sizeof(*st))))
        return ERR_NOMEM;
    st->offer = cfg->offer;
    st->nodes = cfg->nodes;
    st->most = cfg->max_nodes > cfg->nodes ? cfg->max_nodes : cfg->nodes;
    *ctx = st;
    return 0;
}

static void fixed_destroy(void *ctx)
{
    free(ctx);
}

/* Give back n of the fleet's instances of offer o: booting ones first (the newest first), then
 * the ready ones the current allocation uses least (the last listed on ties), none younger than
 * the minimum billed time; keep[] is cleared for the released. ERR_NOMEM. */
static int fixed_shrink(const struct snapshot *s, int o, int n, unsigned char *keep,
                        struct fleet_plan *f)
{
    int *used = calloc((size_t)s->nnodes + 1, sizeof(int));

    if (!used)
        return ERR_NOMEM;
    while (n > 0) {
        int best = -1;

        for (int b = 0; b < s->nbooting; b++)
            if (s->booting[b].offer == o && !f->cancel[b] &&
                (best < 0 || s->booting[b].launched >= s->booting[best].launched))
                best = b;
        if (best < 0)
            break;
        f->cancel[best] = 1;
        n--;
    }
    if (s->nnodes > 0)
        alloc_node_usage(s->current, used);
    while (n > 0) {
        int best = -1;

        for (int k = 0; k < s->nnodes; k++)
            if (keep[k] && s->nodes[k].offer == o &&
                s->now - s->nodes[k].launched >= s->min_billed_s &&
                (best < 0 || used[k] <= used[best]))
                best = k;
        if (best < 0)
            break;
        keep[best] = 0;
        f->release[best] = 1;
        n--;
    }
    free(used);
    return 0;
}

static int fixed_plan(void *ctx, const struct snapshot *s, struct policy *pol, uint64_t seed,
                      struct alloc *a, struct fleet_plan *f)
{
    struct fleet_fixed_state *st = ctx;
    unsigned char *keep;
    int have = 0, rc = 0;

    if (st->offer >= s->noffers)
        return ERR_INVAL;
    if (!(keep = calloc((size_t)s->nnodes + 1, 1)))
        return ERR_NOMEM;
    for (int k = 0; k < s->nnodes; k++) {
        keep[k] = 1;
        have += s->nodes[k].offer == st->offer;
    }
    for (int b = 0; b < s->nbooting; b++)
        have += s->booting[b].offer == st->offer;
    if (have < st->nodes) {
        /* a noticed node is replaced at once where the node limit leaves room, else once gone */
        int room = st->most - have - s->offers[st->offer].noticed;

        fleet_plan_launch(s, st->offer, st->nodes - have < room ? st->nodes - have : room, 0, f);
    }
    if (have > st->nodes) /* fewer asked (a reload): give the surplus back */
        rc = fixed_shrink(s, st->offer, have - st->nodes, keep, f);
    if (rc == 0)
        rc = fleet_allocate_kept(s, keep, pol, seed, a);
    free(keep);
    return rc;
}

const struct fleet_ops fleet_fixed = {
    .name = "fixed",
    .summary = "a fixed number of nodes of one offer; a node that goes is replaced, a surplus "
               "(after a reload) released",
    .create = fixed_create,
    .destroy = fixed_destroy,
    .plan = fixed_plan,
};
