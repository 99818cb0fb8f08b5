/* cloud_aws.c: the aws world's cloud (providers/cloud.h) over EC2 (providers/aws/ec2.c), made
 * from the daemon's configuration: offers from the section priced by DescribeSpotPriceHistory
 * (spot) and a static on-demand table, the cluster's instances by tag, launches by an instant
 * CreateFleet of one pool (RunInstances without a launch template, or where CreateFleet is
 * refused) with the launch token as ClientToken and tag, terminations of this cluster's
 * instances only, and the EC2 vCPU quotas the offers fall in (Service Quotas, the account's
 * instances, the types' vCPUs). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/aws/credentials.h"
#include "providers/aws/ec2.h"
#include "providers/aws/pricing.h"
#include "providers/aws/service_quotas.h"
#include "providers/cloud.h"
#include "providers/retry.h"
#include "util/conf.h"

#define AWS_CONF_MAX_OFFERS 64
#define AWS_CONF_PATH_MAX 4096
#define AWS_ID_MAX 64
#define AWS_MAX_QUOTA_RULES 32
#define AWS_QUOTA_CODE_MAX 32
/* How far back spot prices are asked for (the price kept is the latest). */
#define AWS_SPOT_WINDOW_S (3 * 3600)
/* A GB-month of EBS per hour: an average month (EBS prorates over the month's own seconds). */
#define AWS_HOURS_PER_MONTH 730.0

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

/* A configured mapping of instance types to a quota (the `quotas: codes:` entries). */
struct aws_quota_rule {
    char pattern[32];              /* an instance type, or a prefix ending in '*' ("p5*") */
    int spot;                      /* the market it applies to */
    char code[AWS_QUOTA_CODE_MAX]; /* "": no quota limits these types */
};

/* An instance type's vCPUs, as DescribeInstanceTypes told them (they do not change). */
struct aws_vcpus {
    char type[32];
    int vcpus; /* 0: EC2 does not know the type */
};

struct aws_cloud {
    struct aws_credential_source *creds;
    struct ec2_client *ec2;
    struct aws_pricing *pricing; /* NULL: on-demand prices from the static table only */
    struct sq_client *quotas;    /* NULL: quotas not read (`quotas: off`) */
    struct aws_quota_rule rules[AWS_MAX_QUOTA_RULES];
    size_t n_rules;
    struct aws_vcpus *vcpus; /* the cache of types' vCPUs */
    size_t n_vcpus;
    char region[32];
    char template_id[AWS_ID_MAX];
    char image_id[AWS_ID_MAX];
    struct aws_offer offers[AWS_CONF_MAX_OFFERS];
    size_t n;
    long volume_gb;       /* each worker's root volume (`volume_gb`; 0: not counted) */
    char volume_type[16]; /* its EBS type (`volume_type`, gp3 by default) */
    double volume_month;  /* $ per GB-month of that type in the price table (NAN: not listed) */
};

static const struct aws_offer *aws_find(const struct aws_cloud *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->offers[i].name, name) == 0)
            return &a->offers[i];
    return NULL;
}

/* The latest price in sp[0..n) of type in zone into *price: 1, or 0 when it has none. */
static int aws_spot_latest(const struct ec2_spot_price *sp, size_t n, const char *type,
                           const char *zone, double *price)
{
    int64_t seen = -1;

    for (size_t k = 0; k < n; k++)
        if (strcmp(sp[k].type, type) == 0 && strcmp(sp[k].zone, zone) == 0 && sp[k].time > seen) {
            seen = sp[k].time;
            *price = sp[k].price;
        }
    return seen >= 0;
}

/*
 * The spot prices of the spot offers' types into *out (malloc'd; *n entries), NULL and 0 when
 * they cannot be read now. DescribeSpotPriceHistory is asked for the last AWS_SPOT_WINDOW_S only
 * (without a StartTime it pages through up to 90 days of history): EC2 answers with the changes
 * in the window and with the last change before it, the price in effect at its start (the
 * DescribeSpotPriceHistory reference). Should an offer still have none, its type is asked again
 * without a StartTime, as before.
 */
