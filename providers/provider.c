/* provider.c: the wrappers through which the controller reaches a world. */
#include "providers/provider.h"

#include "util/error.h"

double provider_now(struct provider *p)
{
    return p->ops->now(p->ctx);
}

int provider_wait(struct provider *p, int seconds)
{
    return p->ops->wait(p->ctx, seconds);
}

int provider_observe(struct provider *p, const struct snapshot **out)
{
    return p->ops->observe(p->ctx, out);
}

int provider_apply(struct provider *p, const struct alloc *plan)
{
    return p->ops->apply(p->ctx, plan);
}

int provider_finished(struct provider *p)
{
    return p->ops->finished(p->ctx);
}

int provider_resize(struct provider *p, const struct fleet_plan *f)
{
    return p->ops->resize ? p->ops->resize(p->ctx, f) : ERR_INVAL;
}
