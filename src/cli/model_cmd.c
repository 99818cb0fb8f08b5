/* model_cmd.c: `castor model`: fit throughput models to measured profiles and report their error;
 * and the embedded default, which does that for every bundled profile. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/accuracy.h"
#include "model/fit.h"
#include "sim/measured.h"
#include "util/json.h"

static const char *const model_default_profiles[] = {"cifar10", "imagenet", "bert", "deepspeech2",
                                                     "yolov3",  "ncf",      NULL};

/* One placement group: the rows with the same (nodes, replicas). */
struct group {
    int nodes, replicas;
    size_t n;
    int held_out; /* none of its rows was in the fit */
    struct accuracy acc;
};

struct fit_run {
    struct measured *m;
    const struct tput_model_ops *ops;
    unsigned train;
    struct tput_params tp;
    struct fit_report rep;
    struct profile prof;
    struct accuracy overall, held_out;
    struct group *groups;
    size_t ngroups;
};

static int group_cmp(const void *a, const void *b)
{
    const struct group *x = a, *y = b;

    if (x->nodes != y->nodes)
        return x->nodes - y->nodes;
    return x->replicas - y->replicas;
}

static struct group *group_find(struct fit_run *r, int nodes, int replicas)
{
    for (size_t g = 0; g < r->ngroups; g++)
        if (r->groups[g].nodes == nodes && r->groups[g].replicas == replicas)
            return &r->groups[g];
    return NULL;
}

/* Fit, then the error per group, overall, and on rows not used in the fit. */
static int fit_run_do(struct fit_run *r)
{
    const struct tput_sample **picked = malloc(r->m->n * sizeof(*picked));
    double *scratch = malloc(r->m->n * sizeof(*scratch));
    size_t n;
    int rc;

    r->groups = calloc(r->m->n, sizeof(*r->groups));
    profile_init(&r->prof);
    if (!picked || !scratch || !r->groups) {
        rc = ERR_NOMEM;
        goto out;
    }
    if ((rc = measured_to_profile(r->m, r->train, &r->prof)) < 0 ||
        (rc = fit_tput(r->ops, &r->prof, &r->tp, &r->rep)) < 0)
        goto out;
    for (size_t i = 0; i < r->m->n; i++) {
        const struct measured_row *row = &r->m->rows[i];
        struct group *g = group_find(r, row->s.x.nodes, row->s.x.replicas);

        if (!g) {
            g = &r->groups[r->ngroups++];
            g->nodes = row->s.x.nodes;
            g->replicas = row->s.x.replicas;
            g->held_out = 1;
        }
        if (row->source & r->train)
            g->held_out = 0;
    }
    qsort(r->groups, r->ngroups, sizeof(*r->groups), group_cmp);
    for (size_t gi = 0; gi < r->ngroups; gi++) {
        struct group *g = &r->groups[gi];

        n = 0;
        for (size_t i = 0; i < r->m->n; i++)
            if (r->m->rows[i].s.x.nodes == g->nodes && r->m->rows[i].s.x.replicas == g->replicas)
                picked[n++] = &r->m->rows[i].s;
        g->n = n;
        accuracy_eval(&r->tp, picked, n, scratch, &g->acc);
    }
    for (size_t i = 0; i < r->m->n; i++)
        picked[i] = &r->m->rows[i].s;
    accuracy_eval(&r->tp, picked, r->m->n, scratch, &r->overall);
    n = 0;
    for (size_t i = 0; i < r->m->n; i++)
        if (!(r->m->rows[i].source & r->train))
            picked[n++] = &r->m->rows[i].s;
    r->held_out.n = 0;
    if (n)
        accuracy_eval(&r->tp, picked, n, scratch, &r->held_out);
out:
    free(picked);
    free(scratch);
    return rc;
}

static void fit_run_free(struct fit_run *r)
{
    profile_free(&r->prof);
    free(r->groups);
}