static void aws_spot_prices(struct aws_cloud *a, int64_t now, struct ec2_spot_price **out,
                            size_t *n)
{
    const char *types[AWS_CONF_MAX_OFFERS];
    struct ec2_spot_price *sp = NULL, *more = NULL, *all;
    struct error e = {0}; /* the client logs what went wrong; e makes its line say it */
    size_t nt = 0, nsp = 0, nmore = 0;
    double price;

    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->offers[i].spot)
            types[nt++] = a->offers[i].type;
    if (!nt ||
        ec2_describe_spot_prices(a->ec2, types, nt, now - AWS_SPOT_WINDOW_S, &sp, &nsp, &e) < 0)
        return;
    nt = 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct aws_offer *f = &a->offers[i];
        size_t k = 0;

        if (!f->spot || aws_spot_latest(sp, nsp, f->type, f->zone, &price))
            continue;
        while (k < nt && strcmp(types[k], f->type) != 0)
            k++;
        if (k == nt)
            types[nt++] = f->type;
    }
    if (nt && ec2_describe_spot_prices(a->ec2, types, nt, 0, &more, &nmore, &e) == 0 && nmore) {
        all = realloc(sp, (nsp + nmore) * sizeof(*all));
        if (all) {
            memcpy(all + nsp, more, nmore * sizeof(*more));
            sp = all;
            nsp += nmore;
        }
    }
    free(more);
    *out = sp;
    *n = nsp;
}

