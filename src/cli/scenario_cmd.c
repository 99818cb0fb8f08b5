/* scenario_cmd.c: `castor simulate --scenario`: run a workload on a simulated market under castor's
 * fleet planner, or (--compare) under the four systems of the comparison, and report dollars,
 * completion times and preemptions side by side. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/sim_run.h"
#include "control/loop.h"
#include "policies/fleet.h"
#include "policies/policy.h"
#include "sim/app.h"
#include "sim/job.h"
#include "sim/record.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/world.h"
#include "util/json.h"

/* What one system did on one workload. */
/* The deadlines missed that a run lists by name (the count is in fleet.deadlines_met). */
#define SC_MISSED_MAX 6

struct run_result {
    struct sim_fleet_stats fleet;
    struct {
        char name[64];
        double deadline, jct; /* seconds from submission; jct -1: unfinished */
    } missed[SC_MISSED_MAX];
    int nmissed; /* listed in missed (the first SC_MISSED_MAX in submission order) */
    double avg_jct, p99_jct, makespan;
    double work_gpu_s; /* the least GPU-seconds the workload takes on any offer's nodes */
    double bound;      /* the workload's cost bound, one for every system (workload_bound) */
    double jct_bound;  /* the lowest average JCT possible on the GPU-hours billed (sim_bound) */
    double gpu_bound;  /* the fewest GPU-hours that reach its average JCT (sim_bound) */
    int unfinished;
    double wall;
};

static void scenario_usage(FILE *f)
{
    fprintf(f,
            "usage: castor simulate --scenario FILE [--compare] [options]\n"
            "\n"
            "  --scenario FILE   a market scenario (config/scenarios/*.yaml documents every key)\n"
            "  --compare         run the four systems side by side on the same workload, market\n"
            "                    and seeds: fixed-on-demand (16 on-demand nodes, pollux),\n"
            "                    pollux-autoscale (Pollux's autoscaler on on-demand nodes),\n"
            "                    fixed-spot (16 spot nodes, replaced when preempted), castor;\n"
            "                    without it, castor alone\n"
            "  --workload PATH   replaces the scenario's workload (a trace or a folder of them)\n"
            "  --value V         replaces castor.value: dollars an hour of a job's completion\n"
            "                    time is worth to castor's planner (0.001 to 1e6)\n"
            "  --seed N          replaces the scenario's seed: the market's draws (spot prices,\n"
            "                    preemptions) and the decide step's (0 to 2147483647)\n"
            "  --profiles DIR    folder of measured profiles (default: bundled)\n"
            "  --json FILE       write the comparison as JSON (per system the means, and where\n"
            "                    jobs have deadlines the ones missed: deadlines_missed)\n"
            "  --report FILE     write a self-contained HTML report\n"
            "  --quiet           no per-workload lines (nor the deadlines missed under them)\n"
            "\n"
            "Exit status: 0 done, 1 the run failed, 2 a bad command line or scenario file.\n");
}

struct tick_ctx {
    struct sim_record *rec;
    const struct sim_world *w;
};

static int on_tick(void *ctx, double now, const struct snapshot *s, const struct alloc *plan)
{
    struct tick_ctx *t = ctx;

    (void)now;
    (void)s;
    (void)plan;
    return sim_record_sample(t->rec, t->w);
}

/* Run system sys of scenario sc on one workload. On success *res is filled and *recp (when not
 * NULL) holds the record. */
/* The first SC_MISSED_MAX jobs of w that missed their deadline, into res. */
static void note_missed(const struct sim_world *w, struct run_result *res)
{
    for (int i = 0; i < sim_world_njobs(w) && res->nmissed < SC_MISSED_MAX; i++) {
        const struct sim_job *job = sim_world_job(w, i);

        if (!sim_job_missed_deadline(job))
            continue;
        snprintf(res->missed[res->nmissed].name, sizeof(res->missed[0].name), "%s",
                 job->spec->name);
        res->missed[res->nmissed].deadline = job->spec->deadline;
        res->missed[res->nmissed].jct =
            sim_job_done(job) ? job->completion - job->spec->submit_time : -1;
        res->nmissed++;
    }
}

