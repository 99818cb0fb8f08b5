/* model_bench.c: how well and how fast the throughput models fit the six measured profiles:
 * in-sample and extrapolation error per model, beside the published model's figures, and the time
 * of one fit and of one batch-size optimization. The README quotes its output. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/accuracy.h"
#include "model/bsz.h"
#include "model/fit.h"
#include "sim/measured.h"
#include "util/json.h"

struct bench_profile {
    const char *name;
    double init_bsz, max_bsz, max_local; /* the job's limits (Pollux artifact, section 6) */
    /* the extrapolation error of an independent fit of the published model (median, p90) */
    double ref_median, ref_p90;
};

static const struct bench_profile bench_profiles[] = {
    {"cifar10", 128, 4096, 1024, 0.098, 0.231}, {"imagenet", 200, 12800, 256, 0.059, 0.206},
    {"bert", 12, 384, 64, 0.038, 0.122},        {"deepspeech2", 20, 640, 80, 0.136, 0.401},
    {"yolov3", 8, 512, 8, 0.141, 0.419},        {"ncf", 256, 32768, 32768, 0.083, 0.217},
};
#define NPROFILES (sizeof(bench_profiles) / sizeof(bench_profiles[0]))

/* Targets for castor's default model on extrapolation. */
#define TARGET_MEDIAN 0.07
#define TARGET_P90 0.20

static double now_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct bench_result {
    struct accuracy in, ex;
    double fit_ms; /* median time of one fit on all rows */
    double bsz_us; /* median time of one batch-size optimization */
};

static int bench_one(const struct measured *m, const struct bench_profile *bp,
                     const struct tput_model_ops *ops, int reps, struct bench_result *out)
{
    const unsigned all = MEASURED_PLACEMENTS | MEASURED_SCALABILITY;
    struct grad_params gp = {.sqr = 1.0, .var = 20.0};
    struct bsz_limits lim = {.init_bsz = bp->init_bsz,
                             .max_bsz = bp->max_bsz,
                             .max_local = bp->max_local,
                             .accumulation = 1};
    struct tput_params tp;
    struct profile prof;
    double *t = calloc((size_t)reps, sizeof(double));
    int rc;

    if (!t)
        return ERR_NOMEM;
    if ((rc = measured_accuracy(m, ops, all, all, NULL, &out->in)) < 0 ||
        (rc = measured_accuracy(m, ops, MEASURED_PLACEMENTS, MEASURED_SCALABILITY, NULL,
                                &out->ex)) < 0)
        goto out;
    profile_init(&prof);
    if ((rc = measured_to_profile(m, all, &prof)) < 0)
        goto out_prof;
    for (int i = 0; i < reps; i++) {
        double t0 = now_seconds();

        if ((rc = fit_tput(ops, &prof, &tp, NULL)) < 0)
            goto out_prof;
        t[i] = now_seconds() - t0;
    }
    out->fit_ms = 1e3 * accuracy_quantile(t, (size_t)reps, 0.5);
    /* batch-size optimization: every (nodes, replicas) on up to 16 nodes of 4 GPUs, timed per
     * batch of calls to stay above the clock's resolution */
    for (int i = 0; i < reps; i++) {
        struct bsz_choice c;
        double t0 = now_seconds();
        int calls = 0;

        for (int n = 1; n <= 16; n++)
            for (int r = n; r <= 4 * n; r++, calls++)
                (void)bsz_optimize(&tp, &gp, &lim, n, r, &c);
        t[i] = (now_seconds() - t0) / calls;
    }
    out->bsz_us = 1e6 * accuracy_quantile(t, (size_t)reps, 0.5);
out_prof:
    profile_free(&prof);
out:
    free(t);
    return rc;
}

static struct jv *bench_acc_json(const struct accuracy *a)
{
    struct jv *o = jv_object();

    jv_set(o, "median", jv_number(a->median));
    jv_set(o, "p90", jv_number(a->p90));
    return o;
}

