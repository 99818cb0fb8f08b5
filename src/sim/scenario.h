/* scenario.h: a market scenario for `castor simulate --scenario`: a workload, the offers of a
 * simulated market (prices, capacity, preemptions from rates or replayed traces), and the systems
 * compared on it, read from YAML. */
#ifndef CASTOR_SIM_SCENARIO_H
#define CASTOR_SIM_SCENARIO_H

#include <stdint.h>

#include "policies/fleet.h"
#include "sim/market.h"
#include "util/error.h"

#define SCENARIO_MAX_OFFERS 32
#define SCENARIO_MAX_QUOTAS 8
#define SCENARIO_SYSTEMS 4

/* One system of the comparison: a fleet policy and an allocation policy on the same market. */
struct scenario_system {
    const char *name;   /* "fixed-on-demand", "pollux-autoscale", "fixed-spot", "castor" */
    const char *fleet;  /* fleet policy name */
    const char *policy; /* allocation policy name */
    struct fleet_config fcfg;
    int initial_offer; /* nodes ready at time 0: initial_nodes of this offer (-1: the scenario
                          has no offer of the market this system needs) */
    int initial_nodes;
    int families; /* 1: the jobs of one application share their measurements (sim_config) */
    struct policy_config pcfg; /* the allocation policy's settings (castor's: castor.p_mean, else
                                  what its planner implies; the others: the published ones) */
};

struct scenario {
    const char *path;     /* the file (owned below) */
    const char *workload; /* a trace or folder of traces, from the file's folder (owned) */
    int interval;         /* seconds between decisions (default 60) */
    uint64_t seed;        /* the market's and the decide step's seed (default 1) */
    double checkpoint_s;  /* seconds between the jobs' checkpoints (default 600) */
    /* 1: a job's new batch configuration restarts its replicas (reconfigure: restart); 0 (the
     * default): its workers take it in flight (reconfigure: in_flight) */
    int reconfigure_restart;
    int max_nodes; /* the most nodes alive at once (default 512) */
    int noffers;
    struct mkt_offer_spec offers[SCENARIO_MAX_OFFERS];
    double rate_prior[SCENARIO_MAX_OFFERS]; /* the planner's prior per offer */
    int nquotas; /* the account's quotas over the offers (every system meets them) */
    struct mkt_quota_spec quotas[SCENARIO_MAX_QUOTAS];
    double quota_units[SCENARIO_MAX_QUOTAS][SCENARIO_MAX_OFFERS]; /* their units */
    struct scenario_system systems[SCENARIO_SYSTEMS];
    void *mem; /* private: the document, traces, series and strings */
};

/*
 * Read the scenario at path. Errors name file, line and column in *e: YAML syntax, unknown or
 * duplicate keys, wrong types or values out of range, no offers, a duplicate offer name, a
 * negative price, an unknown offer named by the comparison or a quota, a trace or price file that
 * cannot be read or is malformed (its own file, line and column), a trace that removes a node that
 * is not there. On success *out is owned by the caller (scenario_free); on error it is untouched.
 */
int scenario_load(const char *path, struct scenario **out, struct error *e);

void scenario_free(struct scenario *s);

/*
 * Parse an availability trace in the Bamboo/Parcae format (`time_ms,add|remove,nodeN` lines, no
 * header) from len bytes of text; name is for errors. Node names become numbers in order of first
 * appearance. ERR_PARSE (file:line:column), ERR_EMPTY, ERR_INVAL for a remove of a node that is
 * not there or an add of one that is. On success *out (n events, malloc'd) is the caller's.
 */
int scenario_parse_trace(const char *name, const char *data, size_t len,
                         struct mkt_trace_event **out, int *n, struct error *e);

#endif