/* Under a row: the deadlines r missed, by name, time taken and deadline. */
static void print_missed(FILE *out, const struct run_result *r)
{
    int more = r->fleet.deadlines - r->fleet.deadlines_met - r->nmissed;

    if (r->nmissed == 0)
        return;
    fprintf(out, "%-15s %-16s missed:", "", "");
    for (int i = 0; i < r->nmissed; i++) {
        if (r->missed[i].jct >= 0)
            fprintf(out, "%s %s (%.0f s of %.0f)", i ? "," : "", r->missed[i].name,
                    r->missed[i].jct, r->missed[i].deadline);
        else
            fprintf(out, "%s %s (unfinished, %.0f s)", i ? "," : "", r->missed[i].name,
                    r->missed[i].deadline);
    }
    if (more > 0)
        fprintf(out, ", and %d more", more);
    fputc('\n', out);
}

static int run_system(const struct scenario *sc, const struct scenario_system *sys,
                      const char *profiles, const char *path, const char *const *apps,
                      struct run_result *res, struct sim_record **recp, FILE *err)
{
    struct sim_run_spec spec = {.path = path,
                                .apps = apps,
                                .cfg = {.profiles = profiles,
                                        .offers = sc->offers,
                                        .noffers = sc->noffers,
                                        .initial_offer = sys->initial_offer,
                                        .nodes = sys->initial_nodes,
                                        .max_nodes = sc->max_nodes,
                                        .market_seed = sc->seed,
                                        .rate_prior = sc->rate_prior,
                                        .quotas = sc->quotas,
                                        .nquotas = sc->nquotas,
                                        .checkpoint_s = sc->checkpoint_s,
                                        .batch_hysteresis = 1.05,
                                        .reconfigure_restart = sc->reconfigure_restart,
                                        .gpus_per_node = sc->offers[sys->initial_offer].gpus,
                                        .model = tput_model_find("pollux"),
                                        .families = sys->families},
                                .policy = sys->policy,
                                .pcfg = &sys->pcfg,
                                .fleet = sys->fleet,
                                .fcfg = &sys->fcfg,
                                .interval = sc->interval,
                                .seed = sc->seed};
    struct sim_run run = {0};
    struct sim_record *rec = NULL;
    struct tick_ctx tc;
    struct sim_bounds bounds;
    struct error e = {0};
    char buf[768];
    double t0 = cli_wall_now();
    int rc;

    if ((rc = sim_run_open(&spec, &run, &e)) < 0) {
        fprintf(err, "castor simulate: %s\n", err_format(&e, buf, sizeof(buf)));
        goto out;
    }
    if ((rc = sim_record_new(run.w, run.wl->name, sys->name, 0, &rec)) < 0) {
        fprintf(err, "castor simulate: %s: %s\n", sys->name, err_str(rc));
        goto out;
    }
    tc.rec = rec;
    tc.w = run.w;
    run.l.record = on_tick;
    run.l.record_ctx = &tc;
    rc = loop_run(&run.l, 366L * 24 * 3600 / sc->interval);
    if (rc < 0 && rc != ERR_AGAIN) {
        fprintf(err, "castor simulate: %s: %s: the simulation stopped: %s\n", path, sys->name,
                err_str(rc));
        goto out;
    }
    sim_record_finish(rec, run.w);
    memset(res, 0, sizeof(*res));
    res->unfinished = rc == ERR_AGAIN;
    sim_world_fleet_stats(run.w, &res->fleet);
    note_missed(run.w, res);
    sim_record_stats(rec, &res->avg_jct, &res->p99_jct, &res->makespan);
    res->work_gpu_s = INFINITY;
    for (int o = 0; o < sc->noffers; o++) {
        double x;

        if ((rc = sim_world_min_gpu_seconds(run.w, sc->offers[o].gpus, &x)) < 0) {
            fprintf(err, "castor simulate: %s: no lower bound: %s\n", path, err_str(rc));
            goto out;
        }
        res->work_gpu_s = x < res->work_gpu_s ? x : res->work_gpu_s;
    }
    if ((rc = sim_world_bounds(run.w, sc->offers[sys->initial_offer].gpus, res->fleet.gpu_hours,
                               res->avg_jct, &bounds)) < 0) {
        fprintf(err, "castor simulate: %s: no completion time bound: %s\n", path, err_str(rc));
        goto out;
    }
    res->jct_bound = bounds.avg_jct;
    res->gpu_bound = bounds.gpu_hours;
    res->wall = cli_wall_now() - t0;
    rec->wall_seconds = res->wall;
    if (recp) {
        *recp = rec;
        rec = NULL;
    }
out:
    sim_record_free(rec);
    sim_run_close(&run);
    return rc;
}