static int aws_offers(void *ctx, struct cloud_offer **out, size_t *n)
{
    struct aws_cloud *a = ctx;
    struct ec2_spot_price *sp = NULL;
    struct cloud_offer *o = calloc(a->n, sizeof(*o));
    struct error e = {0}; /* the client logs what went wrong; e makes its line say it */
    double volume_hour = 0;
    size_t nsp = 0;

    if (!o)
        return ERR_NOMEM;
    /* the root volume: the Price List API's price per GB-month (cached), else the table's */
    if (a->volume_gb > 0) {
        double month = a->volume_month;

        if (a->pricing)
            (void)aws_pricing_volume(a->pricing, a->region, a->volume_type,
                                     (double)retry_default_clock(NULL), &month, &e);
        volume_hour = isfinite(month) ? (double)a->volume_gb * month / AWS_HOURS_PER_MONTH : 0;
    }
    /* spot prices unknown (NAN) when they cannot be read now */
    aws_spot_prices(a, retry_default_clock(NULL), &sp, &nsp);
    for (size_t i = 0; i < a->n; i++) {
        const struct aws_offer *f = &a->offers[i];

        memcpy(o[i].name, f->name, sizeof(o[i].name));
        o[i].gpus = f->gpus;
        o[i].spot = f->spot;
        o[i].price = f->spot ? NAN : f->on_demand;
        o[i].max_price = f->spot ? f->max_price : 0;
        /* EC2 bills no seconds of a spot instance it interrupts in its first hour */
        o[i].reclaim_free_s = f->spot ? 3600 : 0;
        /* the Price List API's (cached), else the static table's */
        if (!f->spot && a->pricing &&
            aws_pricing_on_demand(a->pricing, a->region, f->type, (double)retry_default_clock(NULL),
                                  &o[i].price, &e) < 0)
            o[i].price = f->on_demand;
        if (f->spot)
            (void)aws_spot_latest(sp, nsp, f->type, f->zone, &o[i].price);
        /* its root volume, billed beside the instance at the same rate on spot */
        o[i].storage = volume_hour;
        o[i].price += volume_hour;
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

/* 1 for an instance that is off, or going off, and stays so: castor never starts one again, and
 * a stopped instance keeps its volumes (billed) and can be started again by anyone. */
static int aws_stopped(const char *s)
{
    return strcmp(s, "stopping") == 0 || strcmp(s, "stopped") == 0;
}

/* Terminate the cluster's stopped and stopping instances of in[0..m) (an instance whose OS shut
 * it down with the default shutdown behaviour, or that EC2 stopped for a retirement); they are
 * reported gone either way. A failure is logged by the client and tried again at the next list. */
static void aws_terminate_stopped(struct aws_cloud *a, const struct ec2_instance *in, size_t m)
{
    const char **ids = calloc(m ? m : 1, sizeof(*ids));
    struct error e = {0}; /* the client logs what went wrong; e makes its line say it */
    size_t k = 0;

    if (!ids)
        return;
    for (size_t i = 0; i < m; i++)
        if (aws_stopped(in[i].state))
            ids[k++] = in[i].id;
    if (k)
        (void)ec2_terminate_instances(a->ec2, ids, k, &e);
    free(ids);
}

static int aws_list(void *ctx, const char *cluster, struct cloud_instance **out, size_t *n)
{
    struct aws_cloud *a = ctx;
    struct ec2_instance *in = NULL;
    struct cloud_instance *l = NULL;
    struct error e = {0}; /* the client logs what went wrong; e makes its line say it */
    size_t m = 0;
    int rc = ec2_describe_cluster(a->ec2, cluster, &in, &m, &e);

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
    aws_terminate_stopped(a, in, m);
    free(in);
    *out = l;
    *n = m;
    return 0;
}

/* A launch call's error as the cloud's launch returns it (providers/cloud.h): a resource EC2
 * does not know (InvalidSubnetID.NotFound, InvalidAMIID.NotFound, a launch template: ERR_NOENT)
 * is a refusal, ERR_INVAL; the rest as they are. */
static int aws_launch_error(int rc)
{
    return rc == ERR_NOENT ? ERR_INVAL : rc;
}

/* Launch by RunInstances (one instance of f under token) into id. */
static int aws_run(struct aws_cloud *a, const struct aws_offer *f, const char *cluster,
                   const char *token, char *id)
{
    struct ec2_run_request req = {0};
    struct ec2_launched *l = NULL;
    struct error e = {0}; /* the client logs what went wrong; e makes its line say it */
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
    if ((rc = ec2_run_instances(a->ec2, &req, &l, &n, &e)) < 0)
        return aws_launch_error(rc);
    if (n < 1 || strlen(l[0].id) >= CLOUD_ID_MAX)
        rc = ERR_IO;
    else
        memcpy(id, l[0].id, strlen(l[0].id) + 1);
    free(l);
    return rc;
}

/* The error of an instant fleet that started nothing: its pool's error (capacity and quota
 * before others; as aws_launch_error), ERR_AGAIN when it gave none. */
static int aws_fleet_error(const struct ec2_fleet_result *r)
{
    int rc = r->n_errors ? r->errors[0].err : ERR_AGAIN;

    for (size_t i = 0; i < r->n_errors; i++)
        if (r->errors[i].err == ERR_CAPACITY || r->errors[i].err == ERR_QUOTA)
            return r->errors[i].err;
    return rc < 0 ? aws_launch_error(rc) : ERR_AGAIN;
}

/*
 * Launch one instance of offer under token. With a launch template: an instant fleet of one
 * override (the offer's type and subnet or zone) and a target capacity of 1 in its market,
 * the token as ClientToken; a pool that cannot serve comes back in the fleet's errors and is
 * returned as its code (ERR_CAPACITY, ERR_QUOTA). When the endpoint refuses CreateFleet itself
 * (ERR_INVAL: not authorised or not implemented), or with only an image id (a fleet needs a
 * template), RunInstances with the same token. Any other failure of CreateFleet is returned, not
 * tried again by RunInstances: a resource EC2 does not know (ERR_NOENT) as ERR_INVAL, since
 * RunInstances would name the same; expired credentials (ERR_PERM), an unknown code, a lost
 * answer as they are. Errors as cloud.h says of launch.
 */
static int aws_launch(void *ctx, const char *offer, const char *cluster, const char *token,
                      char *id)
{
    struct aws_cloud *a = ctx;
    const struct aws_offer *f = aws_find(a, offer);
    struct ec2_override ov = {0};
    struct ec2_fleet_request req = {0};
    struct ec2_fleet_result res = {0};
    struct error e = {0}; /* the client logs what went wrong; e makes its line say it */
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
    rc = ec2_create_fleet(a->ec2, &req, &res, &e);
    if (rc == ERR_INVAL)
        return aws_run(a, f, cluster, token, id);
    if (rc < 0)
        return aws_launch_error(rc);
    if (res.n_instances == 0)
        rc = aws_fleet_error(&res);
    else if (strlen(res.instances[0].id) >= CLOUD_ID_MAX)
        rc = ERR_IO;
    else
        memcpy(id, res.instances[0].id, strlen(res.instances[0].id) + 1);
    ec2_fleet_result_free(&res);
    return rc;
}

/* The cloud's error for an EC2 error met while terminating: ERR_PERM for a refusal
 * (UnauthorizedOperation, AuthFailure: ERR_INVAL; expired credentials are ERR_PERM already),
 * ERR_IO for an error code castor does not know (OperationNotPermitted, ...: ERR_UNKNOWN, which
 * would say "no such instance") and for a not-found answer where none is expected; others as
 * they are. */
static int aws_terminate_error(int rc)
{
    if (rc == ERR_INVAL)
        return ERR_PERM;
    if (rc == ERR_UNKNOWN || rc == ERR_NOENT)
        return ERR_IO;
    return rc;
}

/*
 * Terminate id if it is the cluster's (DescribeInstances by the cluster's tag): ERR_UNKNOWN only
 * when the cluster has no such instance (an id of another cluster, or none EC2 knows), 0 when it
 * is terminated already. Any error of either call is a failure to terminate, tried again by the
 * caller: ERR_PERM (refused, or credentials expired even when fetched anew), ERR_IO (an unknown
 * code such as OperationNotPermitted; InvalidInstanceID.NotFound for an instance just described,
 * which EC2's eventual consistency allows: the next try sees it terminated), ERR_AGAIN.
 */
static int aws_terminate(void *ctx, const char *cluster, const char *id)
{
    struct aws_cloud *a = ctx;
    struct ec2_instance *in = NULL;
    struct error e = {0}; /* the client logs what went wrong; e makes its line say it */
    size_t m = 0;
    int rc = ec2_describe_cluster(a->ec2, cluster, &in, &m, &e), found = 0;

    if (rc < 0)
        return aws_terminate_error(rc);
    for (size_t i = 0; i < m && !found; i++)
        if (strcmp(in[i].id, id) == 0)
            found = strcmp(in[i].state, "terminated") == 0 ? 2 : 1;
    free(in);
    if (!found)
        return ERR_UNKNOWN;
    if (found == 2)
        return 0;
    return aws_terminate_error(ec2_terminate_instances(a->ec2, &id, 1, &e));
}

/* ---- quotas ---- */

/*
 * EC2's vCPU quotas by instance family (the type's letters before its first digit) and market.
 * Facts from AWS's documentation (docs.aws.amazon.com): "Amazon EC2 service quotas" (the
 * On-Demand Instance quotas, counted in vCPUs, one per family group) and "Spot Instance quotas"
 * (the "All ... Spot Instance Requests" quotas, in vCPUs). A family not listed here (dl, trn,
 * x, u-, hpc, ...) is limited by no quota castor knows; the configuration's `quotas: codes:`
 * adds or overrides entries.
 */
static const struct {
    const char *families; /* space-separated */
    int spot;
    const char *code;
    const char *name;
} aws_quota_table[] = {
    {"g vt", 0, "L-DB2E81BA", "Running On-Demand G and VT instances"},
    {"p", 0, "L-417A185B", "Running On-Demand P instances"},
    {"inf", 0, "L-1945791B", "Running On-Demand Inf instances"},
    {"a c d h i m r t z", 0, "L-1216C47A",
     "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"},
    {"g vt", 1, "L-3819A6DF", "All G and VT Spot Instance Requests"},
    {"p", 1, "L-7212CCBC", "All P4, P3 and P2 Spot Instance Requests"},
    {"inf", 1, "L-B5D1601B", "All Inf Spot Instance Requests"},
    {"a c d h i m r t z", 1, "L-34B43A08",
     "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests"},
};

/* Generations with a quota of their own, before the family table: the type's name begins with
 * the prefix and then a letter or the dot (p5.48xlarge, p5e, p5en; not p50). "All P5 Spot
 * Instance Requests" as AWS's "Spot Instance quotas" page names it; its code as the Service Quotas
 * console lists it (ec2, L-C4BD4855). On-demand P5 instances count in the P family's quota. */
static const struct {
    const char *prefix;
    int spot;
    const char *code;
    const char *name;
} aws_quota_generations[] = {
    {"p5", 1, "L-C4BD4855", "All P5 Spot Instance Requests"},
};

/* 1 when the space-separated list holds word (of n bytes). */
static int aws_word_in(const char *list, const char *word, size_t n)
{
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, " ");

        if (k == n && strncmp(p, word, n) == 0)
            return 1;
        p += k;
        p += strspn(p, " ");
    }
    return 0;
}

