/* teardown.h: the end of a cluster (`castor teardown`): every instance with the cluster's tag
 * terminated, every launch not yet answered given up and every node terminated in the state, so
 * that nothing is left billing once the controller is gone. The jobs stay in the state, as they
 * are, to resume from their checkpoints if the cluster runs again. */
#ifndef CASTOR_CONTROL_TEARDOWN_H
#define CASTOR_CONTROL_TEARDOWN_H

#include <stdio.h>

#include "util/error.h"

struct cloud;
struct realworld_offer;
struct state;

/* What a teardown found and did. */
struct teardown_result {
    int instances;  /* listed with the cluster's tag and not gone */
    int terminated; /* of those, terminated */
    int failed;     /* of those, the cloud would not terminate (run it again) */
    int intents;    /* launch intents not yet answered, given up */
    int nodes;      /* nodes not terminated in the state, terminated there */
    int jobs;       /* jobs pending or running, kept */
};

/*
 * Tear down cluster on cloud (borrowed) with the state st (borrowed; the caller holds its claim,
 * state_claim, so that no controller launches meanwhile; NULL when there is none: the instances
 * that carry the cluster's tag only, the counts of the state left 0). Lists the cluster's instances
 * and prints each on out (may be NULL) with what is done to it; with apply 0 it changes nothing (a
 * dry run), else it terminates every instance that is not gone, resolves every pending launch
 * intent as failed (a controller started later does not ask for it again) and moves every node not
 * terminated to terminated (their allocations go; the jobs stay), what each cost since the costs
 * recorded last up to now recorded first (a node castor launched whose instance was not listed
 * left out), and what the strays it terminates cost (instances no live node explains, at the
 * price the controller bills their offer at: the cloud's offers, and the configuration's own
 * prices and discounts meta (nmeta entries, borrowed; NULL and 0: none); state_stray_charge; one
 * not priced is said on out). A
 * termination the cloud refuses is counted in failed and the rest go on. *out written on success.
 * Errors: the cloud's list (nothing changed: e says why), the state's (what was done before stays
 * done; running it again finishes it).
 */
int teardown_run(struct state *st, struct cloud *cloud, const char *cluster,
                 const struct realworld_offer *meta, size_t nmeta, int apply, double now, FILE *out,
                 struct teardown_result *res, struct error *e);

#endif
