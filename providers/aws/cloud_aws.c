/* cloud_aws.c: the aws world's cloud (providers/cloud.h) over EC2 (providers/aws/ec2.c), made
 * from the daemon's configuration: offers from the section priced by DescribeSpotPriceHistory
 * (spot) and a static on-demand table, the cluster's instances by tag, launches by an instant
 * CreateFleet of one pool (RunInstances without a launch template, or where CreateFleet is
 * refused) with the launch token as ClientToken and tag, terminations of this cluster's
 * instances only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/aws/credentials.h"
#include "providers/aws/ec2.h"
#include "providers/aws/pricing.h"
#include "providers/cloud.h"
#include "providers/retry.h"
#include "util/conf.h"

#define AWS_CONF_MAX_OFFERS 64
#define AWS_CONF_PATH_MAX 4096
#define AWS_ID_MAX 64

/* One pool, as configured. */
struct aws_offer {
    char name[CLOUD_NAME_MAX];
    char type[32];
    char zone[32];
    char subnet[32];
    int spot;
    int gpus;
    double max_price;
    double on_demand; /* from the static price table; NAN: unknown */
};

struct aws_cloud {
    struct aws_credential_source *creds;
    struct ec2_client *ec2;
    struct aws_pricing *pricing; /* NULL: on-demand prices from the static table only */
    char region[32];
    char template_id[AWS_ID_MAX];
    char image_id[AWS_ID_MAX];
    struct aws_offer offers[AWS_CONF_MAX_OFFERS];
    size_t n;
};

static const struct aws_offer *aws_find(const struct aws_cloud *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->offers[i].name, name) == 0)
            return &a->offers[i];
    return NULL;
}

static int aws_offers(void *ctx, struct cloud_offer **out, size_t *n)
{
    struct aws_cloud *a = ctx;
    const char *types[AWS_CONF_MAX_OFFERS];
    struct ec2_spot_price *sp = NULL;
    struct cloud_offer *o = calloc(a->n, sizeof(*o));
    size_t nt = 0, nsp = 0;

    if (!o)
        return ERR_NOMEM;
    for (size_t i = 0; i < a->n; i++)
        if (a->offers[i].spot)
            types[nt++] = a->offers[i].type;
    /* spot prices unknown (NAN) when they cannot be read now */
    if (nt && ec2_describe_spot_prices(a->ec2, types, nt, 0, &sp, &nsp, NULL) < 0)
        nsp = 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct aws_offer *f = &a->offers[i];
        int64_t seen = -1;

        memcpy(o[i].name, f->name, sizeof(o[i].name));
        o[i].gpus = f->gpus;
        o[i].spot = f->spot;
        o[i].price = f->spot ? NAN : f->on_demand;
        /* the Price List API's (cached), else the static table's */
        if (!f->spot && a->pricing &&
            aws_pricing_on_demand(a->pricing, a->region, f->type, (double)retry_default_clock(NULL),
                                  &o[i].price, NULL) < 0)
            o[i].price = f->on_demand;
        for (size_t k = 0; f->spot && k < nsp; k++)
            if (strcmp(sp[k].type, f->type) == 0 && strcmp(sp[k].zone, f->zone) == 0 &&
                sp[k].time > seen) {
                seen = sp[k].time;
                o[i].price = sp[k].price;
            }
    }
    free(sp);
    *out = o;
    *n = a->n;
    return 0;
}

/* The cloud_state of an EC2 state name. */
static enum cloud_state aws_state(const char *s)
{
    if (strcmp(s, "pending") == 0)
        return CLOUD_PENDING;
    if (strcmp(s, "running") == 0)
        return CLOUD_RUNNING;
    return CLOUD_GONE; /* shutting-down, terminated, stopping, stopped */
}

