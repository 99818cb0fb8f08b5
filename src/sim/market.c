/* market.c: the simulated cloud market: prices, capacity, boot delays, preemptions, billing. */
#include "sim/market.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Defaults of a spec's zero fields. */
#define MKT_BOOT_S 180.0
#define MKT_NOTICE_S 120.0
/* The seeded price model: pull of the log price back to log(price) per hour. */
#define MKT_REVERSION 0.3
/* Hours of the seeded model that are drawn (ten years); after them the price stays. */
#define MKT_MODEL_HOURS 87840
/* Trace nodes are numbered 0 .. MKT_TRACE_NODES - 1. */
#define MKT_TRACE_NODES (1 << 20)
/* Stream kinds of the per-offer generators. */
#define MKT_STREAM_PRICE 1
#define MKT_STREAM_PREEMPT 2

struct mkt_offer_rt {
    struct mkt_offer_spec spec; /* copy; strings and arrays borrowed */
    double boot_s;
    double notice_s; /* < 0: none */
    double pmin, pmax;
    int model; /* 1: the seeded price model */
    uint64_t price_rng, preempt_rng;
    /* the seeded model, memoised: nh hours drawn; hp[h] the price of hour h, hcum[h] the dollars
     * of one node over hours [0, h), hmin[h] the lowest of hp[0..h] */
    double *hp, *hcum, *hmin;
    int nh, caph;
    /* a series: scum[i] the dollars of one node from 0 to series[i].t (negative before 0),
     * smin[i] (i >= s0) the lowest price of points s0..i that are ever in force, s0 the point in
     * force at time 0 */
    double *scum, *smin;
    int s0;
    /* a trace: nodes 0 .. nnodes-1; add_idx[node] the add event that made it present (-1: not
     * there), owner[node] the instance on it (0: free), gone_at[i] for add event i the time of
     * that node's next removal (INFINITY: never), next_add[i] the first add event at or after i
     * (ntrace: none), cursor the events applied so far */
    int nnodes;
    int *add_idx;
    long *owner;
    double *gone_at;
    int *next_add;
    int cursor;
    long *live; /* indices of its instances not gone, in no order */
    long nlive, caplive;
    long cap_errors, quota_errors, preemptions;
    double gone_cost, gone_hours; /* whole bills and running hours of gone instances */
};

struct mkt_inst_rt {
    struct mkt_instance pub;
    int noticed;   /* the notice was delivered */
    long live_pos; /* index in its offer's live list while not gone */
    double cum_l;  /* dollars of one node of its offer from time 0 to its launch */
};

struct market {
    int n;
    struct mkt_offer_rt *offers;
    struct mkt_inst_rt *inst;
    long ninst, capinst;
    long nlive;              /* instances not gone */
    struct mkt_event *evbuf; /* scratch of market_advance */
    long capev;
    struct mkt_quota_spec *quotas; /* units owned (n per quota) */
    int nquotas;
    double now;         /* latest time given to launch, terminate or advance */
    double gone_latest; /* latest end_at of a gone instance */
};

/* splitmix64's output function (Steele, Lea, Flood 2014): a bijective 64-bit mix. */
static uint64_t mkt_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The next 64 bits of a splitmix64 stream (a Weyl sequence through the mix). */
static uint64_t mkt_next(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ULL;
    return mkt_mix(*s);
}

