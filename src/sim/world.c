/* world.c: the simulated cluster and its emulated jobs. */
#include "sim/world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/app.h"
#include "sim/bound.h"
#include "sim/family.h"

/* Settings the Pollux artifact gives particular models, whatever the policy: NCF trains at its
 * largest batch on one GPU (the artifact pins it; its step time barely depends on the batch). */
struct sim_quirk {
    const char *app;
    int pin_batch_to_max; /* adaptive policies: batch fixed at the model's largest */
    int max_replicas;
};

static const struct sim_quirk sim_quirks[] = {{"ncf", 1, 1}};

/* The most GPUs the measured profiles cover (16 nodes of 4): a rented fleet or a fixed cluster may
 * be larger, but a job's true speed is not known beyond this, so it is the jobs' replica limit
 * (and a gang job asking for more is refused). */
#define SIM_MEASURED_REPLICAS 64

/* A node slot: an instance of the market while it lives (booting, ready or noticed). */
enum sim_slot_state { SIM_SLOT_FREE, SIM_SLOT_BOOTING, SIM_SLOT_READY, SIM_SLOT_NOTICED };

struct sim_slot {
    enum sim_slot_state state;
    long id; /* the market's instance id */
    int offer;
    int gpus;
};

struct sim_world {
    struct sim_config cfg;
    const struct workload *wl;
    struct app **apps; /* per workload job, borrowed from the distinct list below */
    struct app **distinct;
    int ndistinct;
    struct sim_family *families; /* per distinct application, when cfg.families */
    struct sim_job *jobs;
    int njobs;
    struct alloc *held; /* njobs rows over node slots, workload order */
    double now;
    /* the fleet: a market of offers (a fixed cluster is one free offer), node slots */
    struct market *mkt;
    int fleet; /* 1: the decide step may change the fleet (a market was configured) */
    struct mkt_offer_spec fixed_offer;
    struct sim_slot *slots;
    int nslots;
    double *unavail_until; /* per offer: a launch was refused for capacity */
    struct mkt_event *events;
    int maxevents;
    /* the snapshot, rebuilt by each observe */
    struct snapshot snap;
    struct snap_job *sjobs;
    int *active;   /* snapshot row -> workload index */
    int *snapslot; /* snapshot node -> slot */
    int *bootslot; /* snapshot booting instance -> slot */
    struct snap_node *nodes;
    struct snap_offer *offers;
    struct snap_booting *booting;
    struct alloc *snap_alloc;
    struct snap_oracle oracle;
};

static const struct sim_quirk *sim_quirk_for(const char *app)
{
    for (size_t i = 0; i < sizeof(sim_quirks) / sizeof(sim_quirks[0]); i++)
        if (strcmp(sim_quirks[i].app, app) == 0)
            return &sim_quirks[i];
    return NULL;
}

int sim_app_max_replicas(const char *app)
{
    const struct sim_quirk *q = sim_quirk_for(app);

    return q ? q->max_replicas : 0;
}

/* Oracle: optimizer steps left at the requested batch (Optimus+Oracle). */
static double sim_oracle_iterations_left(void *ctx, int row)
{
    struct sim_world *w = ctx;
    const struct sim_job *job = &w->jobs[w->active[row]];
    const struct app *a = job->app;
    int last = a->max_epochs - 1;
    double end, done;

    if (last <= job->epoch)
        return 1.0;
    if (app_iteration(a, job->spec->batch_size, last, &end) < 0 ||
        app_iteration(a, job->spec->batch_size, job->epoch, &done) < 0)
        return 1.0;
    return end - done;
}

/* Oracle: true seconds per step on r GPUs packed onto full nodes, at the requested batch; a
 * single GPU always accumulates at least once (as the artifact's Optimus assumes). */
static double sim_oracle_step_time(void *ctx, int row, int r)
{
    struct sim_world *w = ctx;
    const struct sim_job *job = &w->jobs[w->active[row]];
    struct app *a = job->app;
    int place[SIM_MAX_NODES], n = 0, gpn = w->cfg.gpus_per_node, s;
    double batch = job->spec->batch_size, local, atomic, cap, step, sync;

    if (r < 1)
        return NAN;
    for (int left = r; left > 0 && n < SIM_MAX_NODES; left -= gpn)
        place[n++] = left < gpn ? left : gpn;
    local = ceil(batch / r - 1e-8);
    s = (int)ceil(local / a->max_local - 1e-8) - 1;
    if (s < 0)
        s = 0;
    if (r == 1 && s < 1)
        s = 1;
    atomic = ceil(local / (s + 1) - 1e-8);
    cap = floor(a->max_bsz / ((double)r * (s + 1)));
    if (atomic > cap)
        atomic = cap;
    if (app_throughput(a, place, n, atomic, &step, &sync) < 0)
        return NAN;
    return step + (step - sync) * s;
}