static int aws_list(void *ctx, const char *cluster, struct cloud_instance **out, size_t *n)
{
    struct aws_cloud *a = ctx;
    struct ec2_instance *in = NULL;
    struct cloud_instance *l = NULL;
    size_t m = 0;
    int rc = ec2_describe_cluster(a->ec2, cluster, &in, &m, NULL);

    if (rc < 0)
        return rc;
    l = calloc(m ? m : 1, sizeof(*l));
    if (!l) {
        free(in);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < m; i++) {
        snprintf(l[i].id, sizeof(l[i].id), "%s", in[i].id);
        snprintf(l[i].token, sizeof(l[i].token), "%.63s", in[i].launch_token);
        l[i].state = aws_state(in[i].state);
        l[i].launched = (double)in[i].launch_time;
        for (size_t k = 0; k < a->n; k++)
            if (strcmp(a->offers[k].type, in[i].type) == 0 &&
                strcmp(a->offers[k].zone, in[i].zone) == 0 &&
                a->offers[k].spot == (in[i].market == EC2_SPOT)) {
                memcpy(l[i].offer, a->offers[k].name, sizeof(l[i].offer));
                break;
            }
    }
    free(in);
    *out = l;
    *n = m;
    return 0;
}

/* Launch by RunInstances (one instance of f under token) into id. */
static int aws_run(struct aws_cloud *a, const struct aws_offer *f, const char *cluster,
                   const char *token, char *id)
{
    struct ec2_run_request req = {0};
    struct ec2_launched *l = NULL;
    size_t n = 0;
    int rc;

    req.launch_template_id = a->template_id[0] ? a->template_id : NULL;
    req.image_id = a->image_id[0] ? a->image_id : NULL;
    req.instance_type = f->type;
    req.subnet_id = f->subnet[0] ? f->subnet : NULL;
    req.zone = f->zone;
    req.count = 1;
    req.min_count = 1;
    req.market = f->spot ? EC2_SPOT : EC2_ON_DEMAND;
    req.max_price = f->max_price;
    req.cluster_id = cluster;
    req.launch_token = token;
    if ((rc = ec2_run_instances(a->ec2, &req, &l, &n, NULL)) < 0)
        return rc;
    if (n < 1 || strlen(l[0].id) >= CLOUD_ID_MAX)
        rc = ERR_IO;
    else
        memcpy(id, l[0].id, strlen(l[0].id) + 1);
    free(l);
    return rc;
}

/* The error of an instant fleet that started nothing: its pool's error (capacity and quota
 * before others), ERR_AGAIN when it gave none. */
static int aws_fleet_error(const struct ec2_fleet_result *r)
{
    int rc = r->n_errors ? r->errors[0].err : ERR_AGAIN;

    for (size_t i = 0; i < r->n_errors; i++)
        if (r->errors[i].err == ERR_CAPACITY || r->errors[i].err == ERR_QUOTA)
            return r->errors[i].err;
    return rc < 0 ? rc : ERR_AGAIN;
}

/*
 * Launch one instance of offer under token. With a launch template: an instant fleet of one
 * override (the offer's type and subnet or zone) and a target capacity of 1 in its market,
 * the token as ClientToken; a pool that cannot serve comes back in the fleet's errors and is
 * returned as its code (ERR_CAPACITY, ERR_QUOTA). When the endpoint refuses CreateFleet itself
 * (ERR_INVAL: not authorised or not implemented; ERR_UNKNOWN: a code castor does not know), or
 * with only an image id (a fleet needs a template), RunInstances with the same token.
 */
