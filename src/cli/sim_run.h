/* sim_run.h: one simulated run wired whole: a workload trace, the sim world built from it, the
 * allocation policy (and a fleet policy when one is named), the sim provider and the controller's
 * loop over them. For the subcommands and benchmarks that drive the loop over the sim world
 * (castor simulate, its --scenario form, castor-bench-pollux-ga, castor-bench-soak). */
#ifndef CASTOR_CLI_SIM_RUN_H
#define CASTOR_CLI_SIM_RUN_H

#include <stdint.h>

#include "control/loop.h"
#include "policies/fleet.h"
#include "policies/policy.h"
#include "providers/provider.h"
#include "sim/world.h"
#include "sim/workload.h"
#include "util/error.h"

/* What to build. cfg is the world's; its adaptive_batch and gang are taken from the policy. */
struct sim_run_spec {
    const char *path;                 /* the workload trace (CSV) */
    const char *const *apps;          /* the applications it may name (NULL-terminated) */
    struct sim_config cfg;            /* the simulated cluster */
    const char *policy;               /* allocation policy, by name */
    const struct policy_config *pcfg; /* its configuration; NULL: the defaults */
    const char *fleet;                /* fleet policy, by name; NULL: none (a fixed cluster) */
    const struct fleet_config *fcfg;  /* its configuration */
    int interval;                     /* seconds between ticks */
    uint64_t seed;                    /* the loop's seed */
};

/* The parts, owned by the run; l is wired to prov, pol and (when named) fleet, with interval and
 * seed set; the caller adds its record hook before running it. */
struct sim_run {
    struct workload *wl;
    struct sim_world *w;
    struct policy pol;
    struct fleet_policy fleet;
    struct provider prov;
    struct loop l;
};

/* Build *r from spec. 0 on success (sim_run_close frees it); else a negative code from the
 * workload's, the world's or the policies' constructors, e saying why (with file:line:column for
 * a bad trace), and *r untouched. */
int sim_run_open(const struct sim_run_spec *spec, struct sim_run *r, struct error *e);

/* Free what sim_run_open made; r may be zeroed (then nothing happens). */
void sim_run_close(struct sim_run *r);

#endif
