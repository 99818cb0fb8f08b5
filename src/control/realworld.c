/* realworld.c: the provider of real worlds: its life (new, options, free), its time and
 * operations' table, the small helpers its files share, the cloud's offers, and its metrics. */
#include "control/realworld.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/events.h"
#include "control/realworld_internal.h"
#include "control/state.h"
#include "model/tput.h"

/* The names of the cloud calls counted (RW_OP_*), as the metrics give them. */
static const char *const rw_ops[RW_NOPS] = {"offers", "list", "launch", "terminate"};

/* The failures of one cloud call with one error code. */
struct rw_error_count {
    char op[16];
    char code[24];
    long long n;
};

/* ---- small helpers ---- */

double rw_now(struct realworld *rw)
{
    return rw->clock(rw->clock_ctx);
}

void rw_count(struct realworld *rw, int op, int rc)
{
    const char *code;
    struct rw_error_count *grown;

    rw->calls[op]++;
    if (rc >= 0)
        return;
    code = err_name(rc);
    for (size_t i = 0; i < rw->nerrors; i++)
        if (strcmp(rw->errors[i].op, rw_ops[op]) == 0 && strcmp(rw->errors[i].code, code) == 0) {
            rw->errors[i].n++;
            return;
        }
    if (!(grown = realloc(rw->errors, (rw->nerrors + 1) * sizeof(*grown))))
        return; /* a count lost to a lack of memory */
    rw->errors = grown;
    snprintf(grown[rw->nerrors].op, sizeof(grown[rw->nerrors].op), "%s", rw_ops[op]);
    snprintf(grown[rw->nerrors].code, sizeof(grown[rw->nerrors].code), "%s", code);
    grown[rw->nerrors].n = 1;
    rw->nerrors++;
}

const struct realworld_offer *rw_meta(const struct realworld *rw, const char *offer)
{
    for (size_t i = 0; i < rw->nmeta; i++)
        if (strcmp(rw->meta[i].name, offer) == 0)
            return &rw->meta[i];
    return NULL;
}

double realworld_offer_price(const struct realworld_offer *meta, double cloud, double storage)
{
    if (meta && meta->price > 0)
        return meta->price;
    /* a discount (a Savings Plan, a committed use) is on the instance, not on its disks */
    return meta && meta->discount > 0 ? (cloud - storage) * (1.0 - meta->discount) + storage
                                      : cloud;
}

double realworld_offer_bill(double price, int spot, double max_price, double storage)
{
    if (isfinite(price))
        return price;
    return spot && max_price > 0 ? max_price + storage : NAN;
}

int rw_offer_find(const struct realworld *rw, const char *name)
{
    for (size_t i = 0; name && i < rw->noffers; i++)
        if (strcmp(rw->offers[i].name, name) == 0)
            return (int)i;
    return -1;
}

static void rw_meta_free(struct realworld_offer *m, size_t n)
{
    for (size_t i = 0; m && i < n; i++) {
        free((char *)m[i].name);
        free((char *)m[i].zone);
    }
    free(m);
}

static int rw_meta_copy(const struct realworld_offer *src, size_t n, struct realworld_offer **out)
{
    struct realworld_offer *m = calloc(n + 1, sizeof(*m));

    if (!m)
        return ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        m[i] = src[i];
        m[i].name = strdup(src[i].name ? src[i].name : "");
        m[i].zone = src[i].zone ? strdup(src[i].zone) : NULL;
        if (!m[i].name || (src[i].zone && !m[i].zone)) {
            rw_meta_free(m, i + 1);
            return ERR_NOMEM;
        }
    }
    *out = m;
    return 0;
}

/* ---- offers ---- */

/* Once the cloud's offers are known (and again after each change of the options): an entry of the
 * configuration's `offers:` that names none of them applies to nothing (a typo, an offer the
 * cloud no longer has): warned once, so that a price, a discount or a preemption rate does not
 * go unused in silence. */
static void rw_meta_check(struct realworld *rw, double now)
{
    if (rw->meta_checked)
        return;
    rw->meta_checked = 1;
    for (size_t i = 0; i < rw->nmeta; i++)
        if (rw_offer_find(rw, rw->meta[i].name) < 0)
            log_msg(rw->log, now, LOG_WARN, NULL, NULL,
                    "offers: %s is not an offer of the cloud: what the configuration says of it "
                    "applies to nothing",
                    rw->meta[i].name);
}

