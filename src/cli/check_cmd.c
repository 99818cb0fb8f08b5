/* check_cmd.c: `castor check -c FILE [--json]`: before a fleet is trusted to a cloud, ask the
 * configuration's cloud what castor would rent from, launching nothing: each offer's price now,
 * the quotas and the room they leave each offer, and the instances that carry the cluster's tag;
 * then whether castor can launch anything at all (a zero quota, a missing price, a role that may
 * not read the quotas are said before the first job waits on them). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "control/config.h"
#include "control/realworld.h"
#include "providers/cloud.h"
#include "util/json.h"

static void check_usage(FILE *f)
{
    fprintf(f,
            "usage: castor check -c FILE [--json]\n"
            "\n"
            "Ask the configuration's cloud, with its credentials, what castor would rent from,\n"
            "launching and changing nothing: each offer's price now, the cloud's quotas and how\n"
            "many more nodes of each offer they leave room for (and the quota that binds), and\n"
            "the instances that carry the cluster's tag. Exit status 0 when castor can launch at\n"
            "least one offer (priced, with room; for a fixed or pollux-autoscale fleet, its\n"
            "offer), 1 when it can launch none or the cloud cannot be asked (the reason: the\n"
            "credentials, a permission, the network), 2 for bad usage or a bad configuration\n"
            "(file:line:column).\n"
            "  -c, --config FILE   the controller's configuration\n"
            "  --json              the same as JSON on stdout\n");
}

/* What check found of one offer. */
struct ck_offer {
    const struct cloud_offer *o;
    long room;  /* nodes the quotas leave room for; LONG_MAX: no quota known limits it */
    long bind;  /* the quota that binds (index), or -1 */
    double per; /* units a node takes from it */
    int usable; /* priced, with room, not above its max_price */
    int over;   /* spot, its price above its max_price: the cloud launches none */
    const struct config_offer *conf; /* the configuration's price or discount for it, or NULL */
    long held;                       /* the cluster's live instances of it */
};

/* The cluster's live instances (those that carry its tag), and what they cost now. */
struct ck_held {
    long instances;   /* -1: they cannot be listed (note says why) */
    double rate;      /* $/h at the prices now of those whose offer is priced */
    long unpriced;    /* those whose offer has no known price, or is no longer offered */
    const char *note; /* why they cannot be listed */
};

/* Count the live instances in (n) into h and each offer's held (v, nv). */
static void ck_count_held(const struct cloud_instance *in, size_t n, struct ck_offer *v, size_t nv,
                          struct ck_held *h)
{
    h->instances = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;

        if (in[i].state == CLOUD_GONE)
            continue;
        h->instances++;
        while (k < nv && strcmp(v[k].o->name, in[i].offer) != 0)
            k++;
        if (k < nv)
            v[k].held++;
        if (k < nv && isfinite(v[k].o->price))
            h->rate += v[k].o->price;
        else
            h->unpriced++;
    }
}

/* The room the quotas leave offer c->o (c->room, c->bind, c->per), as the controller counts it:
 * the fewest whole nodes over the quotas it takes from, each (limit - used) / units. */
static void ck_room(struct ck_offer *c, const struct cloud_quota *q, size_t nq,
                    const struct cloud_quota_use *u, size_t nu)
{
    c->room = LONG_MAX;
    c->bind = -1;
    for (size_t i = 0; i < nu; i++) {
        double left;
        long nodes;

        if (strcmp(u[i].offer, c->o->name) != 0 || u[i].quota >= nq || !(u[i].units > 0))
            continue;
        left = cloud_quota_room(q[u[i].quota].limit, q[u[i].quota].used, u[i].units);
        nodes = (long)fmin(left, (double)LONG_MAX / 2);
        if (nodes < c->room) {
            c->room = nodes;
            c->bind = (long)u[i].quota;
            c->per = u[i].units;
        }
    }
    c->usable = isfinite(c->o->price) && c->room > 0 && !c->over;
}

/* The offer a fixed or pollux-autoscale fleet launches (its fleet.offer, else the first); NULL
 * for castor's planner, which may launch any. */
static const struct ck_offer *ck_fleet_offer(const struct config *c, const struct ck_offer *v,
                                             size_t n)
{
    if (strcmp(c->fleet, "castor") == 0 || n == 0)
        return NULL;
    for (size_t i = 0; c->fleet_offer && i < n; i++)
        if (strcmp(v[i].o->name, c->fleet_offer) == 0)
            return &v[i];
    return c->fleet_offer ? NULL : &v[0];
}

