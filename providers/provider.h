/* provider.h: worlds the controller runs against (sim, local, aws, gcp): one `const struct
 * provider_ops` each; an instance is {ops, ctx}. The controller reaches a world only through the
 * provider_* wrappers. */
#ifndef CASTOR_PROVIDERS_PROVIDER_H
#define CASTOR_PROVIDERS_PROVIDER_H

#include "plan/alloc.h"
#include "plan/fleet.h"
#include "plan/snapshot.h"

struct provider_ops {
    const char *name;
    /* The world's clock, seconds (virtual in sim). */
    double (*now)(void *ctx);
    /* Let time pass until now + seconds: a virtual world runs its emulation, a real one sleeps. */
    int (*wait)(void *ctx, int seconds);
    /* The world now; the snapshot stays valid until the next call on the provider. */
    int (*observe)(void *ctx, const struct snapshot **out);
    /* Make the world hold the plan (rows as in the last snapshot). Errors leave it unchanged. */
    int (*apply)(void *ctx, const struct alloc *plan);
    /* Change the fleet as f says (launch, release, cancel), for the last snapshot's nodes; NULL
     * in a world whose nodes are fixed. Errors leave the fleet unchanged. */
    int (*resize)(void *ctx, const struct fleet_plan *f);
    /* 1 when there is nothing more to do (sim: every job finished; real worlds: never). */
    int (*finished)(void *ctx);
};

struct provider {
    const struct provider_ops *ops;
    void *ctx;
};

double provider_now(struct provider *p);
int provider_wait(struct provider *p, int seconds);
int provider_observe(struct provider *p, const struct snapshot **out);
int provider_apply(struct provider *p, const struct alloc *plan);
int provider_finished(struct provider *p);
/* ERR_INVAL when the world cannot change its fleet. */
int provider_resize(struct provider *p, const struct fleet_plan *f);

/* The sim provider over a simulated world (borrowed: it must outlive the provider). */
struct sim_world;
void provider_sim_init(struct provider *p, struct sim_world *w);

#endif
