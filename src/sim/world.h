/* world.h: the simulated world: a fixed cluster, a workload of emulated jobs, a virtual clock.
 * The controller's loop observes it, decides, and applies the plan, as it would a real cloud. */
#ifndef CASTOR_SIM_WORLD_H
#define CASTOR_SIM_WORLD_H

#include "plan/snapshot.h"
#include "sim/job.h"
#include "sim/workload.h"
#include "util/error.h"

struct sim_config {
    int nodes;                          /* cluster size (paper: 16) */
    int gpus_per_node;                  /* (paper: 4) */
    double interference;                /* slowdown of distributed jobs sharing a node */
    int adaptive_batch;                 /* 1: jobs choose goodput-optimal batches (Pollux) */
    int gang;                           /* 1: jobs get the GPUs they ask for (Tiresias) */
    const struct tput_model_ops *model; /* how jobs model their throughput */
    const char *profiles;               /* folder of profile folders, one per application */
};

struct sim_world;

/*
 * A world running workload wl (borrowed; it must outlive the world) on cfg's cluster, loading the
 * profile of every application the workload names. Errors (with detail in *e): ERR_INVAL (no
 * nodes, no GPUs), what loading a profile returns. On success *out is owned by the caller.
 */
int sim_world_new(const struct sim_config *cfg, const struct workload *wl, struct sim_world **out,
                  struct error *e);

void sim_world_free(struct sim_world *w);

/* The virtual clock, seconds. */
double sim_world_now(const struct sim_world *w);

/* The replica limit the Pollux artifact gives jobs of application app (NCF: 1), or 0 for none. */
int sim_app_max_replicas(const char *app);

/* Let seconds pass: every job runs on what it holds. Errors: what emulation returns. */
int sim_world_advance(struct sim_world *w, int seconds);

/* The world as the decide step sees it; valid until the next call on w. Errors: ERR_NOMEM. */
int sim_world_observe(struct sim_world *w, const struct snapshot **out);

/* Apply an allocation for the jobs of the last snapshot (rows in its order): jobs whose GPUs
 * change restart. Errors: ERR_INVAL (plan does not fit the cluster; nothing changes). */
int sim_world_apply(struct sim_world *w, const struct alloc *plan);

/* 1 when every job of the workload has finished. */
int sim_world_finished(const struct sim_world *w);

/* Jobs, in workload order, for reporting. */
int sim_world_njobs(const struct sim_world *w);
const struct sim_job *sim_world_job(const struct sim_world *w, int i);

/* GPUs job i (workload order) holds now. */
int sim_world_job_gpus(const struct sim_world *w, int i);

#endif
