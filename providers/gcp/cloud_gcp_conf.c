/* cloud_gcp_conf.c: the gcp cloud made from the daemon's configuration (world `gcp`): the token
 * source, the Compute Engine and Billing Catalog clients it owns, and cloud_gcp over them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/cloud.h"
#include "providers/gcp/auth.h"
#include "providers/gcp/billing.h"
#include "providers/gcp/cloud_gcp.h"
#include "providers/gcp/compute.h"
#include "util/conf.h"

#define GCP_CONF_MAX_OFFERS 64
#define GCP_CONF_PATH_MAX 4096

/* The clients the cloud borrows, owned here, and the cloud over them. */
struct gcp_conf_cloud {
    struct cloud inner;
    struct gcp_auth *auth;
    struct gcp_compute *compute;
    struct gcp_billing *billing;
    int quotas; /* 0: `quotas: false`, none read */
};

static int gcf_offers(void *ctx, struct cloud_offer **out, size_t *n)
{
    return cloud_offers(&((struct gcp_conf_cloud *)ctx)->inner, out, n);
}

static int gcf_list(void *ctx, const char *cluster, struct cloud_instance **out, size_t *n)
{
    return cloud_list(&((struct gcp_conf_cloud *)ctx)->inner, cluster, out, n);
}

static int gcf_launch(void *ctx, const char *offer, const char *cluster, const char *token,
                      char *id)
{
    return cloud_launch(&((struct gcp_conf_cloud *)ctx)->inner, offer, cluster, token, id);
}

static int gcf_terminate(void *ctx, const char *cluster, const char *id)
{
    return cloud_terminate(&((struct gcp_conf_cloud *)ctx)->inner, cluster, id);
}

static int gcf_quotas(void *ctx, struct cloud_quota **quotas, size_t *nq,
                      struct cloud_quota_use **uses, size_t *nu)
{
    struct gcp_conf_cloud *g = ctx;

    if (!g->quotas) {
        *quotas = NULL;
        *uses = NULL;
        *nq = *nu = 0;
        return 0;
    }
    return cloud_quotas(&g->inner, quotas, nq, uses, nu);
}

static void gcf_destroy(void *ctx)
{
    struct gcp_conf_cloud *g = ctx;

    if (!g)
        return;
    cloud_free(&g->inner);
    gcp_billing_free(g->billing);
    gcp_compute_free(g->compute);
    gcp_auth_free(g->auth);
    free(g);
}

static const struct cloud_ops gcf_ops = {
    .name = "gcp",
    .offers = gcf_offers,
    .list = gcf_list,
    .launch = gcf_launch,
    .terminate = gcf_terminate,
    .destroy = gcf_destroy,
    .quotas = gcf_quotas,
};

/* key's URL in m into *out (borrowed): http:// or https://; 1, 0 when absent, or an error. */
static int gcf_get_url(const struct conf_node *m, const char *key, const char **out,
                       struct error *e)
{
    const char *s = NULL;
    int rc = conf_get_string(m, key, &s, e);

    if (rc < 1)
        return rc;
    if (strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0) {
        const struct conf_node *n = conf_find(m, key);

        return err_set(e, ERR_PARSE, n->file, n->line, n->column,
                       "%s: must start with http:// or https://", n->path);
    }
    *out = s;
    return 1;
}

/* The faults of offer m (read into *o, its name into name) that cloud_gcp_new would find, at the
 * offer's key: a zone without a region, GPUs attached to a machine type that carries its own;
 * then any other (a name too long) at the offer. ERR_PARSE, or 0. */
static int gcf_offer_check(const struct conf_node *m, const struct cloud_gcp_offer *o,
                           char name[CLOUD_NAME_MAX], struct error *e)
{
    const struct conf_node *at = conf_find(m, "accelerator_count");
    struct error sub = {0};
    const char *builtin;
    char region[64];
    int gpus;

    if (!at)
        at = conf_find(m, "accelerator_type");
    if (gcp_zone_region(o->zone, region, sizeof(region)) < 0)
        at = conf_find(m, "zone");
    else if (!at || gcp_machine_gpus(o->machine_type, &gpus, &builtin) < 0)
        at = m;
    if (cloud_gcp_offer_name(o, name, &sub) == 0)
        return 0;
    return err_set(e, ERR_PARSE, at->file, at->line, at->column, "%s: %.300s", at->path, sub.msg);
}

