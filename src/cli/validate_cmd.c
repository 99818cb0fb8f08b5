/* validate_cmd.c: `castor validate [--kind config|job|cloud-init] FILE...`: check a controller
 * configuration (everything `castor run` checks before it starts, without the network), a job
 * file (as `castor submit` reads it) or a worker's cloud-init user-data or startup script
 * (src/cli/cloud_init.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "control/api.h"
#include "control/config.h"
#include "policies/fleet.h"
#include "policies/policy.h"
#include "providers/cloud.h"
#include "util/conf.h"
#include "util/file.h"

static void validate_usage(FILE *f)
{
    fprintf(
        f, "usage: castor validate [--kind config|job|cloud-init] FILE...\n"
           "       castor validate --cloud-init FILE...\n"
           "\n"
           "Check files without starting anything and without the network; print \"FILE: ok\"\n"
           "or each fault as file:line:column: reason. Exit status 0 when every file is good,\n"
           "2 when one is not, 1 when one cannot be read. A job that castor cannot do all of\n"
           "what it asks (a deadline without samples) is good, with a warning on stderr as\n"
           "file:line:column: warning: reason.\n"
           "\n"
           "  config      a controller configuration (`castor run -c`; the default): every key,\n"
           "              the cloud's own section through that cloud's constructor (its key\n"
           "              files and price tables are read; a local world makes its run_dir),\n"
           "              the token files if the configuration names them, the allocation\n"
           "              policy and the fleet planner, and for fake and local worlds the fleet\n"
           "              offer. Not checked: the state file (not opened), whether the API's\n"
           "              address can be bound, the cloud's credentials and, for aws and gcp,\n"
           "              that the fleet offer is among the offers the cloud prices at start.\n"
           "  job         a job file for `castor submit`\n"
           "  cloud-init  a worker's user-data (docs/terraform.md): #cloud-config, YAML, a\n"
           "              castor-node unit that is started, and the environment castor-node\n"
           "              needs: CASTOR_URL, CASTOR_NODE_TOKEN_FILE written at boot (no token\n"
           "              in the user-data), CASTOR_INSTANCE_ID read from the instance metadata\n");
}

/* The API's URL as a process on this machine reaches it, and this program's folder, as the
 * daemon tells a cloud (a local world's defaults). */
static void validate_host(const struct config *cfg, struct cloud_host *h, char *url, size_t usize,
                          char *bin_dir, size_t bsize)
{
    config_api_url(cfg, 0, url, usize);
    h->api_url = url;
    h->node_token_file = cfg->token_files[API_ROLE_NODE];
    h->job_token_file = cfg->token_files[API_ROLE_JOB];
    if (file_exe_dir(bin_dir, bsize) == 0)
        h->bin_dir = bin_dir;
}

/* The fleet offer named by cfg among the cloud's offers (worlds whose offers need no network). */
static int validate_offer(const struct config *cfg, struct cloud *cloud, struct error *e)
{
    struct cloud_offer *offers = NULL;
    size_t n = 0;
    int rc, found = 0;

    if (!cfg->fleet_offer || strcmp(cfg->fleet, "castor") == 0 ||
        (strcmp(cfg->world, "fake") != 0 && strcmp(cfg->world, "local") != 0))
        return 0;
    if ((rc = cloud_offers(cloud, &offers, &n)) < 0)
        return err_set(e, rc, cfg->path, 0, 0, "the %s cloud's offers: %s", cfg->world,
                       err_str(rc));
    for (size_t i = 0; i < n && !found; i++)
        found = strcmp(offers[i].name, cfg->fleet_offer) == 0;
    free(offers);
    if (!found) {
        const struct conf_node *f = conf_find(cfg->doc->root, "fleet");
        const struct conf_node *o = f ? conf_find(f, "offer") : NULL;

        return err_set(e, ERR_UNKNOWN, cfg->path, o ? o->line : 0, o ? o->column : 0,
                       "fleet.offer: the %s cloud has no offer %s", cfg->world, cfg->fleet_offer);
    }
    return 0;
}

/* A warning on warn for job m (its spec as stored) when castor cannot do what it asks
 * (api_job_spec_warning), at its deadline's line and column. Nothing else changes: the job is
 * valid. */
static void validate_warn(FILE *warn, const struct conf_node *m, const char *spec)
{
    const char *w = api_job_spec_warning(spec);
    const struct conf_node *d = w ? conf_find(m, "deadline") : NULL;

    if (!w)
        return;
    if (!d)
        d = m;
    fprintf(warn, "%s:%d:%d: warning: %s%s%s\n", d->file, d->line, d->column, d->path,
            d->path[0] ? ": " : "", w);
}