/* The quota code limiting instances of type in a market (the configured rules in order, then
 * the generations with a quota of their own, then the table by family), and the table's name for it
 * into *name (NULL for a configured one); NULL when none is known. */
static const char *aws_quota_code(const struct aws_cloud *a, const char *type, int spot,
                                  const char **name)
{
    size_t family = strcspn(type, "0123456789");

    *name = NULL;
    for (size_t i = 0; i < a->n_rules; i++) {
        const struct aws_quota_rule *r = &a->rules[i];
        size_t n = strlen(r->pattern);
        int match = n && r->pattern[n - 1] == '*' ? strncmp(type, r->pattern, n - 1) == 0
                                                  : strcmp(type, r->pattern) == 0;

        if (match && r->spot == spot)
            return r->code[0] ? r->code : NULL;
    }
    for (size_t i = 0; i < sizeof(aws_quota_generations) / sizeof(aws_quota_generations[0]); i++) {
        size_t n = strlen(aws_quota_generations[i].prefix);

        if (aws_quota_generations[i].spot == spot &&
            strncmp(type, aws_quota_generations[i].prefix, n) == 0 &&
            (type[n] == '.' || isalpha((unsigned char)type[n]))) {
            *name = aws_quota_generations[i].name;
            return aws_quota_generations[i].code;
        }
    }
    for (size_t i = 0; i < sizeof(aws_quota_table) / sizeof(aws_quota_table[0]); i++)
        if (aws_quota_table[i].spot == spot && family > 0 && type[family] &&
            aws_word_in(aws_quota_table[i].families, type, family)) {
            *name = aws_quota_table[i].name;
            return aws_quota_table[i].code;
        }
    return NULL;
}

