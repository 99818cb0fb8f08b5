/* fleet_castor.c: castor's fleet planner. Each round it prices every offer per GPU-hour of useful
 * work (the price over the fraction of time that preemptions leave: rate times the restart delay
 * and half a checkpoint interval), sizes every job by a greedy on its goodput model, packs the
 * wanted GPUs into nodes of each market's size, launches on the cheapest useful offer that can
 * launch (within the room the cloud's quotas leave it: GPUs past the cheaper market's room are
 * priced and launched on the other market; a market that cannot launch now is still priced by the
 * offer whose nodes it holds, as a full one), and lets surplus nodes go once the surplus has
 * lasted `patience` rounds (never before their minimum billed time). The allocation policy then
 * splits the nodes kept. Modes: efficiency (a GPU is added to a job while the hours of completion
 * time it saves, at `value` dollars per job-hour, pay for its GPU-hours), budget (the same
 * greedy, until the nodes cost the budget in $/h), deadline (each job with a deadline first gets
 * the fewest GPUs that finish it in time on spot where spot's quotas hold them, or on on-demand
 * when spot cannot, and runs on that market; then efficiency). With the markets sized apart, a
 * job its market's quotas cannot hold stays on what is left there or moves whole to the other
 * market, whichever costs it less. docs/fleet.md describes it and what was measured. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policies/fleet.h"
#include "util/error.h"

/* The share of a deadline's remaining time a plan may use (the rest absorbs model error). */
#define CASTOR_DEADLINE_MARGIN 0.8

/* How much dearer than on-demand spot must be, per useful GPU-hour, for every job, before the
 * spot nodes held are let go for on-demand ones. */
#define CASTOR_SPOT_DEARER 1.1

struct fleet_castor_state {
    enum fleet_mode mode;
    double value, budget, restart_s;
    int max_nodes;
    int surplus_rounds; /* consecutive rounds with more nodes than wanted */
    int patience;       /* rounds a surplus lasts before nodes go */
};

/* What one round knows of the market and of each job. */
struct castor_round {
    const struct snapshot *s;
    int gpn[2];       /* GPUs per node of each market: its best offer's (packing, launches) */
    int best[2];      /* the offer that prices each market (0 on-demand, 1 spot): its cheapest
                       * launchable one, else (none launchable now: unavailable after a refused
                       * launch) its cheapest with a price; -1 when no offer of it has a price */
    int launch[2];    /* each market's cheapest launchable offer (castor_fleet_launchable), or -1 */
    double price[2];  /* best's dollars per useful GPU-hour */
    double ckpt_mean; /* the jobs' mean checkpoint interval, at which the offers are priced */
    int any;          /* the market of the two whose best offer is cheaper */
    long cap[2];      /* GPUs a market can hold: its nodes' and what its offers' quotas leave
                       * (LONG_MAX: no quota known); past it, a GPU costs the other market's */
    long bound[2];    /* deadline mode: GPUs the jobs' deadlines already bound to each market */
    int uniform;      /* 1: every job checkpoints at the same interval (one price per market) */
    int mixed;        /* 1: the markets are sized apart, each job on its own (od): by their
                       * checkpoints some run on spot and some on on-demand, or spot costs every
                       * job more than on-demand (its nodes are then let go) */
    double *ckpt;     /* per job: its checkpoint interval for the loss (3600 s when it has none) */
    double *spot;     /* per job: dollars per useful GPU-hour on the best spot offer, its loss */
    int *want;        /* GPUs per job */
    int *to;          /* the next count the greedy would move each job to */
    double *key;      /* hours of completion time saved per GPU-hour added by that move */
    unsigned char *od; /* 1: the job runs on on-demand nodes (its deadline, or its checkpoints) */
    struct fleet_plan *sim; /* budget mode: scratch for the launches castor_fleet_rate prices */
};

static int castor_fleet_create(const struct fleet_config *cfg, void **ctx)
{
    struct fleet_castor_state *st;

    if (cfg->mode == FLEET_BUDGET && !(cfg->budget > 0))
        return ERR_INVAL;
    if (cfg->value < 0 || cfg->patience < 0)
        return ERR_INVAL;
    if (!(st = calloc(1, sizeof(*st))))
        return ERR_NOMEM;
    st->mode = cfg->mode;
    st->value = cfg->value > 0 ? cfg->value : FLEET_DEFAULT_VALUE;
    st->budget = cfg->budget;
    st->restart_s = cfg->restart_s > 0 ? cfg->restart_s : 30.0;
    st->max_nodes = cfg->max_nodes > 0 ? cfg->max_nodes : 512;
    st->patience = cfg->patience > 0 ? cfg->patience : 5;
    *ctx = st;
    return 0;
}

static void castor_fleet_destroy(void *ctx)
{
    free(ctx);
}

/* The fraction of time a node of offer o loses to preemptions, for jobs checkpointing every
 * ckpt seconds: rate times (restart delay + half a checkpoint interval), at most 0.9. */
static double castor_fleet_loss(const struct fleet_castor_state *st, const struct snap_offer *o,
                                double ckpt)
{
    double loss = o->preempt_rate * (st->restart_s + ckpt / 2) / 3600.0;

    return loss > 0.9 ? 0.9 : loss;
}