/* What `castor run` checks before it starts, short of the state, the API and the network; the
 * jobs castor cannot do all of what they ask are told on warn. */
static int validate_config(const char *path, FILE *warn, struct error *e)
{
    struct config *cfg = NULL;
    struct cloud cloud = {0};
    struct cloud_host host = {0};
    struct api_tokens tokens = {{NULL}};
    struct policy pol;
    struct fleet_policy fleet;
    struct fleet_config fc;
    char url[600], bin_dir[4096];
    int rc;

    if ((rc = config_load(path, &cfg, e)) < 0)
        return rc;
    {
        const struct conf_node *jobs = conf_find(cfg->doc->root, "jobs");

        for (size_t i = 0; jobs && i < jobs->n && i < cfg->njobs; i++)
            validate_warn(warn, jobs->items[i], cfg->jobs[i].spec);
    }
    if (cfg->token_files[API_ROLE_NODE] &&
        (rc = api_tokens_from_files(cfg->token_files[API_ROLE_NODE], cfg->token_files[API_ROLE_JOB],
                                    cfg->token_files[API_ROLE_USER],
                                    cfg->token_files[API_ROLE_METRICS], &tokens, e)) < 0)
        goto cleanup;
    api_tokens_clear(&tokens);
    validate_host(cfg, &host, url, sizeof(url), bin_dir, sizeof(bin_dir));
    if ((rc = cloud_new(cfg->world, cfg->cloud, cfg->dir, &host, &cloud, e)) < 0)
        goto cleanup;
    if ((rc = validate_offer(cfg, &cloud, e)) < 0)
        goto cleanup;
    if ((rc = policy_new(cfg->policy, &cfg->pcfg, &pol)) < 0) {
        err_set(e, rc, path, 0, 0, "policy %s: %s", cfg->policy, err_str(rc));
        goto cleanup;
    }
    policy_free(&pol);
    fc = cfg->fcfg;
    if (fc.offer < 0)
        fc.offer = 0; /* the daemon resolves the offer's index from the cloud's list */
    if ((rc = fleet_new(cfg->fleet, &fc, &fleet)) < 0) {
        err_set(e, rc, path, 0, 0, "fleet planner %s: %s", cfg->fleet, err_str(rc));
        goto cleanup;
    }
    fleet_free(&fleet);
cleanup:
    if (cloud.ops)
        cloud_free(&cloud);
    config_free(cfg);
    return rc;
}

static int validate_job(const char *path, FILE *warn, struct error *e)
{
    struct conf *doc = NULL;
    char *spec = NULL, *name = NULL;
    int rc;

    if ((rc = conf_load(path, &doc, e)) < 0)
        return rc;
    rc = config_job_spec(doc->root, 0, &spec, &name, e);
    if (rc == 0)
        validate_warn(warn, doc->root, spec);
    free(spec);
    free(name);
    conf_free(doc);
    return rc;
}

int cli_validate(int argc, char **argv, FILE *out, FILE *err)
{
    const char *kind = "config";
    int first = 0, status = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc) {
            kind = argv[++i];
        } else if (strcmp(argv[i], "--cloud-init") == 0) {
            kind = "cloud-init";
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            validate_usage(out);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(err, "castor validate: unexpected option \"%s\"\n", argv[i]);
            validate_usage(err);
            return 2;
        } else {
            first = i;
            break;
        }
    }
    if (strcmp(kind, "config") != 0 && strcmp(kind, "job") != 0 &&
        strcmp(kind, "cloud-init") != 0) {
        fprintf(err, "castor validate: --kind takes config, job or cloud-init, not \"%s\"\n", kind);
        return 2;
    }
    if (!first) {
        fprintf(err, "castor validate: a file is required\n");
        validate_usage(err);
        return 2;
    }
    for (int i = first; i < argc; i++) {
        struct error e = {0};
        char buf[800];
        int rc;

        if (strcmp(kind, "config") == 0)
            rc = validate_config(argv[i], err, &e);
        else if (strcmp(kind, "job") == 0)
            rc = validate_job(argv[i], err, &e);
        else
            rc = cli_cloud_init_check(argv[i], &e);
        if (rc == 0) {
            fprintf(out, "%s: ok\n", argv[i]);
            continue;
        }
        if (!e.file[0]) {
            char msg[sizeof(e.msg)];

            snprintf(msg, sizeof(msg), "%s", e.msg[0] ? e.msg : err_str(rc));
            err_set(&e, rc, argv[i], 0, 0, "%s", msg);
        }
        fprintf(err, "%s\n", err_format(&e, buf, sizeof(buf)));
        if (rc == ERR_NOENT || rc == ERR_IO || rc == ERR_NOMEM)
            status = status ? status : 1;
        else
            status = 2;
    }
    return status;
}
