/* test_app.c: emulated applications on the bundled Pollux traces (data/profiles): constants,
 * throughput on the exact and the N-D path against scipy, validation interpolation, and the
 * loading errors (on small folders written to a temporary directory). */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "sim/app.h"
#include "util/error.h"

#define PROFILES CASTOR_DATADIR "/profiles/"

/* A pointer no allocation returns, to show that *out is left alone on error. */
#define UNTOUCHED ((struct app *)(uintptr_t)0x1234)

static struct app *load(const char *name)
{
    char dir[512];
    struct app *a = NULL;
    struct error e;

    snprintf(dir, sizeof(dir), "%s%s", PROFILES, name);
    assert_int_equal(app_load(dir, &a, &e), 0);
    return a;
}

/* The step and sync time at a placement, which must succeed. */
static void tput(struct app *a, const int *p, int n, double bsz, double *step, double *sync)
{
    assert_int_equal(app_throughput(a, p, n, bsz, step, sync), 0);
}

/* cifar10: validated at 128, 256, ..., 4096 (6 sizes, 100 rows each), local batches 32 to 1024
 * in placements.csv, 100 epochs (published). */
static void app_load__cifar10_constants(void **state)
{
    struct app *a = load("cifar10");

    (void)state;
    assert_string_equal(a->name, "cifar10");
    assert_int_equal(a->init_bsz, 128);
    assert_int_equal(a->max_bsz, 4096);
    assert_int_equal(a->min_local, 32);
    assert_int_equal(a->max_local, 1024);
    assert_int_equal(a->max_epochs, 100);
    assert_int_equal(a->epochs, 100);
    assert_int_equal(a->nbsz, 6);
    assert_int_equal(a->bszs[0], 128);
    assert_int_equal(a->bszs[1], 256);
    assert_int_equal(a->bszs[5], 4096);
    app_free(a);
}

/* yolov3: placements.csv goes to local batch 16, but the published max_local is 8; 50 epochs;
 * validated 8 to 512. The trailing slash does not change the name. */
static void app_load__yolov3_overrides_max_local(void **state)
{
    struct app *a = NULL;

    (void)state;
    assert_int_equal(app_load(PROFILES "yolov3/", &a, NULL), 0);
    assert_string_equal(a->name, "yolov3");
    assert_int_equal(a->min_local, 4);
    assert_int_equal(a->max_local, 8);
    assert_int_equal(a->max_epochs, 50);
    assert_int_equal(a->init_bsz, 8);
    assert_int_equal(a->max_bsz, 512);
    app_free(a);
}

/* Exact path, from cifar10/placements.csv rows: placement "1" at 32 is its first row
 * (0.0427886962890625, 0.0004995360016822816); 38.5 is halfway between the rows at 32 and 45
 * (step 0.05048525333404541 at 45), so the mean of the two; 1024 is the last row
 * (0.7020925283432007, 0.0005468864023685456). */
static void app_throughput__exact_path_interpolates_rows(void **state)
{
    struct app *a = load("cifar10");
    const int one[] = {1};
    double step, sync;

    (void)state;
    tput(a, one, 1, 32, &step, &sync);
    assert_float_equal(step, 0.0427886962890625, 0.0);
    assert_float_equal(sync, 0.0004995360016822816, 0.0);
    tput(a, one, 1, 38.5, &step, &sync);
    assert_float_equal(step, (0.0427886962890625 + 0.05048525333404541) / 2, 1e-15);
    assert_float_equal(sync, (0.0004995360016822816 + 0.000504022404551506) / 2, 1e-15);
    tput(a, one, 1, 1024, &step, &sync);
    assert_float_equal(step, 0.7020925283432007, 0.0);
    assert_float_equal(sync, 0.0005468864023685456, 0.0);
    app_free(a);
}

/* Placements are rotated to their smallest rotation and zeros dropped: (2, 1, 1), (1, 2, 1) and
 * (0, 1, 0, 2, 1) are all "112", whose rows at 64 and 91 are (0.12597379684448243,
 * 0.06773929214477539) and (0.1317533016204834, 0.058091318130493175); 77.5 is halfway. */
