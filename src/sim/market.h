/* market.h: the simulated cloud market: offers (instance type x zone x market), spot price
 * series, per-pool capacity, boot delays, preemptions with a notice, per-second billing. */
#ifndef CASTOR_SIM_MARKET_H
#define CASTOR_SIM_MARKET_H

#include <stdint.h>

#include "util/error.h"

/* Seconds of the minimum billed time of an instance (EC2, Compute Engine: 60 s). */
#define MKT_MIN_BILLED 60.0

/* One point of a price series: from time t (seconds) on, the price is price ($/h per node). */
struct mkt_price_point {
    double t;
    double price;
};

/* One event of a replayed availability trace: at time t (seconds, from the start of the
 * simulation) trace node `node` (a small whole number naming it) appears (add) or goes (remove). */
struct mkt_trace_event {
    double t;
    int add; /* 1: add, 0: remove */
    int node;
};

/*
 * What one offer (a pool: instance type x zone x market) is. Strings and arrays are borrowed: they
 * must outlive the market. Zero fields take the defaults given. An on-demand offer's price is
 * fixed (series, volatility and rate are ignored; a trace is an error).
 */
struct mkt_offer_spec {
    const char *name; /* unique, e.g. "g4dn.12xlarge/us-east-1a/spot" */
    const char *type; /* instance type, e.g. "g4dn.12xlarge" */
    const char *zone;
    const char *gpu; /* GPU kind, e.g. "t4" */
    int spot;        /* 1: spot (preemptible) capacity; 0: on-demand */
    int gpus;        /* GPUs per node, >= 1 */
    double price;    /* $/h per node: the on-demand price, or the spot price at time 0 */
    /* spot prices: a series (sorted by t, the first at t <= 0; piecewise constant, a later point
     * at an equal t wins), else a seeded model of mean price and hourly relative volatility (0:
     * the price stays). The model is piecewise constant per hour from time 0: hour 0 at price,
     * then the log price moves toward log(price) by 0.3 of the gap plus volatility times a
     * standard normal draw, clamped to [price_min, price_max]; each offer's hours are drawn from
     * its own stream of the market seed, keyed by its name, so they do not depend on other
     * offers, on its place in the list or on the order of queries (drawn for ten years, then the
     * price stays). */
    const struct mkt_price_point *series;
    int nseries;
    double volatility; /* seeded model: standard deviation of the hourly log change */
    double price_min;  /* seeded model: bounds of the price (0: price / 2 and 2 * price) */
    double price_max;
    int capacity;    /* most instances alive at once (0: no limit) */
    double boot_s;   /* seconds from launch to a ready node (0: 180; < 0: none, ready at once) */
    double notice_s; /* seconds of notice before a preemption (0: 120; < 0: none) */
    /* spot: an instance preempted within this many seconds of its launch is not billed (EC2
     * bills nothing of a spot instance it interrupts in its first hour: 3600; 0: billed) */
    double reclaim_free_s;
    /* preemptions per node-hour (spot, no trace): each launch draws a lifetime ~ Exponential(rate)
     * hours from the offer's own stream of the market seed (keyed by its name), so the n-th
     * launch of an offer gets the same lifetime for the same seed whatever the other offers are
     * or do, and wherever it is listed */
    double rate;
    /* or preemptions and capacity replayed from a trace (sorted by t; nodes numbered 0 to 2^20 -
     * 1; events at an equal t apply in array order; a spot offer only, and no rate with it): a
     * launch takes the lowest-numbered trace node that is there and free; it is preempted when
     * the trace removes that node; a launch finds no free trace node -> insufficient capacity.
     * capacity, if set too, is a further limit. After the trace's last event the pool keeps its
     * last state. */
    const struct mkt_trace_event *trace;
    int ntrace;
};

/* A quota of the account over some offers (market_set_quotas): the nodes alive of its offers,
 * each taking its offer's units, may not pass limit (a launch that would is refused). */