/* The cached vCPUs of type: the entry, or NULL when it was never asked. */
static const struct aws_vcpus *aws_vcpus_of(const struct aws_cloud *a, const char *type)
{
    for (size_t i = 0; i < a->n_vcpus; i++)
        if (strcmp(a->vcpus[i].type, type) == 0)
            return &a->vcpus[i];
    return NULL;
}

/* Cache vcpus for type (0: EC2 does not know it); ERR_NOMEM. */
static int aws_vcpus_put(struct aws_cloud *a, const char *type, int vcpus)
{
    struct aws_vcpus *g = realloc(a->vcpus, (a->n_vcpus + 1) * sizeof(*g));

    if (!g)
        return ERR_NOMEM;
    a->vcpus = g;
    snprintf(g[a->n_vcpus].type, sizeof(g->type), "%s", type);
    g[a->n_vcpus++].vcpus = vcpus;
    return 0;
}

/* DescribeInstanceTypes for the n names into the cache; a name the answer leaves out is cached
 * as unknown. ERR_INVAL with e naming InvalidInstanceType when EC2 refuses a name. */
static int aws_describe_vcpus(struct aws_cloud *a, const char *const *names, size_t n,
                              struct error *e)
{
    struct ec2_instance_type *t = NULL;
    size_t nt = 0;
    int rc = ec2_describe_instance_types(a->ec2, names, n, &t, &nt, e);

    for (size_t i = 0; rc == 0 && i < n; i++) {
        int vcpus = 0;

        for (size_t k = 0; k < nt; k++)
            if (strcmp(t[k].name, names[i]) == 0 && t[k].vcpus > 0)
                vcpus = t[k].vcpus;
        if (!aws_vcpus_of(a, names[i]))
            rc = aws_vcpus_put(a, names[i], vcpus);
    }
    free(t);
    return rc;
}

/* 1 when e says EC2 refused a call for naming an instance type it does not have. */
static int aws_unknown_type(int rc, const struct error *e)
{
    return rc == ERR_INVAL && strncmp(e->msg, "InvalidInstanceType", 19) == 0;
}

/*
 * The vCPUs of each of the n types (repeats allowed) into the cache, asking EC2 only for the
 * types not in it, 100 names a call. EC2 refuses a whole call that names a type it does not
 * have (InvalidInstanceType): that batch is asked again a type at a time, and a type refused
 * alone is cached as unknown (0 vCPUs), as is one a successful answer leaves out. Errors:
 * ec2_describe_instance_types' (ERR_INVAL: UnauthorizedOperation, AuthFailure, ...).
 */
static int aws_resolve_vcpus(struct aws_cloud *a, const char *const *types, size_t n)
{
    const char **ask = calloc(n ? n : 1, sizeof(*ask));
    size_t na = 0;
    int rc = ask ? 0 : ERR_NOMEM;

    for (size_t i = 0; rc == 0 && i < n; i++) {
        int seen = aws_vcpus_of(a, types[i]) != NULL;

        for (size_t k = 0; k < na && !seen; k++)
            seen = strcmp(ask[k], types[i]) == 0;
        if (!seen)
            ask[na++] = types[i];
    }
    for (size_t at = 0; rc == 0 && at < na; at += 100) {
        size_t m = na - at < 100 ? na - at : 100;
        struct error e = {0};

        rc = aws_describe_vcpus(a, ask + at, m, &e);
        if (!aws_unknown_type(rc, &e))
            continue;
        rc = 0;
        for (size_t i = 0; rc == 0 && i < m; i++) {
            rc = aws_describe_vcpus(a, ask + at + i, 1, &e);
            if (aws_unknown_type(rc, &e))
                rc = aws_vcpus_put(a, ask[at + i], 0);
        }
    }
    free(ask);
    return rc;
}

/* The op's error for a failed call: ERR_NOMEM, ERR_AGAIN and ERR_PERM as they are; ERR_INVAL
 * (EC2 refuses a Describe call it does not authorise: UnauthorizedOperation, AuthFailure; a
 * signature or key Service Quotas refuses) is ERR_PERM; anything else (transport, a bad
 * answer, an error castor does not know) ERR_IO. */
static int aws_quota_error(int rc)
{
    if (rc == ERR_NOMEM || rc == ERR_AGAIN || rc == ERR_PERM)
        return rc;
    return rc == ERR_INVAL ? ERR_PERM : ERR_IO;
}

/* One quota code the offers use, as read. */
struct aws_quota_read {
    const char *code;       /* borrowed from the rules or the table */
    const char *table_name; /* the table's name, or NULL */
    struct sq_quota sq;
    int known;    /* 0: Service Quotas does not know the code (left out of the answer) */
    size_t index; /* in the answer, when known */
    double used;  /* vCPUs the account's instances hold in it */
};