static void app_throughput__rotations_are_one_placement(void **state)
{
    struct app *a = load("cifar10");
    const int p1[] = {2, 1, 1}, p2[] = {1, 2, 1}, p3[] = {0, 1, 0, 2, 1}, p4[] = {1, 1, 2};
    double s1, y1, s2, y2, s3, y3, s4, y4;

    (void)state;
    tput(a, p4, 3, 64, &s4, &y4);
    assert_float_equal(s4, 0.12597379684448243, 0.0);
    assert_float_equal(y4, 0.06773929214477539, 0.0);
    tput(a, p1, 3, 77.5, &s1, &y1);
    tput(a, p2, 3, 77.5, &s2, &y2);
    tput(a, p3, 5, 77.5, &s3, &y3);
    tput(a, p4, 3, 77.5, &s4, &y4);
    assert_float_equal(s4, (0.12597379684448243 + 0.1317533016204834) / 2, 1e-15);
    assert_float_equal(y4, (0.06773929214477539 + 0.058091318130493175) / 2, 1e-15);
    assert_float_equal(s1, s4, 0.0);
    assert_float_equal(s2, s4, 0.0);
    assert_float_equal(s3, s4, 0.0);
    assert_float_equal(y1, y4, 0.0);
    assert_float_equal(y3, y4, 0.0);
    /* The memoised answer is the same. */
    tput(a, p1, 3, 77.5, &s1, &y1);
    assert_float_equal(s1, s4, 0.0);
    app_free(a);
}

/* Each placement interpolates only within its own measured range: cifar10 "3444" stops at 725
 * (0.555024782816569 there), so 726 is out of range, and placement "1" starts at 32. */
static void app_throughput__exact_path_range(void **state)
{
    struct app *a = load("cifar10");
    const int p[] = {4, 4, 3, 4}, one[] = {1};
    double step = -1, sync = -1;

    (void)state;
    tput(a, p, 4, 725, &step, NULL);
    assert_float_equal(step, 0.555024782816569, 0.0);
    assert_int_equal(app_throughput(a, p, 4, 726, &step, &sync), ERR_RANGE);
    assert_int_equal(app_throughput(a, one, 1, 31, &step, &sync), ERR_RANGE);
    assert_float_equal(step, 0.555024782816569, 0.0); /* untouched on error */
    assert_float_equal(sync, -1, 0.0);
    app_free(a);
}

struct nd_case {
    const char *app;
    int n;
    int p[16];
    double bsz, step, sync;
};

/* N-D path (5+ nodes). Expected values computed with scipy's LinearNDInterpolator on the same
 * points (per-(nodes, replicas, local_bsz) means of placements.csv, then scalability.csv),
 * queried one point at a time at (min(nodes, 16), replicas, local_bsz). The bert and deepspeech2
 * queries lie on faces that Qhull's Qt triangulates differently on either side; a search that
 * took the first simplex holding them would give step 1.5802 and 1.3292 instead. */
static void app_throughput__nd_path_matches_scipy(void **state)
{
    static const struct nd_case cases[] = {
        {"bert", 7, {1, 1, 1, 1, 2, 1, 1}, 9, 1.6288012092312176, 0.9253061351776124},
        {"cifar10", 8, {4, 4, 4, 4, 4, 4, 4, 4}, 100, 0.23027709534293725, 0.14682988319396972},
        {"cifar10", 5, {1, 1, 1, 1, 1}, 1024, 0.7566297445978437, 0.016940220533098495},
        {"deepspeech2", 6, {4, 4, 3, 4, 4, 4}, 30, 1.3686528955187116, 0.419985450272333},
        {"imagenet", 5, {3, 2, 2, 1, 2}, 162, 0.8424152632554374, 0.07119467004934946},
        {"ncf", 6, {1, 1, 1, 1, 1, 1}, 1000, 0.02541897738421405, 0.01774611542489793},
        {"yolov3", 10, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, 6.5, 1.2521385736763477, 0.8473805923461915},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct nd_case *c = &cases[i];
        struct app *a = load(c->app);
        double step, sync;

        tput(a, c->p, c->n, c->bsz, &step, &sync);
        assert_float_equal(step, c->step, 1e-12 * c->step);
        assert_float_equal(sync, c->sync, 1e-12 * c->sync);
        app_free(a);
    }
}

/* Outside the N-D hull scipy returns NaN (the reference then stops): cifar10 with 16 nodes of
 * one GPU at local batch 1024 has no measurement around it, and 20 nodes of 4 (80 replicas) is
 * past the 64 replicas of the traces even with nodes capped at 16. Bad placements: no GPUs, a
 * negative count; a NaN batch. */