struct mkt_quota_spec {
    const char *name;    /* for reports, e.g. "G and VT spot vCPUs" */
    double limit;        /* units, >= 0 */
    const double *units; /* per offer (the market's n): what one node takes; 0: not counted */
};

enum mkt_state {
    MKT_BOOTING, /* launched, not ready yet */
    MKT_READY,   /* running, schedulable */
    MKT_NOTICED, /* running, a preemption notice received */
    MKT_GONE,    /* terminated or preempted */
};

/* One instance; read-only for callers, owned by the market. */
struct mkt_instance {
    long id;   /* 1, 2, ... in launch order */
    int offer; /* index of its offer */
    enum mkt_state state;
    double launched;  /* seconds */
    double ready_at;  /* launched + boot */
    double notice_at; /* when its notice comes: max(launched, end_at - notice_s), or end_at with
                         no notice (INFINITY: never; a terminated one never gets it) */
    double end_at;    /* when it goes: preemption time while alive (INFINITY: none planned);
                         the time it went once MKT_GONE */
    int preempted;    /* 1 if it went by preemption */
    int trace_node;   /* the trace node it holds, or -1 */
};

/*
 * Events of an instance, in this order at equal times. A booting instance may get its notice
 * (it stays MKT_BOOTING, and is MKT_NOTICED once ready) and may be preempted (then it never gets
 * READY, unless ready_at == end_at). With no notice (notice_s < 0) NOTICE comes at end_at, just
 * before PREEMPT.
 */
enum mkt_event_kind {
    MKT_EV_READY,   /* the instance finished booting */
    MKT_EV_NOTICE,  /* a preemption notice: it goes at inst->end_at */
    MKT_EV_PREEMPT, /* it was preempted (now MKT_GONE) */
};

struct mkt_event {
    enum mkt_event_kind kind;
    long id;
    double t;
};

struct market;

/*
 * A market of n offers; seed drives the spot price model and the drawn preemptions. Checks every
 * spec (with detail in *e, naming the offer; file and line left empty): ERR_EMPTY (no offers),
 * ERR_INVAL (no name, a duplicate name, gpus < 1, a price that is negative or not finite, a
 * negative rate, capacity, boot time, volatility or price bound, price_min above price_max, a
 * series that is not sorted, starts after 0 or has a negative price, a trace that is not sorted,
 * numbers a node out of range, removes a node that is not there or adds one that is, a trace on
 * an on-demand offer or with a rate), ERR_NOMEM. On success *out is owned by the caller; on
 * error *out is untouched.
 *
 * Times passed to market_launch and market_terminate never go back: each is at or after the
 * latest time given to launch, terminate or advance (else ERR_INVAL). Advance the market to now
 * before launching or terminating at now, so that events come in order.
 */
int market_new(const struct mkt_offer_spec *offers, int n, uint64_t seed, struct market **out,
               struct error *e);

void market_free(struct market *m);

int market_noffers(const struct market *m);

/* Seconds from a launch of offer to a ready node, its spec's boot_s taken (0: the default 180;
 * < 0: 0); NAN if there is no such offer. */
double market_boot_s(const struct market *m, int offer);

/* Offer's spec (borrowed), NULL if there is no such offer. */
const struct mkt_offer_spec *market_offer(const struct market *m, int offer);

/* The offer's price at time t, $/h per node; NAN for no such offer or out of memory. Not const:
 * the seeded model is drawn lazily. */
double market_price(struct market *m, int offer, double t);

/* The lowest price per GPU-hour of any offer at any time in [0, t] (t < 0: at time 0); NAN out
 * of memory. */
double market_min_gpu_price(struct market *m, double t);

/*
 * Launch one instance of offer at now; *id is its id. ERR_CAPACITY (insufficient capacity: the
 * pool has capacity instances alive at now (booting, ready or noticed), or the trace has no free
 * node now; nothing changes but the counter), ERR_QUOTA (a quota over the offer would pass its
 * limit; nothing changes but the counter), ERR_RANGE (no such offer), ERR_INVAL (now not
 * finite or before an earlier call's time), ERR_NOMEM. A launch at now is ready at now + boot_s;
 * its notice and preemption (drawn from the rate, or the removal of its trace node) are planned
 * at launch.
 */