int rw_offers_refresh(struct realworld *rw)
{
    struct cloud_offer *got = NULL;
    size_t n = 0;
    int rc = cloud_offers(rw->cloud, &got, &n);
    double now = rw_now(rw), price;

    rw_count(rw, RW_OP_OFFERS, rc);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < rw->noffers; i++)
        rw->offers[i].present = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int k = rw_offer_find(rw, got[i].name);

        if (k < 0) {
            struct rw_offer *grown = realloc(rw->offers, (rw->noffers + 1) * sizeof(*grown));

            if (!grown) {
                rc = ERR_NOMEM;
                break;
            }
            rw->offers = grown;
            k = (int)rw->noffers;
            memset(&grown[k], 0, sizeof(grown[k]));
            grown[k].price = NAN;
            grown[k].priced_at = -INFINITY;
            grown[k].rate = NAN;
            if (!(grown[k].name = strdup(got[i].name))) {
                rc = ERR_NOMEM;
                break;
            }
            rw->noffers++;
        }
        rw->offers[k].gpus = got[i].gpus;
        rw->offers[k].spot = got[i].spot;
        rw->offers[k].storage = got[i].storage > 0 ? got[i].storage : 0;
        rw->offers[k].list_price = got[i].price - rw->offers[k].storage;
        rw->offers[k].max_price = got[i].max_price;
        rw->offers[k].reclaim_free_s = got[i].reclaim_free_s;
        price =
            realworld_offer_price(rw_meta(rw, got[i].name), got[i].price, rw->offers[k].storage);
        if (isfinite(price)) {
            rw->offers[k].price = price;
            rw->offers[k].priced_at = now;
        } else if (!(now - rw->offers[k].priced_at < RW_PRICE_KEEP_S)) {
            rw->offers[k].price = NAN; /* never told, or told too long ago */
        }
        rw->offers[k].present = got[i].gpus > 0;
    }
    free(got);
    if (rc == 0)
        rw_meta_check(rw, now);
    return rc;
}

int realworld_offer_index(struct realworld *rw, const char *name, int *index)
{
    int rc, k;

    if (rw->noffers == 0 && (rc = rw_offers_refresh(rw)) < 0)
        return rc;
    if ((k = rw_offer_find(rw, name)) < 0)
        return ERR_UNKNOWN;
    *index = k;
    return 0;
}

/* ---- lists of names ---- */

void rw_strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

int rw_list_add(char ***v, const char *id)
{
    size_t n = 0;
    char **grown;

    while (*v && (*v)[n])
        n++;
    if (!(grown = realloc(*v, (n + 2) * sizeof(char *))))
        return ERR_NOMEM;
    *v = grown;
    if (!(grown[n] = strdup(id))) {
        grown[n] = NULL;
        return ERR_NOMEM;
    }
    grown[n + 1] = NULL;
    return 0;
}

void rw_note_node_jobs(struct realworld *rw, const char *id, double now, const char *kind,
                       const char *why, const char *then)
{
    struct state_node_job *jobs = NULL;
    size_t n = 0;

    if (state_node_jobs(rw->state, id, &jobs, &n) < 0)
        return;
    event_note_jobs(rw->state, rw->log, now, jobs, n, id, kind, why, then);
    state_node_jobs_free(jobs, n);
}

int rw_listed(char *const *v, const char *id)
{
    for (size_t i = 0; v && v[i]; i++)
        if (strcmp(v[i], id) == 0)
            return 1;
    return 0;
}

/* ---- time ---- */

static double rw_provider_now(void *ctx)
{
    return rw_now(ctx);
}

/* Wait seconds from the end of the last tick, on the timer (a wall clock stepped back or forward
 * moves no deadline). A wait woken early (ERR_AGAIN: a reload, a template due) goes on to the
 * same deadline, or to an earlier one when seconds have become fewer (a reload shortened the
 * interval): the deadline is never later than the wait's start plus seconds. */
static int rw_wait(void *ctx, int seconds)
{
    struct realworld *rw = ctx;
    double t = rw->timer(rw->clock_ctx);
    int rc = 0;

    if (isnan(rw->wake_at)) {
        rw->wait_from = t;
        rw->wake_at = t + seconds;
    } else if (rw->wait_from + seconds < rw->wake_at) {
        rw->wake_at = rw->wait_from + seconds;
    }
    if (rw->sleep)
        rc = rw->sleep(rw->clock_ctx, rw->wake_at);
    if (rc == 0) {
        rw->woke_due = rw->wake_at;
        rw->wake_at = NAN;
    }
    return rc;
}