/* Job j's best next move from want GPUs (to at most want + gpn): *t GPUs, saving *k hours of
 * completion time per GPU-hour added (1e9 when it costs no more GPU-hours, 0 if no move). A gang
 * below its minimum (budget mode starts every job at none) has one move: to its minimum, as a
 * first GPU is worth (1e9), where its limits allow it. */
static void castor_fleet_next(const struct snap_job *sj, int gpn, int want, int maxgpus, double *k,
                              int *t)
{
    int explore = sj->has_model ? 2 * sj->max_profiled_replicas : 1;
    int lim = policy_replica_limit(sj, explore, maxgpus);
    double sp = fleet_job_speedup(sj, gpn, want);

    *k = 0;
    *t = want;
    if (want < sj->min_replicas) {
        if (sj->min_replicas <= lim && fleet_job_speedup(sj, gpn, sj->min_replicas) > 0) {
            *k = 1e9;
            *t = sj->min_replicas;
        }
        return;
    }
    for (int u = want + 1; u <= lim && u <= want + gpn; u++) {
        double su = fleet_job_speedup(sj, gpn, u), g;

        if (!(su > 0) || su <= sp)
            continue;
        if (!(sp > 0)) {
            g = 1e9; /* the first GPU: a job without one never finishes */
        } else {
            /* completion time falls as 1/speedup, GPU-time grows as r/speedup */
            double dj = 1.0 / sp - 1.0 / su, dc = u / su - want / sp;

            g = dc <= 1e-12 ? 1e9 : dj / dc;
        }
        if (g > *k + 1e-12) {
            *k = g;
            *t = u;
        }
    }
}

/* Nodes of the market's size (rd->gpn) that hold the wants of the jobs that run on `market` (0
 * on-demand: od[] set; 1 spot; all with market < 0, on the nodes of rd->any): whole nodes, then
 * the remainders first-fit decreasing. -1 when out of memory. */
static int castor_fleet_pack(const struct castor_round *rd, int market)
{
    const struct snapshot *s = rd->s;
    int gpn = rd->gpn[market >= 0 ? market : rd->any], nodes = 0, nrem = 0, nroom = 0;
    int *rem = calloc((size_t)s->njobs + 1, sizeof(int));
    int *room = calloc((size_t)s->njobs + 1, sizeof(int));

    if (!rem || !room) {
        free(rem);
        free(room);
        return -1;
    }
    for (int j = 0; j < s->njobs; j++) {
        if (market >= 0 && (rd->od[j] ? 0 : 1) != market)
            continue;
        nodes += rd->want[j] / gpn;
        if (rd->want[j] % gpn)
            rem[nrem++] = rd->want[j] % gpn;
    }
    for (int i = 0; i < nrem; i++) /* largest first: a selection sort, n is small */
        for (int k = i + 1; k < nrem; k++)
            if (rem[k] > rem[i]) {
                int t = rem[i];

                rem[i] = rem[k];
                rem[k] = t;
            }
    for (int i = 0; i < nrem; i++) {
        int b = 0;

        while (b < nroom && room[b] < rem[i])
            b++;
        if (b == nroom)
            room[nroom++] = gpn;
        room[b] -= rem[i];
    }
    free(rem);
    free(room);
    return nodes + nroom;
}

/* Ready and booting nodes of market m (0 on-demand, 1 spot; all with m < 0). */
static int castor_fleet_have(const struct snapshot *s, int m)
{
    int n = 0;

    for (int k = 0; k < s->nnodes; k++)
        n += m < 0 || s->nodes[k].preemptible == m;
    for (int b = 0; b < s->nbooting; b++)
        n += m < 0 || s->offers[s->booting[b].offer].spot == m;
    return n;
}

/*
 * Add to f up to n launches of market m's nodes on its launchable offer, past that offer's quota
 * on the market's next cheapest offers of its node size (fleet_plan_launch's spill); with `other`,
 * the GPUs still missing on the other market's launchable offer, in its own node size. At most
 * `most` launches in all. Returns the launches added.
 */
static int castor_fleet_launch(const struct castor_round *rd, int m, int n, int other, int most,
                               struct fleet_plan *f)
{
    const struct snapshot *s = rd->s;
    int done = 0;

    n = n < most ? n : most;
    if (n <= 0)
        return 0;
    if (rd->launch[m] >= 0)
        done = fleet_plan_launch(s, rd->launch[m], n, 1, f);
    if (other && done < n && rd->launch[!m] >= 0) {
        long g = s->offers[rd->launch[!m]].gpus, k = ((long)(n - done) * rd->gpn[m] + g - 1) / g;

        k = k < most - done ? k : most - done;
        done += fleet_plan_launch(s, rd->launch[!m], (int)k, 1, f);
    }
    return done;
}

/* qsort's order of prices, dearest first. */
static int castor_fleet_dearer(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x < y) - (x > y);
}

/* Dollars per hour of the k dearest nodes held (ready and booting) of market m (all with m < 0),
 * each at its own offer's listed price (one whose offer has no price at `listed` per GPU): the
 * nodes kept may be any k of them (a surplus goes by use, not price). INFINITY out of memory. */