static void fit_run_print(const struct fit_run *r, FILE *out)
{
    fprintf(out, "profile %s: %zu measurements, %zu configurations fitted (%s)\n", r->m->name,
            r->m->n, r->prof.n,
            r->train == MEASURED_PLACEMENTS ? "placements.csv only" : "all rows");
    fprintf(out, "model %s: %s\n", r->ops->name, r->ops->summary);
    fprintf(out, "parameters:\n");
    for (int k = 0; k < r->ops->nparams; k++)
        fprintf(out, "  %-10s %.6g\n", r->ops->param_names[k], r->tp.theta[k]);
    fprintf(out, "fit: loss %.5f, rmsle compute %.4f, rmsle step %.4f, %d evaluations, %d pinned\n",
            r->rep.loss, r->rep.rmsle_acc, r->rep.rmsle_opt, r->rep.evals, r->rep.pinned);
    fprintf(out, "relative error of predicted step time, per placement group:\n");
    fprintf(out, "  %5s %8s %5s %8s %8s %8s\n", "nodes", "replicas", "rows", "median", "p90",
            "max");
    for (size_t g = 0; g < r->ngroups; g++) {
        const struct group *gr = &r->groups[g];

        fprintf(out, "  %5d %8d %5zu %7.1f%% %7.1f%% %7.1f%%%s\n", gr->nodes, gr->replicas, gr->n,
                100 * gr->acc.median, 100 * gr->acc.p90, 100 * gr->acc.max,
                gr->held_out ? "  (not fitted)" : "");
    }
    fprintf(out, "all rows: median %.1f%%, p90 %.1f%%\n", 100 * r->overall.median,
            100 * r->overall.p90);
    if (r->held_out.n)
        fprintf(out, "rows not fitted (%zu): median %.1f%%, p90 %.1f%%\n", r->held_out.n,
                100 * r->held_out.median, 100 * r->held_out.p90);
}

static struct jv *accuracy_json(const struct accuracy *a)
{
    struct jv *o = jv_object();

    jv_set(o, "rows", jv_integer((long long)a->n));
    jv_set(o, "median", jv_number(a->median));
    jv_set(o, "p90", jv_number(a->p90));
    jv_set(o, "max", jv_number(a->max));
    return o;
}

static int fit_run_json(const struct fit_run *r, FILE *out)
{
    struct jv *o = jv_object(), *params = jv_object(), *fit = jv_object(), *groups = jv_array();
    int rc;

    jv_set(o, "profile", jv_string(r->m->name));
    jv_set(o, "model", jv_string(r->ops->name));
    jv_set(o, "train", jv_string(r->train == MEASURED_PLACEMENTS ? "placements" : "all"));
    for (int k = 0; k < r->ops->nparams; k++)
        jv_set(params, r->ops->param_names[k], jv_number(r->tp.theta[k]));
    jv_set(o, "params", params);
    jv_set(fit, "loss", jv_number(r->rep.loss));
    jv_set(fit, "rmsle_compute", jv_number(r->rep.rmsle_acc));
    jv_set(fit, "rmsle_step", jv_number(r->rep.rmsle_opt));
    jv_set(fit, "evaluations", jv_integer(r->rep.evals));
    jv_set(fit, "pinned", jv_integer(r->rep.pinned));
    jv_set(fit, "configurations", jv_integer((long long)r->prof.n));
    jv_set(o, "fit", fit);
    for (size_t g = 0; g < r->ngroups; g++) {
        struct jv *gj = accuracy_json(&r->groups[g].acc);

        jv_set(gj, "nodes", jv_integer(r->groups[g].nodes));
        jv_set(gj, "replicas", jv_integer(r->groups[g].replicas));
        jv_set(gj, "fitted", jv_string(r->groups[g].held_out ? "no" : "yes"));
        jv_push(groups, gj);
    }
    jv_set(o, "groups", groups);
    jv_set(o, "all", accuracy_json(&r->overall));
    if (r->held_out.n)
        jv_set(o, "not_fitted", accuracy_json(&r->held_out));
    rc = o ? jv_write(o, out) : ERR_NOMEM;
    jv_free(o);
    return rc;
}

static void model_usage(FILE *f)
{
    fprintf(f,
            "usage: castor model fit <profile-dir> [--model NAME] [--train placements|all] "
            "[--json]\n"
            "       castor model list\n"
            "\n"
            "<profile-dir> holds placements.csv (placement,local_bsz,step_time,sync_time) and\n"
            "optionally scalability.csv (num_nodes,num_replicas,local_bsz,step_time,sync_time).\n"
            "--model   the throughput model (default: %s; `castor model list`)\n"
            "--train   fit on placements.csv only, or on all rows (default: all)\n"
            "--json    print the parameters and errors as JSON\n",
            tput_models[0]->name);
}

