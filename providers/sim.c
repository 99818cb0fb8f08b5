/* sim.c: the sim provider: a simulated cluster with a virtual clock (src/sim/world.c). */
#include "providers/provider.h"
#include "sim/world.h"

static double sim_now(void *ctx)
{
    return sim_world_now(ctx);
}

static int sim_wait(void *ctx, int seconds)
{
    return sim_world_advance(ctx, seconds);
}

static int sim_observe(void *ctx, const struct snapshot **out)
{
    return sim_world_observe(ctx, out);
}

static int sim_apply(void *ctx, const struct alloc *plan)
{
    return sim_world_apply(ctx, plan);
}

static int sim_resize(void *ctx, const struct fleet_plan *f)
{
    return sim_world_resize(ctx, f);
}

static int sim_finished(void *ctx)
{
    return sim_world_finished(ctx);
}

static const struct provider_ops provider_sim = {
    .name = "sim",
    .now = sim_now,
    .wait = sim_wait,
    .observe = sim_observe,
    .apply = sim_apply,
    .resize = sim_resize,
    .finished = sim_finished,
};

void provider_sim_init(struct provider *p, struct sim_world *w)
{
    p->ops = &provider_sim;
    p->ctx = w;
}
