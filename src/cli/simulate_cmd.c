/* simulate_cmd.c: `castor simulate`: run workloads on a simulated cluster under a policy, through
 * the controller's own loop, and report completion times. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/sim_run.h"
#include "control/loop.h"
#include "policies/policy.h"
#include "sim/app.h"
#include "sim/record.h"
#include "sim/report.h"
#include "sim/world.h"
#include "util/conf.h"
#include "util/json.h"

struct sim_opts {
    const char *workload;
    const char *policy;
    const char *profiles;
    const char *out;
    const char *report;
    const char *model;
    int nodes, gpus_per_node, interval, quiet;
    int unknown_lengths; /* 1: --job-lengths unknown */
    int families;        /* sim_families index: auto, on, off */
    double interference;
    uint64_t seed;
    struct policy_config pcfg;
};

static void simulate_usage(FILE *f)
{
    fprintf(
        f,
        "usage: castor simulate --workload <csv or folder> --policy <name> [options]\n"
        "       castor simulate --config FILE [options]\n"
        "\n"
        "  --config FILE         read the settings from a YAML file (keys below); options\n"
        "                        given on the command line override it\n"
        "  --workload PATH       a trace (name,time,application,num_replicas,batch_size), or a\n"
        "                        folder of them (every *.csv, in name order)\n"
        "  --policy NAME[,NAME]  pollux, optimus, tiresias or castor; several (comma-separated)\n"
        "                        run one after the other, for one report comparing them\n"
        "  --nodes N             cluster nodes (default 16)\n"
        "  --gpus-per-node G     GPUs per node (default 4; at most as many as the profiles were\n"
        "                        measured on per node: 4)\n"
        "  --interval S          seconds between scheduling decisions (default 60)\n"
        "  --seed N              the decide step's randomness (default 1)\n"
        "  --interference F      slowdown of distributed jobs sharing a node (default 0)\n"
        "  --p-mean P            pollux: the fitness power mean (default -1)\n"
        "  --tput-model NAME     how jobs model their throughput (default pollux)\n"
        "  --job-lengths K       declared (default): jobs declare how much they train, as with\n"
        "                        `samples` in a job spec; unknown: they do not, and castor's\n"
        "                        policy falls back to least attained service\n"
        "  --families F          auto (default): on under castor, off under the published\n"
        "                        policies; on: the jobs of one application are one model\n"
        "                        family, as with `family` in a job spec, and a job starts from\n"
        "                        what the earlier jobs of its family measured; off: each job\n"
        "                        learns alone\n"
        "  --profiles DIR        folder of measured profiles (default: bundled)\n"
        "  --out FILE            write the summary as JSON (jcts, avgs, mean; with several\n"
        "                        policies, one such object per policy name)\n"
        "  --report FILE         write a self-contained HTML report\n"
        "  --quiet               no per-job lines\n"
        "\n"
        "The --config file (config/simulate.yaml is an example with every key): every key is\n"
        "optional; relative paths in it are taken from the file's folder.\n"
        "  workload: PATH                   as --workload\n"
        "  policy: NAME                     as --policy (one name)\n"
        "  cluster:\n"
        "    nodes: N                       as --nodes (1 to 4096)\n"
        "    gpus_per_node: G               as --gpus-per-node (1 to 64; at most 4, the "
        "profiles')\n"
        "  interval: S                      as --interval (1 to 86400)\n"
        "  seed: N                          as --seed (0 to 2147483647)\n"
        "  interference: F                  as --interference (0 to 0.99)\n"
        "  tput_model: pollux|castor        as --tput-model\n"
        "  job_lengths: declared|unknown    as --job-lengths\n"
        "  families: auto|on|off            as --families\n"
        "  profiles: DIR                    as --profiles\n"
        "  out: FILE                        as --out\n"
        "  report: FILE                     as --report\n"
        "  pollux:\n"
        "    p_mean: P                      as --p-mean (-100 to 100)\n"
        "    restart_penalty: S             seconds a restart costs in pollux's objective\n"
        "                                   (1 to 3600, default 30; no option)\n"
        "A key the list does not have, a key given twice, a value of the wrong type or out of\n"
        "range, and a YAML syntax error stop the command before it runs, naming\n"
        "file:line:column.\n"
        "\n"
        "Exit status: 0 done, 1 the run failed (unreadable workload or profiles, a simulation\n"
        "error), 2 a bad command line or configuration file.\n");
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* The index of s in the NULL-terminated names into *out: 0, or -1 (and *out unchanged) when s is
 * none of them. */
static int parse_choice(const char *s, const char *const *names, int *out)
{
    for (int k = 0; names[k]; k++)
        if (strcmp(s, names[k]) == 0) {
            *out = k;
            return 0;
        }
    return -1;
}

/* The values of --job-lengths and job_lengths, by sim_opts.unknown_lengths. */
static const char *const sim_lengths[] = {"declared", "unknown", NULL};

/* The values of --families and families, by sim_opts.families. */
enum { SIM_FAMILIES_AUTO, SIM_FAMILIES_ON, SIM_FAMILIES_OFF };
static const char *const sim_families[] = {"auto", "on", "off", NULL};

/* What a configuration file leaves behind: the document (whose strings sim_opts borrows) and
 * the paths made absolute, or relative to the current folder, from the file's folder. */
struct sim_conf_mem {
    struct conf *doc;
    char *paths[4];
};

static void sim_conf_mem_free(struct sim_conf_mem *m)
{
    conf_free(m->doc);
    for (size_t i = 0; i < sizeof(m->paths) / sizeof(m->paths[0]); i++)
        free(m->paths[i]);
}

/* *path as written in the file at conf_path: unchanged when absolute or when the file is in the
 * current folder, else prefixed with the file's folder (the new string kept in *keep). */
static int sim_conf_path(const char *conf_path, const char **path, char **keep, struct error *e)
{
    const char *slash = strrchr(conf_path, '/');
    size_t dirlen, len;
    char *p;

    if ((*path)[0] == '/' || !slash)
        return 0;
    dirlen = (size_t)(slash - conf_path) + 1;
    len = dirlen + strlen(*path) + 1;
    p = malloc(len);
    if (!p)
        return err_set(e, ERR_NOMEM, conf_path, 0, 0, NULL);
    memcpy(p, conf_path, dirlen);
    strcpy(p + dirlen, *path);
    *keep = p;
    *path = p;
    return 0;
}

/*
 * Read the configuration file at path into *o (only on success; the keys it lacks keep their
 * values). The strings o then points to live in *mem until sim_conf_mem_free. Errors name file,
 * line, column and key in *e: syntax, unknown or duplicate keys, wrong types, out of range values,
 * unknown names.
 */
static int sim_conf_load(const char *path, struct sim_opts *o, struct sim_conf_mem *mem,
                         struct error *e)
{
    static const char *const keys[] = {
        "workload", "policy", "cluster", "interval", "seed",        "interference", "tput_model",
        "profiles", "out",    "report",  "pollux",   "job_lengths", "families",     NULL};
    static const char *const cluster_keys[] = {"nodes", "gpus_per_node", NULL};
    static const char *const pollux_keys[] = {"p_mean", "restart_penalty", NULL};
    const char *policies[8] = {NULL}, *models[8] = {NULL};
    static const char *const path_keys[4] = {"workload", "profiles", "out", "report"};
    struct sim_opts t = *o;
    const char **paths[4] = {&t.workload, &t.profiles, &t.out, &t.report};
    struct sim_conf_mem m = {0};
    const struct conf_node *root, *cluster = NULL, *pollux = NULL;
    long v;
    int rc, k;

    for (size_t i = 0; policy_registry[i] && i < 7; i++)
        policies[i] = policy_registry[i]->name;
    for (size_t i = 0; tput_models[i] && i < 7; i++)
        models[i] = tput_models[i]->name;
    if ((rc = conf_load(path, &m.doc, e)) < 0)
        goto out;
    root = m.doc->root;
    if ((rc = conf_check_keys(root, keys, e)) < 0 ||
        (rc = conf_get_section(root, "cluster", cluster_keys, &cluster, e)) < 0 ||
        (rc = conf_get_section(root, "pollux", pollux_keys, &pollux, e)) < 0)
        goto out;
    for (int i = 0; i < 4; i++) {
        if ((rc = conf_get_string(root, path_keys[i], paths[i], e)) < 0)
            goto out;
        if (rc == 1 && (rc = sim_conf_path(path, paths[i], &m.paths[i], e)) < 0)
            goto out;
    }
    if ((rc = conf_get_choice(root, "policy", policies, &k, e)) < 0)
        goto out;
    if (rc == 1)
        t.policy = policies[k];
    if ((rc = conf_get_choice(root, "tput_model", models, &k, e)) < 0)
        goto out;
    if (rc == 1)
        t.model = models[k];
    if ((rc = conf_get_choice(root, "job_lengths", sim_lengths, &k, e)) < 0)
        goto out;
    if (rc == 1)
        t.unknown_lengths = k;
    if ((rc = conf_get_choice(root, "families", sim_families, &k, e)) < 0)
        goto out;
    if (rc == 1)
        t.families = k;
    if (cluster && (rc = conf_get_long(cluster, "nodes", 1, 4096, &v, e)) != 0) {
        if (rc < 0)
            goto out;
        t.nodes = (int)v;
    }
    if (cluster && (rc = conf_get_long(cluster, "gpus_per_node", 1, 64, &v, e)) != 0) {
        if (rc < 0)
            goto out;
        t.gpus_per_node = (int)v;
    }
    if ((rc = conf_get_long(root, "interval", 1, 86400, &v, e)) != 0) {
        if (rc < 0)
            goto out;
        t.interval = (int)v;
    }
    if ((rc = conf_get_long(root, "seed", 0, 2147483647, &v, e)) != 0) {
        if (rc < 0)
            goto out;
        t.seed = (uint64_t)v;
    }
    if ((rc = conf_get_double(root, "interference", 0, 0.99, &t.interference, e)) < 0)
        goto out;
    if (pollux && (rc = conf_get_double(pollux, "p_mean", -100, 100, &t.pcfg.p_mean, e)) < 0)
        goto out;
    t.pcfg.p_mean_set |= pollux && rc == 1;
    if (pollux &&
        (rc = conf_get_double(pollux, "restart_penalty", 1, 3600, &t.pcfg.restart_penalty, e)) < 0)
        goto out;
    rc = 0;
    *o = t;
    *mem = m;
    memset(&m, 0, sizeof(m));
out:
    sim_conf_mem_free(&m);
    return rc;
}

struct progress {
    FILE *tty; /* NULL: no bar */
    double last_draw;
    double start_wall;
    const struct sim_world *w;
    struct sim_record *rec;
    int index, count;
};

static void progress_draw(struct progress *p, int final)
{
    int done = 0, n = sim_world_njobs(p->w), width = 30, fill;
    double wall = cli_wall_now() - p->start_wall, frac;

    for (int i = 0; i < n; i++)
        done += sim_job_done(sim_world_job(p->w, i));
    frac = n ? (double)done / n : 1.0;
    fill = (int)(frac * width);
    fprintf(p->tty, "\r[%d/%d] [%.*s%*s] %3d/%d jobs, simulated %.1f h, %.1f s", p->index + 1,
            p->count, fill, "##############################", width - fill, "", done, n,
            sim_world_now(p->w) / 3600.0, wall);
    if (frac > 0.05 && !final)
        fprintf(p->tty, ", about %.0f s left   ", wall / frac - wall);
    if (final)
        fprintf(p->tty, "%20s\n", "");
    fflush(p->tty);
}

static int on_tick(void *ctx, double now, const struct snapshot *s, const struct alloc *plan)
{
    struct progress *p = ctx;
    int rc;

    (void)now;
    (void)s;
    (void)plan;
    if ((rc = sim_record_sample(p->rec, p->w)) < 0)
        return rc;
    if (p->tty && cli_wall_now() - p->last_draw > 0.2) {
        p->last_draw = cli_wall_now();
        progress_draw(p, 0);
    }
    return 0;
}

/* Run one workload file; on success *out holds its record. */
static int simulate_one(const struct sim_opts *o, const char *path, const char *const *apps,
                        int index, int count, struct sim_record **out, FILE *err)
{
    struct sim_run_spec spec = {
        .path = path,
        .apps = apps,
        .cfg = {.nodes = o->nodes,
                .gpus_per_node = o->gpus_per_node,
                .interference = o->interference,
                .profiles = o->profiles,
                .model = tput_model_find(o->model),
                .unknown_lengths = o->unknown_lengths,
                .families = o->families == SIM_FAMILIES_ON ||
                            (o->families == SIM_FAMILIES_AUTO && strcmp(o->policy, "castor") == 0)},
        .policy = o->policy,
        .pcfg = &o->pcfg,
        .interval = o->interval,
        .seed = o->seed};
    struct sim_run run = {0};
    struct sim_record *rec = NULL;
    struct progress pr = {0};
    struct error e = {0};
    char buf[768];
    double t0 = cli_wall_now();
    int rc;

    if ((rc = sim_run_open(&spec, &run, &e)) < 0) {
        fprintf(err, "castor simulate: %s\n", err_format(&e, buf, sizeof(buf)));
        goto out;
    }
    if ((rc = sim_record_new(run.w, run.wl->name, o->policy, o->nodes * o->gpus_per_node, &rec)) <
        0) {
        fprintf(err, "castor simulate: %s\n", err_str(rc));
        goto out;
    }
    pr.tty = isatty(fileno(err)) ? err : NULL;
    pr.start_wall = t0;
    pr.w = run.w;
    pr.rec = rec;
    pr.index = index;
    pr.count = count;
    run.l.record = on_tick;
    run.l.record_ctx = &pr;
    /* a generous bound: a year of simulated time */
    rc = loop_run(&run.l, 366L * 24 * 3600 / o->interval);
    if (pr.tty)
        progress_draw(&pr, 1);
    if (rc < 0) {
        if (rc == ERR_AGAIN)
            fprintf(err,
                    "castor simulate: %s: jobs still unfinished after a year of simulated "
                    "time (a job the policy never runs?)\n",
                    path);
        else
            fprintf(err, "castor simulate: %s: the simulation stopped: %s\n", path, err_str(rc));
        goto out;
    }
    if (run.l.policy_errs)
        fprintf(err, "castor simulate: %s: the %s policy failed %d times (allocation kept)\n", path,
                o->policy, run.l.policy_errs);
    sim_record_finish(rec, run.w);
    rec->wall_seconds = cli_wall_now() - t0;
    *out = rec;
    rec = NULL;
out:
    sim_record_free(rec);
    sim_run_close(&run);
    return rc;
}

/* The artifact's summary shape for n runs of one policy: jcts, avgs, mean. */
static struct jv *summary_json(struct sim_record **recs, int n)
{
    struct jv *root = jv_object(), *jcts = jv_object(), *avgs = jv_object();
    double mean = 0;

    for (int i = 0; i < n; i++) {
        struct jv *one = jv_object();
        double avg, p99, mk;

        for (int j = 0; j < recs[i]->njobs; j++)
            jv_set(one, recs[i]->names[j], jv_number(recs[i]->jct[j]));
        jv_set(jcts, recs[i]->workload, one);
        sim_record_stats(recs[i], &avg, &p99, &mk);
        jv_set(avgs, recs[i]->workload, jv_number(avg));
        mean += avg / n;
    }
    jv_set(root, "jcts", jcts);
    jv_set(root, "avgs", avgs);
    jv_set(root, "mean", jv_number(mean));
    return root;
}

/* One policy: the artifact's shape; several: an object of them keyed by policy. */
static int write_summaries(struct sim_record **recs, int nfiles, int npol, const char *path)
{
    struct jv *root;
    int rc;

    if (npol == 1) {
        root = summary_json(recs, nfiles);
    } else {
        root = jv_object();
        for (int k = 0; k < npol; k++)
            jv_set(root, recs[k * nfiles]->policy, summary_json(recs + k * nfiles, nfiles));
    }
    rc = root ? jv_write_path(root, path) : ERR_NOMEM;
    jv_free(root);
    return rc;
}

/* Split a comma-separated list of policy names (at most 8) into names; returns how many. The
 * names point into a static copy of the list. */
static int split_policies(const char *list, const char *names[8])
{
    static char buf[256];
    int n = 0;

    snprintf(buf, sizeof(buf), "%s", list);
    for (char *t = strtok(buf, ","); t && n < 8; t = strtok(NULL, ","))
        names[n++] = t;
    return n;
}

int cli_simulate(int argc, char **argv, FILE *out, FILE *err)
{
    struct sim_opts o = {.policy = NULL,
                         .profiles = CASTOR_DATADIR "/profiles",
                         .model = "pollux",
                         .nodes = 16,
                         .gpus_per_node = 4,
                         .interval = 60,
                         .seed = 1};
    struct sim_record **recs = NULL;
    char **files = NULL, **apps = NULL;
    const char *pols[8];
    int nfiles = 0, npol = 0, nrecs = 0;
    int status = 2; /* 2 until the command line and --config are read, then 1 */
    struct sim_conf_mem mem = {0};
    const char *config = NULL;

    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--scenario") == 0)
            return cli_simulate_scenario(argc, argv, out, err);

    /* --config first (unless --help comes before anything the loop below rejects): the file
     * fills o, then the options on the command line override it */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            config = NULL;
            break;
        }
        if (strcmp(argv[i], "--quiet") == 0)
            continue;
        if (i + 1 >= argc || argv[i][0] != '-')
            break;
        if (strcmp(argv[i], "--config") == 0) {
            if (config) {
                fprintf(err, "castor simulate: --config given twice\n");
                goto out;
            }
            config = argv[i + 1];
        }
        i++;
    }
    if (config) {
        struct error e = {0};
        char buf[768];

        if (sim_conf_load(config, &o, &mem, &e) < 0) {
            fprintf(err, "castor simulate: %s\n", err_format(&e, buf, sizeof(buf)));
            goto out;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;

        if (strcmp(a, "--quiet") == 0) {
            o.quiet = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            simulate_usage(out);
            status = 0;
            goto out;
        }
        if (!v || a[0] != '-') {
            fprintf(err, "castor simulate: unexpected argument \"%s\"\n", a);
            simulate_usage(err);
            goto out;
        }
        i++;
        if (strcmp(a, "--config") == 0)
            continue; /* read above */
        if (strcmp(a, "--workload") == 0)
            o.workload = v;
        else if (strcmp(a, "--policy") == 0)
            o.policy = v;
        else if (strcmp(a, "--profiles") == 0)
            o.profiles = v;
        else if (strcmp(a, "--out") == 0)
            o.out = v;
        else if (strcmp(a, "--report") == 0)
            o.report = v;
        else if (strcmp(a, "--tput-model") == 0)
            o.model = v;
        else if (strcmp(a, "--job-lengths") == 0)
            bad = parse_choice(v, sim_lengths, &o.unknown_lengths);
        else if (strcmp(a, "--families") == 0)
            bad = parse_choice(v, sim_families, &o.families);
        else if (strcmp(a, "--nodes") == 0)
            bad = parse_int(v, 1, 4096, &o.nodes);
        else if (strcmp(a, "--gpus-per-node") == 0)
            bad = parse_int(v, 1, 64, &o.gpus_per_node);
        else if (strcmp(a, "--interval") == 0)
            bad = parse_int(v, 1, 86400, &o.interval);
        else if (strcmp(a, "--interference") == 0)
            bad = cli_parse_double(v, 0, 0.99, &o.interference);
        else if (strcmp(a, "--p-mean") == 0) {
            bad = cli_parse_double(v, -100, 100, &o.pcfg.p_mean);
            o.pcfg.p_mean_set = 1;
        } else if (strcmp(a, "--seed") == 0) {
            int s = 0;

            bad = parse_int(v, 0, 2147483647, &s);
            o.seed = (uint64_t)s;
        } else {
            fprintf(err, "castor simulate: unknown option \"%s\"\n", a);
            simulate_usage(err);
            goto out;
        }
        if (bad) {
            fprintf(err, "castor simulate: %s: bad value \"%s\"\n", a, v);
            goto out;
        }
    }
    if (!o.workload || !o.policy) {
        fprintf(err, "castor simulate: --workload and --policy are required (or the keys workload "
                     "and policy of a --config file)\n");
        simulate_usage(err);
        goto out;
    }
    npol = split_policies(o.policy, pols);
    for (int k = 0; k < npol; k++) {
        if (!policy_find(pols[k])) {
            fprintf(err, "castor simulate: unknown policy \"%s\" (one of", pols[k]);
            for (size_t i = 0; policy_registry[i]; i++)
                fprintf(err, "%s %s", i ? "," : "", policy_registry[i]->name);
            fprintf(err, ")\n");
            goto out;
        }
    }
    if (npol == 0) {
        fprintf(err, "castor simulate: --policy names no policy\n");
        goto out;
    }
    if (!tput_model_find(o.model)) {
        fprintf(err, "castor simulate: unknown throughput model \"%s\"\n", o.model);
        goto out;
    }
    status = 1;
    if (cli_list_workloads(o.workload, &files, &nfiles, err) < 0)
        goto out;
    apps = app_list(o.profiles);
    nrecs = nfiles * npol;
    recs = calloc((size_t)nrecs, sizeof(*recs));
    if (!apps || !recs || !apps[0]) {
        fprintf(err, "castor simulate: %s: no profiles found\n", o.profiles);
        goto out;
    }
    for (int k = 0; k < npol; k++) {
        struct sim_opts one = o;
        double mean = 0;

        one.policy = pols[k];
        for (int i = 0; i < nfiles; i++) {
            struct sim_record *r;
            double avg, p99, mk;

            if (simulate_one(&one, files[i], (const char *const *)apps, k * nfiles + i, nrecs,
                             &recs[k * nfiles + i], err) < 0)
                goto out;
            r = recs[k * nfiles + i];
            sim_record_stats(r, &avg, &p99, &mk);
            mean += avg / nfiles;
            if (!o.quiet) {
                fprintf(out, "# %s under %s: job completion times (s)\n", r->workload, r->policy);
                for (int j = 0; j < r->njobs; j++)
                    fprintf(out, "%-24s %-12s submitted %7.0f  jct %8.0f  restarts %d\n",
                            r->names[j], r->apps[j], r->submit[j], r->jct[j], r->restarts[j]);
            }
            fprintf(out,
                    "%s %s: average JCT %.2f s, p99 %.0f s, makespan %.0f s (%d jobs, %.2f s "
                    "wall)\n",
                    r->workload, r->policy, avg, p99, mk, r->njobs, r->wall_seconds);
        }
        if (nfiles > 1)
            fprintf(out, "%s: mean of the average JCTs over %d workloads: %.2f s\n", pols[k],
                    nfiles, mean);
    }
    if (o.out && write_summaries(recs, nfiles, npol, o.out) < 0) {
        fprintf(err, "castor simulate: cannot write %s\n", o.out);
        goto out;
    }
    if (o.report && sim_report_write(recs, nrecs, o.report) < 0) {
        fprintf(err, "castor simulate: cannot write %s\n", o.report);
        goto out;
    }
    status = 0;
out:
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    for (int i = 0; recs && i < nrecs; i++)
        sim_record_free(recs[i]);
    app_list_free(apps);
    free(files);
    free(recs);
    sim_conf_mem_free(&mem);
    return status;
}