static int model_fit(int argc, char **argv, FILE *out, FILE *err)
{
    struct fit_run r = {.ops = tput_models[0], .train = MEASURED_PLACEMENTS | MEASURED_SCALABILITY};
    const char *dir = NULL;
    struct error e = {0};
    char buf[768];
    int json = 0, rc;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
            r.ops = tput_model_find(argv[++i]);
            if (!r.ops) {
                fprintf(err, "castor model fit: unknown throughput model \"%s\"\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--train") == 0 && i + 1 < argc) {
            i++;
            if (strcmp(argv[i], "placements") == 0) {
                r.train = MEASURED_PLACEMENTS;
            } else if (strcmp(argv[i], "all") != 0) {
                fprintf(err, "castor model fit: --train takes placements or all, not \"%s\"\n",
                        argv[i]);
                return 2;
            }
        } else if (argv[i][0] == '-' || dir) {
            fprintf(err, "castor model fit: unexpected argument \"%s\"\n", argv[i]);
            model_usage(err);
            return 2;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) {
        model_usage(err);
        return 2;
    }
    if ((rc = measured_load(dir, &r.m, &e)) < 0) {
        fprintf(err, "castor: %s\n", err_format(&e, buf, sizeof(buf)));
        return 1;
    }
    rc = fit_run_do(&r);
    if (rc < 0) {
        fprintf(err, "castor: %s: the fit failed: %s\n", dir, err_str(rc));
    } else if (json) {
        rc = fit_run_json(&r, out);
    } else {
        fit_run_print(&r, out);
    }
    fit_run_free(&r);
    measured_free(r.m);
    return rc < 0 ? 1 : 0;
}

int cli_model(int argc, char **argv, FILE *out, FILE *err)
{
    if (argc >= 2 && strcmp(argv[1], "fit") == 0)
        return model_fit(argc - 1, argv + 1, out, err);
    if (argc >= 2 && strcmp(argv[1], "list") == 0) {
        for (size_t i = 0; tput_models[i]; i++)
            fprintf(out, "%-8s %s%s\n", tput_models[i]->name, tput_models[i]->summary,
                    i == 0 ? " (default)" : "");
        return 0;
    }
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        model_usage(out);
        return 0;
    }
    model_usage(err);
    return 2;
}

int cli_default(FILE *out, FILE *err)
{
    char dir[4096], buf[768];
    int status = 0;

    fprintf(out, "castor %s: goodput models of the bundled profiles (%s/profiles)\n",
            CASTOR_VERSION, CASTOR_DATADIR);
    fprintf(out,
            "measured on AWS g4dn.12xlarge (4x T4 per node) by the Pollux authors (OSDI'21)\n\n");
    fprintf(out, "%-12s %-8s %12s %12s %14s %14s\n", "profile", "model", "in-sample", "in-sample",
            "extrapolation", "extrapolation");
    fprintf(out, "%-12s %-8s %12s %12s %14s %14s\n", "", "", "median", "p90", "median", "p90");
    for (size_t i = 0; model_default_profiles[i]; i++) {
        struct measured *m = NULL;
        struct error e = {0};

        snprintf(dir, sizeof(dir), "%s/profiles/%s", CASTOR_DATADIR, model_default_profiles[i]);
        if (measured_load(dir, &m, &e) < 0) {
            fprintf(err, "castor: %s\n", err_format(&e, buf, sizeof(buf)));
            status = 1;
            continue;
        }
        for (size_t k = 0; tput_models[k]; k++) {
            struct accuracy in, ex;

            if (measured_accuracy(m, tput_models[k], MEASURED_PLACEMENTS | MEASURED_SCALABILITY,
                                  MEASURED_PLACEMENTS | MEASURED_SCALABILITY, NULL, &in) < 0 ||
                measured_accuracy(m, tput_models[k], MEASURED_PLACEMENTS, MEASURED_SCALABILITY,
                                  NULL, &ex) < 0) {
                fprintf(err, "castor: %s: the %s fit failed\n", dir, tput_models[k]->name);
                status = 1;
                continue;
            }
            fprintf(out, "%-12s %-8s %11.1f%% %11.1f%% %13.1f%% %13.1f%%\n", m->name,
                    tput_models[k]->name, 100 * in.median, 100 * in.p90, 100 * ex.median,
                    100 * ex.p90);
        }
        measured_free(m);
    }
    fprintf(out,
            "\nin-sample: fit on all rows, predict them; extrapolation: fit on placements.csv\n"
            "(up to 4 nodes), predict scalability.csv (6 to 16 nodes).\n"
            "`castor model fit %s/profiles/<name>` shows one fit in full.\n",
            CASTOR_DATADIR);
    /* then the simulated fleet: castor against the other systems on one workload of the T4
     * market */
    {
        char *argv[] = {
            "simulate", "--scenario", CASTOR_CONFDIR "/scenarios/t4.yaml",        "--compare",
            "--quiet",  "--workload", CASTOR_DATADIR "/workloads/workload-3.csv", NULL};

        fprintf(out,
                "\nthe simulated fleet: workload 3 of the Pollux artifact on a simulated T4 "
                "market (%s/scenarios/t4.yaml)\n",
                CASTOR_CONFDIR);
        fflush(out);
        if (cli_simulate_scenario(7, argv, out, err) != 0)
            status = 1;
    }
    return status;
}
