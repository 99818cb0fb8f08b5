/* backup_cmd.c: `castor backup -c FILE OUT`: a consistent copy of the controller's state, taken
 * while it runs (src/control/state_backup.c). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "control/config.h"
#include "control/state.h"

static void backup_usage(FILE *f)
{
    fprintf(f,
            "usage: castor backup -c FILE OUT\n"
            "\n"
            "Copy the configuration's state (its jobs, their models and costs, the nodes and\n"
            "launches) to OUT, a file that must not exist: one consistent snapshot, taken while\n"
            "the controller runs, checked, mode 600. The state is read, never written: the copy\n"
            "is at the state's schema version, even from an older castor's state. To restore\n"
            "it, stop the controller and put the copy in place of the state file (and remove\n"
            "the file's -wal and -shm).\n"
            "  -c, --config FILE   the controller's configuration\n");
}

int cli_backup(int argc, char **argv, FILE *out, FILE *err)
{
    struct state_backup_info info = {0};
    struct config *c = NULL;
    struct state *st = NULL;
    struct error e = {0};
    const char *path = NULL, *dest = NULL;
    char buf[800];
    int status = 1, rc;

    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
            path = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            backup_usage(out);
            return 0;
        } else if (!dest && argv[i][0] != '-') {
            dest = argv[i];
        } else {
            fprintf(err, "castor backup: unexpected argument \"%s\"\n", argv[i]);
            backup_usage(err);
            return 2;
        }
    }
    if (!path || !dest) {
        fprintf(err, "castor backup: %s\n",
                !path ? "a configuration is required (-c FILE)" : "where to? (OUT)");
        backup_usage(err);
        return 2;
    }
    if ((rc = config_load(path, &c, &e)) < 0) {
        fprintf(err, "castor backup: %s\n", err_format(&e, buf, sizeof(buf)));
        return rc == ERR_NOENT || rc == ERR_IO ? 1 : 2;
    }
    if (access(c->state_path, F_OK) != 0) {
        fprintf(err, "castor backup: %s: no state there (has the controller run?)\n",
                c->state_path);
        goto out;
    }
    /* read only, not migrated: the controller that runs on it may be older than this castor */
    if (state_open_readonly(c->state_path, &st, NULL, &e) < 0 ||
        state_backup(st, dest, &info, &e) < 0) {
        fprintf(err, "castor backup: %s\n", err_format(&e, buf, sizeof(buf)));
        goto out;
    }
    fprintf(out,
            "%s: backed up to %s (schema %d, %lld jobs, %lld nodes, %lld bytes; integrity ok)\n",
            c->state_path, dest, info.version, info.jobs, info.nodes, info.bytes);
    if (info.version < STATE_SCHEMA_VERSION)
        fprintf(out,
                "the state and its copy stay at schema %d; this castor's is %d, which it migrates "
                "them to when it opens them\n",
                info.version, STATE_SCHEMA_VERSION);
    status = 0;
out:
    state_close(st);
    config_free(c);
    return status;
}