/* Put instance id of offer in a free slot; -1 if none is free. */
static int sim_slot_take(struct sim_world *w, long id, int offer, enum sim_slot_state st)
{
    for (int k = 0; k < w->nslots; k++)
        if (w->slots[k].state == SIM_SLOT_FREE) {
            w->slots[k] = (struct sim_slot){
                .state = st, .id = id, .offer = offer, .gpus = market_offer(w->mkt, offer)->gpus};
            return k;
        }
    return -1;
}

static int sim_slot_of(const struct sim_world *w, long id)
{
    for (int k = 0; k < w->nslots; k++)
        if (w->slots[k].state != SIM_SLOT_FREE && w->slots[k].id == id)
            return k;
    return -1;
}

/* Jobs holding GPUs on slot k. */
static int sim_slot_used(const struct sim_world *w, int k)
{
    for (int j = 0; j < w->njobs; j++)
        if (alloc_on_node(w->held, j, k) > 0)
            return 1;
    return 0;
}

/* 1 if a slot is free: max_nodes nodes (booting, ready or noticed) are not all alive. */
static int sim_slot_left(const struct sim_world *w)
{
    for (int k = 0; k < w->nslots; k++)
        if (w->slots[k].state == SIM_SLOT_FREE)
            return 1;
    return 0;
}

/* Launch one instance of offer now into a free slot (there must be one); ERR_CAPACITY or
 * ERR_QUOTA when the market refuses it. */
static int sim_world_launch(struct sim_world *w, int offer, int ready_now)
{
    long id;
    int rc;

    rc = ready_now ? market_launch_ready(w->mkt, offer, w->now, &id)
                   : market_launch(w->mkt, offer, w->now, &id);
    if (rc < 0)
        return rc;
    sim_slot_take(w, id, offer, ready_now ? SIM_SLOT_READY : SIM_SLOT_BOOTING);
    return 0;
}

/* 1 when a gang scheduler can run job spec of app a at its trace's batch on its num_replicas: the
 * local batch that split gives (sim_fixed_config) is one a was measured at; 0 otherwise (its speed
 * there is unknown: the run would stop when the job starts). */
static int sim_world_gang_fits(const struct app *a, const struct workload_job *spec)
{
    double local;
    int accum;

    sim_fixed_config(a, spec->batch_size, spec->num_replicas, &local, &accum);
    return local >= a->min_local;
}

/* ERR_RANGE when a node of the world has more GPUs than app's profile was measured on one node
 * (its speed there is unknown: the run would stop at the first job placed on it), naming the
 * offer; 0 otherwise. */
static int sim_world_check_nodes(const struct sim_world *w, const struct app *a, struct error *e)
{
    if (!w->fleet) {
        if (w->cfg.gpus_per_node > a->max_node_gpus)
            return err_set(e, ERR_RANGE, "", 0, 0,
                           "%d GPUs per node: the %s profile was measured on at most %d per node",
                           w->cfg.gpus_per_node, a->name, a->max_node_gpus);
        return 0;
    }
    for (int o = 0; o < w->cfg.noffers; o++)
        if (w->cfg.offers[o].gpus > a->max_node_gpus)
            return err_set(e, ERR_RANGE, "", 0, 0,
                           "offer %s: %d GPUs per node: the %s profile was measured on at most %d "
                           "per node",
                           w->cfg.offers[o].name, w->cfg.offers[o].gpus, a->name, a->max_node_gpus);
    return 0;
}

int sim_world_new(const struct sim_config *cfg, const struct workload *wl, struct sim_world **out,
                  struct error *e)
{
    struct sim_world *w = NULL;
    int rc = 0, width, maxgpn = cfg->gpus_per_node;

