/* test_report.c: the HTML report of simulations, written from records built by hand and read back.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "sim/record.h"
#include "sim/report.h"
#include "util/error.h"

#define XMLNS "xmlns=\"http://www.w3.org/2000/svg\""

/* A record of njobs jobs named job0, job1, ... (application "app"), all submitted at 0 and
 * unfinished, with ntimes samples 100 s apart, nobody holding GPUs; owned as sim_record_free
 * expects. */
static struct sim_record *make_record(const char *workload, const char *policy, int njobs, int gpus,
                                      size_t ntimes)
{
    struct sim_record *r = calloc(1, sizeof(*r));

    assert_non_null(r);
    r->workload = strdup(workload);
    r->policy = strdup(policy);
    r->njobs = njobs;
    r->gpus = gpus;
    r->names = calloc((size_t)njobs, sizeof(char *));
    r->apps = calloc((size_t)njobs, sizeof(char *));
    r->submit = calloc((size_t)njobs, sizeof(double));
    r->jct = malloc((size_t)njobs * sizeof(double));
    r->restarts = calloc((size_t)njobs, sizeof(int));
    r->ntimes = r->cap = ntimes;
    r->times = malloc(ntimes * sizeof(double));
    r->held = calloc(ntimes * (size_t)njobs, sizeof(unsigned short));
    assert_true(r->workload && r->policy && r->names && r->apps && r->submit && r->jct &&
                r->restarts && r->times && r->held);
    for (int j = 0; j < njobs; j++) {
        char name[32];

        snprintf(name, sizeof(name), "job%d", j);
        r->names[j] = strdup(name);
        r->apps[j] = strdup("app");
        assert_true(r->names[j] && r->apps[j]);
        r->jct[j] = -1;
    }
    for (size_t k = 0; k < ntimes; k++)
        r->times[k] = 100.0 * (double)k;
    return r;
}

/* Three jobs on 8 GPUs over samples at 0, 100, 200, 300 s: job 0 (renamed `a<b&"c"`) holds 4
 * GPUs until 100 s, job 1 holds 2 until 200 s, job 2 holds 8 from 200 s; JCTs 100, 200 and 300 s
 * plus shift, so the average is 200 + shift. */
static struct sim_record *make_small(const char *policy, double shift)
{
    struct sim_record *r = make_record("tiny", policy, 3, 8, 4);
    static const unsigned short held[4][3] = {{4, 2, 0}, {0, 2, 0}, {0, 0, 8}, {0, 0, 0}};

    free(r->names[0]);
    r->names[0] = strdup("a<b&\"c\"");
    assert_non_null(r->names[0]);
    memcpy(r->held, held, sizeof(held));
    r->jct[0] = 100 + shift;
    r->jct[1] = 200 + shift;
    r->jct[2] = 300 + shift;
    r->restarts[2] = 2;
    r->wall_seconds = 0.5;
    return r;
}

/* make_small's jobs on a fleet (gpus 0) under workload, samples an hour apart: on-demand nodes
 * 1, 1, 2, 0 and spot nodes 0, 3, 2, 0, so 4 on-demand and 5 spot node-hours and a peak of 4
 * nodes; dollars billed 0, d/4, d/2, d. */
static struct sim_record *make_fleet(const char *workload, const char *policy, double d)
{
    struct sim_record *r = make_small(policy, 0);
    static const unsigned short od[4] = {1, 1, 2, 0}, sp[4] = {0, 3, 2, 0};

    free(r->workload);
    r->workload = strdup(workload);
    r->gpus = 0;
    r->fleet = 1;
    r->ondemand_nodes = malloc(sizeof(od));
    r->spot_nodes = malloc(sizeof(sp));
    r->dollars = malloc(4 * sizeof(double));
    assert_true(r->workload && r->ondemand_nodes && r->spot_nodes && r->dollars);
    memcpy(r->ondemand_nodes, od, sizeof(od));
    memcpy(r->spot_nodes, sp, sizeof(sp));
    for (size_t k = 0; k < 4; k++) {
        r->times[k] = 3600.0 * (double)k;
        r->dollars[k] = d * (double)k / 3;
    }
    return r;
}

