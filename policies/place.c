/* place.c: what the policies share: placing replicas on nodes, and a job's replica limit. */
#include "policies/policy.h"

#include <math.h>

#include "util/error.h"

int policy_fill_most_free(struct alloc *out, int j, int n, int *free)
{
    int total = 0;

    for (int i = 0; i < out->nnodes; i++)
        total += free[i];
    if (total < n)
        return ERR_RANGE;
    while (n > 0) {
        int best = 0, take, rc;

        for (int i = 1; i < out->nnodes; i++)
            if (free[i] > free[best])
                best = i;
        take = free[best] < n ? free[best] : n;
        if ((rc = alloc_add(out, j, best, take)) < 0)
            return rc;
        free[best] -= take;
        n -= take;
    }
    return 0;
}

int policy_place_consolidated(struct alloc *out, int j, int r, const struct snapshot *s, int *free,
                              int *dist, int avoid)
{
    int pick = -1, need = r, avail = 0, rc;

    for (int i = 0; i < s->nnodes; i++)
        if (free[i] >= r && (pick < 0 || free[i] < free[pick]))
            pick = i;
    if (pick >= 0) {
        if ((rc = alloc_add(out, j, pick, r)) < 0)
            return rc;
        free[pick] -= r;
        return 1;
    }
    /* several nodes: only those a distributed job may use */
    for (int i = 0; i < s->nnodes; i++)
        if (!(avoid && dist[i]))
            avail += free[i];
    if (avail < r)
        return 0;
    while (need > 0) {
        int take;

        pick = -1;
        for (int i = 0; i < s->nnodes; i++) {
            if (free[i] == 0 || (avoid && dist[i]))
                continue;
            if (need >= s->nodes[i].gpus ? free[i] == s->nodes[i].gpus : free[i] >= need) {
                /* a whole free node for a full share, the tightest fit for the remainder */
                if (pick < 0 || (need < s->nodes[i].gpus && free[i] < free[pick]))
                    pick = i;
                if (need >= s->nodes[i].gpus)
                    break;
            }
        }
        if (pick < 0) /* fragmented: the node with the most free GPUs */
            for (int i = 0; i < s->nnodes; i++)
                if (free[i] > 0 && !(avoid && dist[i]) && (pick < 0 || free[i] > free[pick]))
                    pick = i;
        take = free[pick] < need ? free[pick] : need;
        if ((rc = alloc_add(out, j, pick, take)) < 0)
            return rc;
        free[pick] -= take;
        need -= take;
    }
    for (int k = 0; k < out->count[j]; k++)
        dist[out->node[(size_t)j * (size_t)out->width + (size_t)k]] = 1;
    return 1;
}

int policy_place_shrinking(struct alloc *out, int j, int r, const struct snapshot *s, int *free,
                           int *dist, int avoid)
{
    int least = s->jobs[j].min_replicas > 1 ? s->jobs[j].min_replicas : 1;

    for (; r >= least; r--) {
        int rc = policy_place_consolidated(out, j, r, s, free, dist, avoid);

        if (rc != 0)
            return rc < 0 ? rc : r;
    }
    return 0;
}

int policy_replica_limit(const struct snap_job *sj, int explore, int gpus)
{
    int maxr = explore < 1 ? 1 : explore;

    if (maxr > gpus)
        maxr = gpus;
    if (sj->lim.min_local > 0 && sj->lim.max_bsz > 0 &&
        floor(sj->lim.max_bsz / sj->lim.min_local) < maxr)
        maxr = (int)floor(sj->lim.max_bsz / sj->lim.min_local);
    if (sj->max_replicas > 0 && sj->max_replicas < maxr)
        maxr = sj->max_replicas;
    /* a gang minimum overrides the exploration and batch limits (not the cluster or owner) */
    if (maxr < sj->min_replicas) {
        maxr = sj->min_replicas < gpus ? sj->min_replicas : gpus;
        if (sj->max_replicas > 0 && sj->max_replicas < maxr)
            maxr = sj->max_replicas;
    }
    return maxr < 1 ? 1 : maxr;
}