    if (cfg->noffers == 0 && (cfg->nodes < 1 || cfg->gpus_per_node < 1))
        return err_set(e, ERR_INVAL, "", 0, 0, "the cluster needs at least one node with a GPU");
    if (cfg->noffers > 0 && (cfg->initial_offer < 0 || cfg->initial_offer >= cfg->noffers ||
                             cfg->nodes < 0 || cfg->max_nodes < 0))
        return err_set(e, ERR_INVAL, "", 0, 0, "bad initial fleet or node limit");
    if (wl->n == 0)
        return err_set(e, ERR_EMPTY, wl->name, 0, 0, "the workload has no jobs");
    w = calloc(1, sizeof(*w));
    if (!w)
        return err_set(e, ERR_NOMEM, "", 0, 0, NULL);
    w->cfg = *cfg;
    w->wl = wl;
    w->njobs = (int)wl->n;
    if (cfg->noffers > 0) {
        w->fleet = 1;
        w->nslots = cfg->max_nodes > 0 ? cfg->max_nodes : 512;
        if (w->nslots < cfg->nodes)
            w->nslots = cfg->nodes;
        rc = market_new(cfg->offers, cfg->noffers, cfg->market_seed, &w->mkt, e);
        if (rc == 0 && cfg->nquotas > 0)
            rc = market_set_quotas(w->mkt, cfg->quotas, cfg->nquotas, e);
        for (int o = 0; o < cfg->noffers; o++)
            if (cfg->offers[o].gpus > maxgpn)
                maxgpn = cfg->offers[o].gpus;
    } else {
        w->nslots = cfg->nodes;
        w->fixed_offer = (struct mkt_offer_spec){
            .name = "cluster", .type = "node", .zone = "", .gpu = "", .gpus = cfg->gpus_per_node};
        rc = market_new(&w->fixed_offer, 1, 0, &w->mkt, e);
    }
    if (rc < 0)
        goto out;
    width = w->nslots * maxgpn;
    w->apps = calloc(wl->n, sizeof(*w->apps));
    w->distinct = calloc(wl->n, sizeof(*w->distinct));
    w->families = calloc(wl->n, sizeof(*w->families));
    w->jobs = calloc(wl->n, sizeof(*w->jobs));
    w->slots = calloc((size_t)w->nslots, sizeof(*w->slots));
    w->nodes = calloc((size_t)w->nslots, sizeof(*w->nodes));
    w->snapslot = calloc((size_t)w->nslots, sizeof(int));
    w->bootslot = calloc((size_t)w->nslots, sizeof(int));
    w->booting = calloc((size_t)w->nslots, sizeof(*w->booting));
    w->offers = calloc((size_t)cfg->noffers + 1, sizeof(*w->offers));
    w->unavail_until = calloc((size_t)cfg->noffers + 1, sizeof(double));
    w->maxevents = 3 * w->nslots + 16;
    w->events = calloc((size_t)w->maxevents, sizeof(*w->events));
    w->sjobs = calloc(wl->n, sizeof(*w->sjobs));
    w->active = calloc(wl->n, sizeof(int));
    if (!w->apps || !w->distinct || !w->families || !w->jobs || !w->slots || !w->nodes ||
        !w->snapslot || !w->bootslot || !w->booting || !w->offers || !w->unavail_until ||
        !w->events || !w->sjobs || !w->active ||
        alloc_new(w->njobs, w->nslots, width, &w->held) < 0) {
        rc = err_set(e, ERR_NOMEM, "", 0, 0, NULL);
        goto out;
    }
    for (int i = 0; i < cfg->nodes; i++)
        if ((rc = sim_world_launch(w, w->fleet ? cfg->initial_offer : 0, 1)) == ERR_QUOTA ||
            rc == ERR_CAPACITY) {
            rc = 0; /* a fixed cluster starts with what its quota and the offer's capacity allow */
            break;
        } else if (rc < 0) {
            err_set(e, rc, "", 0, 0, "cannot start with %d nodes of offer %s: %s", cfg->nodes,
                    market_offer(w->mkt, w->fleet ? cfg->initial_offer : 0)->name, err_str(rc));
            goto out;
        }
    for (int i = 0; i < w->njobs; i++) {
        const struct workload_job *spec = &wl->jobs[i];
        const struct sim_quirk *q = sim_quirk_for(spec->application);
        struct app *a = NULL;
        double fixed;
        int fam = 0;

        for (int k = 0; k < w->ndistinct && !a; k++)
            if (strcmp(w->distinct[k]->name, spec->application) == 0)
                a = w->distinct[fam = k];
        if (!a) {
            char dir[4096];

            snprintf(dir, sizeof(dir), "%s/%s", cfg->profiles, spec->application);
            if ((rc = app_load(dir, &a, e)) < 0)
                goto out;
            sim_family_init(&w->families[w->ndistinct]);
            fam = w->ndistinct;
            w->distinct[w->ndistinct++] = a;
            if ((rc = sim_world_check_nodes(w, a, e)) < 0)
                goto out;
        }
        w->apps[i] = a;
        if (!cfg->adaptive_batch)
            fixed = spec->batch_size;
        else
            fixed = q && q->pin_batch_to_max ? a->max_bsz : 0;
        if (!cfg->adaptive_batch &&
            (spec->batch_size < a->init_bsz || spec->batch_size > a->max_bsz)) {
            rc = err_set(e, ERR_RANGE, wl->path, spec->line, 0,
                         "job %s: batch_size %g is outside what %s was measured at [%d, %d]",
                         spec->name, spec->batch_size, a->name, a->init_bsz, a->max_bsz);
            goto out;
        }
        if (cfg->gang && !sim_world_gang_fits(a, spec)) {
            rc = err_set(e, ERR_RANGE, wl->path, spec->line, 0,
                         "job %s: batch_size %g over its num_replicas %d is below the smallest "
                         "local batch %s was measured at (%d): a gang scheduler cannot run it",
                         spec->name, spec->batch_size, spec->num_replicas, a->name, a->min_local);
            goto out;
        }
        if (cfg->gang && spec->num_replicas > SIM_MEASURED_REPLICAS) {
            rc = err_set(e, ERR_RANGE, wl->path, spec->line, 0,
                         "job %s: num_replicas %d is more than the profiles were measured on (%d): "
                         "a gang scheduler would run it where its speed is unknown",
                         spec->name, spec->num_replicas, SIM_MEASURED_REPLICAS);
            goto out;
        }
        /* a gang scheduler gives a job the GPUs it asked for: no other limit applies */
        sim_job_init(&w->jobs[i], spec, a, cfg->model, fixed,
                     q && !cfg->gang ? q->max_replicas : 0);
        /* the trace's own interval for the job, else the world's */
        w->jobs[i].checkpoint_s = spec->checkpoint_s >= 0 ? spec->checkpoint_s : cfg->checkpoint_s;
        w->jobs[i].hysteresis = cfg->batch_hysteresis;
        w->jobs[i].length_known = !cfg->unknown_lengths;
        w->jobs[i].reconf_restart = spec->reconfigure == WORKLOAD_RECONF_WORLD
                                        ? cfg->reconfigure_restart != 0
                                        : spec->reconfigure == WORKLOAD_RECONF_RESTART;
        w->jobs[i].family = cfg->families ? &w->families[fam] : NULL;
    }
    w->oracle.ctx = w;
    w->oracle.iterations_left = sim_oracle_iterations_left;
    w->oracle.step_time = sim_oracle_step_time;
    *out = w;
    w = NULL;
out:
    sim_world_free(w);
    return rc;
}

