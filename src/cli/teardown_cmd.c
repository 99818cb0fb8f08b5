/* teardown_cmd.c: `castor teardown -c FILE [--yes]`: the end of a cluster (src/control/teardown.c):
 * every instance with its tag terminated, while no controller runs on its state. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "control/config.h"
#include "control/realworld.h"
#include "control/state.h"
#include "control/teardown.h"
#include "providers/cloud.h"
#include "util/file.h"

static void teardown_usage(FILE *f)
{
    fprintf(f,
            "usage: castor teardown -c FILE [--yes]\n"
            "\n"
            "End the configuration's cluster: list every instance that carries its tag and, with\n"
            "--yes, terminate them all, give up the launches not yet answered and terminate the\n"
            "nodes in the state. The jobs stay in the state and resume from their checkpoints if\n"
            "the cluster runs again. Without --yes nothing changes: it says what it would do.\n"
            "Stop the controller first (it holds the state; teardown refuses while it runs).\n"
            "Without a state file (none is made) only the instances with the cluster's tag.\n"
            "Run it before destroying the controller (terraform destroy): the instances castor\n"
            "launched are not Terraform's.\n"
            "  -c, --config FILE   the controller's configuration\n"
            "  --yes               terminate (else a dry run)\n");
}

static double td_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int cli_teardown(int argc, char **argv, FILE *out, FILE *err)
{
    struct teardown_result r = {0};
    struct realworld_offer *meta = NULL;
    struct config *c = NULL;
    struct state *st = NULL;
    struct cloud cloud = {0};
    struct error e = {0};
    const char *path = NULL;
    char buf[800];
    int apply = 0, claim = -1, status = 1, have_cloud = 0,
        rc = cli_config_args(argc, argv, "--yes", &apply, teardown_usage, out, err, &path);

    if (rc >= 0)
        return rc;
    if (config_load(path, &c, &e) < 0) {
        fprintf(err, "castor teardown: %s\n", err_format(&e, buf, sizeof(buf)));
        return 2;
    }
    /* no state there (lost with its disk, or a mistyped path): none is made (nor its lock), and
     * the instances are found by the cluster's tag alone */
    if (access(c->state_path, F_OK) != 0)
        fprintf(err,
                "castor teardown: warning: %s: no state there (has the controller run? is the "
                "path right?): the instances with the cluster's tag only\n",
                c->state_path);
    else if (state_claim(c->state_path, &claim, &e) < 0 || state_open(c->state_path, &st, &e) < 0)
        goto fail;
    if (cli_config_cloud(c, &cloud, &e) < 0)
        goto fail;
    have_cloud = 1;
    if (config_offer_meta(c, &meta) < 0) {
        err_set(&e, ERR_NOMEM, "", 0, 0, "out of memory");
        goto fail;
    }
    if (teardown_run(st, &cloud, c->cluster, meta, c->noffers, apply, td_now(), out, &r, &e) < 0)
        goto fail;
    if (apply)
        fprintf(out,
                "cluster %s: %d of %d instances terminated, %d launches given up, %d nodes "
                "terminated; %d jobs kept in the state\n",
                c->cluster, r.terminated, r.instances, r.intents, r.nodes, r.jobs);
    else
        fprintf(out,
                "cluster %s: %d instances, %d launches not yet answered, %d nodes and %d jobs in "
                "the state; nothing changed (--yes terminates)\n",
                c->cluster, r.instances, r.intents, r.nodes, r.jobs);
    if (r.failed > 0)
        fprintf(err, "castor teardown: %d instances could not be terminated: run it again\n",
                r.failed);
    status = r.failed > 0 ? 1 : 0;
    goto out;
fail:
    fprintf(err, "castor teardown: %s\n", err_format(&e, buf, sizeof(buf)));
out:
    if (have_cloud)
        cloud_free(&cloud);
    state_close(st);
    if (claim >= 0)
        close(claim);
    free(meta);
    config_free(c);
    return status;
}
