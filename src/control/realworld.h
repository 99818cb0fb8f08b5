/* realworld.h: the provider of real worlds (local, aws, gcp): snapshots built from the durable
 * state (jobs, their reports and goodput models, nodes registered by their agents) and from a
 * cloud (instances carrying the cluster's tag, offers and prices); plans written to the state,
 * where node agents read their assignments; fleet changes made through the cloud, each launch
 * recorded as an intent before it is asked for; and reconciliation of the two after a crash. */
#ifndef CASTOR_CONTROL_REALWORLD_H
#define CASTOR_CONTROL_REALWORLD_H

#include <stddef.h>

#include "control/api.h"
#include "model/tput.h"
#include "providers/cloud.h"
#include "providers/provider.h"
#include "util/error.h"

struct state;
struct log;

/* What the configuration says of an offer that the cloud does not (strings copied). */
struct realworld_offer {
    const char *name;
    const char *zone;    /* NULL: "default" */
    double boot_s;       /* expected seconds from launch to a ready node; <= 0: 180 */
    double preempt_rate; /* preemptions per node-hour assumed before castor's own nodes there
                          * are seen (the prior, worth RW_RATE_PRIOR_H node-hours); NAN: 0.05 on
                          * spot, 0 on-demand */
    double price;    /* > 0: $/h per node in place of the cloud's (a negotiated price); 0: none */
    double discount; /* 0 to 0.99: the fraction taken off the cloud's price (0: none) */
};

/* The price castor counts for an offer the cloud prices at cloud ($/h per node, storage of it its
 * disks'; NAN: unknown): meta's price when it gives one, else cloud less meta's discount on the
 * instance, the disks at their price (meta NULL: cloud). */
double realworld_offer_price(const struct realworld_offer *meta, double cloud, double storage);

/* What a node of an offer is billed ($/h): its price (the cloud's or the configuration's; NAN:
 * unknown), else for spot its max_price (no spot instance is billed above its bid) and its disks'
 * storage, else NAN: nothing counts it (the spend limit launches none there). */
double realworld_offer_bill(double price, int spot, double max_price, double storage);

/*
 * Charge stray instance in (one no live node explains) to the fleet in st up to now
 * (state_stray_charge), as the reconciliation and `castor teardown` terminate it: at price ($/h,
 * its offer's as castor bills it; NAN: unknown), from its launch as the cloud lists it (not known:
 * now) with at least the cloud's minimum, on a spot market when spot, under zone (NULL:
 * "default"). node (NULL: the state has none) is what the state recorded of it: its offer,
 * market, zone and last price stand instead, it is charged from the end of what the node was
 * charged (state_cost_accrue: its termination, at least a minute after a launch of castor's), and
 * not at all while live (the node's own costs count). *seconds, *dollars: what was added (0 when
 * the span was charged already); *price: the price charged. ERR_UNKNOWN: no price can be told (it
 * is counted nowhere); ERR_INVAL, SQLite's: as state_stray_charge.
 */
int realworld_stray_charge(struct state *st, const struct cloud_instance *in,
                           const struct state_node *node, double price, int spot, const char *zone,
                           double now, double *seconds, double *dollars, double *charged);

/* The daemon's clock: seconds since the Unix epoch (the timer: seconds on a monotonic clock). */
typedef double (*realworld_clock_fn)(void *ctx);
/* Sleep until the timer reads until: 0 then, or ERR_AGAIN when woken early (a signal). */
typedef int (*realworld_sleep_fn)(void *ctx, double until);
/* When node's agent was last heard by this process (the heartbeats its API answered, recorded in
 * the state or not: api_node_heard), seconds since the epoch; NAN: not heard. */
typedef double (*realworld_heard_fn)(void *ctx, const char *node);

/* The calendar periods a spend limit counts over, in UTC. */
enum realworld_period { REALWORLD_DAY, REALWORLD_WEEK, REALWORLD_MONTH };

/* A cap on what the fleet costs per period: over it, castor launches nothing and terminates the
 * instances it launched until the next period (reloadable). */
struct realworld_spend {
    double dollars; /* <= 0: no limit */
    enum realworld_period period;
};

/* When the period holding now (seconds since the epoch) began: 00:00 UTC of its day, of the
 * week's Monday, or of the month's first day. Pure. */
double realworld_period_start(double now, enum realworld_period period);

/* The start of the period after the one holding now. Pure. */
double realworld_period_next(double now, enum realworld_period period);

/* How long the nodes' agents have to show life, in seconds (reloadable). */
struct realworld_timeouts {
    double launch;       /* an intent waits for its instance; <= 0: 600 */
    double registration; /* a launched node's agent has to register; <= 0: not watched */
    double heartbeat;    /* a ready node's agent may go unheard; <= 0: not watched */
};

/* A wait that ends more than this past its deadline on the timer was the controller's own outage
 * (reconcile). */
#define REALWORLD_PAUSE_S 10.0

/* How long a change of a job's configuration without a new placement (a refit found a batch worth
 * 5% more) waits for the job's reports to measure the configuration it has before the next such
 * change; at once when they have (a refit on late reports of the configuration it left would send
 * it straight back), and not for ever when its workers never run the controller's. */
