/* reporter.h: what libcastor's reports are made of: step times pooled per configuration, the
 * report's JSON body, the controller's allocation read back, the job's next configuration, and
 * the backoff between failed reports. Pure: no clock, no I/O, no threads. */
#ifndef CASTOR_AGENT_REPORTER_H
#define CASTOR_AGENT_REPORTER_H

#include <stddef.h>
#include <stdint.h>

#include "model/bsz.h"
#include "model/goodput.h"
#include "model/tput.h"

/* The most configurations one report carries (the API's limit). */
#define REPORTER_MAX_CONFIGS 64

/* The steps observed at one configuration: a count, the mean step time and the sum of squared
 * deviations from it (Welford), and the sum of synchronisation times, all in seconds. step is a
 * whole optimizer step, its accum_steps extra micro-batches included. */
struct reporter_config {
    int nodes;
    int replicas;
    double local_bsz;
    int accum_steps;
    long long count;
    double mean;
    double m2;
    double sync_sum;
};

/* Configurations pooled since the last report that reached the controller. Owned by value;
 * reporter_pool_clear to start. dropped counts the steps that found the pool full. */
struct reporter_pool {
    struct reporter_config cfg[REPORTER_MAX_CONFIGS];
    size_t n;
    long long dropped;
};

void reporter_pool_clear(struct reporter_pool *p);

/* Pool one step of step seconds, sync of them synchronising, at (nodes, replicas, local_bsz,
 * accum_steps). The caller has checked the values (0 <= sync < step, finite). ERR_RANGE (and
 * dropped counted) when the configuration is new and the pool holds REPORTER_MAX_CONFIGS. */
int reporter_pool_add(struct reporter_pool *p, int nodes, int replicas, double local_bsz,
                      int accum_steps, double step, double sync);

/* Pool every configuration of from into into, as if its steps had been added one by one (counts
 * add, means and squared deviations combine exactly). Configurations that do not fit are counted
 * in into->dropped and ERR_RANGE is returned; the others are merged. */
int reporter_pool_merge(struct reporter_pool *into, const struct reporter_pool *from);

/*
 * The JSON body of POST /v1/jobs/{name}/reports (docs/api.md): each configuration's count, mean
 * step time, standard deviation (population: sqrt(m2 / count), as the controller pools it) and
 * mean sync time; grad (NULL: none), progress (NAN: none) and sync_prior (seconds; 0: none).
 * *out owns the NUL-terminated text (free). ERR_INVAL (NULL p or out, a value the API would
 * refuse), ERR_NOMEM; *out untouched on error.
 */
int reporter_body(const struct reporter_pool *p, const struct grad_params *grad, double progress,
                  double sync_prior, char **out);

/* What GET /v1/jobs/{name}/allocation answered. */
struct reporter_alloc {
    int running;    /* the job's state is "running" */
    int world_size; /* replicas allocated in all (0: none) */
    int nodes;      /* nodes with replicas */
    int has_config; /* 1 when the plan gave a configuration (local_bsz not null) */
    double local_bsz;
    int accum_steps;
    double lr_gain;
};

/* Read an allocation answer of len bytes. ERR_PARSE for text that is not such an answer (not
 * JSON, a field missing or of the wrong type or range); *out untouched on error. */
int reporter_parse_alloc(const char *body, size_t len, struct reporter_alloc *out);

/* The configuration a job should run at next. */
struct reporter_decision {
    int world_size;
    int nodes;
    double local_bsz;
    int accum_steps;
    double lr_gain;
    int from_controller; /* 1: local_bsz and accum_steps are the controller's */
};

/* Where the job runs now: its configuration and its batch-size limits. */
struct reporter_current {
    int nodes;
    int world_size;
    double local_bsz;
    int accum_steps;
    struct bsz_limits limits; /* init_bsz > 0 */
};

/*
 * The job's next configuration: the allocation's world size and node count (the current ones
 * when it holds no replica); the controller's local batch and accumulation when its plan gave
 * them, with the AdaScale gain of that batch under gp (the statistics measured now; NULL: the
 * controller's gain); else the batch-size optimizer's choice for that placement under the
 * fitted model tp (NULL: not fitted yet, keep the current batch) with the gradient statistics gp
 * (NULL: none reported, GRAD_PARAMS_NONE), and the AdaScale gain of the chosen total batch.
 * Returns 0; ERR_INVAL for NULL arguments or a current configuration out of range.
 */
int reporter_decide(const struct reporter_alloc *a, const struct reporter_current *cur,
                    const struct tput_params *tp, const struct grad_params *gp,
                    struct reporter_decision *out);

/* The wait before retry number failures (>= 1): d = min(cap, base 2^(failures - 1)), drawn
 * uniformly from [d/2, d] with the splitmix64 state *seed (advanced). base and cap > 0. */
double reporter_backoff(int failures, double base, double cap, uint64_t *seed);

#endif