/* The cost bound of one workload, shared by the n systems run on it (rs[0..n-1]): its least
 * GPU-seconds at the lowest price per GPU-hour any of them saw (the market is the same for all:
 * the longest run saw it). Under an offer's reclaim_free_s work may cost less (docs/fleet.md). */
static void workload_bound(struct run_result *const *rs, int n)
{
    double gpu_s = INFINITY, price = INFINITY;

    for (int k = 0; k < n; k++) {
        gpu_s = rs[k]->work_gpu_s < gpu_s ? rs[k]->work_gpu_s : gpu_s;
        price = rs[k]->fleet.min_gpu_price < price ? rs[k]->fleet.min_gpu_price : price;
    }
    for (int k = 0; k < n; k++)
        rs[k]->bound = gpu_s / 3600.0 * price;
}

static void print_header(FILE *out)
{
    fprintf(out, "%-15s %-16s %9s %8s %8s %9s %7s %7s %7s %7s %7s %7s %7s\n", "workload", "system",
            "dollars", "avg JCT", "p99 JCT", "makespan", "GPU-h", "preempt", "lost s", "wait s",
            "$/bound", "JCT/bnd", "GPU/bnd");
}

/* value over its lower bound; 0 when the bound is not a positive finite number. */
static double over_bound(double value, double bound)
{
    return bound > 0 && isfinite(bound) ? value / bound : 0;
}

static void print_row(FILE *out, const char *wl, const char *sys, const struct run_result *r)
{
    fprintf(out, "%-15s %-16s %9.2f %8.1f %8.0f %9.0f %7.1f %7ld %7.0f %7.1f %7.2f %7.2f %7.2f%s\n",
            wl, sys, r->fleet.dollars, r->avg_jct, r->p99_jct, r->makespan, r->fleet.gpu_hours,
            r->fleet.preemptions, r->fleet.lost_work_s, r->fleet.mean_wait_s,
            over_bound(r->fleet.dollars, r->bound), over_bound(r->avg_jct, r->jct_bound),
            over_bound(r->fleet.gpu_hours, r->gpu_bound), r->unfinished ? " (unfinished)" : "");
}

static struct jv *result_json(const struct run_result *r)
{
    struct jv *o = jv_object();