#define REALWORLD_CONFIG_SETTLE_S 600.0

struct realworld_config {
    struct state *state; /* borrowed: a connection of the loop's own */
    struct cloud *cloud; /* borrowed */
    struct log *log;     /* borrowed; NULL: no log */
    const char *cluster; /* the tag every instance carries (copied) */
    realworld_clock_fn clock;
    realworld_clock_fn timer; /* what waits are timed on, never stepped; NULL: the clock */
    realworld_sleep_fn sleep; /* NULL: wait returns at once (tests move the clock) */
    void *clock_ctx;          /* the clock's, the timer's and the sleep's */
    struct realworld_timeouts timeouts;
    const struct realworld_offer *offers;
    size_t noffers;
    const struct tput_model_ops *model; /* the throughput model fitted to reports; NULL: castor */
    struct realworld_spend spend;       /* {0}: no limit */
    /* NULL: a node's agent is heard as the state records it alone (heartbeat_at); else the later
     * of that and what heard says, so that heartbeats the state could not record (a full disk)
     * count too */
    realworld_heard_fn heard;
    void *heard_ctx;
};

struct realworld; /* opaque */

/* A new real world. ERR_INVAL (no state, cloud, clock or cluster; a cluster over 40 bytes),
 * ERR_NOMEM. On success *out owns it (realworld_free; the borrowed parts must outlive it). */
int realworld_new(const struct realworld_config *cfg, struct realworld **out, struct error *e);

void realworld_free(struct realworld *rw);

/* The provider over rw (rw must outlive it). */
void realworld_provider(struct realworld *rw, struct provider *out);

/*
 * Reconcile the state with the cloud now (observe does it every tick):
 * - an instance with the cluster's tag that the state does not know as launched is adopted when
 *   its token is that of a pending launch intent (the intent resolves as launched), else
 *   terminated, as is a second instance of one token and one the state knows as terminated;
 * - a pending intent whose node is known resolves as launched; one with no instance is asked
 *   again with its own token (idempotent: one instance per token at most) until launch_timeout
 *   has passed since it was recorded, then resolves as failed (the planner launches anew if it
 *   still wants the node; an instance of that token that shows up later is terminated);
 * - a node whose instance is gone (reported gone, or missing while ready, or missing longer than
 *   launch_timeout) is terminated in the state, which drops its allocations: its jobs restart
 *   from their last checkpoint; an instance with a preemption notice drains its node;
 * - a node whose agent has not registered within the registration timeout of its launch (a bad
 *   image, user data that fails) is terminated with its instance, and its offer is avoided for a
 *   while (each launch would fail the same way); a ready node whose agent has not been heard
 *   from (registration, heartbeats) within the heartbeat timeout is fenced: its instance is
 *   terminated (asked again each tick) and the node drains, and its jobs wait until the cloud
 *   says the instance is gone (it may still run their replicas), then restart elsewhere from
 *   their last checkpoint. Both are timed from no earlier than this world's first look, nor
 *   than its first look after an outage of its own (a wait that ended over REALWORLD_PAUSE_S
 *   past its deadline on the timer: the process was stopped, its machine frozen), so that a
 *   controller that was down does not take its nodes' silence for theirs (nor its jobs' hangs).
 *   A static node (no launch token) that goes silent is left out of the schedulable nodes until
 *   it is heard again (observe), never terminated. While the state cannot be written
 *   (state_write_check: a full disk, a read-only file), no node is terminated or fenced for a
 *   silence or a registration that never came (what the state says of its agents may be stale);
 *   once it can, both are timed from then.
 *   A node is heard by its registration, its heartbeats as the state has them, and those its
 *   API answered without the state recording them (realworld_config.heard).
 * Before all this, the spend limit is checked (rw_spend_check): over it, no pending intent is
 * asked again (it waits, and is given up after the timeout).
 * Errors: the cloud's list (nothing changed then but the spend limit's stop) or the state's.
 */
int realworld_reconcile(struct realworld *rw);

/* Replace the reloadable settings: the timeouts and the offers' metadata. ERR_NOMEM (the old ones
 * stay). */
int realworld_set_options(struct realworld *rw, const struct realworld_timeouts *timeouts,
                          const struct realworld_offer *offers, size_t noffers);

/* The index in every snapshot's offers of the offer called name (offers keep their index for
 * rw's life), fetching the offers if none were yet. ERR_UNKNOWN: the cloud has no such offer;
 * the cloud's errors. */
int realworld_offer_index(struct realworld *rw, const char *name, int *index);

/*
 * What the daemon reports of the last tick into m: each job's goodput, speedup and batch size,
 * and the cloud calls and errors by operation and code since rw was made (the decide histogram
 * is left as it is). The arrays are rw's, valid until the next call on rw.
 */
int realworld_metrics(struct realworld *rw, struct api_metrics *m);

/* Set the spend limit (a reload): it applies from the next tick. */
void realworld_set_spend(struct realworld *rw, const struct realworld_spend *spend);

/* What the last resize did: instances launched, nodes released, booting ones cancelled. */
struct realworld_actions {
    int launched;
    int released;
    int cancelled;
    int launch_failed;
};

void realworld_last_actions(const struct realworld *rw, struct realworld_actions *out);

#endif
