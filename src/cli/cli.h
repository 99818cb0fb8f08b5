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

/* castor with no arguments: the embedded default (fit and summarise the bundled profiles). */
int cli_default(FILE *out, FILE *err);

#endif