static void app_throughput__out_of_hull_and_invalid(void **state)
{
    struct app *a = load("cifar10");
    int ones[16], fours[20];
    const int zeros[] = {0, 0}, neg[] = {1, -1};
    double step;

    (void)state;
    for (int i = 0; i < 16; i++)
        ones[i] = 1;
    for (int i = 0; i < 20; i++)
        fours[i] = 4;
    assert_int_equal(app_throughput(a, ones, 16, 1024, &step, NULL), ERR_RANGE);
    assert_int_equal(app_throughput(a, fours, 20, 100, &step, NULL), ERR_RANGE);
    assert_int_equal(app_throughput(a, zeros, 2, 64, &step, NULL), ERR_INVAL);
    assert_int_equal(app_throughput(a, neg, 2, 64, &step, NULL), ERR_INVAL);
    assert_int_equal(app_throughput(a, ones, 1, NAN, &step, NULL), ERR_INVAL);
    app_free(a);
}

/* 17 nodes (more than a memo key holds): (2, 1, ..., 1) and its rotation (1, ..., 1, 2) are one
 * placement, queried at (16, 18, 100) either way. */
static void app_throughput__long_placement_rotations(void **state)
{
    struct app *a = load("cifar10");
    int p[17], q[17];
    double s1 = 0, s2 = 0;

    (void)state;
    for (int i = 0; i < 17; i++)
        p[i] = q[i] = 1;
    p[0] = 2;
    q[16] = 2;
    assert_int_equal(app_throughput(a, p, 17, 100, &s1, NULL), 0);
    assert_int_equal(app_throughput(a, q, 17, 100, &s2, NULL), 0);
    assert_true(s1 > 0);
    assert_float_equal(s1, s2, 0.0);
    app_free(a);
}

/* cifar10 epoch 0: validation-128 has grad_sqr 8.947307535897329, grad_var 5.066593295150894,
 * iteration 390; validation-256 has 17.379458169870425, 13.937760473946334, 300. Batch 192 is
 * halfway: the means. Batch 160 is a quarter of the way: iteration 390 * 0.75 + 300 * 0.25 =
 * 367.5. At a validated size the row itself: 512 has iteration 223. */
static void app_grad_stats__interpolates_between_sizes(void **state)
{
    struct app *a = load("cifar10");
    double sqr, var, it;

    (void)state;
    assert_int_equal(app_grad_stats(a, 192, 0, &sqr, &var), 0);
    assert_float_equal(sqr, (8.947307535897329 + 17.379458169870425) / 2, 1e-14);
    assert_float_equal(var, (5.066593295150894 + 13.937760473946334) / 2, 1e-14);
    assert_int_equal(app_grad_stats(a, 128, 0, &sqr, &var), 0);
    assert_float_equal(sqr, 8.947307535897329, 0.0);
    assert_float_equal(var, 5.066593295150894, 0.0);
    assert_int_equal(app_iteration(a, 160, 0, &it), 0);
    assert_float_equal(it, 367.5, 1e-12);
    assert_int_equal(app_iteration(a, 512, 0, &it), 0);
    assert_float_equal(it, 223, 0.0);
    app_free(a);
}

/* Batches outside [128, 4096] and epochs outside [0, 100) are ERR_RANGE, outputs untouched. */
static void app_grad_stats__out_of_range(void **state)
{
    struct app *a = load("cifar10");
    double sqr = -1, var = -1, it = -1;

    (void)state;
    assert_int_equal(app_grad_stats(a, 127, 0, &sqr, &var), ERR_RANGE);
    assert_int_equal(app_grad_stats(a, 4097, 0, &sqr, &var), ERR_RANGE);
    assert_int_equal(app_grad_stats(a, 4096, 100, &sqr, &var), ERR_RANGE);
    assert_int_equal(app_grad_stats(a, 4096, -1, &sqr, &var), ERR_RANGE);
    assert_int_equal(app_grad_stats(a, NAN, 0, &sqr, &var), ERR_RANGE);
    assert_int_equal(app_iteration(a, 100, 0, &it), ERR_RANGE);
    assert_float_equal(sqr, -1, 0.0);
    assert_float_equal(var, -1, 0.0);
    assert_float_equal(it, -1, 0.0);
    assert_int_equal(app_grad_stats(a, 4096, 99, &sqr, &var), 0);
    app_free(a);
}

