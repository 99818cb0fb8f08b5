/* sched_bench.c: `castor bench sched`: how fast a policy decides and how fit its answers are, at
 * cluster sizes from the paper's 16 nodes to 1,000 nodes and 2,000 jobs, beside a genetic
 * algorithm in the reference's style on the same inputs. Inputs are generated: jobs whose goodput
 * models are fitted to the six measured profiles, with varied progress, ages, restarts and
 * exploration, on nodes of G GPUs, a share of them already running. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ga_ref.h"
#include "model/fit.h"
#include "sched_bench.h"
#include "sim/app.h"
#include "sim/measured.h"
#include "sim/world.h"
#include "util/error.h"
#include "util/json.h"

static const char *const sched_apps[] = {"cifar10",     "imagenet", "bert",
                                         "deepspeech2", "yolov3",   "ncf"};
#define SCHED_NAPPS 6

/* A job model drawn from: a measured profile, its fitted throughput model. */
struct sched_model {
    struct app *app;
    struct tput_params tput;
};

struct sched_size {
    int nodes, gpn, jobs;
};

/* One generated decide input and the memory behind it. */
struct sched_input {
    struct snapshot s;
    struct snap_node *nodes;
    struct snap_job *jobs;
    char (*names)[16];
    struct alloc *cur;
};

static void sched_input_free(struct sched_input *in)
{
    free(in->nodes);
    free(in->jobs);
    free(in->names);
    alloc_free(in->cur);
    memset(in, 0, sizeof(*in));
}

/*
 * Jobs: a model drawn uniformly from the six; gradient statistics of a random epoch at the
 * model's initial batch; 90% have a fitted model; explored up to 2^k GPUs (k in 0..5); ages up
 * to 6 hours, up to 5 restarts, attained service up to 100 GPU-hours. About 80% of the GPUs are
 * already held: jobs in random order take their explored count, consolidated.
 */