void rw_pause_check(struct realworld *rw, double now)
{
    double late = rw->timer(rw->clock_ctx) - rw->woke_due;

    rw->woke_due = NAN;
    if (!(late > REALWORLD_PAUSE_S) || isnan(rw->watch_from))
        return;
    rw->watch_from = now;
    log_msg(rw->log, now, LOG_WARN, NULL, NULL,
            "the controller did not run for %.0f s past its tick (stopped, or its machine "
            "frozen): its nodes' silence and its jobs' hangs are timed from now",
            late);
}

static int rw_finished(void *ctx)
{
    (void)ctx;
    return 0;
}

static const struct provider_ops rw_provider_ops = {
    .name = "real",
    .now = rw_provider_now,
    .wait = rw_wait,
    .observe = rw_observe,
    .apply = rw_apply,
    .resize = rw_resize,
    .finished = rw_finished,
};

void realworld_provider(struct realworld *rw, struct provider *out)
{
    out->ops = &rw_provider_ops;
    out->ctx = rw;
}

/* ---- life ---- */

int realworld_new(const struct realworld_config *cfg, struct realworld **out, struct error *e)
{
    struct realworld *rw;

    if (!cfg || !cfg->state || !cfg->cloud || !cfg->cloud->ops || !cfg->clock || !cfg->cluster ||
        !cfg->cluster[0] || strlen(cfg->cluster) > RW_CLUSTER_MAX || !out)
        return err_set(e, ERR_INVAL, "", 0, 0,
                       "the real world needs a state, a cloud, a clock and a cluster id of 1 to "
                       "%d bytes",
                       RW_CLUSTER_MAX);
    if (!(rw = calloc(1, sizeof(*rw))))
        return err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
    rw->state = cfg->state;
    rw->cloud = cfg->cloud;
    rw->log = cfg->log;
    snprintf(rw->cluster, sizeof(rw->cluster), "%s", cfg->cluster);
    rw->clock = cfg->clock;
    rw->timer = cfg->timer ? cfg->timer : cfg->clock;
    rw->sleep = cfg->sleep;
    rw->clock_ctx = cfg->clock_ctx;
    rw->model = cfg->model ? cfg->model : &tput_model_castor;
    rw->heard = cfg->heard;
    rw->heard_ctx = cfg->heard_ctx;
    rw->wake_at = rw->woke_due = NAN;
    rw->watch_from = NAN;
    rw->quotas_read_at = NAN;
    rw->spend_told = rw->stop_told = NAN;
    realworld_set_spend(rw, &cfg->spend);
    if (realworld_set_options(rw, &cfg->timeouts, cfg->offers, cfg->noffers) < 0) {
        free(rw);
        return err_set(e, ERR_NOMEM, "", 0, 0, "out of memory");
    }
    *out = rw;
    return 0;
}

int realworld_set_options(struct realworld *rw, const struct realworld_timeouts *timeouts,
                          const struct realworld_offer *offers, size_t noffers)
{
    struct realworld_offer *m = NULL;
    int rc = rw_meta_copy(offers, offers ? noffers : 0, &m);

    if (rc < 0)
        return rc;
    rw_meta_free(rw->meta, rw->nmeta);
    rw->meta = m;
    rw->nmeta = offers ? noffers : 0;
    rw->meta_checked = 0; /* checked against the cloud's offers at their next read */
    rw->launch_timeout = timeouts->launch > 0 ? timeouts->launch : 600;
    rw->register_timeout = timeouts->registration > 0 ? timeouts->registration : 0;
    rw->heartbeat_timeout = timeouts->heartbeat > 0 ? timeouts->heartbeat : 0;
    return 0;
}

void realworld_free(struct realworld *rw)
{
    if (!rw)
        return;
    rw_snapshot_free(rw);
    state_intents_free(rw->intents, rw->nintents);
    for (size_t i = 0; i < rw->noffers; i++)
        free(rw->offers[i].name);
    free(rw->offers);
    for (size_t i = 0; i < rw->njobs; i++)
        free(rw->jobs[i].name);
    free(rw->jobs);
    free(rw->errors);
    free(rw->call_rows);
    free(rw->error_rows);
    free(rw->job_rows);
    free(rw->quota_rows);
    free(rw->room_rows);
    free(rw->price_rows);
    rw_quotas_free(rw);
    rw_meta_free(rw->meta, rw->nmeta);
    rw_strv_free(rw->silent);
    rw_strv_free(rw->fenced);
    rw_strv_free(rw->unfenced);
    free(rw);
}

