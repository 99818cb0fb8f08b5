/* loop.c: observe, decide, act, record. */
#include "control/loop.h"

#include "plan/decide.h"
#include "util/error.h"

int loop_tick(struct loop *l)
{
    const struct snapshot *s;
    struct alloc *plan = NULL;
    struct fleet_plan *f = NULL;
    int rc, fleet;
    double t0;

    l->policy_err = 0;
    if ((rc = provider_wait(l->provider, l->interval)) < 0 ||
        (rc = provider_observe(l->provider, &s)) < 0)
        return rc;
    l->ticks++;
    fleet = l->fleet && s->noffers > 0;
    if (s->njobs == 0 && (!fleet || s->nnodes + s->nbooting == 0))
        return 0;
    if ((rc = alloc_new(s->njobs, s->current->nnodes, s->current->width, &plan)) < 0)
        return rc;
    l->decisions++;
    t0 = l->timer ? l->timer(l->timer_ctx) : 0;
    if (fleet) {
        if ((rc = fleet_plan_new(s, &f)) < 0)
            goto out;
        l->policy_err =
            plan_decide_fleet(s, l->fleet, l->policy, l->seed + (uint64_t)l->ticks, plan, f);
    } else {
        l->policy_err = plan_decide(s, l->policy, l->seed + (uint64_t)l->ticks, plan);
    }
    if (l->policy_err < 0)
        l->policy_errs++;
    else
        l->policy_err = 0;
    l->decide_s = l->timer ? l->timer(l->timer_ctx) - t0 : 0;
    /* the jobs move first, so that the nodes the plan lets go are free */
    if ((rc = provider_apply(l->provider, plan)) < 0)
        goto out;
    if (f && !fleet_plan_empty(f) && provider_resize(l->provider, f) < 0)
        l->resize_errs++;
    if (l->record)
        rc = l->record(l->record_ctx, provider_now(l->provider), s, plan);
out:
    fleet_plan_free(f);
    alloc_free(plan);
    return rc;
}

int loop_run(struct loop *l, long max_ticks)
{
    int rc;

    for (long t = 0; t < max_ticks; t++) {
        if (provider_finished(l->provider))
            return 0;
        if ((rc = loop_tick(l)) < 0)
            return rc;
    }
    return provider_finished(l->provider) ? 0 : ERR_AGAIN;
}