void sim_world_free(struct sim_world *w)
{
    if (!w)
        return;
    for (int i = 0; w->jobs && i < w->njobs; i++)
        sim_job_free(&w->jobs[i]);
    for (int k = 0; k < w->ndistinct; k++) {
        app_free(w->distinct[k]);
        sim_family_free(&w->families[k]);
    }
    market_free(w->mkt);
    free(w->apps);
    free(w->distinct);
    free(w->families);
    free(w->jobs);
    free(w->slots);
    free(w->nodes);
    free(w->snapslot);
    free(w->bootslot);
    free(w->booting);
    free(w->offers);
    free(w->unavail_until);
    free(w->events);
    free(w->sjobs);
    free(w->active);
    alloc_free(w->held);
    alloc_free(w->snap_alloc);
    free(w);
}

double sim_world_now(const struct sim_world *w)
{
    return w->now;
}

/* Run every job seconds on what it holds. */
static int sim_world_run(struct sim_world *w, int seconds)
{
    int *dist = calloc((size_t)w->nslots, sizeof(int)), rc = 0;

    if (!dist)
        return ERR_NOMEM;
    /* interference: a node is shared when more than one distributed job runs on it */
    for (int j = 0; j < w->njobs; j++) {
        const int *row = w->held->node + (size_t)j * (size_t)w->held->width;

        if (alloc_nodes_used(w->held, j) < 2)
            continue;
        for (int i = 0; i < w->held->count[j]; i++)
            dist[row[i]] += i == 0 || row[i] != row[i - 1];
    }
    for (int j = 0; j < w->njobs && rc == 0; j++) {
        const int *row = w->held->node + (size_t)j * (size_t)w->held->width;
        double slow = 0.0;

        if (w->cfg.interference > 0 && alloc_nodes_used(w->held, j) > 1)
            for (int i = 0; i < w->held->count[j]; i++)
                if (dist[row[i]] > 1)
                    slow = w->cfg.interference;
        if ((rc = sim_job_step(&w->jobs[j], seconds, slow)) < 0)
            break;
        /* a finished job gives its GPUs back at once */
        if (sim_job_done(&w->jobs[j]) && w->held->count[j] > 0) {
            alloc_clear_job(w->held, j);
            sim_job_place(&w->jobs[j], NULL, 0);
        }
    }
    free(dist);
    return rc;
}