static int aws_launch(void *ctx, const char *offer, const char *cluster, const char *token,
                      char *id)
{
    struct aws_cloud *a = ctx;
    const struct aws_offer *f = aws_find(a, offer);
    struct ec2_override ov = {0};
    struct ec2_fleet_request req = {0};
    struct ec2_fleet_result res = {0};
    int rc;

    if (!f)
        return ERR_UNKNOWN;
    if (!a->template_id[0])
        return aws_run(a, f, cluster, token, id);
    ov.instance_type = f->type;
    ov.subnet_id = f->subnet[0] ? f->subnet : NULL;
    ov.zone = f->zone;
    ov.max_price = f->spot ? f->max_price : 0;
    req.launch_template_id = a->template_id;
    req.overrides = &ov;
    req.n_overrides = 1;
    req.on_demand = !f->spot;
    req.spot = f->spot;
    req.cluster_id = cluster;
    req.launch_token = token;
    rc = ec2_create_fleet(a->ec2, &req, &res, NULL);
    if (rc == ERR_INVAL || rc == ERR_UNKNOWN)
        return aws_run(a, f, cluster, token, id);
    if (rc < 0)
        return rc;
    if (res.n_instances == 0)
        rc = aws_fleet_error(&res);
    else if (strlen(res.instances[0].id) >= CLOUD_ID_MAX)
        rc = ERR_IO;
    else
        memcpy(id, res.instances[0].id, strlen(res.instances[0].id) + 1);
    ec2_fleet_result_free(&res);
    return rc;
}

static int aws_terminate(void *ctx, const char *cluster, const char *id)
{
    struct aws_cloud *a = ctx;
    struct ec2_instance *in = NULL;
    size_t m = 0;
    int rc = ec2_describe_cluster(a->ec2, cluster, &in, &m, NULL), found = 0;

    if (rc < 0)
        return rc;
    for (size_t i = 0; i < m && !found; i++)
        if (strcmp(in[i].id, id) == 0)
            found = strcmp(in[i].state, "terminated") == 0 ? 2 : 1;
    free(in);
    if (!found)
        return ERR_UNKNOWN;
    if (found == 2)
        return 0;
    return ec2_terminate_instances(a->ec2, &id, 1, NULL);
}

static void aws_destroy(void *ctx)
{
    struct aws_cloud *a = ctx;

    if (!a)
        return;
    ec2_client_free(a->ec2);
    aws_pricing_free(a->pricing);
    aws_credential_source_free(a->creds);
    free(a);
}

static const struct cloud_ops aws_ops = {
    .name = "aws",
    .offers = aws_offers,
    .list = aws_list,
    .launch = aws_launch,
    .terminate = aws_terminate,
    .destroy = aws_destroy,
};

/* key's string in m into buf (size bytes): 1, 0 when absent, ERR_RANGE (at the value) when too
 * long. */
static int aws_get_text(const struct conf_node *m, const char *key, char *buf, size_t size,
                        struct error *e)
{
    const char *s = NULL;
    int rc = conf_get_string(m, key, &s, e);

    if (rc < 1)
        return rc;
    if (strlen(s) >= size) {
        const struct conf_node *n = conf_find(m, key);

        return err_set(e, ERR_RANGE, n->file, n->line, n->column, "%s: at most %zu characters",
                       n->path, size - 1);
    }
    memcpy(buf, s, strlen(s) + 1);
    return 1;
}

/* The on-demand price table at path into the offers (NAN for a type not listed). */
static int aws_prices(const char *path, struct aws_cloud *a, struct error *e)
{
    static const char *const keys[] = {"source", "date", "region", "verified", "on_demand", NULL};
    struct conf *doc = NULL;
    const struct conf_node *t = NULL;
    int rc;

    if ((rc = conf_load(path, &doc, e)) < 0)
        return rc;
    if ((rc = conf_check_keys(doc->root, keys, e)) < 0)
        goto out;
    t = conf_find(doc->root, "on_demand");
    if (!t || t->kind != CONF_MAPPING) {
        rc = err_set(e, ERR_PARSE, doc->name, 1, 1, "on_demand: a mapping of type: $/h required");
        goto out;
    }
    for (size_t i = 0; i < t->n; i++) {
        double usd = 0;

        if ((rc = conf_as_double(t->entries[i].value, 0, 1e4, &usd, e)) < 0)
            goto out;
        for (size_t k = 0; k < a->n; k++)
            if (strcmp(a->offers[k].type, t->entries[i].key) == 0)
                a->offers[k].on_demand = usd;
    }
    rc = 0;
out:
    conf_free(doc);
    return rc;
}

