/* world.c: the simulated cluster and its emulated jobs. */
#include "sim/world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/app.h"

/* Settings the Pollux artifact gives particular models, whatever the policy: NCF trains at its
 * largest batch on one GPU (the artifact pins it; its step time barely depends on the batch). */
struct sim_quirk {
    const char *app;
    int pin_batch_to_max; /* adaptive policies: batch fixed at the model's largest */
    int max_replicas;
};

static const struct sim_quirk sim_quirks[] = {{"ncf", 1, 1}};

struct sim_world {
    struct sim_config cfg;
    const struct workload *wl;
    struct app **apps; /* per workload job, borrowed from the distinct list below */
    struct app **distinct;
    int ndistinct;
    struct sim_job *jobs;
    int njobs;
    struct alloc *held; /* njobs rows, workload order */
    double now;
    struct snap_node *nodes;
    /* the snapshot, rebuilt by each observe */
    struct snapshot snap;
    struct snap_job *sjobs;
    int *active; /* snapshot row -> workload index */
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

int sim_world_new(const struct sim_config *cfg, const struct workload *wl, struct sim_world **out,
                  struct error *e)
{
    struct sim_world *w = NULL;
    int rc = 0, width;

    if (cfg->nodes < 1 || cfg->gpus_per_node < 1)
        return err_set(e, ERR_INVAL, "", 0, 0, "the cluster needs at least one node with a GPU");
    if (wl->n == 0)
        return err_set(e, ERR_EMPTY, wl->name, 0, 0, "the workload has no jobs");
    width = cfg->nodes * cfg->gpus_per_node;
    w = calloc(1, sizeof(*w));
    if (!w)
        return err_set(e, ERR_NOMEM, "", 0, 0, NULL);
    w->cfg = *cfg;
    w->wl = wl;
    w->njobs = (int)wl->n;
    w->apps = calloc(wl->n, sizeof(*w->apps));
    w->distinct = calloc(wl->n, sizeof(*w->distinct));
    w->jobs = calloc(wl->n, sizeof(*w->jobs));
    w->nodes = calloc((size_t)cfg->nodes, sizeof(*w->nodes));
    w->sjobs = calloc(wl->n, sizeof(*w->sjobs));
    w->active = calloc(wl->n, sizeof(int));
    if (!w->apps || !w->distinct || !w->jobs || !w->nodes || !w->sjobs || !w->active ||
        alloc_new(w->njobs, cfg->nodes, width, &w->held) < 0) {
        rc = err_set(e, ERR_NOMEM, "", 0, 0, NULL);
        goto out;
    }
    for (int i = 0; i < cfg->nodes; i++)
        w->nodes[i].gpus = cfg->gpus_per_node;
    for (int i = 0; i < w->njobs; i++) {
        const struct workload_job *spec = &wl->jobs[i];
        const struct sim_quirk *q = sim_quirk_for(spec->application);
        struct app *a = NULL;
        double fixed;

        for (int k = 0; k < w->ndistinct && !a; k++)
            if (strcmp(w->distinct[k]->name, spec->application) == 0)
                a = w->distinct[k];
        if (!a) {
            char dir[4096];

            snprintf(dir, sizeof(dir), "%s/%s", cfg->profiles, spec->application);
            if ((rc = app_load(dir, &a, e)) < 0)
                goto out;
            w->distinct[w->ndistinct++] = a;
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
        /* a gang scheduler gives a job the GPUs it asked for: no other limit applies */
        sim_job_init(&w->jobs[i], spec, a, cfg->model, fixed,
                     q && !cfg->gang ? q->max_replicas : 0);
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
    for (int k = 0; k < w->ndistinct; k++)
        app_free(w->distinct[k]);
    free(w->apps);
    free(w->distinct);
    free(w->jobs);
    free(w->nodes);
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

int sim_world_advance(struct sim_world *w, int seconds)
{
    int dist[4096] = {0}, rc;
    int nn = w->cfg.nodes < 4096 ? w->cfg.nodes : 4096;

    /* interference: a node is shared when more than one distributed job runs on it */
    for (int j = 0; j < w->njobs; j++) {
        if (alloc_nodes_used(w->held, j) < 2)
            continue;
        for (int n = 0; n < nn; n++)
            dist[n] += alloc_on_node(w->held, j, n) > 0;
    }
    for (int j = 0; j < w->njobs; j++) {
        double slow = 0.0;

        if (w->cfg.interference > 0 && alloc_nodes_used(w->held, j) > 1)
            for (int n = 0; n < nn; n++)
                if (alloc_on_node(w->held, j, n) > 0 && dist[n] > 1)
                    slow = w->cfg.interference;
        if ((rc = sim_job_step(&w->jobs[j], seconds, slow)) < 0)
            return rc;
        /* a finished job gives its GPUs back at once */
        if (sim_job_done(&w->jobs[j]) && w->held->count[j] > 0) {
            alloc_clear_job(w->held, j);
            sim_job_place(&w->jobs[j], NULL, 0);
        }
    }
    w->now += seconds;
    return 0;
}

int sim_world_observe(struct sim_world *w, const struct snapshot **out)
{
    int n = 0;

    for (int j = 0; j < w->njobs; j++)
        if (w->now >= w->jobs[j].spec->submit_time && !sim_job_done(&w->jobs[j]))
            w->active[n++] = j;
    alloc_free(w->snap_alloc);
    w->snap_alloc = NULL;
    if (alloc_new(n, w->cfg.nodes, w->held->width, &w->snap_alloc) < 0)
        return ERR_NOMEM;
    for (int row = 0; row < n; row++) {
        const struct sim_job *job = &w->jobs[w->active[row]];
        struct snap_job *sj = &w->sjobs[row];
        const int *nodes = w->held->node + (size_t)w->active[row] * (size_t)w->held->width;

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
        sj->max_profiled_replicas = job->max_profiled;
        sj->req_replicas = job->spec->num_replicas;
        sj->req_batch = job->spec->batch_size;
        for (int k = 0; k < w->held->count[w->active[row]]; k++)
            alloc_add(w->snap_alloc, row, nodes[k], 1);
    }
    w->snap.now = w->now;
    w->snap.nnodes = w->cfg.nodes;
    w->snap.nodes = w->nodes;
    w->snap.njobs = n;
    w->snap.jobs = w->sjobs;
    w->snap.current = w->snap_alloc;
    w->snap.oracle = &w->oracle;
    *out = &w->snap;
    return 0;
}

int sim_world_apply(struct sim_world *w, const struct alloc *plan)
{
    int used[4096] = {0}, place[SIM_MAX_NODES], rc;

    if (plan->njobs != w->snap.njobs || w->cfg.nodes > 4096)
        return ERR_INVAL;
    /* what the jobs outside the plan hold stays; the plan's rows must fit beside it */
    for (int j = 0; j < w->njobs; j++) {
        int in_plan = 0;

        for (int row = 0; row < plan->njobs && !in_plan; row++)
            in_plan = w->active[row] == j;
        for (int k = 0; !in_plan && k < w->held->count[j]; k++)
            used[w->held->node[(size_t)j * (size_t)w->held->width + (size_t)k]]++;
    }
    for (int row = 0; row < plan->njobs; row++)
        for (int k = 0; k < plan->count[row]; k++)
            used[plan->node[(size_t)row * (size_t)plan->width + (size_t)k]]++;
    for (int n = 0; n < w->cfg.nodes; n++)
        if (used[n] > w->nodes[n].gpus)
            return ERR_INVAL;
    for (int row = 0; row < plan->njobs; row++) {
        int j = w->active[row], np;

        if (alloc_job_equal(plan, row, w->held, j))
            continue;
        alloc_clear_job(w->held, j);
        for (int k = 0; k < plan->count[row]; k++)
            alloc_add(w->held, j, plan->node[(size_t)row * (size_t)plan->width + (size_t)k], 1);
        np = alloc_placement(w->held, j, place);
        if ((rc = sim_job_place(&w->jobs[j], place, np)) < 0)
            return rc;
    }
    return 0;
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