static double castor_fleet_held_rate(const struct snapshot *s, int m, int k, double listed)
{
    double *p = malloc(((size_t)s->nnodes + (size_t)s->nbooting + 1) * sizeof(double)), r = 0;
    int n = 0;

    if (!p)
        return INFINITY;
    for (int i = 0; i < s->nnodes; i++) {
        const struct snap_node *x = &s->nodes[i];
        int o = x->offer;

        if (m < 0 || x->preemptible == m)
            p[n++] = o >= 0 && o < s->noffers && isfinite(s->offers[o].price) ? s->offers[o].price
                                                                              : x->gpus * listed;
    }
    for (int b = 0; b < s->nbooting; b++) {
        const struct snap_offer *x = &s->offers[s->booting[b].offer];

        if (m < 0 || !!x->spot == m)
            p[n++] = isfinite(x->price) ? x->price : x->gpus * listed;
    }
    qsort(p, (size_t)n, sizeof(double), castor_fleet_dearer);
    for (int i = 0; i < k && i < n; i++)
        r += p[i];
    free(p);
    return r;
}

/*
 * Dollars per hour of the nodes the wants pack into (budget mode), at listed prices (the budget
 * caps what the nodes cost, not what their useful hours cost: preemption losses choose markets
 * and sizes, not the count): the nodes held that are kept at their own offers' prices (the
 * dearest of them: any may be the ones kept); those to launch where castor_fleet_launch would put
 * them, each at its own offer's price (past the best offer's quota, the dearer ones its launches
 * spill to); those no offer has room for at the best price.
 */
static double castor_fleet_rate(const struct castor_round *rd, int split)
{
    const struct snapshot *s = rd->s;
    struct fleet_plan *sim = rd->sim;
    double r = 0;

    for (int m = 0; m < 2; m++) {
        int mk = split ? m : rd->any, want, have, n;
        long left;
        double listed; /* the best offer's price per GPU-hour */

        if ((!split && m > 0) || rd->best[mk] < 0)
            continue;
        listed = s->offers[rd->best[mk]].price / s->offers[rd->best[mk]].gpus;
        want = castor_fleet_pack(rd, split ? m : -1);
        have = castor_fleet_have(s, split ? m : -1);
        n = want > have ? want - have : 0;
        r += castor_fleet_held_rate(s, split ? m : -1, want - n, listed);
        left = (long)n * rd->gpn[mk];
        fleet_plan_clear(sim);
        castor_fleet_launch(rd, mk, n, !split, INT_MAX, sim);
        for (int o = 0; o < s->noffers; o++) {
            const struct snap_offer *x = &s->offers[o];

            if (sim->launch[o] == 0)
                continue;
            r += (double)sim->launch[o] * x->price;
            left -= (long)sim->launch[o] * x->gpus;
        }
        if (left > 0)
            r += (double)left * listed;
    }
    return r;
}

/* The cheapest of the jobs' own spot prices (rd->spot: the one price when they share an
 * interval). */
static double castor_fleet_spot_price(const struct castor_round *rd)
{
    double p = INFINITY;

    for (int j = 0; j < rd->s->njobs; j++)
        p = rd->spot[j] < p ? rd->spot[j] : p;
    return p;
}

/*
 * Each job's market by its own checkpoint interval: spot at the best spot offer's price over what
 * its preemptions leave of the job's time (rd->spot[j]), or on-demand where that is dearer (od[j]).
 * With one interval for every job the market is rd->any for all, as priced. rd->mixed: the jobs run
 * on both markets, which are then sized and split apart; or spot costs all of them more than
 * on-demand, and all are bound to on-demand (so that the spot nodes held go as a surplus).
 */
static void castor_fleet_markets(const struct fleet_castor_state *st, struct castor_round *rd)
{
    const struct snapshot *s = rd->s;
    int n_od = 0;

    for (int j = 0; j < s->njobs; j++) {
        const int o = rd->best[1];

        rd->spot[j] = rd->price[1];
        if (rd->uniform || o < 0)
            continue;
        rd->spot[j] = s->offers[o].price / s->offers[o].gpus /
                      (1.0 - castor_fleet_loss(st, &s->offers[o], rd->ckpt[j]));
        rd->od[j] = rd->best[0] >= 0 && rd->price[0] < rd->spot[j];
        n_od += rd->od[j];
    }
    rd->mixed = !rd->uniform && n_od > 0 && n_od < s->njobs;
    if (!rd->mixed) {
        /* one market for all: the cheapest for them */
        if (!rd->uniform && n_od == s->njobs)
            rd->any = 0;
        else if (!rd->uniform && n_od == 0 && rd->best[1] >= 0)
            rd->any = 1;
        /* spot costs every job clearly more per useful GPU-hour than on-demand: all run on
         * on-demand, not on the spot nodes held (where a preemption would cost them more than
         * the on-demand GPU-hour); near the break-even, one market for all as priced (no moves
         * back and forth as prices wander across it) */
        rd->mixed = rd->any == 0 && rd->best[0] >= 0 && rd->best[1] >= 0 &&
                    castor_fleet_spot_price(rd) > CASTOR_SPOT_DEARER * rd->price[0];
        memset(rd->od, rd->mixed, (size_t)s->njobs);
    }
}

