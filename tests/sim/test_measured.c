/* test_measured.c: loading and checking profile folders (tests/data/profiles_good for good ones,
 * tests/data/profiles for one broken file each), turning rows into a profile, and accuracy. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "model/profile.h"
#include "model/tput.h"
#include "sim/measured.h"
#include "util/error.h"

#define GOOD CASTOR_TEST_DATA "/profiles_good/"
#define BAD CASTOR_TEST_DATA "/profiles/"

/* A pointer no allocation returns, to show that *out is left alone on error. */
#define UNTOUCHED ((struct measured *)(uintptr_t)0x1234)

static void expect_row(const struct measured_row *r, enum measured_source source, int line,
                       const char *placement, int nodes, int replicas, double bsz, double step,
                       double sync)
{
    assert_int_equal(r->source, source);
    assert_int_equal(r->line, line);
    assert_string_equal(r->placement, placement);
    assert_int_equal(r->s.x.nodes, nodes);
    assert_int_equal(r->s.x.replicas, replicas);
    assert_float_equal(r->s.x.local_bsz, bsz, 0.0);
    assert_float_equal(r->s.step_time, step, 0.0);
    assert_float_equal(r->s.sync_time, sync, 0.0);
}

/* profiles_good/tiny: 4 placement rows (lines 2-5) then 2 scalability rows (lines 2-3), in file
 * order. Placement "22" is 2 nodes with 2 + 2 = 4 replicas, "4" is 1 node with 4; scalability
 * rows take nodes and replicas from their columns and have no placement. */
static void measured_load__tiny(void **state)
{
    struct measured *m = NULL;
    struct error e;

    (void)state;
    assert_int_equal(measured_load(GOOD "tiny", &m, &e), 0);
    assert_non_null(m);
    assert_string_equal(m->name, "tiny");
    assert_int_equal(m->n, 6);
    expect_row(&m->rows[0], MEASURED_PLACEMENTS, 2, "1", 1, 1, 32, 0.05, 0.001);
    expect_row(&m->rows[1], MEASURED_PLACEMENTS, 3, "22", 2, 4, 32, 0.2, 0.1);
    expect_row(&m->rows[2], MEASURED_PLACEMENTS, 4, "22", 2, 4, 32, 0.4, 0.1);
    expect_row(&m->rows[3], MEASURED_PLACEMENTS, 5, "4", 1, 4, 64, 0.3, 0.05);
    expect_row(&m->rows[4], MEASURED_SCALABILITY, 2, "", 6, 12, 32, 0.5, 0.3);
    expect_row(&m->rows[5], MEASURED_SCALABILITY, 3, "", 8, 16, 64, 0.9, 0.4);
    measured_free(m);
}

/* The name is the folder's last component, trailing slashes ignored. */
static void measured_load__name_ignores_trailing_slash(void **state)
{
    struct measured *m = NULL;
    struct error e;

    (void)state;
    assert_int_equal(measured_load(GOOD "tiny//", &m, &e), 0);
    assert_string_equal(m->name, "tiny");
    assert_int_equal(m->n, 6);
    measured_free(m);
}

/* profiles_good/no_scalability: no scalability.csv is fine (only placement rows), and columns
 * are found by name in any order (placement third, step_time last). "1111" is 4 nodes with one
 * replica each, "11" 2 nodes with one each; a sync time of 0 is allowed. */
static void measured_load__without_scalability(void **state)
{
    struct measured *m = NULL;
    struct error e;

    (void)state;
    assert_int_equal(measured_load(GOOD "no_scalability", &m, &e), 0);
    assert_string_equal(m->name, "no_scalability");
    assert_int_equal(m->n, 3);
    expect_row(&m->rows[0], MEASURED_PLACEMENTS, 2, "2", 1, 2, 16, 0.03, 0.002);
    expect_row(&m->rows[1], MEASURED_PLACEMENTS, 3, "1111", 4, 4, 16, 0.08, 0.01);
    expect_row(&m->rows[2], MEASURED_PLACEMENTS, 4, "11", 2, 2, 24, 0.06, 0.0);
    measured_free(m);
}

