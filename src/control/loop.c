/* loop.c: observe, decide, act, record. */
#include "control/loop.h"

#include "plan/decide.h"
#include "util/error.h"

int loop_tick(struct loop *l)
{
    const struct snapshot *s;
    struct alloc *plan = NULL;
    int rc;

    if ((rc = provider_wait(l->provider, l->interval)) < 0 ||
        (rc = provider_observe(l->provider, &s)) < 0)
        return rc;
    l->ticks++;
    if (s->njobs == 0)
        return 0;
    if ((rc = alloc_new(s->njobs, s->nnodes, s->current->width, &plan)) < 0)
        return rc;
    l->decisions++;
    if (plan_decide(s, l->policy, l->seed + (uint64_t)l->ticks, plan) < 0)
        l->policy_errs++;
    if ((rc = provider_apply(l->provider, plan)) < 0)
        goto out;
    if (l->record)
        rc = l->record(l->record_ctx, provider_now(l->provider), s, plan);
out:
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
