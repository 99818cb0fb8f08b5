/* sim_run.c: one simulated run wired whole (see sim_run.h). */
#include <string.h>

#include "cli/sim_run.h"

int sim_run_open(const struct sim_run_spec *spec, struct sim_run *r, struct error *e)
{
    const struct policy_ops *ops = policy_find(spec->policy);
    struct policy_config defaults = {0};
    struct sim_config cfg = spec->cfg;
    struct sim_run x;
    int rc;

    memset(&x, 0, sizeof(x));
    if (!ops)
        return err_set(e, ERR_INVAL, NULL, 0, 0, "unknown policy '%s'", spec->policy);
    cfg.adaptive_batch = ops->adaptive_batch;
    cfg.gang = ops->gang;
    if ((rc = workload_load(spec->path, spec->apps, &x.wl, e)) < 0 ||
        (rc = sim_world_new(&cfg, x.wl, &x.w, e)) < 0)
        goto fail;
    if ((rc = policy_new(spec->policy, spec->pcfg ? spec->pcfg : &defaults, &x.pol)) < 0) {
        err_set(e, rc, NULL, 0, 0, "policy %s: %s", spec->policy, err_str(rc));
        goto fail;
    }
    if (spec->fleet && (rc = fleet_new(spec->fleet, spec->fcfg, &x.fleet)) < 0) {
        err_set(e, rc, NULL, 0, 0, "fleet policy %s: %s", spec->fleet, err_str(rc));
        goto fail;
    }
    provider_sim_init(&x.prov, x.w);
    *r = x;
    /* the loop points into *r, not into x */
    r->l.provider = &r->prov;
    r->l.policy = &r->pol;
    r->l.fleet = spec->fleet ? &r->fleet : NULL;
    r->l.interval = spec->interval;
    r->l.seed = spec->seed;
    return 0;
fail:
    sim_run_close(&x);
    return rc;
}

void sim_run_close(struct sim_run *r)
{
    fleet_free(&r->fleet);
    policy_free(&r->pol);
    sim_world_free(r->w);
    workload_free(r->wl);
    memset(r, 0, sizeof(*r));
}
