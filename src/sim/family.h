/* family.h: a model family in the simulator: what the jobs of one model have measured, pooled for
 * the jobs of that model that come after them, as the controller pools the reports of jobs that
 * declare the same `family` (docs/fleet.md, "Model families"). */
#ifndef CASTOR_SIM_FAMILY_H
#define CASTOR_SIM_FAMILY_H

#include "model/goodput.h"
#include "model/profile.h"

/* Owned by whoever declares it (the world, one per application); sim_family_init before use,
 * sim_family_free after. */
struct sim_family {
    struct profile prof;      /* every configuration a job of the family measured, as it did */
    struct grad_params start; /* the mean of the jobs' first gradient statistics */
    int nstart;               /* jobs whose first statistics are in start */
};

void sim_family_init(struct sim_family *f);

void sim_family_free(struct sim_family *f);

/* Take the configurations of a job's profile that the family has not measured yet. Errors (the
 * family unchanged): ERR_NOMEM. */
int sim_family_learn(struct sim_family *f, const struct profile *job);

/* Add a job's first gradient statistics to the family's mean. */
void sim_family_start(struct sim_family *f, const struct grad_params *g);

/* 1 when the family can seed a new job: a configuration measured and a start known. */
int sim_family_ready(const struct sim_family *f);

#endif