/* A folder that does not exist: placements.csv is required, ERR_NOENT naming it. */
static void measured_load__missing_folder(void **state)
{
    struct measured *m = UNTOUCHED;
    struct error e;

    (void)state;
    assert_int_equal(measured_load(BAD "no_such_profile", &m, &e), ERR_NOENT);
    assert_ptr_equal(m, UNTOUCHED);
    assert_string_equal(e.file, BAD "no_such_profile/placements.csv");
    /* an empty name is no folder at all, not the file system's root */
    assert_int_equal(measured_load("", &m, &e), ERR_INVAL);
    assert_ptr_equal(m, UNTOUCHED);
}

/* Load a broken folder: the code, file, line and column of the error, words in the message, and
 * *out untouched. */
static void expect_bad(const char *dir, const char *file, int code, int line, int column,
                       const char *words)
{
    struct measured *m = UNTOUCHED;
    struct error e;
    char path[512];

    memset(&e, 0, sizeof(e));
    snprintf(path, sizeof(path), "%s%s", BAD, dir);
    assert_int_equal(measured_load(path, &m, &e), code);
    assert_ptr_equal(m, UNTOUCHED);
    assert_int_equal(e.code, code);
    snprintf(path, sizeof(path), "%s%s/%s", BAD, dir, file);
    assert_string_equal(e.file, path);
    assert_int_equal(e.line, line);
    assert_int_equal(e.column, column);
    if (words)
        assert_non_null(strstr(e.msg, words));
}

/* profiles/empty: a header and no rows, ERR_EMPTY at the header's line 1 (no column). */
static void measured_load__empty(void **state)
{
    (void)state;
    expect_bad("empty", "placements.csv", ERR_EMPTY, 1, 0, NULL);
}

/* profiles/empty_file: zero bytes, ERR_EMPTY with no location. */
static void measured_load__empty_file(void **state)
{
    (void)state;
    expect_bad("empty_file", "placements.csv", ERR_EMPTY, 0, 0, NULL);
}

/* profiles/missing_column: no sync_time column, ERR_PARSE at the header (1:1) naming it. */
static void measured_load__missing_column(void **state)
{
    (void)state;
    expect_bad("missing_column", "placements.csv", ERR_PARSE, 1, 1, "sync_time");
}

/* profiles/truncated: the last line "2,32" (line 4, no newline) has 2 of 4 fields; located just
 * past its end, column 5. */
static void measured_load__truncated(void **state)
{
    (void)state;
    expect_bad("truncated", "placements.csv", ERR_PARSE, 4, 5, "truncated");
}

/* profiles/negative_time: line 3 "1,45,-0.05,0.0005", step_time starts at column 6. */
static void measured_load__negative_time(void **state)
{
    (void)state;
    expect_bad("negative_time", "placements.csv", ERR_PARSE, 3, 6, "step_time");
}

/* profiles/non_numeric: line 3 "1,45,0.0504,fast", sync_time "fast" at column 13. */
static void measured_load__non_numeric(void **state)
{
    (void)state;
    expect_bad("non_numeric", "placements.csv", ERR_PARSE, 3, 13, "sync_time");
}

/* profiles/bad_placement: line 3 placement "10"; the bad digit '0' is its second character,
 * column 2. */
static void measured_load__bad_placement(void **state)
{
    (void)state;
    expect_bad("bad_placement", "placements.csv", ERR_PARSE, 3, 2, "placement");
}

/* profiles/sync_over_step: line 2 "2,32,0.0427,0.05", sync 0.05 >= step 0.0427, the sync_time
 * cell at column 13. */
static void measured_load__sync_over_step(void **state)
{
    (void)state;
    expect_bad("sync_over_step", "placements.csv", ERR_PARSE, 2, 13, "sync_time");
}

/* profiles/bad_scalability: good placements, then scalability.csv line 3 num_nodes "2.5" (not a
 * whole number) at column 1. */
static void measured_load__bad_scalability(void **state)
{
    (void)state;
    expect_bad("bad_scalability", "scalability.csv", ERR_PARSE, 3, 1, "num_nodes");
}

/* profiles/replicas_below_nodes: scalability.csv line 2 "6,4,...": 4 replicas on 6 nodes is
 * outside [6, 65536], ERR_RANGE at num_replicas, column 3. */
