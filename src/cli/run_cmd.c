/* run_cmd.c: `castor run -c castor.yaml`: the controller daemon (src/control/daemon.c). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "control/daemon.h"

static void run_usage(FILE *f)
{
    fprintf(f, "usage: castor run -c FILE\n"
               "\n"
               "Run the controller: the loop in real time, the API, cron jobs (docs/run.md).\n"
               "  -c, --config FILE   the configuration (config/castor.yaml documents every key)\n"
               "\n"
               "Tokens come from the files the configuration names, systemd's credentials\n"
               "($CREDENTIALS_DIRECTORY/{node,job,user,metrics}.token) or the environment\n"
               "(CASTOR_NODE_TOKEN, CASTOR_JOB_TOKEN, CASTOR_USER_TOKEN, CASTOR_METRICS_TOKEN),\n"
               "never from the command line. Logs are JSON lines on stderr. SIGHUP reloads the\n"
               "configuration; SIGTERM stops after the current tick.\n");
}

int cli_run(int argc, char **argv, FILE *out, FILE *err)
{
    const char *path = NULL;

    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
            path = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            run_usage(out);
            return 0;
        } else {
            fprintf(err, "castor run: unexpected argument \"%s\"\n", argv[i]);
            run_usage(err);
            return 2;
        }
    }
    if (!path) {
        fprintf(err, "castor run: a configuration is required (-c FILE)\n");
        run_usage(err);
        return 2;
    }
    return daemon_run(path, err);
}
