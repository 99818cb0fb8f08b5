/* family.c: what the jobs of one model have measured, pooled for the jobs that follow. */
#include "sim/family.h"

void sim_family_init(struct sim_family *f)
{
    profile_init(&f->prof);
    f->start = GRAD_PARAMS_NONE;
    f->nstart = 0;
}

void sim_family_free(struct sim_family *f)
{
    profile_free(&f->prof);
}

int sim_family_learn(struct sim_family *f, const struct profile *job)
{
    return profile_merge(&f->prof, job);
}

void sim_family_start(struct sim_family *f, const struct grad_params *g)
{
    double w;

    f->nstart++;
    w = 1.0 / f->nstart;
    if (f->nstart == 1) {
        f->start = *g;
        return;
    }
    f->start.sqr += w * (g->sqr - f->start.sqr);
    f->start.var += w * (g->var - f->start.var);
}

int sim_family_ready(const struct sim_family *f)
{
    return f->prof.n > 0 && f->nstart > 0;
}