/* The market's events up to now: nodes become ready, notices make jobs checkpoint, preemptions
 * take nodes and send their jobs back to their last checkpoint. */
static int sim_world_events(struct sim_world *w)
{
    int nev, rc;

    if ((rc = market_advance(w->mkt, w->now, w->events, w->maxevents, &nev)) < 0)
        return rc;
    for (int i = 0; i < nev; i++) {
        int k = sim_slot_of(w, w->events[i].id);

        if (k < 0)
            continue;
        switch (w->events[i].kind) {
        case MKT_EV_READY:
            if (w->slots[k].state == SIM_SLOT_BOOTING)
                w->slots[k].state = market_instance(w->mkt, w->slots[k].id)->state == MKT_NOTICED
                                        ? SIM_SLOT_NOTICED
                                        : SIM_SLOT_READY;
            break;
        case MKT_EV_NOTICE: {
            const struct mkt_instance *in = market_instance(w->mkt, w->slots[k].id);

            if (w->slots[k].state != SIM_SLOT_BOOTING)
                w->slots[k].state = SIM_SLOT_NOTICED;
            /* a pool without notices sends this one as it preempts: no time to checkpoint */
            for (int j = 0; j < w->njobs && in->notice_at < in->end_at; j++)
                if (alloc_on_node(w->held, j, k) > 0)
                    sim_job_checkpoint(&w->jobs[j]);
            break;
        }
        case MKT_EV_PREEMPT:
            for (int j = 0; j < w->njobs; j++)
                if (alloc_on_node(w->held, j, k) > 0) {
                    alloc_clear_job(w->held, j);
                    sim_job_preempt(&w->jobs[j]);
                }
            w->slots[k].state = SIM_SLOT_FREE;
            break;
        }
    }
    return 0;
}

int sim_world_advance(struct sim_world *w, int seconds)
{
    double end = w->now + seconds;
    int rc;

    while (w->now < end) {
        double next = ceil(market_next_event(w->mkt, w->now));
        int step = (int)((next < end ? next : end) - w->now);

        if (step < 1)
            step = 1;
        if ((rc = sim_world_run(w, step)) < 0)
            return rc;
        w->now += step;
        if ((rc = sim_world_events(w)) < 0)
            return rc;
    }
    return 0;
}

/* The planner's estimate of an offer's preemption rate: its prior, worth ten node-hours, updated
 * with the preemptions seen per node-hour. */
static double sim_world_rate_estimate(struct sim_world *w, int o)
{
    const double weight = 10.0;
    double prior = w->cfg.rate_prior               ? w->cfg.rate_prior[o]
                   : market_offer(w->mkt, o)->spot ? 0.05
                                                   : 0.0;
    double hours = market_node_hours(w->mkt, o, w->now);

    return (prior * weight + (double)market_preemptions(w->mkt, o)) / (weight + hours);
}