/* How to ask for more of quota q, one line on out: what castor's max_nodes nodes of the offers it
 * binds would take (units a node: per), and, for an EC2 quota ("ec2/<region>/<code>"), the
 * command that asks; a Compute Engine quota ("compute/...") is asked for in the console. */
static void ck_ask(FILE *out, const struct cloud_quota *q, double per, int max_nodes)
{
    char region[64], code[64];
    double want = q->used + per * max_nodes;

    fprintf(out,
            "  %s \"%s\": %.0f of %.0f %s held; %d nodes (max_nodes) take %.0f more: ", q->name,
            q->title, q->used, q->limit, q->unit, max_nodes, per * max_nodes);
    if (sscanf(q->name, "ec2/%63[^/]/%63s", region, code) == 2)
        fprintf(out,
                "aws service-quotas request-service-quota-increase --region %s --service-code ec2 "
                "--quota-code %s --desired-value %.0f\n",
                region, code, want);
    else if (strncmp(q->name, "compute/", 8) == 0)
        fprintf(out,
                "ask for %.0f in the Google Cloud console (IAM & Admin > Quotas & System "
                "Limits)\n",
                want);
    else
        fprintf(out, "ask the cloud for %.0f\n", want);
}

/* The table, the quotas' troubles and the verdict, for people. */
static void ck_print(FILE *out, const struct config *c, const struct ck_offer *v, size_t n,
                     const struct cloud_quota *q, size_t nq, const char *quota_note,
                     const struct ck_held *h, size_t usable)
{
    int asked = 0;

    fprintf(out, "cloud %s, cluster %s: %zu offer%s, %zu quota%s read", c->world, c->cluster, n,
            n == 1 ? "" : "s", nq, nq == 1 ? "" : "s");
    if (h->instances > 0)
        fprintf(out, ", %ld instance%s with the cluster's tag, $%.4f/h at the prices now%s\n",
                h->instances, h->instances == 1 ? "" : "s", h->rate,
                h->unpriced ? " (some of unknown price)" : "");
    else if (h->instances == 0)
        fprintf(out, ", 0 instances with the cluster's tag\n");
    else
        fprintf(out, "; the cluster's instances cannot be listed: %s\n", h->note);
    if (quota_note)
        fprintf(out, "quotas: %s\n", quota_note);
    fprintf(out, "\n%-48s %4s %-9s %10s %4s %6s  %s\n", "offer", "GPUs", "market", "$/h", "held",
            "room", "bound by");
    for (size_t i = 0; i < n; i++) {
        const struct ck_offer *x = &v[i];
        char price[32], room[32];

        snprintf(price, sizeof(price), isfinite(x->o->price) ? "%.4f" : "unknown", x->o->price);
        snprintf(room, sizeof(room), x->room == LONG_MAX ? "-" : "%ld", x->room);
        fprintf(out, "%-48s %4d %-9s %10s %4ld %6s  ", x->o->name, x->o->gpus,
                x->o->spot ? "spot" : "on-demand", price, x->held, room);
        if (x->bind >= 0)
            fprintf(out, "%s \"%s\": %.0f of %.0f %s held, %.0f a node", q[x->bind].name,
                    q[x->bind].title, q[x->bind].used, q[x->bind].limit, q[x->bind].unit, x->per);
        else
            fprintf(out, "no quota known");
        if (x->over)
            fprintf(out, "; above its max_price $%.4f: none launched", x->o->max_price);
        if (!isfinite(x->o->price))
            fprintf(out, "; castor's planner does not launch an offer it cannot price");
        else if (x->conf && x->conf->price > 0)
            fprintf(out, "; the configuration's price");
        else if (x->conf)
            fprintf(out, "; the cloud's price less the configuration's %.0f%%",
                    100 * x->conf->discount);
        fprintf(out, "\n");
    }
    fprintf(out, "\n");
    for (size_t i = 0; i < n; i++) { /* each quota that leaves an offer no room, once */
        size_t k = 0;

        if (v[i].bind < 0 || v[i].room > 0)
            continue;
        while (k < i && !(v[k].bind == v[i].bind && v[k].room == 0))
            k++;
        if (k < i)
            continue;
        if (!asked++)
            fprintf(out, "quotas that leave an offer no room, and how to ask for more:\n");
        ck_ask(out, &q[v[i].bind], v[i].per, c->fcfg.max_nodes);
    }
    if (asked)
        fprintf(out, "\n");
    if (usable == 0)
        fprintf(out, "castor can launch none of the %zu offers%s\n", n,
                n ? ": ask the cloud for the quotas named above, or add a price table" : "");
    else
        fprintf(out, "castor can launch %zu of the %zu offers\n", usable, n);
}