/* The index in r (n entries) of code, or n. */
static size_t aws_quota_find(const struct aws_quota_read *r, size_t n, const char *code)
{
    size_t i = 0;

    while (i < n && strcmp(r[i].code, code) != 0)
        i++;
    return i;
}

/* The answer from what was read: the known quotas, one use per offer of a known quota and a
 * type EC2 knows. */
static int aws_quota_answer(const struct aws_cloud *a, struct aws_quota_read *r, size_t nr,
                            const size_t *offer_quota, struct cloud_quota **quotas, size_t *nq,
                            struct cloud_quota_use **uses, size_t *nu)
{
    struct cloud_quota *q = calloc(nr ? nr : 1, sizeof(*q));
    struct cloud_quota_use *u = calloc(a->n ? a->n : 1, sizeof(*u));
    size_t m = 0, k = 0;

    if (!q || !u) {
        free(q);
        free(u);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < nr; i++) {
        const char *name = r[i].sq.name[0] ? r[i].sq.name : r[i].table_name;

        if (!r[i].known)
            continue;
        r[i].index = m;
        snprintf(q[m].name, sizeof(q[m].name), "ec2/%s/%s", a->region, r[i].code);
        snprintf(q[m].title, sizeof(q[m].title), "%.120s (%s)", name ? name : r[i].code, a->region);
        snprintf(q[m].unit, sizeof(q[m].unit), "vCPUs");
        q[m].limit = r[i].sq.value;
        q[m].used = r[i].used;
        m++;
    }
    for (size_t i = 0; nr > 0 && i < a->n; i++) {
        const struct aws_vcpus *v = aws_vcpus_of(a, a->offers[i].type);

        if (offer_quota[i] >= nr || !r[offer_quota[i]].known || !v || v->vcpus <= 0)
            continue;
        u[k].quota = r[offer_quota[i]].index;
        memcpy(u[k].offer, a->offers[i].name, sizeof(u[k].offer));
        u[k].units = v->vcpus;
        k++;
    }
    *quotas = q;
    *nq = m;
    *uses = u;
    *nu = k;
    return 0;
}

/*
 * The quotas op: for each quota code the offers map to, its limit (Service Quotas: the applied
 * value, else AWS's default; a code it does not know is left out, its offers limited by none
 * known), what the whole account's pending and running instances of its types and market hold
 * (vCPUs, from an account-wide DescribeInstances), and each offer's vCPUs (DescribeInstanceTypes,
 * cached). An instance or offer whose type EC2 does not know counts no vCPUs. Off: no quotas.
 */
static int aws_quotas(void *ctx, struct cloud_quota **quotas, size_t *nq,
                      struct cloud_quota_use **uses, size_t *nu)
{
    struct aws_cloud *a = ctx;
    struct aws_quota_read r[AWS_CONF_MAX_OFFERS];
    size_t offer_quota[AWS_CONF_MAX_OFFERS] = {0}, nr = 0, nin = 0, nt = 0, known = 0;
    struct ec2_instance *in = NULL;
    struct error e = {0}; /* the clients log what went wrong; e makes their lines say it */
    const char **types = NULL;
    int rc = 0;