/* Deadline mode: the fewest GPUs that finish job j by its deadline, on spot if it can (od[j] 0;
 * and spot's quotas can hold them beside the jobs bound there before), else on on-demand (od[j]
 * 1; the most it may use if even that is late). 1 without a deadline. A
 * job with a deadline and no model yet gets what its owner asked for (req_replicas), on
 * on-demand where there is one: nothing says what it needs, and a preemption before its first
 * measurement would cost it a start. The count may exceed what the job's exploration allows yet
 * (twice the replicas it has been measured on): the fleet is sized for its whole need, so that
 * nodes boot while its exploration ramps up, and the split gives it what its exploration allows
 * (with deadline_start, at least what its owner asked for until measured there). */
static int castor_fleet_deadline(const struct fleet_castor_state *st, struct castor_round *rd,
                                 int j)
{
    const struct snapshot *s = rd->s;
    const struct snap_job *sj = &s->jobs[j];
    /* the most it may use on on-demand, where a late job goes (on spot without on-demand) */
    int od = rd->best[0] >= 0, most = st->max_nodes * rd->gpn[od ? 0 : 1],
        lim = policy_replica_limit(sj, most, most);
    double left = sj->progress_target - sj->progress,
           m0 = sj->lim.init_bsz > 0 ? sj->lim.init_bsz : 1;

    if (sj->deadline > 0 && !sj->has_model && sj->req_replicas > 1) {
        rd->od[j] = (unsigned char)od;
        return sj->req_replicas < lim ? sj->req_replicas : lim;
    }
    if (!(sj->deadline > 0) || !sj->has_model || !(left > 0) || !(sj->progress_target > 0))
        return 1; /* on the market its checkpoints chose */
    for (int m = 1; m >= 0; m--) {
        const int o = rd->best[m], mmost = st->max_nodes * rd->gpn[m];
        const int mlim = policy_replica_limit(sj, mmost, mmost);
        double loss, slack;

        if (o < 0)
            continue;
        loss = m ? castor_fleet_loss(st, &s->offers[o], rd->ckpt[j]) : 0;
        slack =
            (sj->deadline - s->now - st->restart_s - s->offers[o].boot_s) * CASTOR_DEADLINE_MARGIN;
        /* on the market's own nodes (their size sets how many the job spans) */
        for (int r = 1; r <= mlim; r++) {
            double g = fleet_job_goodput(sj, rd->gpn[m], r) * (1 - loss) / m0;

            /* only where the market's quotas can hold it besides the jobs bound there before */
            if (g > 0 && left / g <= slack && rd->bound[m] + r <= rd->cap[m]) {
                rd->od[j] = (unsigned char)(m == 0);
                rd->bound[m] += r;
                return r;
            }
        }
    }
    /* late whatever it gets: all it can use, where nothing is lost to preemptions */
    rd->od[j] = (unsigned char)od;
    return lim;
}

/* Dollars per useful GPU-hour where job j runs: on-demand, its own spot price, or (every job at one
 * interval) the price of the market they share. */
static double castor_fleet_job_price(const struct castor_round *rd, int j, int split)
{
    if (rd->od[j] || rd->best[1] < 0)
        return rd->price[0];
    if (rd->uniform)
        return rd->price[rd->any];
    return split || rd->any == 1 ? rd->spot[j] : rd->price[0];
}

/* GPUs per node where job j is sized: its own market's nodes (split), else those of the market
 * every job shares. */
static int castor_fleet_job_gpn(const struct castor_round *rd, int j, int split)
{
    return rd->gpn[split ? !rd->od[j] : rd->any];
}

/* 1 when castor may launch on offer o: available, and priced (an offer whose price is unknown
 * cannot be weighed against the others; the nodes held there are still used). */
static int castor_fleet_launchable(const struct snapshot *s, int o)
{
    return !s->offers[o].unavailable && isfinite(s->offers[o].price);
}

/* GPUs market m can hold now: those of its nodes (ready and booting) and the room the quotas
 * leave its launchable offers; LONG_MAX when one of them has no quota known. */
static long castor_fleet_cap(const struct snapshot *s, int m)
{
    long gpus = 0;

    for (int k = 0; k < s->nnodes; k++)
        gpus += s->nodes[k].preemptible == m ? s->nodes[k].gpus : 0;
    for (int b = 0; b < s->nbooting; b++)
        gpus +=
            !!s->offers[s->booting[b].offer].spot == m ? s->offers[s->booting[b].offer].gpus : 0;
    for (int o = 0; o < s->noffers; o++) {
        int room = fleet_offer_room(s, o);

        if (!!s->offers[o].spot != m || !castor_fleet_launchable(s, o))
            continue;
        if (room == INT_MAX)
            return LONG_MAX;
        gpus += (long)room * s->offers[o].gpus;
    }
    return gpus;
}

/* The price a move of job j to `total` GPUs in all pays per useful GPU-hour: its own market's;
 * with one market for all (not split), the other market's once the cheaper one's quotas are
 * full (its GPUs would be launched there). */
static double castor_fleet_move_price(const struct castor_round *rd, int j, int split, long total)
{
    int other = !rd->any;

    if (split || total <= rd->cap[rd->any] || rd->best[other] < 0)
        return castor_fleet_job_price(rd, j, split);
    return rd->price[other];
}

/* What orders the greedy's moves: job j's key, over its price when jobs run at different prices
 * (efficiency and deadline modes; a budget buys the most goodput per GPU whatever it costs). */
static double castor_fleet_score(const struct castor_round *rd, int j, int split,
                                 enum fleet_mode mode)
{
    if (rd->uniform || mode == FLEET_BUDGET)
        return rd->key[j];
    return rd->key[j] / castor_fleet_job_price(rd, j, split);
}

