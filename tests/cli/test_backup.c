/* test_backup.c: `castor backup` (src/cli/backup_cmd.c) of a state an older castor made, which
 * may still run on it: the state is read, never migrated, and the copy is at its version, which
 * the output says; a state newer than this castor, and one others may read, are refused and left
 * as they were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "control/state.h"
#include "support/cli_capture.h"
#include "util/db.h"

#define CONFIG                                                       \
    "cluster: bk\nworld: fake\nstate: state.db\ncloud:\n  offers:\n" \
    "    - {name: g4/on-demand, gpus: 4, market: on-demand, price: 3.912}\n"

/* A folder with the configuration and where its state and a backup go. */
struct place {
    char dir[64];
    char config[96];
    char db[96];
    char copy[96];
};

static void place_make(struct place *p)
{
    FILE *f;

    snprintf(p->dir, sizeof(p->dir), "/tmp/castor-test-backup-XXXXXX");
    assert_non_null(mkdtemp(p->dir));
    snprintf(p->config, sizeof(p->config), "%s/castor.yaml", p->dir);
    snprintf(p->db, sizeof(p->db), "%s/state.db", p->dir);
    snprintf(p->copy, sizeof(p->copy), "%s/copy.db", p->dir);
    f = fopen(p->config, "w");
    assert_non_null(f);
    fputs(CONFIG, f);
    assert_int_equal(fclose(f), 0);
}

static void place_remove(struct place *p)
{
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    char file[128];

    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        snprintf(file, sizeof(file), "%s%s", p->db, suffixes[i]);
        unlink(file);
        snprintf(file, sizeof(file), "%s%s", p->copy, suffixes[i]);
        unlink(file);
    }
    unlink(p->config);
    assert_int_equal(rmdir(p->dir), 0);
}

/* cli_backup of p's configuration to p's copy: its status; what it wrote to out and err. */
static int run_backup(const struct place *p, char *outs, char *errs, size_t size)
{
    char *argv[] = {"backup", "-c", (char *)p->config, (char *)p->copy, NULL};

    return cli_capture(cli_backup, 4, argv, outs, errs, size);
}

/* The schema version of the state at path, read without changing it. */
static int version_of(const char *path)
{
    struct state *st = NULL;
    int v = -1;

    assert_int_equal(state_open_readonly(path, &st, &v, NULL), 0);
    state_close(st);
    return v;
}

/* A state at schema 12 (an older castor's) is copied as it is: the state stays at 12, and so does
 * its copy; the output says so. */
static void cli_backup__an_older_state_is_not_migrated(void **state)
{
    struct place p;
    struct state *st = NULL;
    char outs[1024], errs[1024];

    (void)state;
    place_make(&p);
    assert_int_equal(state_open_version(p.db, 12, &st, NULL), 0);
    assert_int_equal(state_job_submit(st, "a", "{}", 1.0), 0);
    state_close(st);
    if (run_backup(&p, outs, errs, sizeof(outs)) != 0)
        fail_msg("said: %s", errs);
    if (!strstr(outs, "(schema 12, 1 jobs") || !strstr(outs, "stay at schema 12"))
        fail_msg("said: %s", outs);
    assert_int_equal(version_of(p.db), 12);
    assert_int_equal(version_of(p.copy), 12);
    place_remove(&p);
}

/* A state newer than this castor, and one that others may read, are refused, saying why, with
 * no copy made and the state as it was. */
static void cli_backup__refusals_change_nothing(void **state)
{
    struct place p;
    struct state *st = NULL;
    struct db *db = NULL;
    struct stat sb;
    char outs[1024], errs[1024];

    (void)state;
    place_make(&p);
    assert_int_equal(state_open(p.db, &st, NULL), 0);
    state_close(st);
    assert_int_equal(db_open(p.db, &db, NULL), 0);
    assert_int_equal(db_set_user_version(db, STATE_SCHEMA_VERSION + 1), 0);
    db_close(db);
    assert_int_equal(run_backup(&p, outs, errs, sizeof(outs)), 1);
    if (!strstr(errs, "newer than this castor knows"))
        fail_msg("said: %s", errs);
    assert_int_equal(access(p.copy, F_OK), -1);

    assert_int_equal(db_open(p.db, &db, NULL), 0);
    assert_int_equal(db_set_user_version(db, STATE_SCHEMA_VERSION), 0);
    db_close(db);
    assert_int_equal(chmod(p.db, 0644), 0);
    assert_int_equal(run_backup(&p, outs, errs, sizeof(outs)), 1);
    if (!strstr(errs, "chmod 600"))
        fail_msg("said: %s", errs);
    assert_int_equal(access(p.copy, F_OK), -1);
    assert_int_equal(stat(p.db, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0644);
    place_remove(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cli_backup__an_older_state_is_not_migrated),
        cmocka_unit_test(cli_backup__refusals_change_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
