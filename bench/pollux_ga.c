/* pollux_ga.c: castor's Pollux policy (dynamic programming over replica counts, then a
 * placement) against a genetic algorithm in the style of the published policy's (pymoo NSGA-II,
 * population 100, 100 generations: SPEC section 5.5, reduced to its first objective), both
 * maximising policy_pollux_fitness. The snapshots come from real simulations (the controller's
 * loop over the sim world, castor's pollux deciding), and from tiny random worlds where the best
 * allocation can be enumerated, which shows the GA can find what the DP misses. The GA is this
 * benchmark's own code; nothing else uses it. --record writes the snapshots compared to a file and
 * --replay compares those of such a file instead of simulating: a change of the search that
 * changes its decisions would otherwise change the simulation, and so the snapshots it is judged
 * on. */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/sim_run.h"
#include "control/loop.h"
#include "policies/policy.h"
#include "sim/app.h"
#include "sim/workload.h"
#include "sim/world.h"
#include "util/error.h"
#include "util/json.h"

#include "ga_ref.h"
#include "snapshot_file.h"

#define TOL 1e-9            /* fitness differences below this are ties */
#define MAX_WINS_PRINTED 20 /* snapshots printed where a GA beat castor (the JSON has all) */

/* ---------------------------------------------------------------------------------------------
 * One comparison: castor's policy, the GA from the current allocation (several seeds), and the GA
 * given castor's answer as a second seed. */

#define MAX_SEEDS 16

struct cmp {
    int jobs;
    double current;        /* fitness of the current allocation */
    double castor;         /* fitness of castor's answer */
    double ga[MAX_SEEDS];  /* fitness of the GA's answer, per seed */
    double ga_dp;          /* the GA seeded with castor's answer too */
    double castor_s, ga_s; /* seconds: one castor decision, the mean GA run */
    int check_fail;        /* the GA's fitness disagreed with policy_pollux_fitness */
    int castor_infeasible; /* castor's answer had fitness -inf */
    int ga_dp_below;       /* the DP-seeded GA ended below castor's answer (a GA bug) */
    int castor_kept;       /* castor's answer is the current allocation */
};

static void print_row(FILE *f, const struct alloc *a, int j)
{
    int place[64], nodes = alloc_placement(a, j, place), k = 0;

    fputc('[', f);
    for (int i = 0; i < nodes && i < 64; i++) {
        fprintf(f, "%s%dx%d", i ? " " : "", a->node[(size_t)j * (size_t)a->width + (size_t)k],
                place[i]);
        k += place[i];
    }
    fputc(']', f);
}

/* Why two allocations differ, job by job: what it holds, castor's row, the GA's row. */
static void explain(FILE *f, const struct ga_ref_problem *pr, const struct alloc *castor,
                    const struct alloc *ga)
{
    const struct snapshot *s = pr->s;

    for (int j = 0; j < s->njobs; j++) {
        const struct snap_job *sj = &s->jobs[j];

        if (alloc_job_equal(castor, j, ga, j))
            continue;
        fprintf(f, "    %-16s model %d age %6.0f restarts %d penalty %.3f limit %2d  held ",
                sj->name, sj->has_model, s->now - sj->submit_time, sj->restarts, pr->pen[j],
                pr->maxr[j]);
        print_row(f, s->current, j);
        fprintf(f, "  castor ");
        print_row(f, castor, j);
        fprintf(f, "  ga ");
        print_row(f, ga, j);
        fputc('\n', f);
    }
}

static int explain_wins; /* --explain: print the rows of snapshots where a GA won */