/* GPUs job j holds now on the nodes of market m (0 on-demand, 1 spot). */
static int castor_fleet_held(const struct snapshot *s, int j, int m)
{
    int n = 0;

    for (int k = 0; s->current && k < s->nnodes; k++)
        if (s->nodes[k].preemptible == m)
            n += alloc_on_node(s->current, j, k);
    return n;
}

/* Whether job a keeps its market before job b when the market's quotas cannot hold both: a job
 * bound there by its deadline first, then one that holds GPUs there now (it is not moved), then
 * the one that market costs less (spot: by its own checkpoints), then the earlier. */
static int castor_fleet_first(const struct fleet_castor_state *st, const struct castor_round *rd,
                              const int *held, int a, int b)
{
    const struct snap_job *ja = &rd->s->jobs[a], *jb = &rd->s->jobs[b];
    int da = st->mode == FLEET_DEADLINE && ja->deadline > 0,
        db = st->mode == FLEET_DEADLINE && jb->deadline > 0;
    double pa, pb;

    if (da != db)
        return da;
    if (!!held[a] != !!held[b])
        return !!held[a];
    pa = castor_fleet_job_price(rd, a, 1);
    pb = castor_fleet_job_price(rd, b, 1);
    if (pa != pb)
        return pa < pb;
    return a < b;
}

/* Dollars per useful GPU-hour for job j on market m (spot: by its own checkpoints, or the
 * jobs' one interval). */
static double castor_fleet_market_price(const struct castor_round *rd, int j, int m)
{
    if (m == 0 || rd->best[1] < 0)
        return rd->price[0];
    return rd->uniform ? rd->price[1] : rd->spot[j];
}

/* The GPUs job j takes on its own on market m's nodes from `from` (at most lim) at `price` per
 * useful GPU-hour: its greedy's moves while the hours they save pay for them. */
static int castor_fleet_alone(const struct fleet_castor_state *st, const struct castor_round *rd,
                              int j, int m, int from, double price, int lim)
{
    const struct snap_job *sj = &rd->s->jobs[j];
    int want = from, to;
    double k;

    for (;;) {
        castor_fleet_next(sj, rd->gpn[m], want, lim, &k, &to);
        if (to <= want || k * st->value * snapshot_job_weight(sj) < price)
            return want;
        want = to;
    }
}

/* What job j on r GPUs of market m's nodes at `price` costs per unit of its work, its time at
 * `value` and its GPU-hours (the time falls as 1/speedup); INFINITY when r GPUs do not run it. */
static double castor_fleet_cost(const struct fleet_castor_state *st, const struct castor_round *rd,
                                int j, int m, int r, double price)
{
    const struct snap_job *sj = &rd->s->jobs[j];
    double sp = r > 0 ? fleet_job_speedup(sj, rd->gpn[m], r) : 0;

    if (!(sp > 0))
        return INFINITY;
    return (st->value * snapshot_job_weight(sj) + price * r) / sp;
}

/*
 * Split markets under quotas: each job runs on one market, and the jobs bound to a market may
 * want more GPUs (rd->want, the greedy's without quotas) than its quotas let it hold (rd->cap).
 * In castor_fleet_first's order a job keeps its market while its want fits what is left there.
 * One that does not fit either stays, on what is left (at least its minimum, first[j]), or moves
 * to the other market, on what it would take there at that market's price within its room:
 * whichever costs less per unit of its work (castor_fleet_cost). A spot quota of 0 so sends a
 * checkpointed job to on-demand rather than wait; a job that fits nowhere stays and waits for
 * room. rd->od is rewritten. ERR_NOMEM.
 */
static int castor_fleet_fit_caps(const struct fleet_castor_state *st, struct castor_round *rd,
                                 const int *first)
{
    const struct snapshot *s = rd->s;
    long left[2] = {rd->cap[0], rd->cap[1]};
    int *order, *held;

    order = malloc(((size_t)s->njobs + 1) * sizeof(int));
    held = malloc(((size_t)s->njobs + 1) * sizeof(int));
    if (!order || !held) {
        free(order);
        free(held);
        return ERR_NOMEM;
    }
    for (int j = 0; j < s->njobs; j++) {
        int i = j;

        held[j] = castor_fleet_held(s, j, !rd->od[j]);
        /* insertion sort: castor_fleet_first's order */
        while (i > 0 && castor_fleet_first(st, rd, held, j, order[i - 1])) {
            order[i] = order[i - 1];
            i--;
        }
        order[i] = j;
    }
    for (int i = 0; i < s->njobs; i++) {
        int j = order[i], m = !rd->od[j], least = first[j] > 0 ? first[j] : 1, stay = 0, move = 0;
        long need, most = (long)st->max_nodes * rd->gpn[!m];
        double ps = castor_fleet_market_price(rd, j, m), po = castor_fleet_market_price(rd, j, !m);

        /* a gang (budget mode sizes it from none) runs on its minimum or not at all */
        least = least > s->jobs[j].min_replicas ? least : s->jobs[j].min_replicas;
        need = rd->want[j] > least ? rd->want[j] : least;
        if (need <= left[m]) {
            left[m] -= need;
            continue;
        }
        if (left[m] >= least)
            stay = (int)left[m];
        if (rd->best[!m] >= 0 && left[!m] >= least) {
            move = castor_fleet_alone(st, rd, j, !m, first[j], po,
                                      (int)(left[!m] < most ? left[!m] : most));
            move = move < least || move > left[!m] ? 0 : move;
        }
        if (move > 0 && castor_fleet_cost(st, rd, j, !m, move, po) <
                            castor_fleet_cost(st, rd, j, m, stay, ps)) {
            rd->od[j] = (unsigned char)m; /* to the other market */
            left[!m] -= move;
        } else {
            left[m] = 0; /* it stays on what is left (stay GPUs), or waits for room */
        }
    }
    free(order);
    free(held);
    return 0;
}