int main(int argc, char **argv)
{
    const char *data = CASTOR_DATADIR "/profiles", *json_path = NULL;
    struct bench_result res[NPROFILES][8];
    double fit_all[NPROFILES * 8], bsz_all[NPROFILES * 8];
    size_t nmodels = 0, nt = 0;
    int reps = 101, status = 0;
    struct jv *root = NULL;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            json_path = argv[++i];
        } else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
            data = argv[++i];
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1)
                reps = 1;
        } else {
            fprintf(stderr, "usage: castor-bench-model [--json FILE] [--data DIR] [--reps N]\n");
            return 2;
        }
    }
    while (tput_models[nmodels])
        nmodels++;
    for (size_t p = 0; p < NPROFILES; p++) {
        char dir[4096], buf[768];
        struct measured *m = NULL;
        struct error e = {0};

        snprintf(dir, sizeof(dir), "%s/%s", data, bench_profiles[p].name);
        if (measured_load(dir, &m, &e) < 0) {
            fprintf(stderr, "castor-bench-model: %s\n", err_format(&e, buf, sizeof(buf)));
            return 1;
        }
        for (size_t k = 0; k < nmodels; k++) {
            int rc = bench_one(m, &bench_profiles[p], tput_models[k], reps, &res[p][k]);

            if (rc < 0) {
                fprintf(stderr, "castor-bench-model: %s, model %s: %s\n", m->name,
                        tput_models[k]->name, err_str(rc));
                measured_free(m);
                return 1;
            }
            fit_all[nt] = res[p][k].fit_ms;
            bsz_all[nt++] = res[p][k].bsz_us;
        }
        measured_free(m);
    }

    printf("Relative error of predicted step time (median / p90), six measured profiles\n");
    printf("in-sample: fit on all rows, predict them; extrapolation: fit on placements.csv (<= 4 "
           "nodes), predict scalability.csv (6-16 nodes)\n\n");
    printf("%-12s", "profile");
    for (size_t k = 0; k < nmodels; k++)
        printf(" | %-8s in-sample   extrapolation", tput_models[k]->name);
    printf(" | published fit, extrapolation\n");
    for (size_t p = 0; p < NPROFILES; p++) {
        printf("%-12s", bench_profiles[p].name);
        for (size_t k = 0; k < nmodels; k++)
            printf(" | %5.1f%% / %5.1f%%  %5.1f%% / %5.1f%%", 100 * res[p][k].in.median,
                   100 * res[p][k].in.p90, 100 * res[p][k].ex.median, 100 * res[p][k].ex.p90);
        printf(" | %5.1f%% / %5.1f%%\n", 100 * bench_profiles[p].ref_median,
               100 * bench_profiles[p].ref_p90);
    }
    printf("\nChecks:\n");
    for (size_t k = 0; k < nmodels; k++) {
        const char *name = tput_models[k]->name;

        for (size_t p = 0; p < NPROFILES; p++) {
            const struct bench_result *r = &res[p][k];
            const struct bench_profile *bp = &bench_profiles[p];
            int ok;

            if (tput_models[k] == &tput_model_pollux) {
                ok = r->ex.median <= bp->ref_median + 0.02 && r->ex.p90 <= bp->ref_p90 + 0.02;
                printf("  %-8s %-12s extrapolation within 2 points of the published fit: %s\n",
                       name, bp->name, ok ? "yes" : "NO");
            } else {
                const struct bench_result *pub = NULL;

                for (size_t j = 0; j < nmodels; j++)
                    if (tput_models[j] == &tput_model_pollux)
                        pub = &res[p][j];
                ok = r->ex.median <= TARGET_MEDIAN && r->ex.p90 <= TARGET_P90;
                if (pub)
                    ok = ok && r->in.median <= pub->in.median + 1e-9 &&
                         r->in.p90 <= pub->in.p90 + 1e-9;
                printf("  %-8s %-12s extrapolation <= 7%% / 20%%, in-sample no worse than "
                       "pollux: %s\n",
                       name, bp->name, ok ? "yes" : "NO");
            }
            if (!ok)
                status = 3;
        }
    }
    printf(
        "\nSpeed (median over %d repetitions; targets: fit <= 5 ms, batch-size optimization <= 20 "
        "us):\n",
        reps);
    for (size_t k = 0; k < nmodels; k++) {
        printf("  %-8s fit on all rows (ms):", tput_models[k]->name);
        for (size_t p = 0; p < NPROFILES; p++)
            printf(" %s %.2f", bench_profiles[p].name, res[p][k].fit_ms);
        printf("\n  %-8s batch-size optimization (us):", tput_models[k]->name);
        for (size_t p = 0; p < NPROFILES; p++)
            printf(" %s %.2f", bench_profiles[p].name, res[p][k].bsz_us);
        printf("\n");
    }
    for (size_t k = 0; k < nmodels; k++) {
        double v[NPROFILES];

        for (size_t p = 0; p < NPROFILES; p++)
            v[p] = res[p][k].fit_ms;
        printf("  %-8s one fit: %.2f ms median over the six profiles\n", tput_models[k]->name,
               accuracy_quantile(v, NPROFILES, 0.5));
    }
    {
        double fit_med = accuracy_quantile(fit_all, nt, 0.5);
        double bsz_med = accuracy_quantile(bsz_all, nt, 0.5);

        printf("  all: one fit %.2f ms median (max of medians %.2f ms), one batch-size "
               "optimization %.2f us median\n",
               fit_med, fit_all[nt - 1], bsz_med);
    }

    if (json_path) {
        struct jv *timing = jv_object();

        root = jv_object();
        for (size_t p = 0; p < NPROFILES; p++) {
            struct jv *pj = jv_object();

            for (size_t k = 0; k < nmodels; k++) {
                struct jv *mj = jv_object(), *tj = jv_object();

                jv_set(mj, "in_sample", bench_acc_json(&res[p][k].in));
                jv_set(mj, "extrapolation", bench_acc_json(&res[p][k].ex));
                jv_set(pj, tput_models[k]->name, mj);
                jv_set(tj, "fit_ms", jv_number(res[p][k].fit_ms));
                jv_set(tj, "bsz_optimize_us", jv_number(res[p][k].bsz_us));
                {
                    char key[128];

                    snprintf(key, sizeof(key), "%s/%s", bench_profiles[p].name,
                             tput_models[k]->name);
                    jv_set(timing, key, tj);
                }
            }
            {
                struct jv *ref = jv_object();

                jv_set(ref, "extrapolation",
                       bench_acc_json(&(struct accuracy){.median = bench_profiles[p].ref_median,
                                                         .p90 = bench_profiles[p].ref_p90}));
                jv_set(pj, "published_reference", ref);
            }
            jv_set(root, bench_profiles[p].name, pj);
        }
        jv_set(root, "timing", timing);
        if (!root || jv_write_path(root, json_path) < 0) {
            fprintf(stderr, "castor-bench-model: cannot write %s\n", json_path);
            status = 1;
        }
        jv_free(root);
    }
    return status;
}
