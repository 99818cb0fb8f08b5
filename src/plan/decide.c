/* decide.c: the decide step, and the checks every policy's answer must pass. */
#include "plan/decide.h"

#include <stdlib.h>

#include "util/error.h"

static int plan_check(const struct snapshot *s, const struct alloc *plan)
{
    int *used = calloc((size_t)plan->nnodes, sizeof(int)), rc = 0;

    if (!used)
        return ERR_NOMEM;
    alloc_node_usage(plan, used);
    for (int n = 0; n < s->nnodes; n++)
        if (used[n] > s->nodes[n].gpus)
            rc = ERR_INTERNAL;
    for (int j = 0; j < s->njobs; j++) {
        if (s->jobs[j].max_replicas > 0 && plan->count[j] > s->jobs[j].max_replicas)
            rc = ERR_INTERNAL;
        /* a gang: all of its minimum or nothing */
        if (plan->count[j] > 0 && plan->count[j] < s->jobs[j].min_replicas)
            rc = ERR_INTERNAL;
    }
    free(used);
    return rc;
}

int plan_decide(const struct snapshot *s, struct policy *pol, uint64_t seed, struct alloc *plan)
{
    int rc;

    alloc_copy(plan, s->current);
    if (s->njobs == 0)
        return 0;
    rc = policy_allocate(pol, s, seed, plan);
    if (rc == 0)
        rc = plan_check(s, plan);
    if (rc < 0)
        alloc_copy(plan, s->current);
    return rc;
}

int plan_decide_fleet(const struct snapshot *s, struct fleet_policy *fleet, struct policy *pol,
                      uint64_t seed, struct alloc *plan, struct fleet_plan *f)
{
    int rc;

    alloc_copy(plan, s->current);
    fleet_plan_clear(f);
    rc = fleet_plan(fleet, s, pol, seed, plan, f);
    if (rc == 0)
        rc = plan_check(s, plan);
    if (rc == 0)
        rc = fleet_plan_check(s, f, plan);
    if (rc < 0) {
        alloc_copy(plan, s->current);
        fleet_plan_clear(f);
    }
    return rc;
}