/* The greedy from the wants set: the best move each time while it pays (efficiency, deadline) or
 * fits the budget. With `capped` (split markets under quotas) a job grows only within the GPUs
 * its market's quotas hold. */
static void castor_fleet_grow(const struct fleet_castor_state *st, struct castor_round *rd,
                              int split, int capped)
{
    const struct snapshot *s = rd->s;
    int big = split && rd->gpn[0] > rd->gpn[1] ? rd->gpn[0] : rd->gpn[split ? 1 : rd->any];
    int maxgpus = st->max_nodes * big, total = 0;
    long used[2] = {0, 0}; /* GPUs wanted on each market */

    for (int j = 0; j < s->njobs; j++) {
        int g = castor_fleet_job_gpn(rd, j, split);

        total += rd->want[j];
        used[!rd->od[j]] += rd->want[j];
        castor_fleet_next(&s->jobs[j], g, rd->want[j], st->max_nodes * g, &rd->key[j], &rd->to[j]);
    }
    while (total < maxgpus) {
        int bj = -1, was, m, g;

        /* the best move: the most hours saved per GPU-hour, or (jobs on different prices) per
         * dollar */
        for (int j = 0; j < s->njobs; j++)
            if (rd->to[j] > rd->want[j] &&
                (bj < 0 || castor_fleet_score(rd, j, split, st->mode) >
                               castor_fleet_score(rd, bj, split, st->mode) + 1e-12))
                bj = j;
        if (bj < 0)
            break;
        m = !rd->od[bj];
        g = castor_fleet_job_gpn(rd, bj, split);
        if (capped && rd->to[bj] - rd->want[bj] > rd->cap[m] - used[m]) {
            /* past what its market's quotas hold: its best move within them, weighed again */
            long room = rd->cap[m] - used[m] > 0 ? rd->cap[m] - used[m] : 0;

            castor_fleet_next(&s->jobs[bj], g, rd->want[bj], rd->want[bj] + (int)room, &rd->key[bj],
                              &rd->to[bj]);
            if (rd->to[bj] - rd->want[bj] > room)
                rd->to[bj] = rd->want[bj]; /* none within them (a job's first GPU) */
            continue;
        }
        /* efficiency and deadline: the hours saved must pay for the GPU-hours (those past the
         * cheaper market's quotas at the other market's price) */
        if (st->mode != FLEET_BUDGET &&
            rd->key[bj] * st->value * snapshot_job_weight(&s->jobs[bj]) <
                castor_fleet_move_price(rd, bj, split, (long)total + rd->to[bj] - rd->want[bj]))
            break;
        was = rd->want[bj];
        rd->want[bj] = rd->to[bj];
        if (st->mode == FLEET_BUDGET && castor_fleet_rate(rd, split) > st->budget + 1e-9) {
            /* this move breaks the cap: the job stays, the others may still fit */
            rd->want[bj] = was;
            rd->to[bj] = was;
            continue;
        }
        total += rd->want[bj] - was;
        used[m] += rd->want[bj] - was;
        castor_fleet_next(&s->jobs[bj], g, rd->want[bj], st->max_nodes * g, &rd->key[bj],
                          &rd->to[bj]);
    }
}

/* Size every job: the deadline minimums and gang minimums (in budget mode a gang's minimum is
 * the greedy's first move for it, which must fit the budget as any other), then the greedy. With
 * split markets under quotas, the jobs a market cannot hold at the sizes the greedy gave them are
 * bound to the other market (castor_fleet_fit_caps), and the greedy runs again from the minimums
 * within the quotas. ERR_NOMEM. */
static int castor_fleet_size(const struct fleet_castor_state *st, struct castor_round *rd)
{
    const struct snapshot *s = rd->s;
    int split = st->mode == FLEET_DEADLINE || rd->mixed, rc = 0;
    int *first = malloc(((size_t)s->njobs + 1) * sizeof(int));

    if (!first)
        return ERR_NOMEM;
    for (int j = 0; j < s->njobs; j++) {
        if (st->mode == FLEET_DEADLINE)
            rd->want[j] = castor_fleet_deadline(st, rd, j);
        else
            rd->want[j] = st->mode == FLEET_BUDGET ? 0 : 1;
        if (st->mode != FLEET_BUDGET && s->jobs[j].min_replicas > rd->want[j])
            rd->want[j] = s->jobs[j].min_replicas;
        first[j] = rd->want[j];
    }
    castor_fleet_grow(st, rd, split, 0);
    if (split && (rd->cap[0] != LONG_MAX || rd->cap[1] != LONG_MAX) &&
        (rc = castor_fleet_fit_caps(st, rd, first)) == 0) {
        memcpy(rd->want, first, (size_t)s->njobs * sizeof(int));
        castor_fleet_grow(st, rd, split, 1);
    }
    free(first);
    return rc;
}