static int sched_generate(const struct sched_model *models, const struct sched_size *sz,
                          uint64_t seed, struct sched_input *in)
{
    struct ga_ref_rng r = {seed};
    int G = sz->nodes * sz->gpn, rc, *free_gpus = NULL, *order = NULL, held = 0;

    memset(in, 0, sizeof(*in));
    in->nodes = calloc((size_t)sz->nodes, sizeof(*in->nodes));
    in->jobs = calloc((size_t)sz->jobs, sizeof(*in->jobs));
    in->names = calloc((size_t)sz->jobs, sizeof(*in->names));
    free_gpus = calloc((size_t)sz->nodes, sizeof(int));
    order = calloc((size_t)sz->jobs, sizeof(int));
    if (!in->nodes || !in->jobs || !in->names || !free_gpus || !order ||
        (rc = alloc_new(sz->jobs, sz->nodes, G, &in->cur)) < 0) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (int n = 0; n < sz->nodes; n++) {
        in->nodes[n].gpus = sz->gpn;
        free_gpus[n] = sz->gpn;
    }
    for (int j = 0; j < sz->jobs; j++) {
        const struct sched_model *m = &models[ga_ref_rng_int(&r, SCHED_NAPPS)];
        struct snap_job *sj = &in->jobs[j];
        int epoch = ga_ref_rng_int(&r, m->app->max_epochs);
        double sqr, var;

        snprintf(in->names[j], sizeof(in->names[j]), "job-%d", j);
        sj->name = in->names[j];
        sj->has_model = ga_ref_rng_unif(&r) < 0.9;
        sj->tput = m->tput;
        if (app_grad_stats(m->app, m->app->init_bsz, epoch, &sqr, &var) < 0)
            sqr = 0, var = 1;
        sj->grad.sqr = sqr;
        sj->grad.var = var;
        sj->lim.init_bsz = m->app->init_bsz;
        sj->lim.max_bsz = m->app->max_bsz;
        sj->lim.min_local = m->app->min_local;
        sj->lim.max_local = m->app->max_local;
        sj->lim.accumulation = 1;
        sj->epoch = epoch;
        sj->max_profiled_replicas = sj->has_model ? 1 << ga_ref_rng_int(&r, 6) : 0;
        sj->max_replicas = sim_app_max_replicas(m->app->name);
        sj->submit_time = 1e6 - 21600 * ga_ref_rng_unif(&r);
        sj->restarts = ga_ref_rng_int(&r, 6);
        sj->attained_service = 360000 * ga_ref_rng_unif(&r);
        sj->req_replicas = 1;
        sj->req_batch = m->app->init_bsz;
        order[j] = j;
    }
    for (int j = sz->jobs - 1; j > 0; j--) { /* shuffle */
        int k = ga_ref_rng_int(&r, j + 1), t = order[j];

        order[j] = order[k];
        order[k] = t;
    }
    for (int i = 0; i < sz->jobs && held < G * 8 / 10; i++) {
        int j = order[i], want = in->jobs[j].max_profiled_replicas;

        if (want < 1 || (in->jobs[j].max_replicas > 0 && want > in->jobs[j].max_replicas))
            want = 1;
        if (want > G * 8 / 10 - held)
            break;
        /* whole free nodes, then the tightest node for the rest */
        for (int n = 0; n < sz->nodes && want >= sz->gpn; n++)
            if (free_gpus[n] == sz->gpn) {
                alloc_add(in->cur, j, n, sz->gpn);
                free_gpus[n] = 0;
                want -= sz->gpn;
                held += sz->gpn;
            }
        if (want > 0) {
            int pick = -1;

            for (int n = 0; n < sz->nodes; n++)
                if (free_gpus[n] >= want && (pick < 0 || free_gpus[n] < free_gpus[pick]))
                    pick = n;
            if (pick < 0) {
                alloc_clear_job(in->cur, j);
                continue;
            }
            alloc_add(in->cur, j, pick, want);
            free_gpus[pick] -= want;
            held += want;
        }
    }
    /* a distributed job may not share a node with another: drop later offenders */
    {
        int *dist = calloc((size_t)sz->nodes, sizeof(int));

        if (!dist) {
            rc = ERR_NOMEM;
            goto out;
        }
        for (int j = 0; j < sz->jobs; j++) {
            int clash = 0;

            if (alloc_nodes_used(in->cur, j) < 2)
                continue;
            for (int n = 0; n < sz->nodes; n++)
                clash |= alloc_on_node(in->cur, j, n) > 0 && dist[n];
            if (clash) {
                alloc_clear_job(in->cur, j);
                continue;
            }
            for (int n = 0; n < sz->nodes; n++)
                if (alloc_on_node(in->cur, j, n) > 0)
                    dist[n] = 1;
        }
        free(dist);
    }
    in->s.now = 1e6;
    in->s.nnodes = sz->nodes;
    in->s.nodes = in->nodes;
    in->s.njobs = sz->jobs;
    in->s.jobs = in->jobs;
    in->s.current = in->cur;
    rc = 0;
out:
    free(free_gpus);
    free(order);
    if (rc < 0)
        sched_input_free(in);
    return rc;
}