static int compare_one(const struct policy_config *cfg, const struct snapshot *s, int nseeds,
                       uint64_t seed, struct cmp *c)
{
    struct ga_ref_problem pr;
    struct policy pol = {0};
    struct alloc *out = NULL, *dec = NULL;
    int width, rc, *seeds = NULL, *best = NULL;
    double t0;

    memset(c, 0, sizeof(*c));
    c->jobs = s->njobs;
    if ((rc = ga_ref_problem_init(&pr, cfg, s)) < 0)
        return rc;
    width = pr.J * pr.N;
    seeds = calloc(2 * (size_t)width, sizeof(int));
    best = calloc((size_t)width, sizeof(int));
    if (!seeds || !best || (rc = policy_new("pollux", cfg, &pol)) < 0 ||
        (rc = alloc_new(s->njobs, s->nnodes, s->current->width, &out)) < 0 ||
        (rc = alloc_new(s->njobs, s->nnodes, s->current->width, &dec)) < 0) {
        rc = rc < 0 ? rc : ERR_NOMEM;
        goto out;
    }
    c->current = policy_pollux_fitness(cfg, s, s->current);
    alloc_copy(out, s->current);
    t0 = ga_ref_now_seconds();
    if ((rc = policy_allocate(&pol, s, seed, out)) < 0)
        goto out;
    c->castor_s = ga_ref_now_seconds() - t0;
    c->castor = policy_pollux_fitness(cfg, s, out);
    c->castor_infeasible = !isfinite(c->castor);
    c->castor_kept = 1;
    for (int j = 0; j < s->njobs; j++)
        c->castor_kept &= alloc_job_equal(out, j, s->current, j);
    memcpy(seeds, pr.base_x, (size_t)width * sizeof(int));
    ga_ref_problem_encode(&pr, out, seeds + width);
    for (int k = 0; nseeds > 0 && k <= nseeds; k++) {
        struct ga_ref_stats st;
        double f;

        /* k < nseeds: from the current allocation alone; k == nseeds: with castor's answer */
        if ((rc = ga_ref_run(&pr, seeds, k < nseeds ? 1 : 2, seed * 1000003ULL + (uint64_t)k, best,
                             &st)) < 0 ||
            (rc = ga_ref_problem_decode(&pr, best, dec)) < 0)
            goto out;
        f = policy_pollux_fitness(cfg, s, dec);
        if (!(fabs(f - st.fitness) <= 1e-9 * fmax(1.0, fabs(f))))
            c->check_fail++;
        if (explain_wins && f > c->castor + TOL && (k == 0 || f > c->ga[0] + TOL)) {
            fprintf(stderr, "  t=%.0f: castor %.6f, GA (run %d) %.6f\n", s->now, c->castor, k, f);
            explain(stderr, &pr, out, dec);
        }
        if (k < nseeds) {
            c->ga[k] = f;
            c->ga_s += st.seconds / nseeds;
        } else {
            c->ga_dp = f;
            c->ga_dp_below = f < c->castor - TOL;
        }
    }
out:
    policy_free(&pol);
    alloc_free(out);
    alloc_free(dec);
    free(seeds);
    free(best);
    ga_ref_problem_free(&pr);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Results, gathered over snapshots. */

struct win {
    char workload[64];
    double time;
    int jobs;
    double castor, ga; /* the best GA seed */
};

struct tally {
    int snapshots, pairs, castor_ge_pairs, castor_ge_best, checks_failed, castor_infeasible;
    int dp_seeded_better, dp_seeded_below;
    int castor_kept, castor_kept_lost; /* castor kept the current allocation; and a GA won */
    double rel_sum, rel_worst;         /* (castor - GA) / |GA| over pairs */
    double rel_best_worst;             /* the same against the best seed */
    double dp_seeded_gain_max;         /* (GA from castor's answer - castor) / |castor| */
    double castor_s_sum, ga_s_sum;     /* seconds */
    double castor_sum;                 /* castor's fitness, summed over snapshots */
    double castor_s_max, ga_s_max;
    double jobs_sum;
    int jobs_max;
    struct win *wins; /* every snapshot where a GA beat castor */
    int nwins, wins_cap;
    int wins_over[3]; /* of those, by more than 1%, 5%, 10% */
};

static double rel_diff(double a, double b)
{
    return (a - b) / fmax(fabs(b), 1e-300);
}

static int tally_add(struct tally *t, const struct cmp *c, int nseeds, const char *workload,
                     double now)
{
    double best = -HUGE_VAL, r;

    t->snapshots++;
    t->jobs_sum += c->jobs;
    if (c->jobs > t->jobs_max)
        t->jobs_max = c->jobs;
    t->castor_s_sum += c->castor_s;
    t->castor_sum += c->castor;
    t->ga_s_sum += c->ga_s;
    t->castor_s_max = fmax(t->castor_s_max, c->castor_s);
    t->ga_s_max = fmax(t->ga_s_max, c->ga_s);
    t->checks_failed += c->check_fail;
    t->castor_infeasible += c->castor_infeasible;
    for (int k = 0; k < nseeds; k++) {
        t->pairs++;
        t->castor_ge_pairs += c->castor >= c->ga[k] - TOL;
        r = rel_diff(c->castor, c->ga[k]);
        t->rel_sum += r;
        if (t->pairs == 1 || r < t->rel_worst)
            t->rel_worst = r;
        best = fmax(best, c->ga[k]);
    }
    t->castor_ge_best += c->castor >= best - TOL;
    t->castor_kept += c->castor_kept;
    t->castor_kept_lost += c->castor_kept && best > c->castor + TOL;
    r = rel_diff(c->castor, best);
    if (t->snapshots == 1 || r < t->rel_best_worst)
        t->rel_best_worst = r;
    if (c->ga_dp > c->castor + TOL) {
        t->dp_seeded_better++;
        t->dp_seeded_gain_max = fmax(t->dp_seeded_gain_max, rel_diff(c->ga_dp, c->castor));
    }
    t->dp_seeded_below += c->ga_dp_below;
    if (best > c->castor + TOL) {
        struct win *w;

        if (t->nwins == t->wins_cap) {
            int cap = t->wins_cap ? 2 * t->wins_cap : 64;
            struct win *g = realloc(t->wins, (size_t)cap * sizeof(*g));

            if (!g)
                return ERR_NOMEM;
            t->wins = g;
            t->wins_cap = cap;
        }
        w = &t->wins[t->nwins++];
        r = rel_diff(best, c->castor);
        t->wins_over[0] += r > 0.01;
        t->wins_over[1] += r > 0.05;
        t->wins_over[2] += r > 0.10;

        snprintf(w->workload, sizeof(w->workload), "%s", workload);
        w->time = now;
        w->jobs = c->jobs;
        w->castor = c->castor;
        w->ga = best;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Snapshots of real simulations: the controller's loop with castor's pollux, every `every`-th
 * tick with at least 3 jobs compared. */

struct sim_ctx {
    const struct policy_config *cfg;
    const char *workload;
    int every, nseeds;
    long tick;
    struct tally *t;
    int verbose;
    FILE *record; /* --record: the snapshots compared are appended here */
};

/* Compares castor and the GA on one snapshot (the GA's seeds derived from tick) and tallies it. */
static int compare_and_tally(struct sim_ctx *sc, const struct snapshot *s, const char *workload,
                             long tick)
{
    struct cmp c;
    int rc;

    if ((rc = compare_one(sc->cfg, s, sc->nseeds, (uint64_t)tick, &c)) < 0)
        return rc;
    if ((rc = tally_add(sc->t, &c, sc->nseeds, workload, s->now)) < 0)
        return rc;
    if (sc->verbose) {
        double best = -HUGE_VAL;

        for (int k = 0; k < sc->nseeds; k++)
            best = fmax(best, c.ga[k]);
        fprintf(stderr, "%s t=%6.0f jobs %2d current %.9f castor %.9f ga %.9f ga+dp %.9f\n",
                workload, s->now, s->njobs, c.current, c.castor, best, c.ga_dp);
    }
    return 0;
}

static int on_tick(void *ctx, double now, const struct snapshot *s, const struct alloc *plan)
{
    struct sim_ctx *sc = ctx;
    int rc;

    (void)now;
    (void)plan;
    if (++sc->tick % sc->every != 0 || s->njobs < 3)
        return 0;
    if (sc->record && (rc = snapfile_write(sc->record, s, sc->workload, sc->tick)) < 0)
        return rc;
    return compare_and_tally(sc, s, sc->workload, sc->tick);
}

/* --replay: every snapshot of the file at path, in its order. 0, or -1 after saying why. */
static int replay_file(const char *path, struct sim_ctx *sc)
{
    FILE *f = fopen(path, "r");
    char *line = NULL, buf[768];
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, rc = 0;

    if (!f) {
        fprintf(stderr, "castor-bench-pollux-ga: %s: cannot open\n", path);
        return -1;
    }
    while (rc == 0 && (n = getline(&line, &cap, f)) > 0) {
        struct snapfile_snap sn;
        struct error e = {0};

        lineno++;
        if ((rc = snapfile_read(line, (size_t)n, path, lineno, &sn, &e)) < 0) {
            fprintf(stderr, "castor-bench-pollux-ga: %s\n", err_format(&e, buf, sizeof(buf)));
            break;
        }
        if ((rc = compare_and_tally(sc, &sn.s, sn.label, sn.tick)) < 0)
            fprintf(stderr, "castor-bench-pollux-ga: %s:%d: %s\n", path, lineno, err_str(rc));
        snapfile_free(&sn);
    }
    if (rc == 0 && ferror(f)) {
        fprintf(stderr, "castor-bench-pollux-ga: %s: read error\n", path);
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc < 0 ? -1 : 0;
}

static int run_workload(const char *path, const char *profiles, const char *const *apps,
                        struct sim_ctx *sc)
{
    struct sim_run_spec spec = {.path = path,
                                .apps = apps,
                                .cfg = {.nodes = 16,
                                        .gpus_per_node = 4,
                                        .model = tput_model_find("pollux"),
                                        .profiles = profiles},
                                .policy = "pollux",
                                .pcfg = sc->cfg,
                                .interval = 60,
                                .seed = 1};
    struct sim_run run;
    struct error e = {0};
    char buf[768];
    int rc;

    if ((rc = sim_run_open(&spec, &run, &e)) < 0) {
        fprintf(stderr, "castor-bench-pollux-ga: %s\n", err_format(&e, buf, sizeof(buf)));
        return rc;
    }
    sc->workload = run.wl->name;
    sc->tick = 0;
    run.l.record = on_tick;
    run.l.record_ctx = sc;
    rc = loop_run(&run.l, 366L * 24 * 3600 / 60);
    if (rc < 0)
        fprintf(stderr, "castor-bench-pollux-ga: %s: %s\n", path, err_str(rc));
    sim_run_close(&run);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Tiny worlds: 2 nodes of 4 GPUs, 3 or 4 jobs with random Pollux models and a random current
 * allocation (each job within its limit, one distributed job at most). Every GPU-count matrix is
 * enumerated, so the best fitness is known exactly. */

#define TINY_NODES 2
#define TINY_GPN 4
#define TINY_MAX_JOBS 4

struct tiny {
    struct snap_node nodes[TINY_NODES];
    struct snap_job jobs[TINY_MAX_JOBS];
    struct alloc *cur;
    struct snapshot s;
};

static int tiny_random(struct tiny *t, struct ga_ref_rng *r)
{
    int used[TINY_NODES] = {0}, spread = 0, J = 3 + ga_ref_rng_int(r, 2), rc;

    alloc_free(t->cur);
    t->cur = NULL;
    if ((rc = alloc_new(J, TINY_NODES, TINY_NODES * TINY_GPN, &t->cur)) < 0)
        return rc;
    for (int n = 0; n < TINY_NODES; n++)
        t->nodes[n].gpus = TINY_GPN;
    for (int j = 0; j < J; j++) {
        struct snap_job *sj = &t->jobs[j];
        int limit;

        memset(sj, 0, sizeof(*sj));
        sj->name = "tiny";
        sj->tput.ops = &tput_model_pollux;
        sj->tput.theta[0] = 0.01 * exp(3 * ga_ref_rng_unif(r));
        sj->tput.theta[1] = 1e-4 * exp(3 * ga_ref_rng_unif(r));
        sj->tput.theta[2] = 0.01 * exp(5 * ga_ref_rng_unif(r));
        sj->tput.theta[3] = 1e-3 * exp(4 * ga_ref_rng_unif(r));
        sj->tput.theta[4] = 0.005 * exp(4 * ga_ref_rng_unif(r));
        sj->tput.theta[5] = 1e-3 * exp(3 * ga_ref_rng_unif(r));
        sj->tput.theta[6] = 1 + 2 * ga_ref_rng_unif(r);
        sj->has_model = ga_ref_rng_unif(r) < 0.8;
        sj->grad = (struct grad_params){.sqr = ga_ref_rng_unif(r), .var = 10 * ga_ref_rng_unif(r)};
        sj->lim = (struct bsz_limits){.init_bsz = 64,
                                      .max_bsz = 64 * (1 + 31 * ga_ref_rng_unif(r)),
                                      .max_local = 256,
                                      .accumulation = 1};
        sj->max_profiled_replicas = ga_ref_rng_int(r, 5);
        sj->max_replicas = ga_ref_rng_unif(r) < 0.2 ? 2 : 0;
        sj->submit_time = 1e6 - 600 * ga_ref_rng_unif(r);
        sj->restarts = ga_ref_rng_int(r, 3);
        sj->attained_service = 1000 * ga_ref_rng_unif(r);
        limit = sj->max_profiled_replicas > 0 ? 2 * sj->max_profiled_replicas : 1;
        if (sj->max_replicas > 0 && sj->max_replicas < limit)
            limit = sj->max_replicas;
        alloc_clear_job(t->cur, j);
        for (int n = 0; n < TINY_NODES; n++) {
            int k = ga_ref_rng_int(r, TINY_GPN - used[n] + 1);

            if (k > limit - t->cur->count[j])
                k = limit - t->cur->count[j];
            if (n > 0 && t->cur->count[j] > 0 && spread)
                k = 0;
            if (k > 0 && ga_ref_rng_unif(r) < 0.5) {
                alloc_add(t->cur, j, n, k);
                used[n] += k;
            }
        }
        spread |= alloc_nodes_used(t->cur, j) > 1;
    }
    t->s = (struct snapshot){.now = 1e6,
                             .nnodes = TINY_NODES,
                             .nodes = t->nodes,
                             .njobs = J,
                             .jobs = t->jobs,
                             .current = t->cur};
    return 0;
}

static void tiny_enumerate(struct ga_ref_problem *pr, int *x, int i, int *used, double *best,
                           int *arg)
{
    if (i == pr->J) {
        double f = ga_ref_problem_fitness(pr, x);

        if (f > *best) {
            *best = f;
            memcpy(arg, x, (size_t)pr->J * (size_t)pr->N * sizeof(int));
        }
        return;
    }
    if (i >= TINY_MAX_JOBS) /* x holds TINY_MAX_JOBS rows; J never exceeds it */
        return;
    for (int a = 0; a + used[0] <= TINY_GPN; a++)
        for (int b = 0; b + used[1] <= TINY_GPN; b++) {
            x[i * 2] = a;
            x[i * 2 + 1] = b;
            used[0] += a;
            used[1] += b;
            tiny_enumerate(pr, x, i + 1, used, best, arg);
            used[0] -= a;
            used[1] -= b;
        }
}

struct tiny_tally {
    int worlds, dp_opt, ga_opt, ga_dp_opt, ga_beats_dp, ga_dp_below, checks_failed;
    double dp_gap_worst, dp_gap_sum; /* (best - castor) / best */
};

static int run_tiny(int count, const struct policy_config *cfg, struct tiny_tally *tt)
{
    struct tiny t = {0};
    struct ga_ref_rng r = {20240601};
    int rc = 0;

    memset(tt, 0, sizeof(*tt));
    for (int w = 0; w < count; w++) {
        struct ga_ref_problem pr;
        struct cmp c;
        int x[TINY_MAX_JOBS * TINY_NODES], arg[TINY_MAX_JOBS * TINY_NODES], used[2] = {0, 0};
        double best = -HUGE_VAL, gap;
        struct alloc *dec = NULL;

        if ((rc = tiny_random(&t, &r)) < 0 || (rc = ga_ref_problem_init(&pr, cfg, &t.s)) < 0)
            break;
        tiny_enumerate(&pr, x, 0, used, &best, arg);
        /* the enumeration's best, checked against policy_pollux_fitness */
        if ((rc = alloc_new(t.s.njobs, TINY_NODES, TINY_NODES * TINY_GPN, &dec)) < 0 ||
            (rc = ga_ref_problem_decode(&pr, arg, dec)) < 0) {
            alloc_free(dec);
            ga_ref_problem_free(&pr);
            break;
        }
        if (!(fabs(policy_pollux_fitness(cfg, &t.s, dec) - best) <= 1e-9 * fmax(1, fabs(best))))
            tt->checks_failed++;
        alloc_free(dec);
        ga_ref_problem_free(&pr);
        if ((rc = compare_one(cfg, &t.s, 1, (uint64_t)w + 1, &c)) < 0)
            break;
        tt->worlds++;
        tt->checks_failed += c.check_fail;
        tt->dp_opt += c.castor >= best - TOL;
        tt->ga_opt += c.ga[0] >= best - TOL;
        tt->ga_dp_opt += c.ga_dp >= best - TOL;
        tt->ga_beats_dp += c.ga[0] > c.castor + TOL;
        tt->ga_dp_below += c.ga_dp_below;
        gap = (best - c.castor) / fabs(best);
        tt->dp_gap_sum += gap;
        tt->dp_gap_worst = fmax(tt->dp_gap_worst, gap);
    }
    alloc_free(t.cur);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Output. */

/* Largest GA gain first. */
static int win_cmp(const void *a, const void *b)
{
    const struct win *x = a, *y = b;
    double gx = rel_diff(x->ga, x->castor), gy = rel_diff(y->ga, y->castor);

    return gx > gy ? -1 : gx < gy;
}

static void print_report(const struct tally *t, const struct tiny_tally *tt, int nseeds, int every,
                         const char *replay)
{
    printf("castor-bench-pollux-ga: castor's pollux (DP + placement) against a GA in the style of "
           "the reference\n(population %d, %d generations, seeded with the current allocation; "
           "%d seeds per snapshot)\n\n",
           GA_POP, GA_GENS, nseeds);
    if (replay)
        printf("snapshots replayed from %s\n", replay);
    else
        printf("simulated snapshots (16 nodes x 4 GPUs, every %d%s tick with >= 3 jobs)\n", every,
               every == 1   ? "st"
               : every == 2 ? "nd"
               : every == 3 ? "rd"
                            : "th");
    printf("  snapshots                         %d (jobs: mean %.1f, max %d)\n", t->snapshots,
           t->snapshots ? t->jobs_sum / t->snapshots : 0.0, t->jobs_max);
    printf("  castor's fitness, mean            %.9f\n",
           t->snapshots ? t->castor_sum / t->snapshots : 0.0);
    if (nseeds == 0) { /* castor alone: its fitness and its time */
        printf("  time per decision, castor         mean %.3f ms, max %.3f ms\n",
               t->snapshots ? 1e3 * t->castor_s_sum / t->snapshots : 0.0, 1e3 * t->castor_s_max);
        return;
    }
    printf("  castor >= GA (tol %.0e), per run   %d / %d (%.1f%%)\n", TOL, t->castor_ge_pairs,
           t->pairs, t->pairs ? 100.0 * t->castor_ge_pairs / t->pairs : 0.0);
    printf("  castor >= best of %d GA seeds      %d / %d (%.1f%%)\n", nseeds, t->castor_ge_best,
           t->snapshots, t->snapshots ? 100.0 * t->castor_ge_best / t->snapshots : 0.0);
    printf("  (castor - GA) / GA, mean          %+.4f%%\n",
           t->pairs ? 100.0 * t->rel_sum / t->pairs : 0.0);
    printf("  (castor - GA) / GA, worst run     %+.4f%%\n", 100.0 * t->rel_worst);
    printf("  (castor - best GA) / best, worst  %+.4f%%\n", 100.0 * t->rel_best_worst);
    printf("  GA seeded with castor's answer:   improves on it in %d / %d snapshots (max "
           "+%.4f%%)\n",
           t->dp_seeded_better, t->snapshots, 100.0 * t->dp_seeded_gain_max);
    printf("  castor kept the current allocation %d times (a GA beat it in %d of them)\n",
           t->castor_kept, t->castor_kept_lost);
    printf("  time per decision, castor         mean %.3f ms, max %.3f ms\n",
           t->snapshots ? 1e3 * t->castor_s_sum / t->snapshots : 0.0, 1e3 * t->castor_s_max);
    printf("  time per decision, GA             mean %.1f ms, max %.1f ms\n",
           t->snapshots ? 1e3 * t->ga_s_sum / t->snapshots : 0.0, 1e3 * t->ga_s_max);
    printf("  checks: GA fitness = policy_pollux_fitness failed %d, castor infeasible %d, "
           "DP-seeded GA below castor %d\n",
           t->checks_failed, t->castor_infeasible, t->dp_seeded_below);
    if (t->nwins) {
        struct win *sorted = malloc((size_t)t->nwins * sizeof(*sorted));

        printf("  a GA beat castor in %d snapshots: by > 1%% in %d, > 5%% in %d, > 10%% in %d\n",
               t->nwins, t->wins_over[0], t->wins_over[1], t->wins_over[2]);
        if (sorted) {
            memcpy(sorted, t->wins, (size_t)t->nwins * sizeof(*sorted));
            qsort(sorted, (size_t)t->nwins, sizeof(*sorted), win_cmp);
            printf("  the largest (all in --json):\n");
            for (int k = 0; k < t->nwins && k < MAX_WINS_PRINTED; k++)
                printf("    %s t=%.0f s, %d jobs: castor %.6f, GA %.6f (%+.2f%%)\n",
                       sorted[k].workload, sorted[k].time, sorted[k].jobs, sorted[k].castor,
                       sorted[k].ga, 100.0 * rel_diff(sorted[k].ga, sorted[k].castor));
            free(sorted);
        }
    } else {
        printf("  the GA never beat castor\n");
    }
    printf("\ntiny random worlds (2 nodes x 4 GPUs, 3-4 jobs; the best found by enumeration)\n");
    printf("  worlds                            %d\n", tt->worlds);
    printf("  castor optimal                    %d (%.1f%%)\n", tt->dp_opt,
           tt->worlds ? 100.0 * tt->dp_opt / tt->worlds : 0.0);
    printf("  GA optimal (from current)         %d (%.1f%%)\n", tt->ga_opt,
           tt->worlds ? 100.0 * tt->ga_opt / tt->worlds : 0.0);
    printf("  GA optimal (seeded with castor)   %d (%.1f%%)\n", tt->ga_dp_opt,
           tt->worlds ? 100.0 * tt->ga_dp_opt / tt->worlds : 0.0);
    printf("  GA (from current) beats castor    %d\n", tt->ga_beats_dp);
    printf("  castor below the best: mean %.4f%%, worst %.4f%%\n",
           tt->worlds ? 100.0 * tt->dp_gap_sum / tt->worlds : 0.0, 100.0 * tt->dp_gap_worst);
    printf("  checks: fitness mismatches %d, DP-seeded GA below castor %d\n", tt->checks_failed,
           tt->ga_dp_below);
}

static int write_json(const char *path, const struct tally *t, const struct tiny_tally *tt,
                      int nseeds)
{
    struct jv *root = jv_object(), *sim = jv_object(), *tiny = jv_object(), *wins = jv_array();
    int rc;

    jv_set(root, "ga",
           jv_string("population 100, 100 generations, 100 offspring, seeded with "
                     "the current allocation"));
    jv_set(root, "seeds", jv_integer(nseeds));
    jv_set(root, "tolerance", jv_number(TOL));
    jv_set(sim, "snapshots", jv_integer(t->snapshots));
    jv_set(sim, "jobs_mean", jv_number(t->snapshots ? t->jobs_sum / t->snapshots : 0.0));
    jv_set(sim, "jobs_max", jv_integer(t->jobs_max));
    jv_set(sim, "castor_fitness_mean",
           jv_number(t->snapshots ? t->castor_sum / t->snapshots : 0.0));
    jv_set(sim, "runs", jv_integer(t->pairs));
    jv_set(sim, "castor_at_least_ga_runs", jv_integer(t->castor_ge_pairs));
    jv_set(sim, "castor_at_least_best_ga_snapshots", jv_integer(t->castor_ge_best));
    jv_set(sim, "rel_diff_mean", jv_number(t->pairs ? t->rel_sum / t->pairs : 0.0));
    jv_set(sim, "rel_diff_worst", jv_number(t->rel_worst));
    jv_set(sim, "rel_diff_best_worst", jv_number(t->rel_best_worst));
    jv_set(sim, "ga_seeded_with_castor_improves", jv_integer(t->dp_seeded_better));
    jv_set(sim, "ga_seeded_with_castor_gain_max", jv_number(t->dp_seeded_gain_max));
    jv_set(sim, "castor_kept_current", jv_integer(t->castor_kept));
    jv_set(sim, "castor_kept_current_ga_won", jv_integer(t->castor_kept_lost));
    jv_set(sim, "castor_ms_mean",
           jv_number(t->snapshots ? 1e3 * t->castor_s_sum / t->snapshots : 0.0));
    jv_set(sim, "castor_ms_max", jv_number(1e3 * t->castor_s_max));
    jv_set(sim, "ga_ms_mean", jv_number(t->snapshots ? 1e3 * t->ga_s_sum / t->snapshots : 0.0));
    jv_set(sim, "ga_ms_max", jv_number(1e3 * t->ga_s_max));
    jv_set(sim, "fitness_checks_failed", jv_integer(t->checks_failed));
    jv_set(sim, "castor_infeasible", jv_integer(t->castor_infeasible));
    for (int k = 0; k < t->nwins; k++) {
        struct jv *w = jv_object();

        jv_set(w, "workload", jv_string(t->wins[k].workload));
        jv_set(w, "time", jv_number(t->wins[k].time));
        jv_set(w, "jobs", jv_integer(t->wins[k].jobs));
        jv_set(w, "castor", jv_number(t->wins[k].castor));
        jv_set(w, "ga", jv_number(t->wins[k].ga));
        jv_push(wins, w);
    }
    jv_set(sim, "ga_wins_over_1pct", jv_integer(t->wins_over[0]));
    jv_set(sim, "ga_wins_over_5pct", jv_integer(t->wins_over[1]));
    jv_set(sim, "ga_wins_over_10pct", jv_integer(t->wins_over[2]));
    jv_set(sim, "ga_wins", wins);
    jv_set(root, "simulated", sim);
    jv_set(tiny, "worlds", jv_integer(tt->worlds));
    jv_set(tiny, "castor_optimal", jv_integer(tt->dp_opt));
    jv_set(tiny, "ga_optimal", jv_integer(tt->ga_opt));
    jv_set(tiny, "ga_seeded_with_castor_optimal", jv_integer(tt->ga_dp_opt));
    jv_set(tiny, "ga_beats_castor", jv_integer(tt->ga_beats_dp));
    jv_set(tiny, "castor_gap_mean", jv_number(tt->worlds ? tt->dp_gap_sum / tt->worlds : 0.0));
    jv_set(tiny, "castor_gap_worst", jv_number(tt->dp_gap_worst));
    jv_set(tiny, "fitness_checks_failed", jv_integer(tt->checks_failed));
    jv_set(root, "tiny", tiny);
    rc = root ? jv_write_path(root, path) : ERR_NOMEM;
    jv_free(root);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: castor-bench-pollux-ga [--json FILE] [--workload CSV]... [--every N]\n"
               "                              [--seeds K] [--tiny N] [--profiles DIR] "
               "[--verbose] [--explain]\n"
               "                              [--record FILE | --replay FILE]\n"
               "  --workload CSV   a trace to simulate (repeatable; default: the Pollux "
               "artifact's\n"
               "                   workload-1.csv and workload-2.csv under /work/shared/data)\n"
               "  --every N        compare every N-th tick (default 10)\n"
               "  --seeds K        GA runs per snapshot (default 3; 0: castor alone, timed)\n"
               "  --tiny N         tiny worlds checked by enumeration (default 300)\n"
               "  --record FILE    also write the snapshots compared to FILE (JSON lines)\n"
               "  --replay FILE    compare the snapshots of FILE instead of simulating\n");
}

int main(int argc, char **argv)
{
    static const char *default_workloads[] = {
        "/work/shared/data/pollux-artifact/simulator/workloads/workload-1.csv",
        "/work/shared/data/pollux-artifact/simulator/workloads/workload-2.csv"};
    const char *workloads[16], *json_path = NULL, *profiles = CASTOR_DATADIR "/profiles";
    const char *record_path = NULL, *replay_path = NULL;
    FILE *record = NULL;
    int nworkloads = 0, every = 10, nseeds = 3, ntiny = 300, verbose = 0, status = 1;
    struct policy_config cfg = {0};
    struct tally *t = calloc(1, sizeof(*t));
    struct tiny_tally tt;
    char **apps = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--verbose") == 0) {
            verbose = 1;
            continue;
        }
        if (strcmp(a, "--explain") == 0) {
            explain_wins = 1;
            continue;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        i++;
        if (strcmp(a, "--json") == 0)
            json_path = v;
        else if (strcmp(a, "--workload") == 0 && nworkloads < 16)
            workloads[nworkloads++] = v;
        else if (strcmp(a, "--profiles") == 0)
            profiles = v;
        else if (strcmp(a, "--every") == 0 && atoi(v) >= 1)
            every = atoi(v);
        else if (strcmp(a, "--seeds") == 0 && atoi(v) >= 0 && atoi(v) <= MAX_SEEDS)
            nseeds = atoi(v);
        else if (strcmp(a, "--tiny") == 0 && atoi(v) >= 0)
            ntiny = atoi(v);
        else if (strcmp(a, "--record") == 0)
            record_path = v;
        else if (strcmp(a, "--replay") == 0)
            replay_path = v;
        else {
            usage(stderr);
            return 2;
        }
    }
    if (nseeds == 0) /* castor alone: the tiny worlds are a comparison with the GA */
        ntiny = 0;
    if (record_path && replay_path) {
        usage(stderr);
        return 2;
    }
    if (nworkloads == 0)
        for (nworkloads = 0; nworkloads < 2; nworkloads++)
            workloads[nworkloads] = default_workloads[nworkloads];
    apps = app_list(profiles);
    if (!t || !apps || !apps[0]) {
        fprintf(stderr, "castor-bench-pollux-ga: %s: no profiles\n", profiles);
        goto out;
    }
    if (record_path && !(record = fopen(record_path, "w"))) {
        fprintf(stderr, "castor-bench-pollux-ga: %s: cannot create\n", record_path);
        goto out;
    }
    if (replay_path) {
        struct sim_ctx sc = {
            .cfg = &cfg, .every = every, .nseeds = nseeds, .t = t, .verbose = verbose};

        if (replay_file(replay_path, &sc) < 0)
            goto out;
    }
    for (int i = 0; !replay_path && i < nworkloads; i++) {
        struct sim_ctx sc = {.cfg = &cfg,
                             .every = every,
                             .nseeds = nseeds,
                             .t = t,
                             .verbose = verbose,
                             .record = record};

        if (run_workload(workloads[i], profiles, (const char *const *)apps, &sc) < 0)
            goto out;
    }
    if (record && fclose(record) != 0) {
        record = NULL;
        fprintf(stderr, "castor-bench-pollux-ga: %s: cannot write\n", record_path);
        goto out;
    }
    record = NULL;
    if (run_tiny(ntiny, &cfg, &tt) < 0) {
        fprintf(stderr, "castor-bench-pollux-ga: the tiny worlds failed\n");
        goto out;
    }
    print_report(t, &tt, nseeds, every, replay_path);
    if (json_path && write_json(json_path, t, &tt, nseeds) < 0) {
        fprintf(stderr, "castor-bench-pollux-ga: cannot write %s\n", json_path);
        goto out;
    }
    status = 0;
out:
    if (record)
        fclose(record);
    app_list_free(apps);
    if (t)
        free(t->wins);
    free(t);
    return status;
}