int sim_world_observe(struct sim_world *w, const struct snapshot **out)
{
    int n = 0, nn = 0, nb = 0, gpus = 0, rc;

    for (int j = 0; j < w->njobs; j++)
        if (w->now >= w->jobs[j].spec->submit_time && !sim_job_done(&w->jobs[j])) {
            /* a job of a family starts from what its family measured (no-op without one) */
            if ((rc = sim_job_seed(&w->jobs[j])) < 0)
                return rc;
            w->active[n++] = j;
        }
    for (int k = 0; k < w->nslots; k++) {
        const struct sim_slot *sl = &w->slots[k];

        if (sl->state == SIM_SLOT_READY) {
            const struct mkt_instance *in = market_instance(w->mkt, sl->id);

            w->snapslot[nn] = k;
            w->nodes[nn++] =
                (struct snap_node){.gpus = sl->gpus,
                                   .preemptible = market_offer(w->mkt, sl->offer)->spot,
                                   .offer = w->fleet ? sl->offer : -1,
                                   .launched = in->launched};
            gpus += sl->gpus;
        } else if (sl->state == SIM_SLOT_BOOTING && w->fleet) {
            w->bootslot[nb] = k;
            w->booting[nb++] = (struct snap_booting){
                .offer = sl->offer, .launched = market_instance(w->mkt, sl->id)->launched};
        }
    }
    alloc_free(w->snap_alloc);
    w->snap_alloc = NULL;
    if (alloc_new(n, nn > 0 ? nn : 1, gpus > 0 ? gpus : 1, &w->snap_alloc) < 0)
        return ERR_NOMEM;
    for (int row = 0; row < n; row++) {
        const struct sim_job *job = &w->jobs[w->active[row]];
        struct snap_job *sj = &w->sjobs[row];
        const int *slots = w->held->node + (size_t)w->active[row] * (size_t)w->held->width;

        memset(sj, 0, sizeof(*sj));
        sj->name = job->spec->name;
        sj->submit_time = job->spec->submit_time;
        sj->attained_service = job->attained;
        sj->restarts = job->restarts < 0 ? 0 : job->restarts;
        sj->epoch = job->epoch;
        sj->has_model = job->has_model;
        sj->tput = job->tput;
        sj->grad = job->grad;
        sim_job_limits(job, &sj->lim);
        sj->max_replicas = job->max_replicas;
        if (sj->max_replicas == 0 || sj->max_replicas > SIM_MEASURED_REPLICAS)
            sj->max_replicas = SIM_MEASURED_REPLICAS;
        sj->max_profiled_replicas = job->max_profiled;
        sj->req_replicas = job->spec->num_replicas;
        sj->req_batch = job->spec->batch_size;
        sj->progress = job->progress;
        sj->progress_target =
            w->cfg.unknown_lengths ? 0 : app_progress_needed(job->app, job->app->max_epochs);
        sj->checkpoint_s = job->checkpoint_s;
        sj->deadline = job->spec->deadline > 0 ? job->spec->submit_time + job->spec->deadline : 0;
        /* held replicas on nodes that are not schedulable (noticed) are not shown: the job
         * holds nothing it can keep */
        for (int k = 0; k < w->held->count[w->active[row]]; k++) {
            int sn = -1;

            for (int m = 0; m < nn && sn < 0; m++)
                if (w->snapslot[m] == slots[k])
                    sn = m;
            if (sn < 0) {
                alloc_clear_job(w->snap_alloc, row);
                break;
            }
            alloc_add(w->snap_alloc, row, sn, 1);
        }
    }
    for (int o = 0; w->fleet && o < w->cfg.noffers; o++) {
        const struct mkt_offer_spec *sp = market_offer(w->mkt, o);

        w->offers[o] = (struct snap_offer){
            .name = sp->name,
            .gpus = sp->gpus,
            .spot = sp->spot,
            .price = market_price(w->mkt, o, w->now),
            .preempt_rate = sim_world_rate_estimate(w, o),
            .boot_s = market_boot_s(w->mkt, o),
            .unavailable = w->now < w->unavail_until[o],
        };
        w->offers[o].capped = market_offer_room(w->mkt, o, w->now, &w->offers[o].room);
    }
    for (int k = 0; w->fleet && k < w->nslots; k++)
        if (w->slots[k].state == SIM_SLOT_NOTICED)
            w->offers[w->slots[k].offer].noticed++;
    w->snap.now = w->now;
    w->snap.nnodes = nn;
    w->snap.nodes = w->nodes;
    w->snap.njobs = n;
    w->snap.jobs = w->sjobs;
    w->snap.current = w->snap_alloc;
    w->snap.oracle = &w->oracle;
    w->snap.noffers = w->fleet ? w->cfg.noffers : 0;
    w->snap.offers = w->offers;
    w->snap.nbooting = nb;
    w->snap.booting = w->booting;
    w->snap.min_billed_s = MKT_MIN_BILLED;
    *out = &w->snap;
    return 0;
}