static void measured_load__replicas_below_nodes(void **state)
{
    (void)state;
    expect_bad("replicas_below_nodes", "scalability.csv", ERR_RANGE, 2, 3, "num_replicas");
}

/* profiles/nan_time: line 2 "1,32,nan,0.0005", step_time "nan" at column 6. */
static void measured_load__nan_time(void **state)
{
    (void)state;
    expect_bad("nan_time", "placements.csv", ERR_PARSE, 2, 6, "step_time");
}

/* measured_free accepts NULL. */
static void measured_free__null(void **state)
{
    (void)state;
    measured_free(NULL);
}

static const struct profile_entry *find_entry(const struct profile *p, int nodes, int replicas,
                                              double bsz)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->entries[i].x.nodes == nodes && p->entries[i].x.replicas == replicas &&
            p->entries[i].x.local_bsz == bsz)
            return &p->entries[i];
    return NULL;
}

/* Placement rows only: the two "22",32 rows (step 0.2 and 0.4, sync 0.1 each) are one entry with
 * optim_time (0.2 + 0.4) / 2 = 0.3, accum_time ((0.2-0.1) + (0.4-0.1)) / 2 = 0.2, sync 0.1,
 * count 2; with "1",32 and "4",64 that makes 3 entries. */
static void measured_to_profile__placements_average_duplicates(void **state)
{
    struct measured *m = NULL;
    struct profile prof;
    const struct profile_entry *pe;
    struct error e;

    (void)state;
    assert_int_equal(measured_load(GOOD "tiny", &m, &e), 0);
    profile_init(&prof);
    assert_int_equal(measured_to_profile(m, MEASURED_PLACEMENTS, &prof), 0);
    assert_int_equal(prof.n, 3);
    pe = find_entry(&prof, 2, 4, 32);
    assert_non_null(pe);
    assert_int_equal(pe->count, 2);
    assert_float_equal(pe->optim_time, 0.3, 1e-12);
    assert_float_equal(pe->accum_time, 0.2, 1e-12);
    assert_float_equal(pe->sync_time, 0.1, 1e-12);
    pe = find_entry(&prof, 1, 1, 32);
    assert_non_null(pe);
    assert_int_equal(pe->count, 1);
    assert_float_equal(pe->optim_time, 0.05, 1e-12);
    assert_float_equal(pe->accum_time, 0.049, 1e-12);
    assert_non_null(find_entry(&prof, 1, 4, 64));
    assert_null(find_entry(&prof, 6, 12, 32));
    profile_free(&prof);
    measured_free(m);
}

/* The source mask picks rows: an empty mask adds nothing; scalability only gives its 2 entries
 * ((8, 16, 64): optim 0.9, accum 0.9 - 0.4 = 0.5); both sources give 3 + 2 = 5 entries. Adding to
 * a profile keeps what was there: adding the scalability rows again makes no new entry but
 * raises those entries' counts to 2 (the placement entry "22",32 already had 2). */
static void measured_to_profile__source_masks(void **state)
{
    struct measured *m = NULL;
    struct profile prof;
    const struct profile_entry *pe;
    struct error e;

    (void)state;
    assert_int_equal(measured_load(GOOD "tiny", &m, &e), 0);
    profile_init(&prof);
    assert_int_equal(measured_to_profile(m, 0, &prof), 0);
    assert_int_equal(prof.n, 0);
    assert_int_equal(measured_to_profile(m, MEASURED_SCALABILITY, &prof), 0);
    assert_int_equal(prof.n, 2);
    pe = find_entry(&prof, 8, 16, 64);
    assert_non_null(pe);
    assert_float_equal(pe->optim_time, 0.9, 1e-12);
    assert_float_equal(pe->accum_time, 0.5, 1e-12);
    assert_null(find_entry(&prof, 2, 4, 32));
    profile_free(&prof);

    profile_init(&prof);
    assert_int_equal(measured_to_profile(m, MEASURED_PLACEMENTS | MEASURED_SCALABILITY, &prof), 0);
    assert_int_equal(prof.n, 5);
    assert_int_equal(measured_to_profile(m, MEASURED_SCALABILITY, &prof), 0);
    assert_int_equal(prof.n, 5);
    assert_int_equal(find_entry(&prof, 6, 12, 32)->count, 2);
    assert_int_equal(find_entry(&prof, 2, 4, 32)->count, 2);
    profile_free(&prof);
    measured_free(m);
}