/* The same as JSON. */
static int ck_json(FILE *out, const struct config *c, const struct ck_offer *v, size_t n,
                   const struct cloud_quota *q, size_t nq, const char *quota_note,
                   const struct ck_held *h, size_t usable, const struct ck_offer *fleet, int ok)
{
    struct jv *doc = jv_object(), *offers = jv_array(), *quotas = jv_array();
    int rc;

    for (size_t i = 0; i < n; i++) {
        struct jv *o = jv_object();

        jv_set(o, "name", jv_string(v[i].o->name));
        jv_set(o, "gpus", jv_integer(v[i].o->gpus));
        jv_set(o, "spot", jv_bool(v[i].o->spot));
        jv_set(o, "price", jv_number(v[i].o->price)); /* null: unknown */
        jv_set(o, "room", v[i].room == LONG_MAX ? jv_null() : jv_integer(v[i].room));
        jv_set(o, "bound_by", v[i].bind >= 0 ? jv_string(q[v[i].bind].name) : jv_null());
        jv_set(o, "max_price", v[i].o->max_price > 0 ? jv_number(v[i].o->max_price) : jv_null());
        jv_set(o, "launchable", jv_bool(v[i].usable));
        jv_set(o, "held", jv_integer(v[i].held));
        jv_push(offers, o);
    }
    for (size_t i = 0; i < nq; i++) {
        struct jv *o = jv_object();

        jv_set(o, "name", jv_string(q[i].name));
        jv_set(o, "title", jv_string(q[i].title));
        jv_set(o, "unit", jv_string(q[i].unit));
        jv_set(o, "limit", jv_number(q[i].limit));
        jv_set(o, "used", jv_number(q[i].used));
        jv_push(quotas, o);
    }
    jv_set(doc, "world", jv_string(c->world));
    jv_set(doc, "cluster", jv_string(c->cluster));
    jv_set(doc, "offers", offers);
    jv_set(doc, "quotas", quotas);
    jv_set(doc, "quotas_error", quota_note ? jv_string(quota_note) : jv_null());
    jv_set(doc, "instances", h->instances >= 0 ? jv_integer(h->instances) : jv_null());
    jv_set(doc, "instances_error", h->instances < 0 ? jv_string(h->note) : jv_null());
    /* what the instances cost now ($/h; null: some of unknown price, or not listed) */
    jv_set(doc, "dollars_per_hour",
           h->instances >= 0 && h->unpriced == 0 ? jv_number(h->rate) : jv_null());
    jv_set(doc, "launchable", jv_integer((long long)usable));
    jv_set(doc, "fleet_offer", fleet ? jv_string(fleet->o->name) : jv_null());
    jv_set(doc, "ok", jv_bool(ok));
    rc = jv_write(doc, out);
    jv_free(doc);
    return rc;
}