    memset(r, 0, sizeof(r));
    if (!a->quotas) /* off */
        return aws_quota_answer(a, r, 0, offer_quota, quotas, nq, uses, nu);
    for (size_t i = 0; i < a->n; i++) {
        const char *name, *code = aws_quota_code(a, a->offers[i].type, a->offers[i].spot, &name);

        offer_quota[i] = code ? aws_quota_find(r, nr, code) : AWS_CONF_MAX_OFFERS;
        if (code && offer_quota[i] == nr) {
            r[nr].code = code;
            r[nr].table_name = name;
            nr++;
        }
    }
    for (size_t i = 0; i < a->n; i++) /* "no quota" is nr from here on */
        offer_quota[i] = offer_quota[i] == AWS_CONF_MAX_OFFERS ? nr : offer_quota[i];
    if (nr == 0)
        return aws_quota_answer(a, r, 0, offer_quota, quotas, nq, uses, nu);
    for (size_t i = 0; i < nr && rc == 0; i++) {
        rc = sq_get_quota(a->quotas, "ec2", r[i].code, &r[i].sq, &e);
        r[i].known = rc == 0;
        known += r[i].known;
        if (rc == ERR_NOENT) /* logged by the client */
            rc = 0;
    }
    if (rc == 0 && known == 0) /* nothing to count in */
        return aws_quota_answer(a, r, nr, offer_quota, quotas, nq, uses, nu);
    if (rc == 0)
        rc = ec2_describe_running(a->ec2, &in, &nin, &e);
    if (rc == 0 && !(types = calloc(nin + a->n + 1, sizeof(*types))))
        rc = ERR_NOMEM;
    if (rc < 0)
        goto out;
    for (size_t i = 0; i < a->n; i++)
        types[nt++] = a->offers[i].type;
    for (size_t i = 0; i < nin; i++) { /* only those in a quota read */
        const char *name, *code = aws_quota_code(a, in[i].type, in[i].market == EC2_SPOT, &name);

        size_t k = code ? aws_quota_find(r, nr, code) : nr;

        if (k < nr && r[k].known)
            types[nt++] = in[i].type;
    }
    if ((rc = aws_resolve_vcpus(a, types, nt)) < 0)
        goto out;
    for (size_t i = 0; i < nin; i++) {
        const char *name, *code = aws_quota_code(a, in[i].type, in[i].market == EC2_SPOT, &name);
        const struct aws_vcpus *v = aws_vcpus_of(a, in[i].type);
        size_t k = code ? aws_quota_find(r, nr, code) : nr;

        if (k < nr && v)
            r[k].used += v->vcpus;
    }
    rc = aws_quota_answer(a, r, nr, offer_quota, quotas, nq, uses, nu);
out:
    free(types);
    free(in);
    return rc < 0 ? aws_quota_error(rc) : 0;
}