/* The whole of a file, NUL-terminated. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long len;

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    len = ftell(f);
    assert_true(len >= 0);
    rewind(f);
    buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

static int count(const char *s, const char *needle)
{
    int c = 0;

    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        c++;
    return c;
}

/* Entries in a folder, . and .. aside. */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int c = 0;

    assert_non_null(d);
    while ((e = readdir(d)))
        c += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return c;
}

/* A fresh folder for one test's files. */
static void make_dir(char *dir, size_t size)
{
    snprintf(dir, size, "%s/castor_report_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
}

/* The checks every report passes: a doctype first, the SVG namespace as the only web address. */
static void expect_self_contained(const char *html)
{
    assert_int_equal(strncmp(html, "<!DOCTYPE html>", 15), 0);
    assert_int_equal(count(html, "http://"), count(html, XMLNS));
    assert_int_equal(count(html, "https://"), 0);
    assert_null(strstr(html, "<script"));
    assert_non_null(strstr(html, "</html>"));
}

/* Two policies on one workload: a GPUs-per-job chart for each, a utilisation chart and a JCT
 * distribution chart make four SVGs. The odd job name appears escaped, never raw; the names of the
 * workload and policies appear, and each average JCT as worked out by hand (100 + 200 + 300) / 3
 * = 200 s, and (150 + 250 + 350) / 3 = 250 s. */
static void sim_report_write__two_runs(void **state)
{
    struct sim_record *recs[2] = {make_small("pollux", 0), make_small("fifo", 50)};
    char dir[256], path[300];
    char *html;

    (void)state;
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/report.html", dir);
    assert_int_equal(sim_report_write(recs, 2, path), 0);
    html = slurp(path);
    expect_self_contained(html);
    assert_int_equal(count(html, "<svg"), 4);
    assert_non_null(strstr(html, "a&lt;b&amp;&quot;c&quot;"));
    assert_null(strstr(html, "a<b&\"c\""));
    assert_null(strstr(html, "a<b"));
    assert_non_null(strstr(html, "tiny"));
    assert_non_null(strstr(html, "pollux"));
    assert_non_null(strstr(html, "fifo"));
    assert_non_null(strstr(html, "tiny \xe2\x80\x94 pollux"));
    assert_non_null(strstr(html, ">200.0<"));
    assert_non_null(strstr(html, ">250.0<"));
    /* no fleet: no fleet section, no cost column, the utilisation chart as ever */
    assert_null(strstr(html, "Fleet and cost"));
    assert_null(strstr(html, "cost ($)"));
    assert_null(strstr(html, "nodes alive"));
    assert_non_null(strstr(html, "<h2>Cluster utilisation</h2>\n<svg"));
    /* one area per job that holds GPUs, in each of the two GPUs-per-job charts */
    assert_int_equal(count(html, "<path fill="), 6);
    assert_int_equal(entries(dir), 1);
    free(html);
    unlink(path);
    rmdir(dir);
    sim_record_free(recs[0]);
    sim_record_free(recs[1]);
}

/* A single run has no distribution to compare: its GPUs-per-job chart and the utilisation chart.
 * Names from user files are escaped in titles too: workload `w&'x'`, policy `<p>`. */
static void sim_report_write__one_run_escapes_titles(void **state)
{
    struct sim_record *r = make_small("<p>", 0);
    char dir[256], path[300];
    char *html;

    (void)state;
    free(r->workload);
    r->workload = strdup("w&'x'");
    assert_non_null(r->workload);
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/one.html", dir);
    assert_int_equal(sim_report_write(&r, 1, path), 0);
    html = slurp(path);
    expect_self_contained(html);
    assert_int_equal(count(html, "<svg"), 2);
    assert_non_null(strstr(html, "w&amp;&#39;x&#39; \xe2\x80\x94 &lt;p&gt;"));
    assert_null(strstr(html, "<p>"));
    assert_null(strstr(html, "w&'x'"));
    free(html);
    unlink(path);
    rmdir(dir);
    sim_record_free(r);
}

/* Writing over an existing report replaces it whole. */
static void sim_report_write__replaces_existing(void **state)
{
    struct sim_record *r = make_small("pollux", 0);
    char dir[256], path[300];
    FILE *f;
    char *html;

    (void)state;
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/report.html", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("old", f);
    fclose(f);
    assert_int_equal(sim_report_write(&r, 1, path), 0);
    html = slurp(path);
    expect_self_contained(html);
    assert_int_equal(entries(dir), 1);
    free(html);
    unlink(path);
    rmdir(dir);
    sim_record_free(r);
}

/* A path in a folder that does not exist: ERR_IO, and nothing is created. A path that names a
 * folder (the rename fails after the whole report was written): ERR_IO, and the temporary file is
 * gone, leaving only that folder. */
static void sim_report_write__io_errors_leave_nothing(void **state)
{
    struct sim_record *r = make_small("pollux", 0);
    char dir[256], path[300];

    (void)state;
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/missing/report.html", dir);
    assert_int_equal(sim_report_write(&r, 1, path), ERR_IO);
    assert_int_equal(entries(dir), 0);
    snprintf(path, sizeof(path), "%s/sub", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(sim_report_write(&r, 1, path), ERR_IO);
    assert_int_equal(entries(dir), 1);
    assert_int_equal(entries(path), 0);
    rmdir(path);
    rmdir(dir);
    sim_record_free(r);
}

/* No runs, or no path: ERR_INVAL, and no file is written. */
static void sim_report_write__invalid(void **state)
{
    struct sim_record *r = make_small("pollux", 0);
    char dir[256], path[300];

    (void)state;
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/report.html", dir);
    assert_int_equal(sim_report_write(&r, 0, path), ERR_INVAL);
    assert_int_equal(sim_report_write(NULL, 1, path), ERR_INVAL);
    assert_int_equal(sim_report_write(&r, 1, NULL), ERR_INVAL);
    assert_int_equal(entries(dir), 0);
    rmdir(dir);
    sim_record_free(r);
}

/* Two runs of 160 jobs on 64 GPUs, sampled every 100 s for about 83 hours (3000 samples), each
 * job holding 1 to 8 GPUs over a few hours with changes every 20 minutes: one area per job per
 * chart, and the file stays well under 2 MB. */
static void sim_report_write__large_runs_stay_small(void **state)
{
    struct sim_record *recs[2];
    char dir[256], path[300];
    unsigned long seed = 12345;
    struct stat st;
    char *html;

    (void)state;
    for (int i = 0; i < 2; i++) {
        struct sim_record *r = make_record("big", i ? "tiresias" : "pollux", 160, 64, 3000);

        for (int j = 0; j < 160; j++) {
            size_t start = (size_t)j * 17, len = 60 + (size_t)(j % 7) * 30;

            for (size_t k = start; k < start + len && k < r->ntimes; k++) {
                if ((k - start) % 12 == 0)
                    seed = seed * 6364136223846793005UL + 1442695040888963407UL;
                r->held[k * 160 + (size_t)j] = (unsigned short)(1 + (seed >> 33) % 8);
            }
            r->submit[j] = 100.0 * (double)start;
            r->jct[j] = 100.0 * (double)len;
            r->restarts[j] = j % 4;
        }
        recs[i] = r;
    }
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/big.html", dir);
    assert_int_equal(sim_report_write(recs, 2, path), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size < 2 * 1000 * 1000);
    html = slurp(path);
    expect_self_contained(html);
    assert_int_equal(count(html, "<svg"), 4);
    assert_int_equal(count(html, "<path fill="), 2 * 160);
    free(html);
    unlink(path);
    rmdir(dir);
    sim_record_free(recs[0]);
    sim_record_free(recs[1]);
}

/* Two systems on a fleet: the summary gains a cost column with each run's final dollars, the fleet
 * section a table (node-hours by market as worked out in make_fleet: 4 on-demand, 5 spot, so 56%
 * spot), a dollars chart with a line and an end dot per run and a nodes-by-market chart per run;
 * no utilisation chart, since no run has a fixed cluster. Six SVGs: dollars, two fleet charts, the
 * JCT distribution and two GPUs-per-job charts. */
static void sim_report_write__fleet_sections(void **state)
{
    struct sim_record *recs[2] = {make_fleet("cloud", "castor", 123.45),
                                  make_fleet("cloud", "fixed-spot", 67.8)};
    char dir[256], path[300];
    char *html;

    (void)state;
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/fleet.html", dir);
    assert_int_equal(sim_report_write(recs, 2, path), 0);
    html = slurp(path);
    expect_self_contained(html);
    assert_non_null(strstr(html, "<h2>Fleet and cost</h2>"));
    assert_int_equal(count(html, "<h3"), 1);
    assert_non_null(strstr(html, "<th>wall (s)</th><th>cost ($)</th>"));
    assert_non_null(strstr(html, "<td class=\"l\">castor</td><td>fleet</td>"));
    assert_non_null(strstr(html, "<td>0.50</td><td>123.45</td></tr>"));
    assert_non_null(strstr(html, "<td>0.50</td><td>67.80</td></tr>"));
    assert_non_null(strstr(html, "castor</td><td>4</td><td>4.0</td><td>5.0</td><td>56%</td>"
                                 "<td>123.45</td></tr>"));
    assert_non_null(strstr(html, "Dollars billed so far"));
    assert_non_null(strstr(html, ">castor ($123.45)</text>"));
    assert_non_null(strstr(html, ">fixed-spot ($67.80)</text>"));
    assert_non_null(strstr(html, "cloud \xe2\x80\x94 castor: $123.45</title></circle>"));
    assert_int_equal(count(html, "<circle"), 2);
    assert_int_equal(count(html, ">nodes alive<"), 2);
    assert_int_equal(count(html, "<title>on-demand nodes: 4.0 node-hours</title>"), 2);
    assert_int_equal(count(html, "<title>spot nodes: 5.0 node-hours</title>"), 2);
    assert_null(strstr(html, "Cluster utilisation"));
    assert_null(strstr(html, "0 GPUs"));
    assert_int_equal(count(html, "<svg"), 6);
    free(html);
    unlink(path);
    rmdir(dir);
    sim_record_free(recs[0]);
    sim_record_free(recs[1]);
}

/* Deadlines: the jobs table of a run whose jobs have them gains their deadline and whether it was
 * met (job 0, JCT 100 s, has 0.05 h = 180 s: met; job 1, JCT 200 s, has 0.04 h = 144 s: missed;
 * job 2 has none: a dash), and the fleet table the count met (1 of 2). Runs without deadlines
 * keep their tables as they were. */
static void sim_report_write__deadlines(void **state)
{
    struct sim_record *recs[2] = {make_fleet("cloud", "castor", 10),
                                  make_fleet("cloud", "fixed-spot", 5)};
    char dir[256], path[300];
    char *html;

    (void)state;
    recs[0]->deadline = calloc(3, sizeof(double));
    assert_non_null(recs[0]->deadline);
    recs[0]->deadline[0] = 180;
    recs[0]->deadline[1] = 144;
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/deadlines.html", dir);
    assert_int_equal(sim_report_write(recs, 2, path), 0);
    html = slurp(path);
    expect_self_contained(html);
    assert_non_null(strstr(html, "<th>cost ($)</th><th>deadlines met</th>"));
    assert_non_null(strstr(html, "<td>10.00</td><td>1 of 2</td></tr>"));
    assert_non_null(strstr(html, "<td>5.00</td><td>0 of 0</td></tr>"));
    assert_int_equal(count(html, "<th>deadline (h)</th>"), 1);
    assert_non_null(strstr(html, "<td>0.05 (met)</td>"));
    assert_non_null(strstr(html, "<td>0.04 (missed)</td>"));
    assert_int_equal(count(html, "<td>2</td><td>\xe2\x80\x94</td></tr>"), 1);
    free(html);
    unlink(path);
    rmdir(dir);
    sim_record_free(recs[0]);
    sim_record_free(recs[1]);
}

/* A fixed cluster beside fleets of two workloads: the utilisation chart stays, with a note that
 * fleets are left out; the fixed run's cost is a dash; each workload gets its own heading and
 * dollars chart, in order of first appearance, its legend naming only its own runs. */
static void sim_report_write__fleet_and_fixed(void **state)
{
    struct sim_record *recs[3] = {make_fleet("wa", "castor", 10), make_small("pollux", 0),
                                  make_fleet("wb", "castor", 20)};
    char dir[256], path[300];
    char *html, *a, *b;

    (void)state;
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/mixed.html", dir);
    assert_int_equal(sim_report_write(recs, 3, path), 0);
    html = slurp(path);
    expect_self_contained(html);
    assert_non_null(
        strstr(html, "<h2>Cluster utilisation</h2>\n<p class=\"note\">Runs on a fleet"));
    assert_non_null(strstr(html, "<td>0.50</td><td>\xe2\x80\x94</td></tr>"));
    assert_non_null(strstr(html, "<td class=\"l\">pollux</td><td>8</td>"));
    assert_int_equal(count(html, "Dollars billed so far"), 2);
    a = strstr(html, ">wa</h3>");
    b = strstr(html, ">wb</h3>");
    assert_true(a && b && a < b);
    assert_non_null(strstr(a, ">castor ($10.00)</text>"));
    assert_true(strstr(a, ">castor ($10.00)</text>") < b);
    assert_non_null(strstr(b, ">castor ($20.00)</text>"));
    assert_null(strstr(html, "pollux ($"));
    /* dollars, two fleet charts, utilisation, JCT distribution, three GPUs-per-job */
    assert_int_equal(count(html, "<svg"), 9);
    free(html);
    unlink(path);
    rmdir(dir);
    for (int i = 0; i < 3; i++)
        sim_record_free(recs[i]);
}

/* Fleets with nothing to draw: no node alive and no dollars, a single sample, no samples at all.
 * The report is written, says why a chart is empty, and prints no NaN or infinity (a fleet's 0
 * GPUs divide nothing). */
static void sim_report_write__fleet_degenerate(void **state)
{
    struct sim_record *recs[3] = {make_fleet("cloud", "empty", 0), make_fleet("cloud", "one", 5),
                                  make_fleet("cloud", "none", 0)};
    char dir[256], path[300];
    char *html;

    (void)state;
    memset(recs[0]->ondemand_nodes, 0, 4 * sizeof(unsigned short));
    memset(recs[0]->spot_nodes, 0, 4 * sizeof(unsigned short));
    memset(recs[0]->held, 0, 4 * 3 * sizeof(unsigned short));
    recs[1]->ntimes = 1;
    recs[1]->dollars[0] = 5;
    recs[2]->ntimes = 0;
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/empty.html", dir);
    assert_int_equal(sim_report_write(recs, 3, path), 0);
    html = slurp(path);
    expect_self_contained(html);
    assert_int_equal(count(html, ">no node alive</text>"), 1);
    assert_int_equal(count(html, ">fewer than two samples: nothing to draw over time</text>"), 2);
    assert_non_null(strstr(html, "empty</td><td>0</td><td>0.0</td><td>0.0</td><td>\xe2\x80\x94"
                                 "</td><td>0.00</td></tr>"));
    assert_non_null(strstr(html, "one</td><td>1</td><td>0.0</td><td>0.0</td><td>\xe2\x80\x94"
                                 "</td><td>5.00</td></tr>"));
    assert_non_null(strstr(html, "none</td><td>0</td><td>0.0</td><td>0.0</td><td>\xe2\x80\x94"
                                 "</td><td>\xe2\x80\x94</td></tr>"));
    /* the single sample (1 on-demand node) is a dot; the run without samples has neither line
     * nor dot */
    assert_int_equal(count(html, "<circle"), 2);
    assert_null(strstr(html, "nan"));
    assert_null(strstr(html, "inf"));
    free(html);
    unlink(path);
    rmdir(dir);
    for (int i = 0; i < 3; i++)
        sim_record_free(recs[i]);
}

/* A fleet record whose samples lack their dollars: ERR_INVAL, nothing written. */
static void sim_report_write__fleet_without_arrays(void **state)
{
    struct sim_record *r = make_fleet("cloud", "castor", 1);
    char dir[256], path[300];

    (void)state;
    free(r->dollars);
    r->dollars = NULL;
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/report.html", dir);
    assert_int_equal(sim_report_write(&r, 1, path), ERR_INVAL);
    assert_int_equal(entries(dir), 0);
    rmdir(dir);
    sim_record_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_report_write__two_runs),
        cmocka_unit_test(sim_report_write__one_run_escapes_titles),
        cmocka_unit_test(sim_report_write__replaces_existing),
        cmocka_unit_test(sim_report_write__io_errors_leave_nothing),
        cmocka_unit_test(sim_report_write__invalid),
        cmocka_unit_test(sim_report_write__large_runs_stay_small),
        cmocka_unit_test(sim_report_write__fleet_sections),
        cmocka_unit_test(sim_report_write__deadlines),
        cmocka_unit_test(sim_report_write__fleet_and_fixed),
        cmocka_unit_test(sim_report_write__fleet_degenerate),
        cmocka_unit_test(sim_report_write__fleet_without_arrays),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