static double sched_peak_rss_mb(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static int sched_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

struct sched_row {
    struct sched_size size;
    double ms;      /* median decide time */
    double fitness; /* median fitness of the policy's answers (the pollux objective) */
    double ref_ms;  /* the GA's median time; NAN when not run */
    double ref_fit; /* the GA's median fitness */
    double rss_mb;  /* peak resident memory after the policy's runs at this size */
    int inputs;
    int at_least; /* inputs where the policy's fitness >= the GA's */
    const char *ref_note;
};

/* Too big for the GA's goodput memo (jobs x (nodes + 1) x (GPUs + 1) doubles) or its population
 * (100 x jobs x nodes): the reference is not run there. */
static int sched_ga_fits(const struct sched_size *sz)
{
    double memo = (double)sz->jobs * (sz->nodes + 1) * (sz->nodes * sz->gpn + 1) * 8;
    double pop = 2.0 * GA_POP * sz->jobs * sz->nodes * 4;

    return memo + pop < 2e9;
}

static int sched_run_size(const char *policy, const struct sched_model *models,
                          const struct sched_size *sz, int inputs, int ga, struct sched_row *row,
                          FILE *err)
{
    struct policy_config cfg = {0};
    double *ms = calloc((size_t)inputs, sizeof(double)),
           *fit = calloc((size_t)inputs, sizeof(double));
    double *rms = calloc((size_t)inputs, sizeof(double)),
           *rfit = calloc((size_t)inputs, sizeof(double));
    int rc = 0, nref = 0;

    memset(row, 0, sizeof(*row));
    row->size = *sz;
    row->inputs = inputs;
    row->ref_ms = row->ref_fit = NAN;
    if (!ms || !fit || !rms || !rfit) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (int i = 0; i < inputs; i++) {
        struct sched_input in;
        struct policy pol = {0};
        struct alloc *out = NULL;
        double t0;

        if ((rc = sched_generate(models, sz, 1000003ULL * (uint64_t)(i + 1) + (uint64_t)sz->nodes,
                                 &in)) < 0)
            goto out;
        if ((rc = policy_new(policy, &cfg, &pol)) < 0 ||
            (rc = alloc_new(sz->jobs, sz->nodes, in.cur->width, &out)) < 0) {
            sched_input_free(&in);
            policy_free(&pol);
            goto out;
        }
        alloc_copy(out, in.cur);
        t0 = ga_ref_now_seconds();
        rc = policy_allocate(&pol, &in.s, (uint64_t)i, out);
        ms[i] = 1e3 * (ga_ref_now_seconds() - t0);
        fit[i] = rc == 0 ? policy_pollux_fitness(&cfg, &in.s, out) : NAN;
        if (rc < 0)
            fprintf(err, "castor bench sched: %s failed on %d nodes: %s\n", policy, sz->nodes,
                    err_str(rc));
        row->rss_mb = sched_peak_rss_mb();
        if (ga && sched_ga_fits(sz)) {
            struct ga_ref_problem pr;
            struct ga_ref_stats st;
            int *best = NULL;

            if (ga_ref_problem_init(&pr, &cfg, &in.s) == 0) {
                best = calloc((size_t)pr.J * (size_t)pr.N, sizeof(int));
                if (best && ga_ref_run(&pr, pr.base_x, 1, (uint64_t)i + 7, best, &st) == 0) {
                    rms[nref] = 1e3 * st.seconds;
                    rfit[nref] = st.fitness;
                    row->at_least += fit[i] >= st.fitness - 1e-9 * fabs(st.fitness);
                    nref++;
                }
                free(best);
                ga_ref_problem_free(&pr);
            }
        }
        alloc_free(out);
        policy_free(&pol);
        sched_input_free(&in);
        rc = 0;
    }
    qsort(ms, (size_t)inputs, sizeof(double), sched_cmp);
    qsort(fit, (size_t)inputs, sizeof(double), sched_cmp);
    row->ms = ms[inputs / 2];
    row->fitness = fit[inputs / 2];
    if (nref) {
        qsort(rms, (size_t)nref, sizeof(double), sched_cmp);
        qsort(rfit, (size_t)nref, sizeof(double), sched_cmp);
        row->ref_ms = rms[nref / 2];
        row->ref_fit = rfit[nref / 2];
    } else {
        row->ref_note = ga ? "too large for the GA" : "not run";
    }
out:
    free(ms);
    free(fit);
    free(rms);
    free(rfit);
    return rc;
}

static int sched_models(const char *profiles, struct sched_model *models, FILE *err)
{
    for (int k = 0; k < SCHED_NAPPS; k++) {
        char dir[4096], buf[768];
        struct measured *m = NULL;
        struct profile prof;
        struct error e = {0};
        int rc;

        snprintf(dir, sizeof(dir), "%s/%s", profiles, sched_apps[k]);
        if ((rc = app_load(dir, &models[k].app, &e)) < 0 || (rc = measured_load(dir, &m, &e)) < 0) {
            fprintf(err, "castor bench sched: %s\n", err_format(&e, buf, sizeof(buf)));
            return rc;
        }
        profile_init(&prof);
        rc = measured_to_profile(m, MEASURED_PLACEMENTS | MEASURED_SCALABILITY, &prof);
        if (rc == 0)
            rc = fit_tput(tput_models[0], &prof, &models[k].tput, NULL);
        profile_free(&prof);
        measured_free(m);
        if (rc < 0) {
            fprintf(err, "castor bench sched: %s: the fit failed: %s\n", dir, err_str(rc));
            return rc;
        }
    }
    return 0;
}

static void sched_usage(FILE *f)
{
    fprintf(f, "usage: castor bench sched [--policy NAME] [--inputs N] [--no-ga] [--json FILE]\n"
               "                          [--profiles DIR] [--size NODES:GPUS:JOBS]...\n"
               "\n"
               "Times one decide of the policy (default: the first registered) on generated\n"
               "inputs at each size (default 16:4:30, 128:4:300, 1000:8:2000), with the fitness\n"
               "it reaches under Pollux's objective, beside a reference-style genetic algorithm\n"
               "(population 100, 100 generations) on the same inputs where it fits in memory.\n");
}

int bench_sched(int argc, char **argv, FILE *out, FILE *err)
{
    struct sched_size sizes[16] = {{16, 4, 30}, {128, 4, 300}, {1000, 8, 2000}};
    struct sched_model models[SCHED_NAPPS] = {{0}};
    struct sched_row rows[16];
    const char *policy = policy_registry[0]->name, *json = NULL,
               *profiles = CASTOR_DATADIR "/profiles";
    int nsizes = 3, custom = 0, inputs = 5, ga = 1, status = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--no-ga") == 0) {
            ga = 0;
        } else if (strcmp(a, "--policy") == 0 && v) {
            policy = v, i++;
        } else if (strcmp(a, "--json") == 0 && v) {
            json = v, i++;
        } else if (strcmp(a, "--profiles") == 0 && v) {
            profiles = v, i++;
        } else if (strcmp(a, "--inputs") == 0 && v) {
            inputs = atoi(v), i++;
            if (inputs < 1 || inputs > 1000) {
                fprintf(err, "castor bench sched: --inputs takes 1 to 1000\n");
                return 2;
            }
        } else if (strcmp(a, "--size") == 0 && v) {
            struct sched_size sz;
            char tail;

            if (sscanf(v, "%d:%d:%d%c", &sz.nodes, &sz.gpn, &sz.jobs, &tail) != 3 || sz.nodes < 1 ||
                sz.gpn < 1 || sz.gpn > 64 || sz.jobs < 1 || custom == 16) {
                fprintf(err, "castor bench sched: --size takes NODES:GPUS:JOBS, not \"%s\"\n", v);
                return 2;
            }
            if (!custom)
                nsizes = 0;
            sizes[nsizes++] = sz;
            custom++;
            i++;
        } else {
            sched_usage(strcmp(a, "--help") == 0 ? out : err);
            return strcmp(a, "--help") == 0 ? 0 : 2;
        }
    }
    if (!policy_find(policy)) {
        fprintf(err, "castor bench sched: unknown policy \"%s\"\n", policy);
        return 2;
    }
    if (sched_models(profiles, models, err) < 0)
        goto out;
    fprintf(out,
            "castor bench sched: policy %s, %d generated inputs per size, fitness = Pollux's "
            "objective (median)\n",
            policy, inputs);
    fprintf(out, "%6s %5s %6s | %12s %10s | %12s %10s %9s | %8s\n", "nodes", "gpus", "jobs",
            "decide ms", "fitness", "GA ms", "GA fitness", ">= GA", "RSS MB");
    for (int k = 0; k < nsizes; k++) {
        struct sched_row *r = &rows[k];

        if (sched_run_size(policy, models, &sizes[k], inputs, ga, r, err) < 0)
            goto out;
        fprintf(out, "%6d %5d %6d | %12.2f %10.5f | ", r->size.nodes, r->size.gpn, r->size.jobs,
                r->ms, r->fitness);
        if (isnan(r->ref_ms))
            fprintf(out, "%34s", r->ref_note);
        else
            fprintf(out, "%12.1f %10.5f %6d/%-2d", r->ref_ms, r->ref_fit, r->at_least, r->inputs);
        fprintf(out, " | %8.1f\n", r->rss_mb);
        fflush(out);
    }
    if (json) {
        struct jv *root = jv_object(), *arr = jv_array();

        jv_set(root, "policy", jv_string(policy));
        for (int k = 0; k < nsizes; k++) {
            struct jv *o = jv_object();

            jv_set(o, "nodes", jv_integer(rows[k].size.nodes));
            jv_set(o, "gpus_per_node", jv_integer(rows[k].size.gpn));
            jv_set(o, "jobs", jv_integer(rows[k].size.jobs));
            jv_set(o, "decide_ms_median", jv_number(rows[k].ms));
            jv_set(o, "fitness", jv_number(rows[k].fitness));
            jv_set(o, "reference_ms_median", jv_number(rows[k].ref_ms));
            jv_set(o, "reference_fitness", jv_number(rows[k].ref_fit));
            jv_set(o, "peak_rss_mb", jv_number(rows[k].rss_mb));
            jv_push(arr, o);
        }
        jv_set(root, "sizes", arr);
        if (!root || jv_write_path(root, json) < 0) {
            fprintf(err, "castor bench sched: cannot write %s\n", json);
            jv_free(root);
            goto out;
        }
        jv_free(root);
    }
    status = 0;
out:
    for (int k = 0; k < SCHED_NAPPS; k++)
        app_free(models[k].app);
    return status;
}