int market_launch(struct market *m, int offer, double now, long *id);

/*
 * Put the market's offers under nq quotas (copied; replacing any set before). ERR_INVAL (e names
 * the quota) for a quota without a name, a limit or a unit that is negative or not finite, or
 * one that counts no offer; ERR_NOMEM. On error the quotas are unchanged.
 */
int market_set_quotas(struct market *m, const struct mkt_quota_spec *q, int nq, struct error *e);

/* 1 when quotas limit offer, with the nodes of it that they still allow at now into *room (>= 0);
 * 0 (room untouched) when none counts it or there is no such offer. */
int market_offer_room(const struct market *m, int offer, double now, int *room);

/* As market_launch, for a node that is there before the simulation starts: ready at now, with
 * no boot delay (ready_at = now, MKT_READY at once, no READY event; a fixed cluster's nodes, an
 * initial fleet). */
int market_launch_ready(struct market *m, int offer, double now, long *id);

/*
 * Terminate instance id at now (it goes at once, end_at = now, no event; billing stops at now,
 * or at its launch plus the minimum billed time if that is later). ERR_RANGE: no such instance;
 * ERR_INVAL: already gone, or its preemption is due at or before now (advance to see it), or now
 * is before an earlier call's time.
 */
int market_terminate(struct market *m, long id, double now);

/* The time of the next event (ready, notice, preemption, or a trace adding a node, which may free
 * capacity) strictly after `after`, INFINITY if none. Events at or before `after` that have not
 * been applied yet are not counted. */
double market_next_event(const struct market *m, double after);

/*
 * Apply every event due at or before t (ready, notice, preemption; trace adds and removes, which
 * emit nothing), ordered by time, then kind (READY < NOTICE < PREEMPT), then id, writing at most
 * max of them to ev (*nev how many; the rest are applied all the same: pass a large enough
 * buffer, such as one per live instance times three; ev may be NULL with max 0). 0 or ERR_NOMEM
 * (then nothing is applied). A t before an earlier call's time applies what is due by t.
 */
int market_advance(struct market *m, double t, struct mkt_event *ev, int max, int *nev);

/* Instance id, or NULL if there is none. Borrowed; valid until the next launch. */
const struct mkt_instance *market_instance(const struct market *m, long id);

/* Instances launched so far (ids 1..n). */
long market_ninstances(const struct market *m);

/*
 * Dollars billed for instance id up to t: the price integrated per second over [launched, end),
 * where end is max(t, launched + MKT_MIN_BILLED) while it is alive (the minimum is owed from the
 * launch), capped by its planned preemption; once terminated at T, max(T, launched +
 * MKT_MIN_BILLED); once preempted, its preemption time (no minimum: the cloud took it). 0 before
 * its launch; NAN if there is no such instance.
 */
double market_instance_cost(struct market *m, long id, double t);

/* Dollars billed for every instance up to t (the sum of market_instance_cost). */
double market_cost(struct market *m, double t);

/* The bill at the end of a run at t, after every instance's end (t at or past the last one to
 * go): as market_cost, but every instance still alive is billed as if terminated at t (the 60 s
 * minimum included), its planned preemption, which never came, no longer counted (one planned
 * within the offer's reclaim_free_s would make it free). */
double market_cost_settled(struct market *m, double t);

/* Counters: launches refused for capacity, and preemptions applied, per offer (or all with offer
 * -1; 0 for no such offer). */
long market_capacity_errors(const struct market *m, int offer);

/* Launches refused for a quota, per offer (all with offer -1; 0 for no such offer). */
long market_quota_errors(const struct market *m, int offer);
long market_preemptions(const struct market *m, int offer);

/* Node-hours of offer's instances (or all with -1) up to t: running time from launch (boot
 * included) to t or its end, not billed time. */
double market_node_hours(const struct market *m, int offer, double t);

#endif