/* The offers list into a. */
static int aws_offers_conf(const struct conf_node *section, const char *where, int line, int column,
                           struct aws_cloud *a, struct error *e)
{
    static const char *const keys[] = {"instance_type", "zone",      "subnet", "market",
                                       "gpus",          "max_price", NULL};
    static const char *const markets[] = {"on-demand", "spot", NULL};
    const struct conf_node *list = conf_find(section, "offers");
    int rc;

    if (!list)
        return err_set(e, ERR_PARSE, where, line, column,
                       "cloud.offers: required (instance_type, zone and gpus of each pool)");
    if (list->kind != CONF_SEQUENCE)
        return err_set(e, ERR_PARSE, list->file, list->line, list->column,
                       "%s: expected a list of offers", list->path);
    if (list->n == 0 || list->n > AWS_CONF_MAX_OFFERS)
        return err_set(e, ERR_RANGE, list->file, list->line, list->column,
                       "%s: from 1 to %d offers", list->path, AWS_CONF_MAX_OFFERS);
    for (size_t i = 0; i < list->n; i++) {
        const struct conf_node *m = list->items[i];
        struct aws_offer *o = &a->offers[i];
        char name[CLOUD_NAME_MAX];
        long gpus = 0;

        if ((rc = conf_check_keys(m, keys, e)) < 0)
            return rc;
        if (m->kind != CONF_MAPPING || !conf_find(m, "instance_type") || !conf_find(m, "zone") ||
            !conf_find(m, "gpus"))
            return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                           "%s: instance_type, zone and gpus are required", m->path);
        o->on_demand = NAN;
        if ((rc = aws_get_text(m, "instance_type", o->type, sizeof(o->type), e)) < 0 ||
            (rc = aws_get_text(m, "zone", o->zone, sizeof(o->zone), e)) < 0 ||
            (rc = aws_get_text(m, "subnet", o->subnet, sizeof(o->subnet), e)) < 0 ||
            (rc = conf_get_choice(m, "market", markets, &o->spot, e)) < 0 ||
            (rc = conf_get_long(m, "gpus", 1, 64, &gpus, e)) < 0 ||
            (rc = conf_get_double(m, "max_price", 0, 1e4, &o->max_price, e)) < 0)
            return rc;
        o->gpus = (int)gpus;
        snprintf(name, sizeof(name), "%s/%s/%s", o->type, o->zone, o->spot ? "spot" : "on-demand");
        memcpy(o->name, name, sizeof(name));
        for (size_t k = 0; k < i; k++)
            if (strcmp(a->offers[k].name, o->name) == 0)
                return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                               "%s: the offer %s is listed twice", m->path, o->name);
    }
    a->n = list->n;
    return 0;
}

/* rc, with e's message located at key's value when the section has the key. */
static int aws_at_key(const struct conf_node *section, const char *key, int rc, struct error *e)
{
    const struct conf_node *n = conf_find(section, key);
    char msg[sizeof(e->msg)];

    if (!n || !e)
        return rc;
    snprintf(msg, sizeof(msg), "%s", e->msg);
    return err_set(e, rc, n->file, n->line, n->column, "%s: %.300s", n->path, msg);
}