/* A uniform double in (0, 1), never 0 or 1. */
static double mkt_uniform(uint64_t *s)
{
    return ((double)(mkt_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* A standard normal draw (Box-Muller, the cosine branch only, so that each draw takes two
 * uniforms and a stream's values do not depend on how many were asked before in pairs). */
static double mkt_normal(uint64_t *s)
{
    double u1 = mkt_uniform(s), u2 = mkt_uniform(s);

    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* A stable 64-bit key of an offer's name (FNV-1a): offers are told apart by their unique names,
 * not by their places in the list. */
static uint64_t mkt_name_key(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    return h;
}

/* The start of the stream of kind k of the offer called name for a market seed: independent of
 * the other offers and of where the offer is listed. */
static uint64_t mkt_stream(uint64_t seed, const char *name, int k)
{
    return mkt_mix(seed ^ mkt_mix(mkt_mix(mkt_name_key(name)) + (uint64_t)k + 0x5eed));
}

/* ---- validation ---- */

static int mkt_bad(struct error *e, const char *name, const char *what, int index)
{
    if (index >= 0)
        return err_set(e, ERR_INVAL, "", 0, 0, "offer %s: %s (entry %d)", name, what, index);
    return err_set(e, ERR_INVAL, "", 0, 0, "offer %s: %s", name, what);
}

static int mkt_check_series(const struct mkt_offer_spec *o, struct error *e)
{
    if (o->nseries < 0 || (o->nseries > 0 && !o->series))
        return mkt_bad(e, o->name, "a series without points", -1);
    for (int i = 0; i < o->nseries; i++) {
        const struct mkt_price_point *p = &o->series[i];

        if (!isfinite(p->t) || !isfinite(p->price) || p->price < 0)
            return mkt_bad(e, o->name, "a series point with a bad time or price", i);
        if (i == 0 && p->t > 0)
            return mkt_bad(e, o->name, "a series that starts after time 0", i);
        if (i > 0 && p->t < o->series[i - 1].t)
            return mkt_bad(e, o->name, "a series not sorted by time", i);
    }
    return 0;
}

/* Replays the trace once to check it; *nnodes is one more than its largest node. */
static int mkt_check_trace(const struct mkt_offer_spec *o, int *nnodes, struct error *e)
{
    unsigned char *present = NULL;
    int r = 0, top = 0;

    if (o->ntrace < 0 || (o->ntrace > 0 && !o->trace))
        return mkt_bad(e, o->name, "a trace without events", -1);
    if (o->ntrace > 0 && !o->spot)
        return mkt_bad(e, o->name, "a trace on an on-demand offer", -1);
    if (o->ntrace > 0 && o->rate > 0)
        return mkt_bad(e, o->name, "both a trace and a preemption rate", -1);
    for (int i = 0; i < o->ntrace; i++) {
        const struct mkt_trace_event *ev = &o->trace[i];

        if (!isfinite(ev->t) || (i > 0 && ev->t < o->trace[i - 1].t))
            return mkt_bad(e, o->name, "a trace not sorted by time", i);
        if (ev->node < 0 || ev->node >= MKT_TRACE_NODES)
            return mkt_bad(e, o->name, "a trace node number out of range", i);
        if (ev->node + 1 > top)
            top = ev->node + 1;
    }
    if (top > 0 && !(present = calloc((size_t)top, 1)))
        return err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
    for (int i = 0; i < o->ntrace; i++) {
        const struct mkt_trace_event *ev = &o->trace[i];

        if (ev->add && present[ev->node]) {
            r = mkt_bad(e, o->name, "a trace that adds a node that is already there", i);
            goto out;
        }
        if (!ev->add && !present[ev->node]) {
            r = mkt_bad(e, o->name, "a trace that removes a node that is not there", i);
            goto out;
        }
        present[ev->node] = ev->add ? 1 : 0;
    }
    *nnodes = top;
out:
    free(present);
    return r;
}

static int mkt_check(const struct mkt_offer_spec *offers, int i, int *nnodes, struct error *e)
{
    const struct mkt_offer_spec *o = &offers[i];
    double pmin, pmax;
    int r;

    if (!o->name || !o->name[0])
        return err_set(e, ERR_INVAL, "", 0, 0, "offer %d has no name", i);
    for (int j = 0; j < i; j++)
        if (strcmp(offers[j].name, o->name) == 0)
            return mkt_bad(e, o->name, "a duplicate name", -1);
    if (o->gpus < 1)
        return mkt_bad(e, o->name, "gpus must be at least 1", -1);
    if (!isfinite(o->price) || o->price < 0)
        return mkt_bad(e, o->name, "a price that is negative or not finite", -1);
    if (!isfinite(o->rate) || o->rate < 0)
        return mkt_bad(e, o->name, "a preemption rate that is negative or not finite", -1);
    if (o->capacity < 0)
        return mkt_bad(e, o->name, "a negative capacity", -1);
    if (!isfinite(o->boot_s))
        return mkt_bad(e, o->name, "a boot time that is not finite", -1);
    if (!isfinite(o->notice_s))
        return mkt_bad(e, o->name, "a notice time that is not finite", -1);
    if (!isfinite(o->reclaim_free_s) || o->reclaim_free_s < 0 ||
        (o->reclaim_free_s > 0 && !o->spot))
        return mkt_bad(e, o->name, "an unbilled window that is negative, not finite or on-demand",
                       -1);
    if (!isfinite(o->volatility) || o->volatility < 0)
        return mkt_bad(e, o->name, "a volatility that is negative or not finite", -1);
    if (!isfinite(o->price_min) || o->price_min < 0 || !isfinite(o->price_max) || o->price_max < 0)
        return mkt_bad(e, o->name, "price bounds that are negative or not finite", -1);
    pmin = o->price_min > 0 ? o->price_min : o->price / 2;
    pmax = o->price_max > 0 ? o->price_max : o->price * 2;
    if (pmin > pmax)
        return mkt_bad(e, o->name, "a lowest price above the highest", -1);
    if ((r = mkt_check_series(o, e)) < 0)
        return r;
    return mkt_check_trace(o, nnodes, e);
}

/* ---- set-up ---- */

static int mkt_setup_series(struct mkt_offer_rt *o)
{
    const struct mkt_price_point *s = o->spec.series;
    int n = o->spec.nseries;

    if (!(o->scum = malloc((size_t)n * sizeof(double))) ||
        !(o->smin = malloc((size_t)n * sizeof(double))))
        return ERR_NOMEM;
    /* before the first point its price holds, so the dollars from 0 to t0 <= 0 are p0 * t0 */
    o->scum[0] = s[0].price * s[0].t / 3600.0;
    for (int i = 1; i < n; i++)
        o->scum[i] = o->scum[i - 1] + s[i - 1].price * (s[i].t - s[i - 1].t) / 3600.0;
    o->s0 = 0;
    while (o->s0 + 1 < n && s[o->s0 + 1].t <= 0)
        o->s0++;
    /* a point followed by one at an equal time is never in force (the later wins): not a price
     * seen (mkt_point never stops on it, so smin of the point in force counts its own price) */
    for (int i = o->s0; i < n; i++) {
        double p = i + 1 < n && s[i + 1].t == s[i].t ? INFINITY : s[i].price;

        o->smin[i] = i == o->s0 ? p : fmin(o->smin[i - 1], p);
    }
    return 0;
}

static int mkt_setup_trace(struct mkt_offer_rt *o, int nnodes)
{
    const struct mkt_trace_event *tr = o->spec.trace;
    int nt = o->spec.ntrace, next = nt;
    double *rem = NULL;
    int r = ERR_NOMEM;

    o->nnodes = nnodes;
    if (nt == 0)
        return 0;
    if (!(o->add_idx = malloc((size_t)nnodes * sizeof(int))) ||
        !(o->owner = calloc((size_t)nnodes, sizeof(long))) ||
        !(o->gone_at = malloc((size_t)nt * sizeof(double))) ||
        !(o->next_add = malloc((size_t)nt * sizeof(int))) ||
        !(rem = malloc((size_t)nnodes * sizeof(double))))
        goto out;
    for (int k = 0; k < nnodes; k++) {
        o->add_idx[k] = -1;
        rem[k] = INFINITY;
    }
    for (int i = nt - 1; i >= 0; i--) {
        if (tr[i].add) {
            o->gone_at[i] = rem[tr[i].node];
            next = i;
        } else {
            o->gone_at[i] = INFINITY;
            rem[tr[i].node] = tr[i].t;
        }
        o->next_add[i] = next;
    }
    r = 0;
out:
    free(rem);
    return r;
}

static void mkt_offer_free(struct mkt_offer_rt *o)
{
    free(o->hp);
    free(o->hcum);
    free(o->hmin);
    free(o->scum);
    free(o->smin);
    free(o->add_idx);
    free(o->owner);
    free(o->gone_at);
    free(o->next_add);
    free(o->live);
}

int market_new(const struct mkt_offer_spec *offers, int n, uint64_t seed, struct market **out,
               struct error *e)
{
    struct market *m = NULL;
    int r, nnodes;

    if (!offers || n <= 0)
        return err_set(e, ERR_EMPTY, "", 0, 0, "a market with no offers");
    if (!(m = calloc(1, sizeof(*m))) || !(m->offers = calloc((size_t)n, sizeof(*m->offers)))) {
        r = err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
        goto out;
    }
    m->n = n;
    m->now = -INFINITY;
    m->gone_latest = -INFINITY;
    for (int i = 0; i < n; i++) {
        struct mkt_offer_rt *o = &m->offers[i];
        const struct mkt_offer_spec *s = &offers[i];

        nnodes = 0;
        if ((r = mkt_check(offers, i, &nnodes, e)) < 0)
            goto out;
        o->spec = *s;
        o->boot_s = s->boot_s > 0 ? s->boot_s : s->boot_s < 0 ? 0 : MKT_BOOT_S;
        o->notice_s = s->notice_s > 0 ? s->notice_s : s->notice_s < 0 ? -1 : MKT_NOTICE_S;
        o->pmin = s->price_min > 0 ? s->price_min : s->price / 2;
        o->pmax = s->price_max > 0 ? s->price_max : s->price * 2;
        o->model = s->spot && s->nseries == 0 && s->volatility > 0 && s->price > 0;
        o->price_rng = mkt_stream(seed, s->name, MKT_STREAM_PRICE);
        o->preempt_rng = mkt_stream(seed, s->name, MKT_STREAM_PREEMPT);
        if ((s->spot && s->nseries > 0 && (r = mkt_setup_series(o)) < 0) ||
            (r = mkt_setup_trace(o, nnodes)) < 0) {
            r = err_set(e, r, "", 0, 0, "out of memory");
            goto out;
        }
    }
    *out = m;
    m = NULL;
    r = 0;
out:
    market_free(m);
    return r;
}

static void mkt_quotas_free(struct mkt_quota_spec *q, int nq)
{
    for (int i = 0; q && i < nq; i++)
        free((void *)q[i].units);
    free(q);
}

void market_free(struct market *m)
{
    if (!m)
        return;
    for (int i = 0; m->offers && i < m->n; i++)
        mkt_offer_free(&m->offers[i]);
    free(m->offers);
    free(m->inst);
    free(m->evbuf);
    mkt_quotas_free(m->quotas, m->nquotas);
    free(m);
}

int market_noffers(const struct market *m)
{
    return m->n;
}

double market_boot_s(const struct market *m, int offer)
{
    if (offer < 0 || offer >= m->n)
        return NAN;
    return m->offers[offer].boot_s;
}

const struct mkt_offer_spec *market_offer(const struct market *m, int offer)
{
    if (offer < 0 || offer >= m->n)
        return NULL;
    return &m->offers[offer].spec;
}

/* ---- prices ---- */

/* Draws the seeded model up to hour h (at most MKT_MODEL_HOURS). 0 or ERR_NOMEM. */
static int mkt_model_extend(struct mkt_offer_rt *o, int h)
{
    double mu = log(o->spec.price), lo = log(o->pmin), hi = log(o->pmax);

    if (h < o->nh)
        return 0;
    if (h >= o->caph) {
        int cap = o->caph ? o->caph : 64;
        double *p;

        while (cap <= h)
            cap *= 2;
        if (!(p = realloc(o->hp, (size_t)cap * sizeof(double))))
            return ERR_NOMEM;
        o->hp = p;
        if (!(p = realloc(o->hcum, (size_t)cap * sizeof(double))))
            return ERR_NOMEM;
        o->hcum = p;
        if (!(p = realloc(o->hmin, (size_t)cap * sizeof(double))))
            return ERR_NOMEM;
        o->hmin = p;
        o->caph = cap;
    }
    for (int k = o->nh; k <= h; k++) {
        double lp;

        if (k == 0) {
            lp = fmin(fmax(mu, lo), hi);
            o->hcum[0] = 0;
        } else {
            double prev = log(o->hp[k - 1]);

            lp =
                prev + MKT_REVERSION * (mu - prev) + o->spec.volatility * mkt_normal(&o->price_rng);
            lp = fmin(fmax(lp, lo), hi);
            o->hcum[k] = o->hcum[k - 1] + o->hp[k - 1];
        }
        o->hp[k] = exp(lp);
        o->hmin[k] = k == 0 ? o->hp[0] : fmin(o->hmin[k - 1], o->hp[k]);
    }
    o->nh = h + 1;
    return 0;
}

/* The model's hour of time t: 0 before time 0, MKT_MODEL_HOURS - 1 at the latest. */
static int mkt_hour(double t)
{
    double h = t / 3600.0;

    if (!(h >= 1))
        return 0;
    if (h >= MKT_MODEL_HOURS - 1)
        return MKT_MODEL_HOURS - 1;
    return (int)h;
}

/* The last series point with time <= t, or 0 if none. */
static int mkt_point(const struct mkt_offer_rt *o, double t)
{
    const struct mkt_price_point *s = o->spec.series;
    int lo = 0, hi = o->spec.nseries; /* s[lo].t <= t (or lo = 0), s[hi].t > t */

    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;

        if (s[mid].t <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int mkt_has_series(const struct mkt_offer_rt *o)
{
    return o->spec.spot && o->spec.nseries > 0;
}

/* The dollars of one node of offer o from time 0 to t (negative for t < 0); NAN if out of
 * memory. */
static double mkt_cum(struct mkt_offer_rt *o, double t)
{
    if (o->model) {
        int h = mkt_hour(t);

        if (mkt_model_extend(o, h) < 0)
            return NAN;
        if (t < 0)
            return o->hp[0] * t / 3600.0;
        return o->hcum[h] + o->hp[h] * (t - 3600.0 * h) / 3600.0;
    }
    if (mkt_has_series(o)) {
        int k = mkt_point(o, t);

        return o->scum[k] + o->spec.series[k].price * (t - o->spec.series[k].t) / 3600.0;
    }
    return o->spec.price * t / 3600.0;
}

double market_price(struct market *m, int offer, double t)
{
    struct mkt_offer_rt *o;

    if (offer < 0 || offer >= m->n)
        return NAN;
    o = &m->offers[offer];
    if (o->model) {
        int h = mkt_hour(t);

        return mkt_model_extend(o, h) < 0 ? NAN : o->hp[h];
    }
    if (mkt_has_series(o))
        return o->spec.series[mkt_point(o, t)].price;
    return o->spec.price;
}

double market_min_gpu_price(struct market *m, double t)
{
    double best = INFINITY;

    for (int i = 0; i < m->n; i++) {
        struct mkt_offer_rt *o = &m->offers[i];
        double p = o->spec.price;

        if (o->model) {
            int h = mkt_hour(t);

            if (mkt_model_extend(o, h) < 0)
                return NAN;
            p = o->hmin[h];
        } else if (mkt_has_series(o)) {
            int k = mkt_point(o, t);

            p = o->smin[k > o->s0 ? k : o->s0];
        }
        best = fmin(best, p / o->spec.gpus);
    }
    return best;
}

/* ---- instances ---- */

static struct mkt_inst_rt *mkt_get(const struct market *m, long id)
{
    if (id < 1 || id > m->ninst)
        return NULL;
    return &m->inst[id - 1];
}

/* Applies offer o's trace events up to t: nodes come and go; a node that goes is freed (its
 * instance, if any, is preempted at that very time by its own planned event). */
static void mkt_trace_to(struct mkt_offer_rt *o, double t)
{
    const struct mkt_trace_event *tr = o->spec.trace;

    while (o->cursor < o->spec.ntrace && tr[o->cursor].t <= t) {
        const struct mkt_trace_event *ev = &tr[o->cursor];

        if (ev->add) {
            o->add_idx[ev->node] = o->cursor;
        } else {
            o->add_idx[ev->node] = -1;
            o->owner[ev->node] = 0;
        }
        o->cursor++;
    }
}

/* Instances of offer alive at now: not gone, and not preempted at or before now. */
static long mkt_alive_at(const struct market *m, const struct mkt_offer_rt *o, double now)
{
    long k = 0;

    for (long j = 0; j < o->nlive; j++)
        k += m->inst[o->live[j]].pub.end_at > now;
    return k;
}

/* What quota q counts at now: the nodes alive of its offers times their units. */
static double mkt_quota_used(const struct market *m, const struct mkt_quota_spec *q, double now)
{
    double used = 0;

    for (int o = 0; o < m->n; o++)
        if (q->units[o] > 0)
            used += q->units[o] * (double)mkt_alive_at(m, &m->offers[o], now);
    return used;
}

int market_offer_room(const struct market *m, int offer, double now, int *room)
{
    int capped = 0, least = 0;

    for (int i = 0; offer >= 0 && offer < m->n && i < m->nquotas; i++) {
        const struct mkt_quota_spec *q = &m->quotas[i];
        double left;
        int n;

        if (!(q->units[offer] > 0))
            continue;
        left = q->limit - mkt_quota_used(m, q, now);
        n = left > 0 ? (int)floor(left / q->units[offer] + 1e-9) : 0;
        if (!capped || n < least)
            least = n;
        capped = 1;
    }
    if (capped)
        *room = least;
    return capped;
}

int market_set_quotas(struct market *m, const struct mkt_quota_spec *q, int nq, struct error *e)
{
    struct mkt_quota_spec *copy = nq > 0 ? calloc((size_t)nq, sizeof(*copy)) : NULL;

    if (nq > 0 && !copy)
        return err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
    for (int i = 0; i < nq; i++) {
        double *units = calloc((size_t)m->n, sizeof(double));
        int counts = 0;

        if (!units) {
            mkt_quotas_free(copy, i);
            return err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
        }
        copy[i] = (struct mkt_quota_spec){.name = q[i].name, .limit = q[i].limit, .units = units};
        for (int o = 0; o < m->n && q[i].units; o++) {
            units[o] = q[i].units[o];
            counts |= units[o] > 0;
            if (!isfinite(units[o]) || units[o] < 0)
                counts = -1;
        }
        if (!q[i].name || !q[i].name[0] || !isfinite(q[i].limit) || q[i].limit < 0 || counts <= 0) {
            mkt_quotas_free(copy, i + 1);
            return err_set(e, ERR_INVAL, "", 0, 0,
                           "quota %s: a name, a limit of 0 or more, and units of 0 or more that "
                           "count an offer",
                           q[i].name ? q[i].name : "(unnamed)");
        }
    }
    mkt_quotas_free(m->quotas, m->nquotas);
    m->quotas = copy;
    m->nquotas = nq;
    return 0;
}

static int mkt_grow(void **p, long *cap, long need, size_t size)
{
    long c = *cap ? *cap : 16;
    void *q;

    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    if (!(q = realloc(*p, (size_t)c * size)))
        return ERR_NOMEM;
    *p = q;
    *cap = c;
    return 0;
}

static int mkt_launch(struct market *m, int offer, double now, int ready, long *id)
{
    struct mkt_offer_rt *o;
    struct mkt_inst_rt *in;
    int node = -1;
    double end = INFINITY, cum;

    if (offer < 0 || offer >= m->n)
        return ERR_RANGE;
    if (!isfinite(now) || now < m->now)
        return ERR_INVAL;
    o = &m->offers[offer];
    if (mkt_grow((void **)&m->inst, &m->capinst, m->ninst + 1, sizeof(*m->inst)) < 0 ||
        mkt_grow((void **)&o->live, &o->caplive, o->nlive + 1, sizeof(*o->live)) < 0 ||
        isnan(cum = mkt_cum(o, now)))
        return ERR_NOMEM;
    m->now = now;
    if (o->spec.capacity > 0 && o->nlive >= o->spec.capacity &&
        mkt_alive_at(m, o, now) >= o->spec.capacity)
        goto full;
    for (int i = 0; i < m->nquotas; i++)
        if (m->quotas[i].units[offer] > 0 &&
            mkt_quota_used(m, &m->quotas[i], now) + m->quotas[i].units[offer] >
                m->quotas[i].limit + 1e-9) {
            o->quota_errors++;
            return ERR_QUOTA;
        }
    if (o->spec.ntrace > 0) {
        mkt_trace_to(o, now);
        for (int k = 0; k < o->nnodes && node < 0; k++)
            if (o->add_idx[k] >= 0 && o->owner[k] == 0)
                node = k;
        if (node < 0)
            goto full;
        end = o->gone_at[o->add_idx[node]];
        o->owner[node] = m->ninst + 1;
    } else if (o->spec.spot && o->spec.rate > 0) {
        end = now + 3600.0 * -log(mkt_uniform(&o->preempt_rng)) / o->spec.rate;
    }
    in = &m->inst[m->ninst];
    memset(in, 0, sizeof(*in));
    in->pub.id = m->ninst + 1;
    in->pub.offer = offer;
    in->pub.state = ready ? MKT_READY : MKT_BOOTING;
    in->pub.launched = now;
    in->pub.ready_at = ready ? now : now + o->boot_s;
    in->pub.end_at = end;
    in->pub.notice_at = o->notice_s < 0 ? end : fmax(now, end - o->notice_s);
    in->pub.trace_node = node;
    in->live_pos = o->nlive;
    in->cum_l = cum;
    o->live[o->nlive++] = m->ninst;
    m->nlive++;
    m->ninst++;
    *id = in->pub.id;
    return 0;
full:
    o->cap_errors++;
    return ERR_CAPACITY;
}

int market_launch(struct market *m, int offer, double now, long *id)
{
    return mkt_launch(m, offer, now, 0, id);
}

int market_launch_ready(struct market *m, int offer, double now, long *id)
{
    return mkt_launch(m, offer, now, 1, id);
}

/* The whole bill of instance in: to its end, with the minimum unless preempted (for a live one,
 * to its planned preemption). */
static double mkt_bill_end(const struct mkt_instance *in)
{
    if (in->state == MKT_GONE && !in->preempted)
        return fmax(in->end_at, in->launched + MKT_MIN_BILLED);
    return in->end_at;
}

/* Instance in of an offer of spec sp goes by preemption within the offer's unbilled window: as
 * it went, or (alive) at its planned preemption, unless it is terminated first. */
static int mkt_unbilled(const struct mkt_offer_spec *sp, const struct mkt_instance *in)
{
    return sp->reclaim_free_s > 0 && (in->state != MKT_GONE || in->preempted) &&
           in->end_at - in->launched < sp->reclaim_free_s;
}

/* Dollars billed for instance rt up to t; cum_t is mkt_cum of its offer at t, or NAN. settled: a
 * live instance is billed as if terminated at t (the run is over: it was not preempted, whatever
 * its planned preemption). */
static double mkt_inst_cost_at(struct market *m, const struct mkt_inst_rt *rt, double t,
                               double cum_t, int settled)
{
    const struct mkt_instance *in = &rt->pub;
    int live = in->state != MKT_GONE;
    double upto;

    if (t < in->launched || (!(settled && live) && mkt_unbilled(&m->offers[in->offer].spec, in)))
        return 0;
    upto = fmax(t, in->launched + MKT_MIN_BILLED);
    if (!(settled && live))
        upto = fmin(upto, mkt_bill_end(in));
    if (!(upto > in->launched))
        return 0;
    if (upto != t || isnan(cum_t))
        cum_t = mkt_cum(&m->offers[in->offer], upto);
    return cum_t - rt->cum_l;
}

static double mkt_inst_cost(struct market *m, const struct mkt_inst_rt *rt, double t, double cum_t)
{
    return mkt_inst_cost_at(m, rt, t, cum_t, 0);
}

static double mkt_inst_hours(const struct mkt_instance *in, double t)
{
    if (t < in->launched)
        return 0;
    return (fmin(t, in->end_at) - in->launched) / 3600.0;
}

/* Instance in has gone (its end_at and preempted set): off the live list, into the totals. */
static void mkt_gone(struct market *m, struct mkt_inst_rt *in)
{
    struct mkt_offer_rt *o = &m->offers[in->pub.offer];
    long last = o->live[o->nlive - 1];

    in->pub.state = MKT_GONE;
    o->live[in->live_pos] = last;
    m->inst[last].live_pos = in->live_pos;
    o->nlive--;
    m->nlive--;
    in->live_pos = -1;
    o->gone_cost += mkt_inst_cost(m, in, INFINITY, NAN);
    o->gone_hours += (in->pub.end_at - in->pub.launched) / 3600.0;
    m->gone_latest = fmax(m->gone_latest, in->pub.end_at);
}

int market_terminate(struct market *m, long id, double now)
{
    struct mkt_inst_rt *in = mkt_get(m, id);
    struct mkt_offer_rt *o;

    if (!in)
        return ERR_RANGE;
    if (in->pub.state == MKT_GONE || in->pub.end_at <= now || !isfinite(now) || now < m->now)
        return ERR_INVAL;
    o = &m->offers[in->pub.offer];
    m->now = now;
    if (in->pub.trace_node >= 0 && o->owner[in->pub.trace_node] == id)
        o->owner[in->pub.trace_node] = 0;
    in->pub.end_at = now;
    if (!in->noticed)
        in->pub.notice_at = INFINITY;
    mkt_gone(m, in);
    return 0;
}

/* ---- events ---- */

/* Instance in's pending events (not yet applied) into ev; how many (0 to 3). */
static int mkt_pending(const struct mkt_inst_rt *in, struct mkt_event *ev)
{
    int k = 0;

    if (in->pub.state == MKT_GONE)
        return 0;
    if (in->pub.state == MKT_BOOTING && in->pub.ready_at <= in->pub.end_at)
        ev[k++] = (struct mkt_event){MKT_EV_READY, in->pub.id, in->pub.ready_at};
    if (!in->noticed && isfinite(in->pub.notice_at))
        ev[k++] = (struct mkt_event){MKT_EV_NOTICE, in->pub.id, in->pub.notice_at};
    if (isfinite(in->pub.end_at))
        ev[k++] = (struct mkt_event){MKT_EV_PREEMPT, in->pub.id, in->pub.end_at};
    return k;
}

double market_next_event(const struct market *m, double after)
{
    double best = INFINITY;

    for (int i = 0; i < m->n; i++) {
        const struct mkt_offer_rt *o = &m->offers[i];
        const struct mkt_trace_event *tr = o->spec.trace;
        int lo = 0, hi = o->spec.ntrace; /* the first event after `after` is in [lo, hi] */

        for (long j = 0; j < o->nlive; j++) {
            struct mkt_event ev[3];
            int k = mkt_pending(&m->inst[o->live[j]], ev);

            for (int q = 0; q < k; q++)
                if (ev[q].t > after && ev[q].t < best)
                    best = ev[q].t;
        }

        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;

            if (tr[mid].t > after)
                hi = mid;
            else
                lo = mid + 1;
        }
        if (lo < o->spec.ntrace && o->next_add[lo] < o->spec.ntrace)
            best = fmin(best, tr[o->next_add[lo]].t);
    }
    return best;
}

static int mkt_event_cmp(const void *pa, const void *pb)
{
    const struct mkt_event *a = pa, *b = pb;

    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

int market_advance(struct market *m, double t, struct mkt_event *ev, int max, int *nev)
{
    long k = 0;
    int w = 0;

    if (mkt_grow((void **)&m->evbuf, &m->capev, 3 * m->nlive, sizeof(*m->evbuf)) < 0)
        return ERR_NOMEM;
    for (int i = 0; i < m->n; i++)
        for (long j = 0; j < m->offers[i].nlive; j++) {
            struct mkt_event e3[3];
            int n3 = mkt_pending(&m->inst[m->offers[i].live[j]], e3);

            for (int q = 0; q < n3; q++)
                if (e3[q].t <= t)
                    m->evbuf[k++] = e3[q];
        }
    if (k > 1) /* evbuf is NULL until an advance finds a live instance */
        qsort(m->evbuf, (size_t)k, sizeof(*m->evbuf), mkt_event_cmp);
    for (long j = 0; j < k; j++) {
        const struct mkt_event *e1 = &m->evbuf[j];
        struct mkt_inst_rt *in = mkt_get(m, e1->id);

        switch (e1->kind) {
        case MKT_EV_READY:
            in->pub.state = in->noticed ? MKT_NOTICED : MKT_READY;
            break;
        case MKT_EV_NOTICE:
            in->noticed = 1;
            if (in->pub.state == MKT_READY)
                in->pub.state = MKT_NOTICED;
            break;
        case MKT_EV_PREEMPT:
            in->pub.preempted = 1;
            m->offers[in->pub.offer].preemptions++;
            mkt_gone(m, in);
            break;
        }
        if (w < max && ev)
            ev[w++] = *e1;
    }
    for (int i = 0; i < m->n; i++)
        if (m->offers[i].spec.ntrace > 0)
            mkt_trace_to(&m->offers[i], t);
    if (t > m->now)
        m->now = t;
    *nev = w;
    return 0;
}

const struct mkt_instance *market_instance(const struct market *m, long id)
{
    const struct mkt_inst_rt *in = mkt_get(m, id);

    return in ? &in->pub : NULL;
}

long market_ninstances(const struct market *m)
{
    return m->ninst;
}

/* ---- accounts ---- */

double market_instance_cost(struct market *m, long id, double t)
{
    const struct mkt_inst_rt *in = mkt_get(m, id);

    return in ? mkt_inst_cost(m, in, t, NAN) : NAN;
}

double market_cost_settled(struct market *m, double t)
{
    double sum = 0;

    for (int i = 0; i < m->n; i++) {
        struct mkt_offer_rt *o = &m->offers[i];

        sum += o->gone_cost;
        for (long j = 0; j < o->nlive; j++)
            sum += mkt_inst_cost_at(m, &m->inst[o->live[j]], t, NAN, 1);
    }
    return sum;
}

double market_cost(struct market *m, double t)
{
    double sum = 0;

    if (t < m->gone_latest) {
        for (long i = 0; i < m->ninst; i++)
            sum += mkt_inst_cost(m, &m->inst[i], t, NAN);
        return sum;
    }
    for (int i = 0; i < m->n; i++) {
        struct mkt_offer_rt *o = &m->offers[i];
        double cum_t = o->nlive > 0 ? mkt_cum(o, t) : 0;

        sum += o->gone_cost;
        for (long j = 0; j < o->nlive; j++)
            sum += mkt_inst_cost(m, &m->inst[o->live[j]], t, cum_t);
    }
    return sum;
}

long market_capacity_errors(const struct market *m, int offer)
{
    long sum = 0;

    for (int i = 0; i < m->n; i++)
        if (offer < 0 || offer == i)
            sum += m->offers[i].cap_errors;
    return sum;
}

long market_quota_errors(const struct market *m, int offer)
{
    long sum = 0;

    for (int i = 0; i < m->n; i++)
        if (offer < 0 || offer == i)
            sum += m->offers[i].quota_errors;
    return sum;
}

long market_preemptions(const struct market *m, int offer)
{
    long sum = 0;

    for (int i = 0; i < m->n; i++)
        if (offer < 0 || offer == i)
            sum += m->offers[i].preemptions;
    return sum;
}

double market_node_hours(const struct market *m, int offer, double t)
{
    double sum = 0;

    if (t < m->gone_latest) {
        for (long i = 0; i < m->ninst; i++)
            if (offer < 0 || m->inst[i].pub.offer == offer)
                sum += mkt_inst_hours(&m->inst[i].pub, t);
        return sum;
    }
    for (int i = 0; i < m->n; i++) {
        const struct mkt_offer_rt *o = &m->offers[i];

        if (offer >= 0 && offer != i)
            continue;
        sum += o->gone_hours;
        for (long j = 0; j < o->nlive; j++)
            sum += mkt_inst_hours(&m->inst[o->live[j]].pub, t);
    }
    return sum;
}