/* Epoch 0 needs no progress; epoch e needs the least progress any size had after row e - 1.
 * cifar10 row 0: 391.0, 390.71438596642224 (256), 392.46..., 391.09..., 392.33..., 395.22...;
 * row 1: 782.0, 782.27..., 781.5989447399924 (512), 782.78..., 783.49..., 785.17.... Epoch 100
 * is the last (row 99); 101 and -1 are NAN. */
static void app_progress_needed__min_over_sizes(void **state)
{
    struct app *a = load("cifar10");

    (void)state;
    assert_float_equal(app_progress_needed(a, 0), 0.0, 0.0);
    assert_float_equal(app_progress_needed(a, 1), 390.71438596642224, 0.0);
    assert_float_equal(app_progress_needed(a, 2), 781.5989447399924, 0.0);
    assert_true(app_progress_needed(a, 100) > app_progress_needed(a, 99));
    assert_true(isnan(app_progress_needed(a, 101)));
    assert_true(isnan(app_progress_needed(a, -1)));
    app_free(a);
}

/* ---- loading errors, on folders written under a temporary directory ---- */

struct tmp {
    char root[64];
    char dir[128]; /* root/bert */
};

static int tmp_setup(void **state)
{
    struct tmp *t = calloc(1, sizeof(*t));

    if (!t)
        return -1;
    strcpy(t->root, "/tmp/castor-test-app-XXXXXX");
    if (!mkdtemp(t->root))
        return -1;
    snprintf(t->dir, sizeof(t->dir), "%s/bert", t->root);
    if (mkdir(t->dir, 0700) != 0)
        return -1;
    *state = t;
    return 0;
}