/* A test mask that selects no rows is ERR_EMPTY, with *fitted and *acc untouched: an empty mask
 * on tiny, and the scalability source on a folder that has none. */
static void measured_accuracy__no_test_rows(void **state)
{
    struct measured *m = NULL;
    struct tput_params fitted, fitted0;
    struct accuracy acc, acc0;
    struct error e;

    (void)state;
    memset(&fitted, 0x5a, sizeof(fitted));
    memset(&acc, 0x5a, sizeof(acc));
    fitted0 = fitted;
    acc0 = acc;
    assert_int_equal(measured_load(GOOD "tiny", &m, &e), 0);
    assert_int_equal(
        measured_accuracy(m, &tput_model_pollux, MEASURED_PLACEMENTS, 0, &fitted, &acc), ERR_EMPTY);
    measured_free(m);
    assert_int_equal(measured_load(GOOD "no_scalability", &m, &e), 0);
    assert_int_equal(measured_accuracy(m, &tput_model_pollux, MEASURED_PLACEMENTS,
                                       MEASURED_SCALABILITY, &fitted, &acc),
                     ERR_EMPTY);
    measured_free(m);
    assert_memory_equal(&fitted, &fitted0, sizeof(fitted));
    assert_memory_equal(&acc, &acc0, sizeof(acc));
}

/* No training rows is ERR_EMPTY too (the fit has nothing to fit). */
static void measured_accuracy__no_train_rows(void **state)
{
    struct measured *m = NULL;
    struct error e;

    (void)state;
    assert_int_equal(measured_load(GOOD "no_scalability", &m, &e), 0);
    assert_int_equal(measured_accuracy(m, &tput_model_pollux, MEASURED_SCALABILITY,
                                       MEASURED_PLACEMENTS, NULL, NULL),
                     ERR_EMPTY);
    measured_free(m);
}

/* Fitting on every row of tiny and testing on the placements compares 4 rows; the errors are
 * ordered (median <= p90 <= max, all >= 0) and the fitted parameters carry the model's ops. */
static void measured_accuracy__fit_and_compare(void **state)
{
    struct measured *m = NULL;
    struct tput_params fitted;
    struct accuracy acc;
    struct error e;

    (void)state;
    assert_int_equal(measured_load(GOOD "tiny", &m, &e), 0);
    assert_int_equal(measured_accuracy(m, &tput_model_pollux,
                                       MEASURED_PLACEMENTS | MEASURED_SCALABILITY,
                                       MEASURED_PLACEMENTS, &fitted, &acc),
                     0);
    assert_ptr_equal(fitted.ops, &tput_model_pollux);
    assert_int_equal(acc.n, 4);
    assert_true(acc.median >= 0.0);
    assert_true(acc.median <= acc.p90);
    assert_true(acc.p90 <= acc.max);
    measured_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(measured_load__tiny),
        cmocka_unit_test(measured_load__name_ignores_trailing_slash),
        cmocka_unit_test(measured_load__without_scalability),
        cmocka_unit_test(measured_load__missing_folder),
        cmocka_unit_test(measured_load__empty),
        cmocka_unit_test(measured_load__empty_file),
        cmocka_unit_test(measured_load__missing_column),
        cmocka_unit_test(measured_load__truncated),
        cmocka_unit_test(measured_load__negative_time),
        cmocka_unit_test(measured_load__non_numeric),
        cmocka_unit_test(measured_load__bad_placement),
        cmocka_unit_test(measured_load__sync_over_step),
        cmocka_unit_test(measured_load__bad_scalability),
        cmocka_unit_test(measured_load__replicas_below_nodes),
        cmocka_unit_test(measured_load__nan_time),
        cmocka_unit_test(measured_free__null),
        cmocka_unit_test(measured_to_profile__placements_average_duplicates),
        cmocka_unit_test(measured_to_profile__source_masks),
        cmocka_unit_test(measured_accuracy__no_test_rows),
        cmocka_unit_test(measured_accuracy__no_train_rows),
        cmocka_unit_test(measured_accuracy__fit_and_compare),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