int sim_world_apply(struct sim_world *w, const struct alloc *plan)
{
    int *used = NULL, place[SIM_MAX_NODES], rc = 0;

    if (plan->njobs != w->snap.njobs || plan->nnodes != w->snap_alloc->nnodes)
        return ERR_INVAL;
    if (!(used = calloc((size_t)w->nslots, sizeof(int))))
        return ERR_NOMEM;
    /* what the jobs outside the plan hold stays; the plan's rows must fit beside it */
    for (int j = 0; j < w->njobs; j++) {
        int in_plan = 0;

        for (int row = 0; row < plan->njobs && !in_plan; row++)
            in_plan = w->active[row] == j;
        for (int k = 0; !in_plan && k < w->held->count[j]; k++)
            used[w->held->node[(size_t)j * (size_t)w->held->width + (size_t)k]]++;
    }
    for (int row = 0; row < plan->njobs; row++)
        for (int k = 0; k < plan->count[row]; k++) {
            int sn = plan->node[(size_t)row * (size_t)plan->width + (size_t)k];

            if (sn >= w->snap.nnodes) {
                rc = ERR_INVAL;
                goto out;
            }
            used[w->snapslot[sn]]++;
        }
    for (int k = 0; k < w->nslots; k++)
        if (used[k] > (w->slots[k].state == SIM_SLOT_FREE ? 0 : w->slots[k].gpus)) {
            rc = ERR_INVAL;
            goto out;
        }
    for (int row = 0; row < plan->njobs; row++) {
        int j = w->active[row], np, same = plan->count[row] == w->held->count[j];
        const int *prow = plan->node + (size_t)row * (size_t)plan->width;
        const int *hrow = w->held->node + (size_t)j * (size_t)w->held->width;

        for (int k = 0; same && k < plan->count[row]; k++)
            same = w->snapslot[prow[k]] == hrow[k];
        if (same)
            continue;
        alloc_clear_job(w->held, j);
        for (int k = 0; k < plan->count[row]; k++)
            alloc_add(w->held, j, w->snapslot[prow[k]], 1);
        np = alloc_placement(w->held, j, place);
        if ((rc = sim_job_place(&w->jobs[j], place, np)) < 0)
            goto out;
    }
out:
    free(used);
    return rc;
}

int sim_world_resize(struct sim_world *w, const struct fleet_plan *f)
{
    int rc;

    if (!w->fleet || f->noffers != w->cfg.noffers || f->nnodes != w->snap.nnodes ||
        f->nbooting != w->snap.nbooting)
        return ERR_INVAL;
    for (int n = 0; n < f->nnodes; n++)
        if (f->release[n] && sim_slot_used(w, w->snapslot[n]))
            return ERR_INVAL;
    for (int n = 0; n < f->nnodes; n++)
        if (f->release[n]) {
            struct sim_slot *sl = &w->slots[w->snapslot[n]];

            if (sl->state != SIM_SLOT_FREE && (rc = market_terminate(w->mkt, sl->id, w->now)) < 0)
                return rc;
            sl->state = SIM_SLOT_FREE;
        }
    for (int b = 0; b < f->nbooting; b++)
        if (f->cancel[b]) {
            struct sim_slot *sl = &w->slots[w->bootslot[b]];

            if (sl->state == SIM_SLOT_BOOTING &&
                (rc = market_terminate(w->mkt, sl->id, w->now)) < 0)
                return rc;
            sl->state = SIM_SLOT_FREE;
        }
    for (int o = 0; o < f->noffers; o++)
        for (int i = 0; i < f->launch[o]; i++) {
            int room;

            /* offers that share a quota share its room: asked again before each launch, as the
             * controller does (realworld_apply.c) */
            if (market_offer_room(w->mkt, o, w->now, &room) && room <= 0)
                break;
            /* the world's own limit (max_nodes alive, noticed ones included) is not the
             * market's: the offer stays available, the launch waits for a slot */
            if (!sim_slot_left(w))
                break;
            rc = sim_world_launch(w, o, 0);
            if (rc == ERR_CAPACITY || rc == ERR_QUOTA) {
                w->unavail_until[o] = w->now + 600;
                break;
            }
            if (rc < 0)
                return rc;
        }
    /* nothing can be due yet (a boot takes time), but a zero boot delay is allowed */
    return sim_world_events(w);
}

int sim_world_has_fleet(const struct sim_world *w)
{
    return w->fleet;
}