/* The offers list into o (n written); required, 1 to GCP_CONF_MAX_OFFERS, each listed once. */
static int gcf_offers_conf(const struct conf_node *section, const char *where, int line, int column,
                           struct cloud_gcp_offer *o, size_t *n, struct error *e)
{
    static const char *const keys[] = {"machine_type",      "zone", "spot", "accelerator_type",
                                       "accelerator_count", NULL};
    const struct conf_node *list = section ? conf_find(section, "offers") : NULL;
    char names[GCP_CONF_MAX_OFFERS][CLOUD_NAME_MAX];
    int rc;

    if (!list)
        return err_set(e, ERR_PARSE, where, line, column,
                       "cloud.offers: required (machine_type and zone of each pool)");
    if (list->kind != CONF_SEQUENCE)
        return err_set(e, ERR_PARSE, list->file, list->line, list->column,
                       "%s: expected a list of offers", list->path);
    if (list->n == 0 || list->n > GCP_CONF_MAX_OFFERS)
        return err_set(e, ERR_RANGE, list->file, list->line, list->column,
                       "%s: from 1 to %d offers", list->path, GCP_CONF_MAX_OFFERS);
    for (size_t i = 0; i < list->n; i++) {
        const struct conf_node *m = list->items[i];
        long count = 0;

        o[i] = (struct cloud_gcp_offer){0};
        if ((rc = conf_check_keys(m, keys, e)) < 0)
            return rc;
        if (m->kind != CONF_MAPPING || !conf_find(m, "machine_type") || !conf_find(m, "zone"))
            return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                           "%s: machine_type and zone are required", m->path);
        if ((rc = conf_get_string(m, "machine_type", &o[i].machine_type, e)) < 0 ||
            (rc = conf_get_string(m, "zone", &o[i].zone, e)) < 0 ||
            (rc = conf_get_bool(m, "spot", &o[i].spot, e)) < 0 ||
            (rc = conf_get_string(m, "accelerator_type", &o[i].accelerator_type, e)) < 0 ||
            (rc = conf_get_long(m, "accelerator_count", 1, 16, &count, e)) < 0)
            return rc;
        if (o[i].accelerator_type && count == 0)
            count = 1;
        if (count && !o[i].accelerator_type) {
            const struct conf_node *c = conf_find(m, "accelerator_count");

            return err_set(e, ERR_PARSE, c->file, c->line, c->column, "%s: needs accelerator_type",
                           c->path);
        }
        o[i].accelerator_count = (int)count;
        if ((rc = gcf_offer_check(m, &o[i], names[i], e)) < 0)
            return rc;
        for (size_t k = 0; k < i; k++)
            if (strcmp(names[k], names[i]) == 0)
                return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                               "%s: the offer %s is listed twice", m->path, names[i]);
    }
    *n = list->n;
    return 0;
}

/* The instance section into t. */
static int gcf_instance(const struct conf_node *section, const char *where, int line, int column,
                        struct cloud_gcp_template *t, struct error *e)
{
    static const char *const keys[] = {"source_image",    "disk_gb",        "disk_type",
                                       "network",         "subnetwork",     "external_ip",
                                       "service_account", "startup_script", NULL};
    const struct conf_node *m = NULL;
    int rc = conf_get_section(section, "instance", keys, &m, e);

    if (rc < 0)
        return rc;
    if (rc == 0 || !conf_find(m, "source_image"))
        return err_set(e, ERR_PARSE, m && m->file ? m->file : where, m ? m->line : line,
                       m ? m->column : column,
                       "cloud.instance.source_image: required (the boot disk's image)");
    if ((rc = conf_get_string(m, "source_image", &t->source_image, e)) < 0 ||
        (rc = conf_get_long(m, "disk_gb", 10, 65536, &t->disk_gb, e)) < 0 ||
        (rc = conf_get_string(m, "disk_type", &t->disk_type, e)) < 0 ||
        (rc = conf_get_string(m, "network", &t->network, e)) < 0 ||
        (rc = conf_get_string(m, "subnetwork", &t->subnetwork, e)) < 0 ||
        (rc = conf_get_bool(m, "external_ip", &t->external_ip, e)) < 0 ||
        (rc = conf_get_string(m, "service_account", &t->service_account, e)) < 0 ||
        (rc = conf_get_string(m, "startup_script", &t->startup_script, e)) < 0)
        return rc;
    return 0;
}

