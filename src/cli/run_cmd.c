/* run_cmd.c: `castor run -c castor.yaml`: the controller daemon (src/control/daemon.c). */
#include <stdio.h>

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
    int rc = cli_config_args(argc, argv, NULL, NULL, run_usage, out, err, &path);

    return rc >= 0 ? rc : daemon_run(path, err);
}