static int tmp_teardown(void **state)
{
    struct tmp *t = *state;
    struct dirent *ent;
    DIR *d = opendir(t->dir);

    while (d && (ent = readdir(d)) != NULL) {
        char path[512];

        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", t->dir, ent->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(t->dir);
    rmdir(t->root);
    free(t);
    return 0;
}

static void put(const struct tmp *t, const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", t->dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char placements[] = "placement,local_bsz,step_time,sync_time\n"
                                 "1,4,0.2,0.01\n"
                                 "1,8,0.3,0.01\n"
                                 "2,4,0.25,0.05\n"
                                 "11,4,0.3,0.1\n";

/* A name without a published epoch count is refused before any file is read. */
static void app_load__unknown_name(void **state)
{
    struct app *a = UNTOUCHED;
    struct error e;

    (void)state;
    assert_int_equal(app_load(CASTOR_TEST_DATA "/profiles_good/tiny", &a, &e), ERR_UNKNOWN);
    assert_non_null(strstr(e.msg, "\"tiny\""));
    assert_ptr_equal(a, UNTOUCHED);
}

/* A folder with step times but no validation-<B>.csv: ERR_NOENT naming the folder. */
static void app_load__no_validation_files(void **state)
{
    struct tmp *t = *state;
    struct app *a = UNTOUCHED;
    struct error e;

    put(t, "placements.csv", placements);
    assert_int_equal(app_load(t->dir, &a, &e), ERR_NOENT);
    assert_string_equal(e.file, t->dir);
    assert_ptr_equal(a, UNTOUCHED);
}

/* A small good folder: bert, validated at 12 and 24 with 2 rows each (its 2 epochs). Sizes come
 * from the file names, min/max local from placements.csv (4 and 8); 18 is halfway. The
 * placement "11" interpolates on its single row only at that row. */
static void app_load__small_folder(void **state)
{
    struct tmp *t = *state;
    struct app *a = NULL;
    double sqr, var, step;
    const int p11[] = {1, 1};

    put(t, "placements.csv", placements);
    put(t, "validation-24.csv",
        "progress,iteration,metric,grad_sqr,grad_var\n"
        "10,5,0,2,4\n"
        "20,10,0,1,2\n");
    put(t, "validation-12.csv",
        "progress,iteration,metric,grad_sqr,grad_var\n"
        "11,11,0,4,8\n"
        "19,22,0,3,6\n");
    put(t, "notes.txt", "ignored\n");
    assert_int_equal(app_load(t->dir, &a, NULL), 0);
    assert_int_equal(a->init_bsz, 12);
    assert_int_equal(a->max_bsz, 24);
    assert_int_equal(a->min_local, 4);
    assert_int_equal(a->max_local, 8);
    assert_int_equal(a->epochs, 2);
    assert_int_equal(app_grad_stats(a, 18, 1, &sqr, &var), 0);
    assert_float_equal(sqr, 2.0, 1e-15);
    assert_float_equal(var, 4.0, 1e-15);
    assert_float_equal(app_progress_needed(a, 1), 10.0, 0.0);
    assert_float_equal(app_progress_needed(a, 2), 19.0, 0.0);
    assert_int_equal(app_throughput(a, p11, 2, 4, &step, NULL), 0);
    assert_float_equal(step, 0.3, 0.0);
    assert_int_equal(app_throughput(a, p11, 2, 5, &step, NULL), ERR_RANGE);
    app_free(a);
}

/* Validation files of different lengths: ERR_PARSE at the end of the one that differs (3 rows,
 * so line 4), naming the first. */
static void app_load__validation_rows_differ(void **state)
{
    struct tmp *t = *state;
    struct app *a = UNTOUCHED;
    struct error e;

    put(t, "placements.csv", placements);
    put(t, "validation-12.csv",
        "progress,iteration,metric,grad_sqr,grad_var\n"
        "1,1,0,1,1\n"
        "2,2,0,1,1\n");
    put(t, "validation-24.csv",
        "progress,iteration,metric,grad_sqr,grad_var\n"
        "1,1,0,1,1\n"
        "2,2,0,1,1\n"
        "3,3,0,1,1\n");
    assert_int_equal(app_load(t->dir, &a, &e), ERR_PARSE);
    assert_non_null(strstr(e.file, "validation-24.csv"));
    assert_int_equal(e.line, 4);
    assert_non_null(strstr(e.msg, "validation-12.csv"));
    assert_ptr_equal(a, UNTOUCHED);
}

/* A validation-*.csv whose middle is not a batch size: ERR_PARSE naming it. */
static void app_load__validation_name_without_size(void **state)
{
    struct tmp *t = *state;
    struct app *a = UNTOUCHED;
    struct error e;

    put(t, "placements.csv", placements);
    put(t, "validation-12.csv", "progress,iteration,metric,grad_sqr,grad_var\n1,1,0,1,1\n");
    put(t, "validation-old.csv", "progress,iteration,metric,grad_sqr,grad_var\n1,1,0,1,1\n");
    assert_int_equal(app_load(t->dir, &a, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "validation-old.csv"));
    assert_ptr_equal(a, UNTOUCHED);
}

/* One row where bert's published 2 epochs need 2: ERR_RANGE. A non-numeric cell: ERR_PARSE at
 * its line and column (grad_sqr "x" on line 3 starts at character 7 of "2,2,0,x,1"). */
static void app_load__too_few_epochs_and_bad_cell(void **state)
{
    struct tmp *t = *state;
    struct app *a = UNTOUCHED;
    struct error e;

    put(t, "placements.csv", placements);
    put(t, "validation-12.csv", "progress,iteration,metric,grad_sqr,grad_var\n1,1,0,1,1\n");
    assert_int_equal(app_load(t->dir, &a, &e), ERR_RANGE);
    put(t, "validation-12.csv",
        "progress,iteration,metric,grad_sqr,grad_var\n"
        "1,1,0,1,1\n"
        "2,2,0,x,1\n");
    assert_int_equal(app_load(t->dir, &a, &e), ERR_PARSE);
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 7);
    assert_ptr_equal(a, UNTOUCHED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(app_load__cifar10_constants),
        cmocka_unit_test(app_load__yolov3_overrides_max_local),
        cmocka_unit_test(app_throughput__exact_path_interpolates_rows),
        cmocka_unit_test(app_throughput__rotations_are_one_placement),
        cmocka_unit_test(app_throughput__exact_path_range),
        cmocka_unit_test(app_throughput__nd_path_matches_scipy),
        cmocka_unit_test(app_throughput__out_of_hull_and_invalid),
        cmocka_unit_test(app_throughput__long_placement_rotations),
        cmocka_unit_test(app_grad_stats__interpolates_between_sizes),
        cmocka_unit_test(app_grad_stats__out_of_range),
        cmocka_unit_test(app_progress_needed__min_over_sizes),
        cmocka_unit_test(app_load__unknown_name),
        cmocka_unit_test_setup_teardown(app_load__no_validation_files, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(app_load__small_folder, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(app_load__validation_rows_differ, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(app_load__validation_name_without_size, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(app_load__too_few_epochs_and_bad_cell, tmp_setup,
                                        tmp_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