int cli_check(int argc, char **argv, FILE *out, FILE *err)
{
    struct cloud_offer *offers = NULL;
    struct cloud_quota *q = NULL;
    struct cloud_quota_use *u = NULL;
    struct cloud_instance *inst = NULL;
    struct ck_offer *v = NULL;
    const struct ck_offer *fleet = NULL;
    struct config *c = NULL;
    struct cloud cloud = {0};
    struct error e = {0};
    const char *path = NULL, *quota_note = NULL;
    char buf[800], qbuf[200], lbuf[200] = "";
    size_t n = 0, nq = 0, nu = 0, ni = 0, usable = 0;
    struct ck_held held = {.instances = -1, .note = lbuf};
    int json = 0, status = 1, have_cloud = 0, listed = 0, uncounted, ok, rc;

    if ((rc = cli_config_args(argc, argv, "--json", &json, check_usage, out, err, &path)) >= 0)
        return rc;
    if (config_load(path, &c, &e) < 0) {
        fprintf(err, "castor check: %s\n", err_format(&e, buf, sizeof(buf)));
        return 2;
    }
    if (cli_config_cloud(c, &cloud, &e) < 0) {
        fprintf(err, "castor check: %s\n", err_format(&e, buf, sizeof(buf)));
        status = e.line > 0 ? 2 : 1; /* a fault in the file, or one met making the cloud */
        goto out;
    }
    have_cloud = 1;
    if ((rc = cloud_offers(&cloud, &offers, &n)) < 0) {
        fprintf(err, "castor check: the %s cloud's offers cannot be read: %s\n", c->world,
                err_str(rc));
        goto out;
    }
    if ((rc = cloud_quotas(&cloud, &q, &nq, &u, &nu)) < 0) {
        snprintf(qbuf, sizeof(qbuf),
                 "cannot be read (%s)%s: launches are limited by none known, and a launch "
                 "refused for a quota holds its offer",
                 err_str(rc), rc == ERR_PERM ? ", the role may not read them" : "");
        quota_note = qbuf;
        q = NULL;
        u = NULL;
        nq = nu = 0;
    }
    if ((rc = cloud_list(&cloud, c->cluster, &inst, &ni)) < 0)
        snprintf(lbuf, sizeof(lbuf), "%s", err_str(rc));
    else
        listed = 1;
    if (!(v = calloc(n + 1, sizeof(*v)))) {
        fprintf(err, "castor check: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const struct config_offer *conf;

        v[i].o = &offers[i];
        /* the cloud's own price of the instance (a bid is on it, not on its disks) */
        v[i].over = offers[i].spot && offers[i].max_price > 0 && isfinite(offers[i].price) &&
                    offers[i].price - offers[i].storage > offers[i].max_price;
        conf = config_offer_find(c, offers[i].name);
        if (conf && (conf->price > 0 || conf->discount > 0)) {
            struct realworld_offer meta = {.price = conf->price, .discount = conf->discount};

            v[i].conf = conf; /* the price the controller will count */
            offers[i].price = realworld_offer_price(&meta, offers[i].price, offers[i].storage);
        }
        ck_room(&v[i], q, nq, u, nu);
        usable += (size_t)v[i].usable;
    }
    for (size_t k = 0; k < c->noffers; k++) { /* a typo would apply to nothing, in silence */
        size_t i = 0;

        while (i < n && strcmp(offers[i].name, c->offers[k].name) != 0)
            i++;
        if (i == n)
            fprintf(err,
                    "castor check: warning: offers: %s is not an offer of the %s cloud: what the "
                    "configuration says of it applies to nothing\n",
                    c->offers[k].name, c->world);
    }
    if (listed) /* at the prices castor counts */
        ck_count_held(inst, ni, v, n, &held);
    fleet = ck_fleet_offer(c, v, n);
    if (strcmp(c->fleet, "castor") != 0 && c->fleet_offer && !fleet) {
        fprintf(err, "castor check: fleet.offer %s is not among the %s cloud's offers\n",
                c->fleet_offer, c->world);
        goto out;
    }
    /* a fixed or pollux-autoscale fleet launches its own offer, priced or not, unless a spend
     * limit is set that could not count its nodes (no price, and no max_price to count them at) */
    uncounted = fleet && c->spend.dollars > 0 &&
                isnan(realworld_offer_bill(fleet->o->price, fleet->o->spot, fleet->o->max_price,
                                           fleet->o->storage));
    ok = fleet ? fleet->room > 0 && !fleet->over && !uncounted : usable > 0;
    if (json) {
        ck_json(out, c, v, n, q, nq, quota_note, &held, usable, fleet, ok);
    } else {
        ck_print(out, c, v, n, q, nq, quota_note, &held, usable);
        if (fleet)
            fprintf(out, "the %s fleet launches %s only: %s\n", c->fleet, fleet->o->name,
                    fleet->over ? "its spot price is above its max_price"
                    : uncounted ? "it has no known price, and the spend_limit could not count "
                                  "its nodes: none is launched (give the offer a price)"
                    : fleet->room > 0 ? "its quotas leave it room"
                                      : "its quotas leave it no room");
    }
    status = ok ? 0 : 1;
out:
    free(v);
    free(offers);
    free(q);
    free(u);
    free(inst);
    if (have_cloud)
        cloud_free(&cloud);
    config_free(c);
    return status;
}