/* Whether market m (0 on-demand, 1 spot) has an offer at all, available now or not. */
static int castor_fleet_offered(const struct snapshot *s, int m)
{
    for (int o = 0; o < s->noffers; o++)
        if (!!s->offers[o].spot == m)
            return 1;
    return 0;
}

/* Jobs bound to on-demand (a deadline, or checkpoints too rare for spot): the on-demand nodes go
 * to them, the rest to the others (and to those that found no on-demand node yet). */
static int castor_fleet_split_allocate(const struct castor_round *rd, const unsigned char *keep,
                                       struct policy *pol, uint64_t seed, struct alloc *a)
{
    const struct snapshot *s = rd->s;
    unsigned char *nodes = calloc((size_t)s->nnodes + 1, 1),
                  *jobs = calloc((size_t)s->njobs + 1, 1);
    int rc;

    if (!nodes || !jobs) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (int k = 0; k < s->nnodes; k++)
        nodes[k] = keep[k] && !s->nodes[k].preemptible;
    memcpy(jobs, rd->od, (size_t)s->njobs);
    if ((rc = fleet_allocate_part(s, nodes, jobs, pol, seed, a)) < 0)
        goto out;
    for (int k = 0; k < s->nnodes; k++)
        nodes[k] = keep[k] && s->nodes[k].preemptible;
    for (int j = 0; j < s->njobs; j++)
        jobs[j] = !rd->od[j] || a->count[j] == 0;
    rc = fleet_allocate_part(s, nodes, jobs, pol, seed, a);
out:
    free(nodes);
    free(jobs);
    return rc;
}

static int castor_fleet_plan(void *ctx, const struct snapshot *s, struct policy *pol, uint64_t seed,
                             struct alloc *a, struct fleet_plan *f)
{
    struct fleet_castor_state *st = ctx;
    struct castor_round rd = {
        .s = s, .best = {-1, -1}, .launch = {-1, -1}, .price = {INFINITY, INFINITY}};
    double ckpt = 0, lprice[2] = {INFINITY, INFINITY};
    int split = 0, wanted = 0, rc = 0;
    unsigned char *keep = NULL;

