/* bsz.h: the batch-size optimizer: for a job on (nodes, replicas), the per-GPU batch and the
 * gradient-accumulation steps that maximise goodput. Pure. */
#ifndef CASTOR_MODEL_BSZ_H
#define CASTOR_MODEL_BSZ_H

#include "model/goodput.h"
#include "model/tput.h"

/* A job's batch-size limits, as its owner declared them. */
struct bsz_limits {
    double init_bsz;  /* M0: the batch the job was tuned at; never goes below */
    double max_bsz;   /* the largest total batch; 0 means init_bsz (no scaling) */
    double min_local; /* smallest per-GPU batch; 0 means 1 */
    double max_local; /* largest per-GPU batch (what fits in GPU memory); 0 means max_bsz */
    int accumulation; /* 1 if the job may accumulate gradients over micro-batches */
};

struct bsz_choice {
    double goodput;   /* M0-equivalent samples per second: throughput x efficiency */
    double local_bsz; /* per-GPU (atomic) batch */
    int accum_steps;  /* extra micro-batches per optimizer step */
    double batch;     /* total batch: replicas x local_bsz x (accum_steps + 1) */
};

/* How many total-batch candidates are searched, spaced geometrically (as Pollux does). */
#define BSZ_CANDIDATES 50

/*
 * The best configuration for (nodes, replicas): BSZ_CANDIDATES total batches spaced geometrically
 * from max(M0, replicas x min_local) to max_bsz; for each, the per-GPU batch (and with
 * accumulation, the fewest micro-batches that keep it under max_local; a single GPU accumulates
 * at least once above M0, so that gradient noise can be measured), then the goodput; candidates
 * whose per-GPU batch falls outside [min_local, max_local] are skipped. Ties go to the smaller
 * batch. On success writes *out. Errors (*out untouched): ERR_INVAL (nodes < 1, replicas < nodes,
 * bad limits), ERR_RANGE (no candidate fits the limits).
 */
int bsz_optimize(const struct tput_params *tp, const struct grad_params *gp,
                 const struct bsz_limits *lim, int nodes, int replicas, struct bsz_choice *out);

/* The goodput of one given configuration (no search), with the same units as bsz_optimize. */
double bsz_goodput(const struct tput_params *tp, const struct grad_params *gp, double init_bsz,
                   int nodes, int replicas, double local_bsz, int accum_steps);

/*
 * The per-GPU batch local, lowered where replicas x local x (accum_steps + 1) would pass the
 * largest total batch (lim's max_bsz; 0: init_bsz): bsz_optimize rounds each replica's share up,
 * which may pass it. Never below the floors, which win where they conflict with it: the per-GPU
 * minimum (min_local, at least 1) and M0 over all replicas (init_bsz; so a fixed batch of 64 on 3
 * replicas stays 22 each, 66). Never above local. What every world runs. Pure.
 */
double bsz_cap_local(const struct bsz_limits *lim, int replicas, int accum_steps, double local);

/*
 * Whether a job on the same GPUs should change from a configuration of goodput cur to one of
 * goodput next (bsz_optimize's units): next must be at least hysteresis (>= 1) times cur and, when
 * a change costs the job a restart of restart_s seconds (its replicas restart into it; 0: its
 * workers take it in flight) and the M0-equivalent samples it has left are known (a finite
 * samples_left, none below 0; NAN: not known), the time the change saves on them, samples_left /
 * cur - samples_left / next, must be more than restart_s. 1 to change, 0 to keep cur. A cur that
 * is not a positive finite number (nothing to keep) always changes. Pure.
 */
int bsz_change_pays(double cur, double next, double hysteresis, double samples_left,
                    double restart_s);

#endif
