/* snapshot.h: the world as the decide step sees it: nodes, jobs with their goodput models, the
 * current allocation, and in a cloud the offers and the instances still booting. Read-only for the
 * decide step; the world that built it owns its memory. */
#ifndef CASTOR_PLAN_SNAPSHOT_H
#define CASTOR_PLAN_SNAPSHOT_H

#include "model/bsz.h"
#include "model/goodput.h"
#include "model/tput.h"
#include "plan/alloc.h"

/* A schedulable node (ready, no preemption notice). */
struct snap_node {
    int gpus;        /* GPUs on the node */
    int preemptible; /* spot / preemptible capacity */
    int offer;       /* its offer in snapshot.offers, or -1 (a fixed cluster) */
    double launched; /* seconds */
};

/* What can be rented: one pool (instance type x zone x market). */
struct snap_offer {
    const char *name;
    int gpus;            /* per node */
    int spot;            /* 1: preemptible */
    double price;        /* $/h per node now; NAN: unknown (the cloud could not price it) */
    double preempt_rate; /* the world's estimate of preemptions per node-hour */
    double boot_s;       /* expected seconds from launch to a ready node */
    int unavailable;     /* 1: a recent launch was refused for capacity; do not count on it */
    int capped;          /* 1: the cloud's quotas allow only `room` more nodes of it now (an
                          * offer without room stays available: its price is what the nodes
                          * held there cost, and planners launch elsewhere) */
    int room;            /* (capped) nodes that may still be launched, >= 0 */
    int noticed;         /* its nodes alive with a preemption notice (draining: not schedulable,
                          * not among the nodes): they are held until they go, and count
                          * against a fleet's max_nodes as the ready and booting ones do */
};

/* An instance launched and not ready yet. */
struct snap_booting {
    int offer;
    double launched;
};

/*
 * Ground truth that only a simulated world can offer, for the oracle baselines (Optimus+Oracle):
 * NULL in real worlds. ctx is the world's.
 */
struct snap_oracle {
    void *ctx;
    /* Optimizer steps job j still needs at its requested batch size to finish. */
    double (*iterations_left)(void *ctx, int job);
    /* True seconds per optimizer step of job j on `replicas` GPUs packed onto full nodes, at its
     * requested batch size; NAN when the configuration is impossible. */
    double (*step_time)(void *ctx, int job, int replicas);
};

struct snap_job {
    const char *name;
    double submit_time;      /* seconds */
    double attained_service; /* GPU-seconds held so far */
    int restarts;            /* reallocations after the first start */
    int epoch;               /* completed epochs */
    /* the goodput model, fitted from the job's reports; has_model 0 until the first fit */
    int has_model;
    struct tput_params tput;
    struct grad_params grad;
    struct bsz_limits lim;
    int min_replicas;          /* a gang minimum: this many replicas or none (0 or 1: none) */
    int max_replicas;          /* the most replicas its owner allows; 0: no limit */
    int max_profiled_replicas; /* the most replicas it has been measured on (0: none) */
    /* what the user asked for (used by the baselines, ignored by goodput-driven policies) */
    int req_replicas;
    double req_batch;
    /* progress, in iterations at the initial batch size M0, and where it ends (0: unknown) */
    double progress;
    double progress_target;
    double checkpoint_s; /* seconds between the job's checkpoints (0: only when it restarts) */
    double deadline;     /* seconds, absolute; 0: none */
    /* the owner's priority as a weight in the policies' objectives: 2^(priority / 10), so that
     * ten points double a job's claim (0: weight 1) */
    double weight;
};

struct snapshot {
    double now; /* seconds */
    int nnodes;
    const struct snap_node *nodes;
    int njobs;                   /* active jobs (submitted, not finished), in submission order */
    const struct snap_job *jobs; /* njobs */
    const struct alloc *current; /* njobs rows: what each job holds now */
    const struct snap_oracle *oracle;
    /* the fleet, in a world that rents nodes (noffers 0 in a fixed cluster) */
    int noffers;
    const struct snap_offer *offers;
    int nbooting;
    const struct snap_booting *booting;
    double min_billed_s; /* seconds an instance is billed at least */
};

/* A job's weight in the policies' objectives (its `weight`, 1 when unset). */
double snapshot_job_weight(const struct snap_job *sj);

/* Total GPUs of the snapshot's nodes. */
int snapshot_gpus(const struct snapshot *s);

/* Nodes with a preemption notice still alive, over all offers (snap_offer.noticed). */
int snapshot_noticed(const struct snapshot *s);

#endif
