/* cli.h: castor's subcommands, each taking its own argv (argv[0] is the subcommand's name) and
 * returning the process exit status: 0 success, 1 failure (a message on stderr), 2 bad usage. */
#ifndef CASTOR_CLI_CLI_H
#define CASTOR_CLI_CLI_H

#include <stdio.h>

/* `castor model fit <profile-dir> [--model NAME] [--train placements|all] [--json]`,
 * `castor model list`. Output to out, errors to err. */
int cli_model(int argc, char **argv, FILE *out, FILE *err);

/* `castor simulate --workload <csv or folder> --policy <name> [...]` (see --help). */
int cli_simulate(int argc, char **argv, FILE *out, FILE *err);

/* `castor simulate --scenario FILE [--compare] [...]`: a market scenario (see --help); cli_simulate
 * hands over to it when --scenario is given. */
int cli_simulate_scenario(int argc, char **argv, FILE *out, FILE *err);

/* `castor run -c FILE`: the controller daemon (docs/run.md). */
int cli_run(int argc, char **argv, FILE *out, FILE *err);

/* `castor teardown -c FILE [--yes]`: terminate every instance of the configuration's cluster
 * (src/control/teardown.h); a dry run without --yes. 0, 1 (it could not, or an instance was not
 * terminated: run it again), 2 (bad usage or configuration). */
int cli_teardown(int argc, char **argv, FILE *out, FILE *err);

/* `castor check -c FILE [--json]`: ask the configuration's cloud what castor would rent from
 * (offers and prices, quotas and the room they leave, the cluster's instances), launching
 * nothing. 0 when castor can launch an offer, 1 when it can launch none or the cloud cannot be
 * asked, 2 (bad usage or configuration). */
int cli_check(int argc, char **argv, FILE *out, FILE *err);

/* The arguments of `castor NAME -c FILE [FLAG]` (argv[0] is NAME; flag NULL: none): the
 * configuration's path into *path and, when flag is given, whether it was into *flag_set. -1 to
 * go on; else the exit status to return at once: 0 after --help (usage on out), 2 for an
 * unexpected argument or no -c (the reason and usage on err). */
int cli_config_args(int argc, char **argv, const char *flag, int *flag_set, void (*usage)(FILE *),
                    FILE *out, FILE *err, const char **path);

/* The cloud of configuration c, made as the daemon makes it (the API's URL, the token files and
 * this program's folder for the clouds whose nodes talk back). 0, or the constructor's error
 * with e saying why (file:line:column for a bad `cloud:` section); *out is the caller's
 * (cloud_free). */
struct config;
struct cloud;
struct error;
int cli_config_cloud(const struct config *c, struct cloud *out, struct error *e);

/* `castor backup -c FILE OUT`: a consistent copy of the configuration's state at OUT, taken while
 * the controller runs (state_backup). 0, 1 (it could not: OUT exists, the state cannot be read),
 * 2 (bad usage or configuration). */
int cli_backup(int argc, char **argv, FILE *out, FILE *err);

/* `castor validate [--kind config|job|cloud-init] FILE...`: check files without the network;
 * "FILE: ok" on out, faults as file:line:column on err; 0, 2 (a bad file) or 1 (unreadable). */
int cli_validate(int argc, char **argv, FILE *out, FILE *err);

/* A worker's cloud-init user-data at path: #cloud-config, YAML, a castor-node unit started by
 * runcmd and the environment castor-node needs (docs/terraform.md). 0 when good; else ERR_PARSE
 * or ERR_INVAL (a token in the user-data, a fixed instance id) with e at file:line:column,
 * ERR_NOENT or ERR_IO when it cannot be read. */
int cli_cloud_init_check(const char *path, struct error *e);

/* `castor status|jobs|submit|cancel|events ...`: the client of the controller's API; argv[0] names
 * the command. */
int cli_client(int argc, char **argv, FILE *out, FILE *err);

/* `castor status`'s spend-limit line for fleet (GET /v1/fleet's answer) at now (UNIX seconds):
 * what the period cost of the limit, reached or not, and when the fleet's cost rate now would
 * reach it, before the period's end or past it. */
struct jv;
void cli_spend_line(const struct jv *fleet, double now, FILE *out);

/* The workload files: path itself, or the *.csv in the folder path, sorted; *out (n strings, each
 * malloc'd) is the caller's. -1 with a message on err when there is none. */
int cli_list_workloads(const char *path, char ***out, int *n, FILE *err);

/* Seconds on a monotonic clock, for wall times. */
double cli_wall_now(void);

/* A command-line number: s whole as a decimal number from lo to hi into *out. 0, or -1 (and
 * *out unchanged) when s is empty, has anything after the number, or is out of range. */
int cli_parse_double(const char *s, double lo, double hi, double *out);

/* castor with no arguments: the embedded default (fit and summarise the bundled profiles). */
int cli_default(FILE *out, FILE *err);

#endif