    jv_set(o, "dollars", jv_number(r->fleet.dollars));
    jv_set(o, "avg_jct_s", jv_number(r->avg_jct));
    jv_set(o, "p99_jct_s", jv_number(r->p99_jct));
    jv_set(o, "makespan_s", jv_number(r->makespan));
    jv_set(o, "gpu_hours", jv_number(r->fleet.gpu_hours));
    jv_set(o, "preemptions", jv_integer(r->fleet.preemptions));
    jv_set(o, "restarts", jv_integer(r->fleet.restarts));
    jv_set(o, "lost_work_s", jv_number(r->fleet.lost_work_s));
    jv_set(o, "dollars_bound", jv_number(isfinite(r->bound) ? r->bound : 0));
    jv_set(o, "dollars_over_bound", jv_number(over_bound(r->fleet.dollars, r->bound)));
    jv_set(o, "mean_wait_s", jv_number(r->fleet.mean_wait_s));
    jv_set(o, "jct_bound_s", jv_number(isfinite(r->jct_bound) ? r->jct_bound : 0));
    jv_set(o, "jct_over_bound", jv_number(over_bound(r->avg_jct, r->jct_bound)));
    jv_set(o, "gpu_bound_h", jv_number(isfinite(r->gpu_bound) ? r->gpu_bound : 0));
    jv_set(o, "gpu_over_bound", jv_number(over_bound(r->fleet.gpu_hours, r->gpu_bound)));
    jv_set(o, "held_gpu_hours", jv_number(r->fleet.held_gpu_hours));
    jv_set(o, "deadlines", jv_integer(r->fleet.deadlines));
    jv_set(o, "deadlines_met", jv_integer(r->fleet.deadlines_met));
    jv_set(o, "launches", jv_integer(r->fleet.launches));
    jv_set(o, "capacity_errors", jv_integer(r->fleet.capacity_errs));
    jv_set(o, "quota_errors", jv_integer(r->fleet.quota_errs));
    jv_set(o, "unfinished", jv_integer(r->unfinished));
    return o;
}

/* The deadlines one system missed on each of the n workloads files[] (rs[i] the run on files[i];
 * the first SC_MISSED_MAX of each), as a JSON list of {workload, job, deadline_s, jct_s}, jct_s
 * null for a job left unfinished. */
static struct jv *missed_json(const struct run_result *rs, int n, char *const *files)
{
    struct jv *list = jv_array();

    for (int i = 0; i < n; i++) {
        const char *slash = strrchr(files[i], '/');

        for (int k = 0; k < rs[i].nmissed; k++) {
            struct jv *o = jv_object();

            jv_set(o, "workload", jv_string(slash ? slash + 1 : files[i]));
            jv_set(o, "job", jv_string(rs[i].missed[k].name));
            jv_set(o, "deadline_s", jv_number(rs[i].missed[k].deadline));
            jv_set(o, "jct_s",
                   rs[i].missed[k].jct >= 0 ? jv_number(rs[i].missed[k].jct) : jv_null());
            jv_push(list, o);
        }
    }
    return list;
}

/* Mean of the per-workload results of one system (sums for counts, means for the rest). */
static void result_mean(const struct run_result *rs, int n, struct run_result *m)
{
    memset(m, 0, sizeof(*m));
    for (int i = 0; i < n; i++) {
        m->fleet.dollars += rs[i].fleet.dollars / n;
        m->fleet.gpu_hours += rs[i].fleet.gpu_hours / n;
        m->fleet.preemptions += rs[i].fleet.preemptions;
        m->fleet.restarts += rs[i].fleet.restarts;
        m->fleet.lost_work_s += rs[i].fleet.lost_work_s / n;
        m->fleet.mean_wait_s += rs[i].fleet.mean_wait_s / n;
        m->fleet.held_gpu_hours += rs[i].fleet.held_gpu_hours / n;
        m->fleet.deadlines += rs[i].fleet.deadlines;
        m->fleet.deadlines_met += rs[i].fleet.deadlines_met;
        m->fleet.launches += rs[i].fleet.launches;
        m->fleet.capacity_errs += rs[i].fleet.capacity_errs;
        m->fleet.quota_errs += rs[i].fleet.quota_errs;
        m->avg_jct += rs[i].avg_jct / n;
        m->p99_jct += rs[i].p99_jct / n;
        m->makespan += rs[i].makespan / n;
        m->bound += rs[i].bound / n;
        m->jct_bound += rs[i].jct_bound / n;
        m->gpu_bound += rs[i].gpu_bound / n;
        m->unfinished += rs[i].unfinished;
    }
}