int cloud_gcp_from_conf(const struct conf_node *section, const char *base_dir,
                        const struct cloud_host *host, struct cloud *out, struct error *e)
{
    static const char *const keys[] = {
        "project", "key_file", "metadata_url",  "compute_url", "billing_url", "prices",
        "offers",  "instance", "poll_interval", "zone_hold",   "quota_hold",  "quotas",
        NULL};
    struct cloud_gcp_offer offers[GCP_CONF_MAX_OFFERS];
    char key_file[GCP_CONF_PATH_MAX] = "", prices[GCP_CONF_PATH_MAX] = "";
    struct gcp_auth_config acfg = {0};
    struct gcp_compute_config ccfg = {0};
    struct gcp_billing_config bcfg = {0};
    struct cloud_gcp_config cfg = {0};
    struct gcp_conf_cloud *g = NULL;
    int read_quotas = 1;
    double poll_s = 2, zone_hold_s = CLOUD_GCP_ZONE_HOLD_S, quota_hold_s = CLOUD_GCP_QUOTA_HOLD_S;
    const char *where = section && section->file ? section->file : "";
    int line = section ? section->line : 0, column = section ? section->column : 0;
    int rc;

    (void)host;
    if (section && section->kind == CONF_NULL)
        section = NULL;
    if (!section)
        return err_set(e, ERR_PARSE, where, line, column,
                       "cloud: the gcp cloud needs its section (project, offers, instance)");
    if ((rc = conf_check_keys(section, keys, e)) < 0)
        return rc;
    if (!conf_find(section, "project"))
        return err_set(e, ERR_PARSE, where, line, column, "cloud.project: required");
    if ((rc = conf_get_string(section, "project", &ccfg.project, e)) < 0 ||
        (rc = conf_get_path(section, "key_file", base_dir, key_file, sizeof(key_file), e)) < 0 ||
        (rc = gcf_get_url(section, "metadata_url", &acfg.metadata_url, e)) < 0 ||
        (rc = gcf_get_url(section, "compute_url", &ccfg.rest.endpoint, e)) < 0 ||
        (rc = gcf_get_url(section, "billing_url", &bcfg.rest.endpoint, e)) < 0 ||
        (rc = conf_get_path(section, "prices", base_dir, prices, sizeof(prices), e)) < 0 ||
        (rc = conf_get_double(section, "poll_interval", 0.01, 60, &poll_s, e)) < 0 ||
        (rc = conf_get_double(section, "zone_hold", 1, 86400, &zone_hold_s, e)) < 0 ||
        (rc = conf_get_double(section, "quota_hold", 1, 86400, &quota_hold_s, e)) < 0 ||
        (rc = conf_get_bool(section, "quotas", &read_quotas, e)) < 0)
        return rc;
    ccfg.poll_interval_ms = (long)(poll_s * 1000 + 0.5);
    cfg.zone_hold_s = (long)(zone_hold_s + 0.5);
    cfg.quota_hold_s = (long)(quota_hold_s + 0.5);
    if ((rc = gcf_offers_conf(section, where, line, column, offers, &cfg.n_offers, e)) < 0 ||
        (rc = gcf_instance(section, where, line, column, &cfg.instance, e)) < 0)
        return rc;
    g = calloc(1, sizeof(*g));
    if (!g)
        return err_set(e, ERR_NOMEM, where, line, column, "out of memory");
    acfg.key_file = key_file[0] ? key_file : NULL;
    if ((rc = gcp_auth_new(&acfg, &g->auth, e)) < 0) {
        const struct conf_node *k = conf_find(section, "key_file");
        char msg[sizeof(e->msg)];

        if (k && e) {
            snprintf(msg, sizeof(msg), "%s", e->msg);
            rc = err_set(e, rc, k->file, k->line, k->column, "%s: %s: %.200s", k->path, key_file,
                         msg);
        }
        goto out;
    }
    g->quotas = read_quotas;
    ccfg.rest.auth = g->auth;
    bcfg.rest.auth = g->auth;
    bcfg.fallback_path = prices[0] ? prices : NULL;
    if ((rc = gcp_compute_new(&ccfg, &g->compute, e)) < 0 ||
        (rc = gcp_billing_new(&bcfg, &g->billing, e)) < 0)
        goto out;
    cfg.compute = g->compute;
    cfg.billing = g->billing;
    cfg.offers = offers;
    if ((rc = cloud_gcp_new(&cfg, &g->inner, e)) < 0)
        goto out;
    out->ops = &gcf_ops;
    out->ctx = g;
    g = NULL;
out:
    gcf_destroy(g);
    return rc;
}
