/* main.c: the castor command: dispatch to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "sched_bench.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: castor [command] [options]\n"
               "\n"
               "  (no command)            fit and summarise the goodput models of the bundled\n"
               "                          profiles (the embedded default)\n"
               "  model fit <profile-dir> fit a throughput model to measured step times\n"
               "  model list              list the throughput models\n"
               "  simulate --workload W --policy P\n"
               "                          replay workloads on a simulated cluster\n"
               "  run -c FILE             run the controller daemon (docs/run.md)\n"
               "  teardown -c FILE [--yes]\n"
               "                          terminate every instance of the cluster (the end)\n"
               "  backup -c FILE OUT      a consistent copy of the controller's state\n"
               "  check -c FILE [--json]  ask the cloud what castor would rent: prices, quotas\n"
               "                          and the room they leave, launching nothing\n"
               "  validate FILE           check a configuration (or --kind job|cloud-init)\n"
               "                          without starting anything\n"
               "  status                  the controller's fleet and jobs (CASTOR_URL)\n"
               "  jobs [--state S]        the controller's jobs\n"
               "  submit JOB.yaml         submit a job to the controller\n"
               "  cancel NAME             cancel a job\n"
               "  events NAME             what happened to a job, and why\n"
               "  down NODE               a static node is off: its jobs restart elsewhere\n"
               "  costs [--by day|offer]  what the fleet cost, by day or offer and market\n"
               "  bench sched             time the decide step at 16 to 1,000 nodes\n"
               "  version                 print the version\n"
               "\n"
               "`castor model --help` says more.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return cli_default(stdout, stderr);
    if (strcmp(argv[1], "model") == 0)
        return cli_model(argc - 1, argv + 1, stdout, stderr);
    if (argc >= 3 && strcmp(argv[1], "bench") == 0 && strcmp(argv[2], "sched") == 0)
        return bench_sched(argc - 2, argv + 2, stdout, stderr);
    if (strcmp(argv[1], "run") == 0)
        return cli_run(argc - 1, argv + 1, stdout, stderr);
    if (strcmp(argv[1], "teardown") == 0)
        return cli_teardown(argc - 1, argv + 1, stdout, stderr);
    if (strcmp(argv[1], "check") == 0)
        return cli_check(argc - 1, argv + 1, stdout, stderr);
    if (strcmp(argv[1], "backup") == 0)
        return cli_backup(argc - 1, argv + 1, stdout, stderr);
    if (strcmp(argv[1], "validate") == 0)
        return cli_validate(argc - 1, argv + 1, stdout, stderr);
    if (strcmp(argv[1], "status") == 0 || strcmp(argv[1], "jobs") == 0 ||
        strcmp(argv[1], "submit") == 0 || strcmp(argv[1], "cancel") == 0 ||
        strcmp(argv[1], "events") == 0 || strcmp(argv[1], "down") == 0 ||
        strcmp(argv[1], "costs") == 0)
        return cli_client(argc - 1, argv + 1, stdout, stderr);
    if (strcmp(argv[1], "simulate") == 0)
        return cli_simulate(argc - 1, argv + 1, stdout, stderr);
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("castor %s\n", CASTOR_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "castor: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