/* When castor's means (d) cannot be set against system name's (r): a run that left jobs
 * unfinished (its average JCT covers only the jobs that finished, 0 when none did, and its dollars
 * stop at the year's end), or nothing billed to divide by. Writes why and returns 1; else 0. */
static int compared(FILE *out, const char *name, const struct run_result *r,
                    const struct run_result *d)
{
    if (d->unfinished || r->unfinished) {
        fprintf(out, "castor against %s: not compared (%s left jobs unfinished)\n", name,
                d->unfinished ? "castor" : name);
        return 1;
    }
    if (!(r->fleet.dollars > 0)) {
        fprintf(out, "castor against %s: not compared (%s billed nothing)\n", name, name);
        return 1;
    }
    return 0;
}

int cli_simulate_scenario(int argc, char **argv, FILE *out, FILE *err)
{
    const char *path = NULL, *workload = NULL, *json = NULL, *report = NULL, *value = NULL;
    const char *profiles = CASTOR_DATADIR "/profiles";
    int compare = 0, quiet = 0, status = 2, nfiles = 0, first, nsys, nrecs = 0;
    struct scenario *sc = NULL;
    struct error e = {0};
    const char *seed = NULL;
    double v;
    char buf[768], **files = NULL, **apps = NULL;
    struct run_result *res = NULL;
    struct sim_record **recs = NULL;
    struct jv *root = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            scenario_usage(out);
            return 0;
        } else if (strcmp(a, "--compare") == 0) {
            compare = 1;
        } else if (strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (i + 1 < argc && strcmp(a, "--scenario") == 0) {
            path = argv[++i];
        } else if (i + 1 < argc && strcmp(a, "--workload") == 0) {
            workload = argv[++i];
        } else if (i + 1 < argc && strcmp(a, "--value") == 0) {
            value = argv[++i];
        } else if (i + 1 < argc && strcmp(a, "--seed") == 0) {
            seed = argv[++i];
        } else if (i + 1 < argc && strcmp(a, "--profiles") == 0) {
            profiles = argv[++i];
        } else if (i + 1 < argc && strcmp(a, "--json") == 0) {
            json = argv[++i];
        } else if (i + 1 < argc && strcmp(a, "--report") == 0) {
            report = argv[++i];
        } else {
            fprintf(err, "castor simulate: unknown or incomplete option \"%s\" with --scenario\n",
                    a);
            scenario_usage(err);
            return 2;
        }
    }
    if (!path) {
        scenario_usage(err);
        return 2;
    }
    if (scenario_load(path, &sc, &e) < 0) {
        fprintf(err, "castor simulate: %s\n", err_format(&e, buf, sizeof(buf)));
        return 2;
    }
    if (workload)
        sc->workload = workload;
    /* castor's system is the last (scenario.h) */
    if (value &&
        cli_parse_double(value, 0.001, 1e6, &sc->systems[SCENARIO_SYSTEMS - 1].fcfg.value)) {
        fprintf(err, "castor simulate: --value \"%s\": dollars per job-hour, 0.001 to 1e6\n",
                value);
        goto out;
    }
    if (seed && (cli_parse_double(seed, 0, 2147483647, &v) || v != floor(v))) {
        fprintf(err, "castor simulate: --seed \"%s\": a whole number, 0 to 2147483647\n", seed);
        goto out;
    }
    if (seed)
        sc->seed = (uint64_t)v;
    if (!sc->workload) {
        fprintf(err, "castor simulate: %s: no workload (a workload key, or --workload)\n", path);
        goto out;
    }
    status = 1;
    if (cli_list_workloads(sc->workload, &files, &nfiles, err) < 0)
        goto out;
    apps = app_list(profiles);
    if (!apps || !apps[0]) {
        fprintf(err, "castor simulate: %s: no profiles found\n", profiles);
        goto out;
    }
    first = compare ? 0 : SCENARIO_SYSTEMS - 1;
    for (int k = first; k < SCENARIO_SYSTEMS; k++)
        if (sc->systems[k].initial_offer < 0) {
            fprintf(err,
                    "castor simulate: %s: --compare needs an on-demand and a spot offer (system "
                    "%s has none)\n",
                    path, sc->systems[k].name);
            status = 2;
            goto out;
        }
    nsys = SCENARIO_SYSTEMS - first;
    res = calloc((size_t)(nsys * nfiles), sizeof(*res));
    recs = calloc((size_t)(nsys * nfiles), sizeof(*recs));
    if (!res || !recs)
        goto out;
    if (!quiet)
        print_header(out);
    for (int i = 0; i < nfiles; i++) {
        struct run_result *rs[SCENARIO_SYSTEMS];

        for (int k = 0; k < nsys; k++) {
            rs[k] = &res[k * nfiles + i];
            if (run_system(sc, &sc->systems[first + k], profiles, files[i],
                           (const char *const *)apps, rs[k], report ? &recs[nrecs] : NULL, err) < 0)
                goto out;
            if (report)
                nrecs++;
        }
        /* the rows once every system ran: they share the workload's cost bound */
        workload_bound(rs, nsys);
        for (int k = 0; k < nsys && !quiet; k++) {
            const char *slash = strrchr(files[i], '/');

            print_row(out, slash ? slash + 1 : files[i], sc->systems[first + k].name, rs[k]);
            print_missed(out, rs[k]);
            fflush(out);
        }
    }
    if (!(root = jv_object()))
        goto out;
    fprintf(out, "\nmean over %d workload%s (preemptions: total)\n", nfiles, nfiles > 1 ? "s" : "");
    print_header(out);
    for (int k = 0; k < nsys; k++) {
        struct run_result m;
        struct jv *o;

        result_mean(&res[k * nfiles], nfiles, &m);
        print_row(out, "mean", sc->systems[first + k].name, &m);
        if (m.fleet.deadlines > 0)
            fprintf(out, "%-15s %-16s deadlines met: %d of %d\n", "", sc->systems[first + k].name,
                    m.fleet.deadlines_met, m.fleet.deadlines);
        o = result_json(&m);
        if (m.fleet.deadlines > 0)
            jv_set(o, "deadlines_missed", missed_json(&res[k * nfiles], nfiles, files));
        jv_set(root, sc->systems[first + k].name, o);
    }
    if (compare) {
        struct run_result a, b, d;

        result_mean(&res[0], nfiles, &a);
        result_mean(&res[1 * nfiles], nfiles, &b);
        result_mean(&res[3 * nfiles], nfiles, &d);
        fputc('\n', out);
        if (!compared(out, "fixed-on-demand", &a, &d))
            fprintf(out,
                    "castor against fixed-on-demand: dollars %.1f%% (target <= 35%%), average "
                    "JCT x%.3f (target <= 1.1)\n",
                    100 * d.fleet.dollars / a.fleet.dollars, d.avg_jct / a.avg_jct);
        if (!compared(out, "pollux-autoscale", &b, &d))
            fprintf(out,
                    "castor against pollux-autoscale: dollars %.1f%% fewer (target >= 25%%), "
                    "average JCT x%.3f (target <= 1)\n",
                    100 * (1 - d.fleet.dollars / b.fleet.dollars), d.avg_jct / b.avg_jct);
    }
    if (json && jv_write_path(root, json) < 0) {
        fprintf(err, "castor simulate: cannot write %s\n", json);
        goto out;
    }
    if (report && sim_report_write(recs, nrecs, report) < 0) {
        fprintf(err, "castor simulate: cannot write %s\n", report);
        goto out;
    }
    status = 0;
out:
    jv_free(root);
    for (int i = 0; i < nrecs; i++)
        sim_record_free(recs[i]);
    free(recs);
    free(res);
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
    app_list_free(apps);
    scenario_free(sc);
    return status;
}