int cloud_aws_from_conf(const struct conf_node *section, const char *base_dir,
                        const struct cloud_host *host, struct cloud *out, struct error *e)
{
    static const char *const keys[] = {
        "region",           "endpoint",        "profile",  "credentials_file", "imds",   "pricing",
        "pricing_endpoint", "launch_template", "image_id", "prices",           "offers", NULL};
    char region[32] = "", creds_file[AWS_CONF_PATH_MAX] = "", prices[AWS_CONF_PATH_MAX] = "";
    const char *where = section && section->file ? section->file : "";
    int line = section ? section->line : 0, column = section ? section->column : 0;
    struct aws_credential_config cc = {0};
    struct ec2_config ec = {0};
    struct aws_pricing_config pc = {0};
    struct aws_cloud *a = NULL;
    int imds = 1, pricing = 1, rc;

    (void)host;
    if (!section || section->kind == CONF_NULL)
        return err_set(e, ERR_PARSE, where, line, column,
                       "cloud: the aws cloud needs its section (region, offers, launch_template "
                       "or image_id)");
    if ((rc = conf_check_keys(section, keys, e)) < 0)
        return rc;
    a = calloc(1, sizeof(*a));
    if (!a)
        return err_set(e, ERR_NOMEM, where, line, column, "out of memory");
    if ((rc = aws_get_text(section, "region", region, sizeof(region), e)) < 0 ||
        (rc = conf_get_string(section, "endpoint", &ec.endpoint, e)) < 0 ||
        (rc = conf_get_string(section, "profile", &cc.profile, e)) < 0 ||
        (rc = conf_get_path(section, "credentials_file", base_dir, creds_file, sizeof(creds_file),
                            e)) < 0 ||
        (rc = conf_get_bool(section, "imds", &imds, e)) < 0 ||
        (rc = conf_get_bool(section, "pricing", &pricing, e)) < 0 ||
        (rc = conf_get_string(section, "pricing_endpoint", &pc.endpoint, e)) < 0 ||
        (rc = aws_get_text(section, "launch_template", a->template_id, sizeof(a->template_id), e)) <
            0 ||
        (rc = aws_get_text(section, "image_id", a->image_id, sizeof(a->image_id), e)) < 0 ||
        (rc = conf_get_path(section, "prices", base_dir, prices, sizeof(prices), e)) < 0)
        goto out;
    if (!region[0]) {
        rc = err_set(e, ERR_PARSE, where, line, column, "cloud.region: required");
        goto out;
    }
    if (!a->template_id[0] == !a->image_id[0]) {
        rc = err_set(e, ERR_PARSE, where, line, column,
                     "cloud: one of launch_template and image_id is required");
        goto out;
    }
    if ((rc = aws_offers_conf(section, where, line, column, a, e)) < 0)
        goto out;
    if (prices[0] && (rc = aws_prices(prices, a, e)) < 0) {
        const struct conf_node *n = conf_find(section, "prices");

        if (e && (rc == ERR_NOENT || rc == ERR_IO)) {
            char msg[sizeof(e->msg)];

            snprintf(msg, sizeof(msg), "%s", e->msg);
            rc =
                err_set(e, rc, n->file, n->line, n->column, "%s: %s: %.200s", n->path, prices, msg);
        }
        goto out;
    }
    cc.credentials_file = creds_file[0] ? creds_file : NULL;
    cc.imds_disabled = !imds;
    if ((rc = aws_credential_source_new(&cc, &a->creds)) < 0) {
        rc = err_set(e, rc, where, line, column, "the aws credentials: %s", err_str(rc));
        goto out;
    }
    ec.region = region;
    ec.credentials = a->creds;
    if ((rc = ec2_client_new(&ec, &a->ec2, e)) < 0) {
        rc = aws_at_key(section, "endpoint", rc, e);
        goto out;
    }
    pc.credentials = a->creds;
    if (pricing && (rc = aws_pricing_new(&pc, &a->pricing, e)) < 0) {
        rc = aws_at_key(section, "pricing_endpoint", rc, e);
        goto out;
    }
    snprintf(a->region, sizeof(a->region), "%s", region);
    out->ops = &aws_ops;
    out->ctx = a;
    a = NULL;
out:
    aws_destroy(a);
    return rc;
}