static void aws_destroy(void *ctx)
{
    struct aws_cloud *a = ctx;

    if (!a)
        return;
    ec2_client_free(a->ec2);
    aws_pricing_free(a->pricing);
    sq_client_free(a->quotas);
    free(a->vcpus);
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
    .quotas = aws_quotas,
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

/* The on-demand price table at path into the offers (NAN for a type not listed), and the
 * workers' root volume's $/h from its `volumes` ($ per GB-month of each EBS type, over 730 hours)
 * when the configuration gives volume_gb. */
static int aws_prices(const char *path, struct aws_cloud *a, struct error *e)
{
    static const char *const keys[] = {"source",    "date",    "region", "verified",
                                       "on_demand", "volumes", NULL};
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
    if ((t = conf_find(doc->root, "volumes")) && t->kind != CONF_MAPPING) {
        rc = err_set(e, ERR_PARSE, t->file, t->line, t->column,
                     "%s: a mapping of EBS volume type: $ per GB-month", t->path);
        goto out;
    }
    for (size_t i = 0; t && i < t->n; i++) {
        double month = 0;

        if ((rc = conf_as_double(t->entries[i].value, 0, 100, &month, e)) < 0)
            goto out;
        if (strcmp(t->entries[i].key, a->volume_type) == 0)
            a->volume_month = month;
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

/* 1 when s is a quota code as Service Quotas writes them: a letter, then 1 to 30 letters,
 * digits and '-'. */
static int aws_code_ok(const char *s)
{
    size_t n = strlen(s);

    if (n < 2 || n >= AWS_QUOTA_CODE_MAX || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
        return 0;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* 1 when s is an instance type, or a prefix of one ending in '*': lower-case letters, digits,
 * '.' and '-', then at most one '*' at the end. */
static int aws_pattern_ok(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.-");

    return n > 0 && (s[n] == '\0' || (s[n] == '*' && s[n + 1] == '\0'));
}

/* One `codes:` entry (type, market, code) into r. */
static int aws_rule_conf(const struct conf_node *m, struct aws_quota_rule *r, struct error *e)
{
    static const char *const keys[] = {"type", "market", "code", NULL};
    static const char *const markets[] = {"on-demand", "spot", NULL};
    char code[AWS_QUOTA_CODE_MAX] = "";
    const struct conf_node *n;
    int rc;

    if (m->kind != CONF_MAPPING || !conf_find(m, "type") || !conf_find(m, "market") ||
        !conf_find(m, "code"))
        return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                       "%s: type, market and code are required", m->path);
    if ((rc = conf_check_keys(m, keys, e)) < 0 ||
        (rc = aws_get_text(m, "type", r->pattern, sizeof(r->pattern), e)) < 0 ||
        (rc = conf_get_choice(m, "market", markets, &r->spot, e)) < 0 ||
        (rc = aws_get_text(m, "code", code, sizeof(code), e)) < 0)
        return rc;
    if (!aws_pattern_ok(r->pattern)) {
        n = conf_find(m, "type");
        return err_set(e, ERR_PARSE, n->file, n->line, n->column,
                       "%s: an instance type (p5.48xlarge) or a prefix ending in * (p5*)", n->path);
    }
    if (strcmp(code, "none") != 0 && !aws_code_ok(code)) {
        n = conf_find(m, "code");
        return err_set(e, ERR_PARSE, n->file, n->line, n->column,
                       "%s: a quota code (L-7212CCBC) or none", n->path);
    }
    snprintf(r->code, sizeof(r->code), "%s", strcmp(code, "none") == 0 ? "" : code);
    return 0;
}

/* The `quotas:` key: off or false (none read; *on 0), true, or a mapping of endpoint (into
 * *endpoint, borrowed from the document) and codes (rules into a). */
static int aws_quotas_conf(const struct conf_node *section, struct aws_cloud *a, int *on,
                           const char **endpoint, struct error *e)
{
    static const char *const keys[] = {"endpoint", "codes", NULL};
    const struct conf_node *q = conf_find(section, "quotas"), *list;
    int rc;

    *on = 1;
    if (!q)
        return 0;
    if (q->kind == CONF_SCALAR && !q->quoted && strcmp(q->text, "off") == 0) {
        *on = 0;
        return 0;
    }
    if (q->kind != CONF_MAPPING) {
        rc = conf_as_bool(q, on, NULL);
        if (rc < 0)
            return err_set(e, ERR_PARSE, q->file, q->line, q->column,
                           "%s: off, false, true, or a mapping of endpoint and codes", q->path);
        return 0;
    }
    if ((rc = conf_check_keys(q, keys, e)) < 0 ||
        (rc = conf_get_string(q, "endpoint", endpoint, e)) < 0)
        return rc;
    list = conf_find(q, "codes");
    if (!list)
        return 0;
    if (list->kind != CONF_SEQUENCE || list->n > AWS_MAX_QUOTA_RULES)
        return err_set(e, ERR_PARSE, list->file, list->line, list->column,
                       "%s: a list of at most %d entries of type, market and code", list->path,
                       AWS_MAX_QUOTA_RULES);
    for (size_t i = 0; i < list->n; i++)
        if ((rc = aws_rule_conf(list->items[i], &a->rules[i], e)) < 0)
            return rc;
    a->n_rules = list->n;
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
        "region",  "endpoint",         "profile",         "credentials_file", "imds",
        "pricing", "pricing_endpoint", "launch_template", "image_id",         "prices",
        "offers",  "quotas",           "volume_gb",       "volume_type",      NULL};
    char region[32] = "", creds_file[AWS_CONF_PATH_MAX] = "", prices[AWS_CONF_PATH_MAX] = "";
    const char *where = section && section->file ? section->file : "";
    int line = section ? section->line : 0, column = section ? section->column : 0;
    struct aws_credential_config cc = {0};
    struct ec2_config ec = {0};
    struct aws_pricing_config pc = {0};
    struct aws_json_config qc = {0};
    struct aws_cloud *a = NULL;
    int imds = 1, pricing = 1, quotas = 1, rc;

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
        (rc = conf_get_string(section, "pricing_endpoint", &pc.json.endpoint, e)) < 0 ||
        (rc = aws_get_text(section, "launch_template", a->template_id, sizeof(a->template_id), e)) <
            0 ||
        (rc = aws_get_text(section, "image_id", a->image_id, sizeof(a->image_id), e)) < 0 ||
        (rc = conf_get_path(section, "prices", base_dir, prices, sizeof(prices), e)) < 0 ||
        (rc = conf_get_long(section, "volume_gb", 1, 65536, &a->volume_gb, e)) < 0 ||
        (rc = aws_get_text(section, "volume_type", a->volume_type, sizeof(a->volume_type), e)) < 0)
        goto out;
    if (!a->volume_type[0])
        snprintf(a->volume_type, sizeof(a->volume_type), "gp3"); /* terraform's launch template */
    a->volume_month = NAN;
    if (!region[0]) {
        rc = err_set(e, ERR_PARSE, where, line, column, "cloud.region: required");
        goto out;
    }
    if (!a->template_id[0] == !a->image_id[0]) {
        rc = err_set(e, ERR_PARSE, where, line, column,
                     "cloud: one of launch_template and image_id is required");
        goto out;
    }
    if ((rc = aws_offers_conf(section, where, line, column, a, e)) < 0 ||
        (rc = aws_quotas_conf(section, a, &quotas, &qc.endpoint, e)) < 0)
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
    pc.json.credentials = a->creds;
    if (pricing && (rc = aws_pricing_new(&pc, &a->pricing, e)) < 0) {
        rc = aws_at_key(section, "pricing_endpoint", rc, e);
        goto out;
    }
    qc.credentials = a->creds;
    if (quotas && (rc = sq_client_new(region, &qc, &a->quotas, e)) < 0) {
        rc = aws_at_key(conf_find(section, "quotas"), "endpoint", rc, e);
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
