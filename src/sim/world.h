/* world.h: the simulated world: a fixed cluster or a simulated market of rented nodes, a workload
 * of emulated jobs, a virtual clock. The controller's loop observes it, decides, and applies the
 * plan, as it would a real cloud. */
#ifndef CASTOR_SIM_WORLD_H
#define CASTOR_SIM_WORLD_H

#include <stdint.h>

#include "plan/fleet.h"
#include "plan/snapshot.h"
#include "sim/job.h"
#include "sim/market.h"
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
    /* A market instead of a fixed cluster (noffers > 0): nodes are rented from its offers
     * (borrowed), at most max_nodes alive at once (default 512); `nodes` nodes of offer
     * initial_offer are ready at time 0 (nodes may be 0). gpus_per_node is then unused. */
    const struct mkt_offer_spec *offers;
    int noffers;
    int initial_offer;
    int max_nodes;
    uint64_t market_seed;
    /* per offer, preemptions per node-hour the planner assumes before it has seen any (NULL: 0
     * on-demand, 0.05 spot) */
    const double *rate_prior;
    /* the account's quotas over the offers (borrowed; units per offer as the offers): launches
     * past one are refused, and the planners see the room they leave each offer; a fixed
     * cluster larger than a quota starts with what the quota allows */
    const struct mkt_quota_spec *quotas;
    int nquotas;
    double checkpoint_s;     /* seconds between each job's checkpoints (0: only on restarts) */
    double batch_hysteresis; /* see sim_job.hysteresis (0: none) */
    /* 1: a job's new batch configuration restarts its replicas (the job spec's reconfigure:
     * restart), 0: its workers take it in flight (Pollux's adaptive workers); a workload's
     * reconfigure column overrides it per job */
    int reconfigure_restart;
    /* 1: the jobs do not declare their length (the snapshot's progress_target is 0), as jobs
     * submitted without `samples`; 0: they do (the policies may see how much work is left) */
    int unknown_lengths;
    /* 1: the jobs of one application are one model family (the controller's `family` key): a job
     * starts from what the earlier jobs of its application measured (sim_job_seed) */
    int families;
};

/* What renting cost, for a world with a market. */
struct sim_fleet_stats {
    double dollars;        /* billed so far */
    double gpu_hours;      /* GPUs times running hours of every instance */
    long launches;         /* instances launched */
    long capacity_errs;    /* launches refused for capacity */
    long quota_errs;       /* launches refused for a quota */
    long preemptions;      /* instances preempted */
    double lost_work_s;    /* job-seconds of work lost to preemptions (since the last checkpoint) */
    double min_gpu_price;  /* lowest $/GPU-hour any offer had so far */
    double held_gpu_hours; /* GPU-hours held by jobs (restarts included) */
    double mean_wait_s;    /* mean over started jobs of the wait from submission to first GPUs */
    long restarts;         /* the jobs' restarts after their first start: moves, preemptions,
                            * and new configurations of jobs that restart into them */
    int deadlines;         /* jobs with a deadline */
    int deadlines_met;     /* of them, finished by it */
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

/* The world as the decide step sees it; valid until the next call on w. Jobs of a family that
 * have no model yet take their family's first (sim_job_seed). Errors: ERR_NOMEM, what a seeding fit
 * returns. */
int sim_world_observe(struct sim_world *w, const struct snapshot **out);

/* Apply an allocation for the jobs of the last snapshot (rows in its order): jobs whose GPUs
 * change restart. Errors: ERR_INVAL (plan does not fit the cluster; nothing changes). */
int sim_world_apply(struct sim_world *w, const struct alloc *plan);

/* 1 when every job of the workload has finished. */
int sim_world_finished(const struct sim_world *w);

/*
 * Change the fleet as f says, for the nodes and booting instances of the last snapshot: release
 * and cancel (terminate), then launch. A launch refused for capacity marks its offer unavailable
 * for 10 minutes and is not an error. Launches past max_nodes alive (noticed nodes count until
 * they go: the snapshot's snap_offer.noticed) are not made, mark nothing and are not errors.
 * Errors: ERR_INVAL (f is not sized for the last snapshot, or releases a node a job holds; nothing
 * changes), ERR_NOMEM.
 */
int sim_world_resize(struct sim_world *w, const struct fleet_plan *f);

/* 1 if the world rents its nodes from a market (the decide step may change the fleet). */
int sim_world_has_fleet(const struct sim_world *w);

/* Cost and preemption figures so far (zero for a fixed cluster). */
void sim_world_fleet_stats(const struct sim_world *w, struct sim_fleet_stats *out);

/*
 * The least GPU-seconds the workload takes: every job's work at its best goodput per GPU
 * (sim_job_min_gpu_seconds on nodes of gpn GPUs). Times the lowest price per GPU-hour seen
 * (sim_fleet_stats.min_gpu_price), a lower bound on what it costs where every GPU-hour is billed
 * (spot nodes reclaimed within an offer's reclaim_free_s are not: their work is free). On success
 * writes *gpu_s. Errors: as sim_job_min_gpu_seconds.
 */
int sim_world_min_gpu_seconds(struct sim_world *w, int gpn, double *gpu_s);

/* How far a run is from the best possible (sim_bound: every job at each epoch on the best trade
 * of time against GPU-time, up to 64 GPUs on nodes of gpn, without restarts, boots or learning). */
struct sim_bounds {
    double avg_jct;   /* the least average completion time on the GPU-hours given (INFINITY:
                       * some job cannot run at all) */
    double gpu_hours; /* the least GPU-hours that reach the average completion time given
                       * (INFINITY: below every job at its fastest) */
};

/*
 * Both bounds of the workload's jobs: the least average JCT for gpu_hours spent in all, and the
 * least GPU-hours for an average JCT of avg_jct. On success writes *out. Errors: ERR_NOMEM.
 */
int sim_world_bounds(struct sim_world *w, int gpn, double gpu_hours, double avg_jct,
                     struct sim_bounds *out);

/* Nodes alive now (booting, ready or noticed) of offers with spot set, or not (for reports). */
int sim_world_fleet_nodes(const struct sim_world *w, int spot);

/* Jobs, in workload order, for reporting. */
int sim_world_njobs(const struct sim_world *w);
const struct sim_job *sim_world_job(const struct sim_world *w, int i);

/* GPUs job i (workload order) holds now. */
int sim_world_job_gpus(const struct sim_world *w, int i);

#endif