    if (s->njobs == 0) {
        st->surplus_rounds = 0;
        return fleet_shrink_to(s, pol, seed, 0, a, f);
    }
    rd.ckpt = calloc((size_t)s->njobs, sizeof(double));
    rd.spot = calloc((size_t)s->njobs, sizeof(double));
    rd.od = calloc((size_t)s->njobs, 1);
    if (!rd.ckpt || !rd.spot || !rd.od) {
        rc = ERR_NOMEM;
        goto out;
    }
    rd.uniform = 1;
    for (int j = 0; j < s->njobs; j++) {
        rd.ckpt[j] = s->jobs[j].checkpoint_s > 0 ? s->jobs[j].checkpoint_s : 3600.0;
        rd.uniform &= rd.ckpt[j] == rd.ckpt[0];
        ckpt += rd.ckpt[j] / s->njobs;
    }
    if (rd.uniform) /* the very figure each offer is priced at */
        for (int j = 0; j < s->njobs; j++)
            rd.ckpt[j] = ckpt;
    rd.ckpt_mean = ckpt;
    /* each market's cheapest launchable offer, and its cheapest priced one: a market that cannot
     * launch now (its offers refused a launch, or are full) is still priced by the latter for
     * sizing, as the nodes held there are used; its cap (the GPUs held) sends the rest to the
     * other market. An offer without a price is never weighed. */
    for (int o = 0; o < s->noffers; o++) {
        int m = !!s->offers[o].spot;
        double p = s->offers[o].price / s->offers[o].gpus /
                   (1.0 - castor_fleet_loss(st, &s->offers[o], ckpt));

        if (!isfinite(p) || !(s->offers[o].gpus > 0))
            continue;
        if (castor_fleet_launchable(s, o) && p < lprice[m]) {
            lprice[m] = p;
            rd.launch[m] = o;
        }
        if (p < rd.price[m]) {
            rd.price[m] = p;
            rd.best[m] = o;
        }
    }
    for (int m = 0; m < 2; m++)
        if (rd.launch[m] >= 0) {
            rd.best[m] = rd.launch[m];
            rd.price[m] = lprice[m];
        }
    /* the cheapest of the two markets: where jobs without a deadline run */
    rd.any = rd.best[1] >= 0 && (rd.best[0] < 0 || rd.price[1] <= rd.price[0]) ? 1 : 0;
    for (int m = 0; m < 2; m++)
        rd.cap[m] = castor_fleet_cap(s, m);
    castor_fleet_markets(st, &rd);
    /* each market's node size: its best offer's, else a node held there, else the other's */
    for (int m = 0; m < 2; m++) {
        rd.gpn[m] = rd.best[m] >= 0 ? s->offers[rd.best[m]].gpus : 0;
        for (int k = 0; k < s->nnodes && rd.gpn[m] <= 0; k++)
            if (s->nodes[k].preemptible == m)
                rd.gpn[m] = s->nodes[k].gpus;
    }
    for (int m = 0; m < 2; m++)
        if (rd.gpn[m] <= 0)
            rd.gpn[m] = rd.gpn[!m] > 0 ? rd.gpn[!m] : s->nnodes > 0 ? s->nodes[0].gpus : 1;
    rd.want = calloc((size_t)s->njobs, sizeof(int));
    rd.to = calloc((size_t)s->njobs, sizeof(int));
    rd.key = calloc((size_t)s->njobs, sizeof(double));
    keep = malloc((size_t)s->nnodes + 1);
    if (!rd.want || !rd.to || !rd.key || !keep ||
        (st->mode == FLEET_BUDGET && fleet_plan_new(s, &rd.sim) < 0)) {
        rc = ERR_NOMEM;
        goto out;
    }
    if ((rc = castor_fleet_size(st, &rd)) < 0)
        goto out;
    for (int j = 0; j < s->njobs; j++)
        split |= rd.od[j];
    if (!castor_fleet_offered(s, 0) || !castor_fleet_offered(s, 1))
        split = 0; /* one market to rent from: every job runs there */
    if (!split) {
        /* one market: the cheapest offer */
        int have = castor_fleet_have(s, -1), alive = have + snapshot_noticed(s);

        if ((wanted = castor_fleet_pack(&rd, -1)) < 0) {
            rc = ERR_NOMEM;
            goto out;
        }
        if (wanted > st->max_nodes)
            wanted = st->max_nodes;
        /* the cheaper market within its quotas (none when it cannot launch now), the rest on the
         * other (the greedy priced those GPUs there) */
        if (wanted > have) /* within max_nodes, the noticed nodes still held counted */
            castor_fleet_launch(&rd, rd.any, wanted - have, 1, st->max_nodes - alive, f);
        if (wanted < have && rd.best[rd.any] >= 0) {
            /* (no price at all: the jobs were sized at none, so there is no surplus to see) */
            /* surplus: it goes only once it has lasted (fleet_shrink_to cancels the newest
             * booting instances first, then releases the least used nodes) */
            if (++st->surplus_rounds >= st->patience) {
                rc = fleet_shrink_to(s, pol, seed, wanted, a, f);
                goto out;
            }
        } else {
            st->surplus_rounds = 0;
        }
        memset(keep, 1, (size_t)s->nnodes + 1);
        rc = fleet_allocate_kept(s, keep, pol, seed, a);
        goto out;
    }
    /* jobs bound to on-demand (deadlines, checkpoints): each market sized on its own; no release
     * this round unless a market has been in surplus for `patience` rounds */
    memset(keep, 1, (size_t)s->nnodes + 1);
    {
        int surplus = 0, want[2], have[2];

        int room = st->max_nodes - castor_fleet_have(s, -1) - snapshot_noticed(s);

        /* each market's packing and nodes, once: the release below uses the same figures;
         * launches within max_nodes (the noticed nodes still held counted), on-demand's first (its
         * jobs are there for a deadline or for checkpoints that spot would cost too much) */
        for (int m = 0; m < 2; m++) {
            want[m] = castor_fleet_pack(&rd, m);
            have[m] = castor_fleet_have(s, m);
            if (want[m] < 0) {
                rc = ERR_NOMEM;
                goto out;
            }
            /* (a market without a price: its jobs were not sized at its price) */
            if (want[m] < have[m] && rd.best[m] >= 0)
                surplus = 1;
        }
        for (int m = 0; m < 2; m++)
            room -= castor_fleet_launch(&rd, m, want[m] - have[m], 0, room, f);
        st->surplus_rounds = surplus ? st->surplus_rounds + 1 : 0;
        if (surplus && st->surplus_rounds >= st->patience) {
            int *used = calloc((size_t)s->nnodes + 1, sizeof(int));

            if (!used) {
                rc = ERR_NOMEM;
                goto out;
            }
            alloc_node_usage(s->current, used);
            /* per market, let the idle nodes past their minimum billed time go */
            for (int m = 0; m < 2; m++) {
                int extra = rd.best[m] >= 0 ? have[m] - want[m] : 0, booting = 0;

                for (int b = 0; b < s->nbooting; b++)
                    booting += s->offers[s->booting[b].offer].spot == m;
                /* booting instances first (the newest), then idle ready nodes */
                fleet_cancel_newest(s, m, extra < booting ? extra : booting, f);
                extra -= booting;
                for (int k = 0; k < s->nnodes && extra > 0; k++)
                    if (s->nodes[k].preemptible == m && used[k] == 0 &&
                        s->now - s->nodes[k].launched >= s->min_billed_s) {
                        keep[k] = 0;
                        f->release[k] = 1;
                        extra--;
                    }
            }
            free(used);
        }
    }
    rc = castor_fleet_split_allocate(&rd, keep, pol, seed, a);
out:
    free(rd.want);
    free(rd.to);
    free(rd.key);
    free(rd.od);
    free(rd.ckpt);
    free(rd.spot);
    fleet_plan_free(rd.sim);
    free(keep);
    return rc;
}

const struct fleet_ops fleet_castor = {
    .name = "castor",
    .summary = "castor's fleet planner: rent what each job's goodput per dollar is worth",
    .create = castor_fleet_create,
    .destroy = castor_fleet_destroy,
    .plan = castor_fleet_plan,
};