/* ---- metrics ---- */

int realworld_metrics(struct realworld *rw, struct api_metrics *m)
{
    size_t nj = rw->sjob_rw ? (size_t)rw->snap.njobs : 0, nrooms = 0;

    free(rw->call_rows);
    free(rw->error_rows);
    free(rw->job_rows);
    free(rw->quota_rows);
    free(rw->room_rows);
    free(rw->price_rows);
    rw->call_rows = calloc(RW_NOPS, sizeof(*rw->call_rows));
    rw->error_rows = calloc(rw->nerrors + 1, sizeof(*rw->error_rows));
    rw->job_rows = calloc(nj + 1, sizeof(*rw->job_rows));
    rw->quota_rows = calloc(rw->nquotas + 1, sizeof(*rw->quota_rows));
    rw->room_rows = calloc(rw->noffers + 1, sizeof(*rw->room_rows));
    rw->price_rows = calloc(rw->noffers + 1, sizeof(*rw->price_rows));
    if (!rw->call_rows || !rw->error_rows || !rw->job_rows || !rw->quota_rows || !rw->room_rows ||
        !rw->price_rows)
        return ERR_NOMEM;
    for (size_t i = 0; i < rw->nquotas; i++)
        rw->quota_rows[i] =
            (struct api_quota_metrics){.quota = rw->quotas[i].name,
                                       .title = rw->quotas[i].title,
                                       .unit = rw->quotas[i].unit,
                                       .limit = rw->quotas[i].limit,
                                       .used = rw->quotas[i].used + rw->quotas[i].launched};
    for (size_t o = 0; o < rw->noffers; o++) {
        int room, q = rw_quota_binding(rw, (int)o, NULL);

        if (q >= 0 && rw_offer_room(rw, (int)o, &room))
            rw->room_rows[nrooms++] = (struct api_offer_room){
                .offer = rw->offers[o].name, .quota = rw->quotas[q].name, .room = room};
    }
    m->quotas = rw->quota_rows;
    m->nquotas = rw->nquotas;
    m->rooms = rw->room_rows;
    m->nrooms = nrooms;
    m->nprices = 0;
    for (size_t o = 0; o < rw->noffers; o++)
        if (rw->offers[o].present)
            rw->price_rows[m->nprices++] = (struct api_offer_price){.offer = rw->offers[o].name,
                                                                    .spot = rw->offers[o].spot,
                                                                    .price = rw->offers[o].price,
                                                                    .rate = rw->offers[o].rate};
    m->prices = rw->price_rows;
    for (int op = 0; op < RW_NOPS; op++)
        rw->call_rows[op] =
            (struct api_call_metrics){.op = rw_ops[op], .code = "", .count = rw->calls[op]};
    for (size_t i = 0; i < rw->nerrors; i++)
        rw->error_rows[i] = (struct api_call_metrics){
            .op = rw->errors[i].op, .code = rw->errors[i].code, .count = rw->errors[i].n};
    for (size_t j = 0; j < nj; j++) {
        const struct rw_job *job = &rw->jobs[rw->sjob_rw[j]];

        rw->job_rows[j] = (struct api_job_metrics){
            .job = job->name,
            .goodput = job->goodput,
            .speedup = job->speedup,
            .batch_size = job->batch,
            .eta = job->eta,
            .deadline = rw->sjobs[j].deadline > 0 ? rw->sjobs[j].deadline : NAN};
    }
    m->jobs = rw->job_rows;
    m->njobs = nj;
    m->calls = rw->call_rows;
    m->ncalls = RW_NOPS;
    m->errors = rw->error_rows;
    m->nerrors = rw->nerrors;
    memcpy(m->node_losses, rw->losses, sizeof(m->node_losses));
    m->spend_limit = rw->spend.dollars > 0 ? rw->spend.dollars : NAN;
    m->spend_period = rw->spend.dollars > 0 ? rw->spent : NAN;
    m->spend_until =
        rw->spend.dollars > 0 ? realworld_period_next(rw_now(rw), rw->spend.period) : NAN;
    m->jobs_waiting = rw->jobs_waiting;
    m->nodes_unfenced = 0;
    for (size_t i = 0; rw->unfenced && rw->unfenced[i]; i++)
        m->nodes_unfenced++;
    return 0;
}

void realworld_last_actions(const struct realworld *rw, struct realworld_actions *out)
{
    *out = rw->actions;
}