void sim_world_fleet_stats(const struct sim_world *w, struct sim_fleet_stats *out)
{
    int started = 0;

    memset(out, 0, sizeof(*out));
    for (int j = 0; j < w->njobs; j++)
        if (w->jobs[j].first_start >= 0) {
            out->mean_wait_s += w->jobs[j].first_start - w->jobs[j].spec->submit_time;
            started++;
        }
    if (started)
        out->mean_wait_s /= started;
    for (int j = 0; j < w->njobs; j++) {
        const struct sim_job *job = &w->jobs[j];

        out->held_gpu_hours += job->attained / 3600.0;
        out->restarts += job->restarts > 0 ? job->restarts : 0;
        if (job->spec->deadline > 0) {
            out->deadlines++;
            out->deadlines_met += !sim_job_missed_deadline(job);
        }
    }
    if (!w->fleet)
        return;
    /* at the run's end the nodes still alive are billed as the controller would end them */
    out->dollars =
        sim_world_finished(w) ? market_cost_settled(w->mkt, w->now) : market_cost(w->mkt, w->now);
    for (int o = 0; o < w->cfg.noffers; o++)
        out->gpu_hours += market_node_hours(w->mkt, o, w->now) * market_offer(w->mkt, o)->gpus;
    out->launches = market_ninstances(w->mkt);
    out->capacity_errs = market_capacity_errors(w->mkt, -1);
    out->quota_errs = market_quota_errors(w->mkt, -1);
    out->preemptions = market_preemptions(w->mkt, -1);
    for (int j = 0; j < w->njobs; j++)
        out->lost_work_s += w->jobs[j].lost_s;
    out->min_gpu_price = market_min_gpu_price(w->mkt, w->now);
}

int sim_world_min_gpu_seconds(struct sim_world *w, int gpn, double *out)
{
    double gpu_s = 0;
    int rc;

    for (int j = 0; j < w->njobs; j++) {
        double x;

        if ((rc = sim_job_min_gpu_seconds(&w->jobs[j], gpn, &x)) < 0)
            return rc;
        gpu_s += x;
    }
    *out = gpu_s;
    return 0;
}

int sim_world_bounds(struct sim_world *w, int gpn, double gpu_hours, double avg_jct,
                     struct sim_bounds *out)
{
    const int kmax = SIM_MEASURED_REPLICAS;
    double **best = calloc((size_t)w->ndistinct + 1, sizeof(double *));
    int *count = calloc((size_t)w->ndistinct + 1, sizeof(int)), rc = 0;
    const struct app *const *apps = (const struct app *const *)w->distinct;

    if (!best || !count) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (int k = 0; k < w->ndistinct; k++) {
        if (!(best[k] = malloc((size_t)w->distinct[k]->max_epochs * kmax * sizeof(double)))) {
            rc = ERR_NOMEM;
            goto out;
        }
        sim_bound_goodputs(w->distinct[k], gpn, kmax, best[k]);
        for (int j = 0; j < w->njobs; j++)
            count[k] += w->apps[j] == w->distinct[k];
    }
    out->avg_jct = sim_bound_avg_jct(w->ndistinct, apps, (const double *const *)best, count, kmax,
                                     gpu_hours * 3600.0);
    out->gpu_hours = sim_bound_least_gpu_seconds(w->ndistinct, apps, (const double *const *)best,
                                                 count, kmax, avg_jct) /
                     3600.0;
out:
    for (int k = 0; best && k < w->ndistinct; k++)
        free(best[k]);
    free(best);
    free(count);
    return rc;
}

int sim_world_fleet_nodes(const struct sim_world *w, int spot)
{
    int n = 0;

    for (int k = 0; k < w->nslots; k++)
        if (w->slots[k].state != SIM_SLOT_FREE &&
            !!market_offer(w->mkt, w->slots[k].offer)->spot == !!spot)
            n++;
    return n;
}

int sim_world_finished(const struct sim_world *w)
{
    for (int j = 0; j < w->njobs; j++)
        if (!sim_job_done(&w->jobs[j]))
            return 0;
    return 1;
}

int sim_world_njobs(const struct sim_world *w)
{
    return w->njobs;
}

const struct sim_job *sim_world_job(const struct sim_world *w, int i)
{
    return &w->jobs[i];
}

int sim_world_job_gpus(const struct sim_world *w, int i)
{
    return w->held->count[i];
}
