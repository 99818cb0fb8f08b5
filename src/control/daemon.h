/* daemon.h: `castor run`: the controller as a daemon. It opens the state, reconciles it with the
 * cloud, serves the API in the same process, ticks the loop in real time with the real-world
 * provider, submits the configuration's jobs and its templates' jobs when their schedule says,
 * fills the metrics, records decisions and costs, reloads its configuration on SIGHUP and stops
 * after the current tick on SIGTERM (docs/run.md). */
#ifndef CASTOR_CONTROL_DAEMON_H
#define CASTOR_CONTROL_DAEMON_H

#include <stdio.h>

/* The environment variable that names the folder of systemd's credentials (LoadCredential). */
#define DAEMON_ENV_CREDENTIALS "CREDENTIALS_DIRECTORY"

/*
 * Run the daemon with the configuration at config_path, logging JSON lines to logf (borrowed),
 * until SIGTERM or SIGINT. Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (and the
 * threads it starts) and waits for them itself. Returns the process exit status: 0 after a clean
 * stop, 1 when it cannot start or stops on an error, 2 for a configuration that is not valid
 * (the reason, with file:line:column, on logf).
 */
int daemon_run(const char *config_path, FILE *logf);

#endif
