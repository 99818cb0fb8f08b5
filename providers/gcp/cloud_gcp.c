/* cloud_gcp.c: struct cloud_ops over the Compute Engine and Billing Catalog clients, with the
 * memory of zones out of capacity and quotas reached, and the quotas each offer takes from. */
#include "providers/gcp/cloud_gcp.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/retry.h"

struct offer {
    char name[CLOUD_NAME_MAX];
    char machine_type[GCP_NAME_MAX];
    char family[8]; /* "n1" */
    char zone[GCP_NAME_MAX];
    char region[GCP_NAME_MAX];
    int spot;
    char accelerator[GCP_NAME_MAX]; /* attached or built in; "" for none */
    int gpus;
    int attached; /* 1: guestAccelerators (N1) */
    int vcpus;
    double memory_gib;
    int64_t held_until; /* UNIX seconds: left out of the offers and refused until then */
    int held_err;       /* what a launch meets while held: ERR_CAPACITY or ERR_QUOTA */
};

struct ctx {
    struct gcp_compute *compute;
    struct gcp_billing *billing;
    struct offer *offers;
    size_t n_offers;
    char *image, *disk_type, *network, *subnetwork, *service_account, *startup_script;
    long disk_gb;
    double image_gb; /* the image's own size, read once (boot disks without disk_gb); 0: not yet */
    int external_ip;
    long zone_hold_s, quota_hold_s;
    int64_t (*clock)(void *arg);
    void *hook_arg;
};

static void destroy(void *arg)
{
    struct ctx *x = arg;

    if (!x)
        return;
    free(x->offers);
    free(x->image);
    free(x->disk_type);
    free(x->network);
    free(x->subnetwork);
    free(x->service_account);
    free(x->startup_script);
    free(x);
}

static const struct offer *find_offer(const struct ctx *x, const char *name)
{
    for (size_t i = 0; name && i < x->n_offers; i++)
        if (strcmp(x->offers[i].name, name) == 0)
            return &x->offers[i];
    return NULL;
}

/* The offer an instance came from, by its machine type, zone and market; NULL if none. */
static const struct offer *offer_of(const struct ctx *x, const struct gcp_instance *in)
{
    for (size_t i = 0; i < x->n_offers; i++)
        if (strcmp(x->offers[i].machine_type, in->machine_type) == 0 &&
            strcmp(x->offers[i].zone, in->zone) == 0 && x->offers[i].spot == in->spot)
            return &x->offers[i];
    return NULL;
}

/* ---- holds: zones out of capacity, quotas reached ---- */

/* Hold o until `until` for err (a longer hold is kept). */
static void hold(struct offer *o, int64_t until, int err)
{
    if (until > o->held_until) {
        o->held_until = until;
        o->held_err = err;
    }
}

/* The quota metric as the regional and project quotas name it ("NVIDIA_T4_GPUS") from a quota
 * error's quotaInfo.metricName ("compute.googleapis.com/nvidia_t4_gpus"): the part after the
 * last '/', upper-cased, into buf. */
static void metric_name(const char *metric, char *buf, size_t size)
{
    const char *slash = strrchr(metric, '/');
    size_t i = 0;

    for (const char *p = slash ? slash + 1 : metric; *p && i + 1 < size; p++)
        buf[i++] = (char)toupper((unsigned char)*p);
    buf[i] = '\0';
}

/* 1 when a quota on metric (as metric_name gives it), met by a launch of `from`, counts the
 * launches of o too: a metric of every region (GPUS_ALL_REGIONS: the GPU offers;
 * CPUS_ALL_REGIONS and others: all), else the offers of from's region, of from's GPU for a GPU
 * metric ("NVIDIA_T4_GPUS"), of spot ones only for a PREEMPTIBLE_ metric; an unnamed quota
 * (refused before an operation) holds the region. */
static int quota_counts(const struct offer *o, const struct offer *from, const char *metric)
{
    if (strstr(metric, "ALL_REGIONS"))
        return strstr(metric, "GPUS") ? o->gpus > 0 : 1;
    if (strcmp(o->region, from->region) != 0)
        return 0;
    if (strstr(metric, "_GPUS") && strcmp(o->accelerator, from->accelerator) != 0)
        return 0;
    return strncmp(metric, "PREEMPTIBLE_", 12) != 0 || o->spot;
}

/* A launch of `from` was refused with err (quota: the quota's metric as the error names it, ""
 * when not known): hold what the refusal says is out of reach. */
static void hold_refused(struct ctx *x, const struct offer *from, int err, const char *quota)
{
    int64_t now = x->clock(x->hook_arg);
    char metric[sizeof(((struct gcp_error_info *)0)->quota_metric)];

    metric_name(quota, metric, sizeof(metric));

    for (size_t i = 0; i < x->n_offers; i++) {
        struct offer *o = &x->offers[i];

        if (err == ERR_CAPACITY && strcmp(o->zone, from->zone) == 0)
            hold(o, now + x->zone_hold_s, ERR_CAPACITY);
        else if (err == ERR_QUOTA && (o == from || quota_counts(o, from, metric)))
            hold(o, now + x->quota_hold_s, ERR_QUOTA);
    }
}

/* A node's boot disk in GB: disk_gb, else the image's own size once read (0: not known yet). */
static double boot_disk_gb(const struct ctx *c)
{
    return c->disk_gb > 0 ? (double)c->disk_gb : c->image_gb;
}

static int offers(void *arg, struct cloud_offer **out, size_t *n)
{
    struct ctx *x = arg;
    const struct gcp_prices *prices = NULL;
    struct cloud_offer *list;
    int64_t now = x->clock(x->hook_arg);
    double disk_gb = boot_disk_gb(x), disk;
    size_t k = 0;

    if (!out || !n)
        return ERR_INVAL;
    list = calloc(x->n_offers ? x->n_offers : 1, sizeof(*list));
    if (!list)
        return ERR_NOMEM;
    /* without prices the offers still stand: NAN says unknown (the billing client logs why) */
    if (x->billing && gcp_billing_prices(x->billing, now, &prices, NULL) < 0)
        prices = NULL;
    for (size_t i = 0; i < x->n_offers; i++) {
        const struct offer *o = &x->offers[i];

        if (now < o->held_until)
            continue; /* held: the planner looks elsewhere */
        snprintf(list[k].name, sizeof(list[k].name), "%s", o->name);
        list[k].gpus = o->gpus;
        list[k].spot = o->spot;
        list[k].price = prices && o->vcpus > 0
                            ? gcp_prices_node(prices, o->family, o->vcpus, o->memory_gib,
                                              o->accelerator, o->gpus, o->region, o->spot)
                            : NAN;
        /* its boot disk, when its size and its type's price are known (else left out, as
         * before: a VM is not left unpriced for its disk) */
        disk = prices ? gcp_prices_disk(prices, x->disk_type, disk_gb, o->region) : NAN;
        if (isfinite(disk) && disk > 0) {
            list[k].price += disk;
            list[k].storage = disk;
        }
        k++;
    }
    *out = list;
    *n = k;
    return 0;
}

static enum cloud_state state_of(const char *status)
{
    /* REPAIRING: Compute Engine is repairing the VM (a host error); it returns to RUNNING */
    if (strcmp(status, "RUNNING") == 0 || strcmp(status, "REPAIRING") == 0)
        return CLOUD_RUNNING;
    if (strcmp(status, "PROVISIONING") == 0 || strcmp(status, "STAGING") == 0)
        return CLOUD_PENDING;
    return CLOUD_GONE; /* PENDING_STOP, STOPPING, STOPPED, SUSPENDING, SUSPENDED, TERMINATED */
}

/* "<zone>.<name>" into id (CLOUD_ID_MAX): neither holds a '.', and an id must be one segment of
 * the API's paths (castor-node heartbeats at /v1/nodes/{id}/...). */
static int make_id(const char *zone, const char *name, char *id)
{
    int n = snprintf(id, CLOUD_ID_MAX, "%s.%s", zone, name);

    return n < 0 || n >= CLOUD_ID_MAX ? ERR_RANGE : 0;
}

/* 1 for an instance that is off and stays off: castor never starts one again. */
static int stopped(const char *status)
{
    return strcmp(status, "TERMINATED") == 0 || strcmp(status, "STOPPED") == 0 ||
           strcmp(status, "SUSPENDED") == 0;
}

/* Delete a stopped instance of the cluster (a standard VM stopped for its host's maintenance
 * stays, with its disk, until deleted); it is reported gone either way. A failure is logged by
 * the client and tried again at the next list. */
static void delete_stopped(struct ctx *x, const struct gcp_instance *in)
{
    struct gcp_operation op = {0};
    struct error e = {0};

    if (gcp_instances_delete(x->compute, in->zone, in->name, NULL, &op, &e) == 0)
        gcp_operation_wait(x->compute, &op, &e);
}

static int list(void *arg, const char *cluster, struct cloud_instance **out, size_t *n)
{
    struct ctx *x = arg;
    struct gcp_instance *items = NULL;
    struct cloud_instance *res;
    struct error e = {0}; /* the clients log what went wrong; e makes their lines say it */
    size_t count = 0;
    int rc;

    if (!out || !n)
        return ERR_INVAL;
    rc = gcp_instances_list(x->compute, cluster, &items, &count, &e);
    if (rc < 0)
        return rc == ERR_CAPACITY || rc == ERR_QUOTA ? ERR_AGAIN : rc;
    res = calloc(count ? count : 1, sizeof(*res));
    if (!res) {
        free(items);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        const struct offer *o = offer_of(x, &items[i]);

        if (make_id(items[i].zone, items[i].name, res[i].id) < 0) {
            free(items);
            free(res);
            return ERR_RANGE;
        }
        if (o)
            snprintf(res[i].offer, sizeof(res[i].offer), "%s", o->name);
        else
            snprintf(res[i].offer, sizeof(res[i].offer), "%.40s/%.40s/%s", items[i].machine_type,
                     items[i].zone, items[i].spot ? "spot" : "standard");
        snprintf(res[i].token, sizeof(res[i].token), "%s", items[i].token);
        res[i].state = state_of(items[i].status);
        res[i].launched = (double)items[i].created;
        if (stopped(items[i].status))
            delete_stopped(x, &items[i]);
    }
    free(items);
    *out = res;
    *n = count;
    return 0;
}

/* The instance name in zone is the one cluster and token launched: 0, else ERR_CONFLICT. */
static int same_launch(struct ctx *x, const char *zone, const char *name, const char *cluster,
                       const char *token)
{
    struct gcp_instance in;
    struct error e = {0};
    int rc = gcp_instance_get(x->compute, zone, name, &in, &e);

    if (rc < 0)
        return rc;
    return strcmp(in.cluster, cluster) == 0 && strcmp(in.token, token) == 0 ? 0 : ERR_CONFLICT;
}

static int launch(void *arg, const char *offer, const char *cluster, const char *token, char *id)
{
    struct ctx *x = arg;
    const struct offer *o = find_offer(x, offer);
    struct gcp_insert_request q = {0};
    struct gcp_operation op = {0};
    struct error e = {0};
    char name[GCP_NAME_MAX], made[CLOUD_ID_MAX];
    int rc;

    if (!o)
        return ERR_UNKNOWN;
    if (!id || !gcp_label_ok(cluster) || !gcp_label_ok(token))
        return ERR_INVAL;
    if (x->clock(x->hook_arg) < o->held_until)
        return o->held_err; /* refused a moment ago: not asked again before the hold ends */
    rc = gcp_instance_name(cluster, token, name);
    if (rc == 0)
        rc = make_id(o->zone, name, made);
    if (rc < 0)
        return rc;
    q.zone = o->zone;
    q.name = name;
    q.machine_type = o->machine_type;
    q.spot = o->spot;
    if (o->attached) {
        q.accelerator_type = o->accelerator;
        q.accelerator_count = o->gpus;
    }
    q.source_image = x->image;
    q.disk_gb = x->disk_gb;
    q.disk_type = x->disk_type;
    q.network = x->network;
    q.subnetwork = x->subnetwork;
    q.external_ip = x->external_ip;
    q.service_account = x->service_account;
    q.startup_script = x->startup_script;
    q.cluster = cluster;
    q.token = token;
    rc = gcp_instances_insert(x->compute, &q, &op, &e);
    if (rc == ERR_NOENT)
        rc = ERR_INVAL; /* refused: an image, network or subnetwork Compute Engine does not know */
    else if (rc == 0)
        rc = gcp_operation_wait(x->compute, &op, &e);
    if (rc == ERR_NOENT && op.error.err == ERR_NOENT)
        rc = ERR_INVAL; /* the operation ended so: refused likewise, nothing was made */
    if (rc == ERR_CAPACITY || rc == ERR_QUOTA)
        /* the operation names the quota; a refusal of the insert itself does not */
        hold_refused(x, o, rc, op.error.err == rc ? op.error.quota_metric : "");
    /* the name is the token's: an instance of that name is this launch's, asked before */
    if (rc == ERR_CONFLICT)
        rc = same_launch(x, o->zone, name, cluster, token);
    if (rc == ERR_NOENT)
        rc = ERR_IO; /* a poll (or a look) that found nothing: the instance may exist */
    if (rc < 0)
        return rc;
    memcpy(id, made, CLOUD_ID_MAX);
    return 0;
}

static int terminate(void *arg, const char *cluster, const char *id)
{
    struct ctx *x = arg;
    struct gcp_instance in;
    struct gcp_operation op = {0};
    struct error e = {0};
    char zone[GCP_NAME_MAX];
    const char *dot = id ? strchr(id, '.') : NULL;
    int rc;

    if (!dot || (size_t)(dot - id) >= sizeof(zone) || !cluster)
        return ERR_UNKNOWN;
    snprintf(zone, sizeof(zone), "%.*s", (int)(dot - id), id);
    rc = gcp_instance_get(x->compute, zone, dot + 1, &in, &e);
    if (rc == ERR_NOENT)
        return 0; /* gone already */
    if (rc == ERR_INVAL)
        return ERR_UNKNOWN; /* not an instance name castor could have given (refused unasked,
                             * or the server's 400: a zone or name that cannot be) */
    if (rc == ERR_UNKNOWN)
        return ERR_IO; /* a refusal castor does not know: not "no such instance" */
    if (rc < 0)
        return rc; /* ERR_PERM (403, a second 401), ERR_AGAIN, ERR_IO, ...: tried again */
    if (strcmp(in.cluster, cluster) != 0)
        return ERR_UNKNOWN; /* not this cluster's: never terminated */
    rc = gcp_instances_delete(x->compute, zone, dot + 1, NULL, &op, &e);
    if (rc == 0)
        rc = gcp_operation_wait(x->compute, &op, &e);
    if (rc == ERR_NOENT)
        return 0;
    if (rc == ERR_UNKNOWN)
        return ERR_IO; /* the instance is there: an unknown refusal is a failure, not gone */
    if (rc == ERR_INVAL)
        return ERR_PERM; /* the instance is there and of this cluster: the delete was refused */
    return rc;
}

/* ---- quotas ---- */

/* The quotas and uses being gathered for the quotas op. */
struct gathered {
    struct cloud_quota *quotas;
    size_t nq, capq;
    struct cloud_quota_use *uses;
    size_t nu, capu;
};

/* The quota of metric in q[0..n), or NULL. */
static const struct gcp_quota *quota_of(const struct gcp_quota *q, size_t n, const char *metric)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(q[i].metric, metric) == 0)
            return &q[i];
    return NULL;
}

/* The regional quota a node takes from: a Spot VM's the preemptible one when the region grants
 * it (a limit above 0), else the standard metric, as Google documents it (Spot VMs use the
 * standard quotas unless the project has preemptible quota); NULL when the region lists neither
 * (it limits nothing). */
static const struct gcp_quota *counted(const struct gcp_quota *q, size_t n, const char *preemptible,
                                       const char *metric, int spot)
{
    const struct gcp_quota *p = spot ? quota_of(q, n, preemptible) : NULL;

    return p && p->limit > 0 ? p : quota_of(q, n, metric);
}

/* The standard CPU metric of o's family: "<FAMILY>_CPUS" where the region lists one (A2_CPUS,
 * N2_CPUS, ...), else CPUS (N1 and the families without their own). */
static void cpu_metric(const struct offer *o, const struct gcp_quota *q, size_t n, char *buf,
                       size_t size)
{
    char family[sizeof(o->family)];

    for (size_t i = 0; i < sizeof(family); i++)
        family[i] = (char)toupper((unsigned char)o->family[i]);
    snprintf(buf, size, "%s_CPUS", family);
    if (!family[0] || !quota_of(q, n, buf))
        snprintf(buf, size, "CPUS");
}

/* Grow *p (of *cap items of size each) to hold one more than used. */
static int grow(void **p, size_t *cap, size_t used, size_t size)
{
    size_t cap2 = *cap ? 2 * *cap : 8;
    void *g;

    if (used < *cap)
        return 0;
    g = realloc(*p, cap2 * size);
    if (!g)
        return ERR_NOMEM;
    *p = g;
    *cap = cap2;
    return 0;
}

/* A node of o takes units of g ("compute/<region>/<metric>", or "compute/<metric>" for a
 * project-wide one when region is NULL): the quota added once, the use each time. */
static int take(struct gathered *x, const struct offer *o, const struct gcp_quota *g,
                const char *region, const char *unit, double units)
{
    char name[CLOUD_NAME_MAX];
    size_t i;

    if (region)
        snprintf(name, sizeof(name), "compute/%.40s/%.46s", region, g->metric);
    else
        snprintf(name, sizeof(name), "compute/%.80s", g->metric);
    for (i = 0; i < x->nq && strcmp(x->quotas[i].name, name) != 0; i++)
        ;
    if (i == x->nq) {
        struct cloud_quota *q;

        if (grow((void **)&x->quotas, &x->capq, x->nq, sizeof(*x->quotas)) < 0)
            return ERR_NOMEM;
        q = &x->quotas[x->nq++];
        memset(q, 0, sizeof(*q));
        snprintf(q->name, sizeof(q->name), "%s", name);
        if (region)
            snprintf(q->title, sizeof(q->title), "%s in %s", g->metric, region);
        else
            snprintf(q->title, sizeof(q->title), "%s (all regions)", g->metric);
        snprintf(q->unit, sizeof(q->unit), "%s", unit);
        q->limit = g->limit;
        q->used = g->usage;
    }
    if (grow((void **)&x->uses, &x->capu, x->nu, sizeof(*x->uses)) < 0)
        return ERR_NOMEM;
    x->uses[x->nu].quota = i;
    snprintf(x->uses[x->nu].offer, sizeof(x->uses[x->nu].offer), "%s", o->name);
    x->uses[x->nu++].units = units;
    return 0;
}

/* What a node of o takes: its GPU model's regional quota, its family's regional CPUs (for a
 * Spot VM PREEMPTIBLE_<GPU metric> and PREEMPTIBLE_CPUS where the region grants them), with GPUs
 * the project's GPUS_ALL_REGIONS, its vCPUs from the project's CPUS_ALL_REGIONS, and its boot
 * disk's size (disk_gb, else the image's when read) from the region's quota of its disk type,
 * Spot VMs' too (their preemptible quotas hold CPUs, GPUs and local SSDs, not persistent disks).
 * region (n) and project (np): the quotas read. */
static int offer_uses(struct gathered *x, const struct ctx *c, const struct offer *o,
                      const struct gcp_quota *region, size_t n, const struct gcp_quota *project,
                      size_t np)
{
    double disk_gb = boot_disk_gb(c);
    const char *disk = gcp_disk_quota_metric(c->disk_type);
    const char *gpu = o->gpus > 0 ? gcp_gpu_quota_metric(o->accelerator) : NULL;
    const struct gcp_quota *g;
    char cpus[GCP_METRIC_MAX], spot_gpu[GCP_METRIC_MAX + 16];
    int rc = 0;

    snprintf(spot_gpu, sizeof(spot_gpu), "PREEMPTIBLE_%s", gpu ? gpu : "");
    if (gpu && (g = counted(region, n, spot_gpu, gpu, o->spot)) != NULL)
        rc = take(x, o, g, o->region, "GPUs", o->gpus);
    cpu_metric(o, region, n, cpus, sizeof(cpus));
    g = counted(region, n, "PREEMPTIBLE_CPUS", cpus, o->spot);
    if (rc == 0 && o->vcpus > 0 && g)
        rc = take(x, o, g, o->region, "vCPUs", o->vcpus);
    if (rc == 0 && o->gpus > 0 && (g = quota_of(project, np, "GPUS_ALL_REGIONS")) != NULL)
        rc = take(x, o, g, NULL, "GPUs", o->gpus);
    if (rc == 0 && o->vcpus > 0 && (g = quota_of(project, np, "CPUS_ALL_REGIONS")) != NULL)
        rc = take(x, o, g, NULL, "vCPUs", o->vcpus);
    if (rc == 0 && disk_gb > 0 && disk && (g = quota_of(region, n, disk)) != NULL)
        rc = take(x, o, g, o->region, "GB", disk_gb);
    return rc;
}

/* The quotas of the region of offer i, read once: *q (n) borrowed from read[]. A region
 * Compute Engine does not know (ERR_NOENT) lists none; another failure is returned. */
static int region_quotas(struct ctx *x, size_t i, struct gcp_quota **read, size_t *nread,
                         const struct gcp_quota **q, size_t *n)
{
    struct error e = {0}; /* the client logs the failure; e makes its line say why */
    size_t first = 0;
    int rc;

    while (first < i && strcmp(x->offers[first].region, x->offers[i].region) != 0)
        first++;
    if (first == i) {
        rc = gcp_region_quotas(x->compute, x->offers[i].region, &read[i], &nread[i], &e);
        if (rc < 0 && rc != ERR_NOENT)
            return rc;
    }
    *q = read[first];
    *n = nread[first];
    return 0;
}

static int quotas(void *arg, struct cloud_quota **out, size_t *nq, struct cloud_quota_use **uses,
                  size_t *nu)
{
    struct ctx *x = arg;
    struct gathered g = {0};
    struct gcp_quota *project = NULL, **read;
    size_t np = 0, *nread;
    struct error e = {0};
    int rc;

    if (!out || !nq || !uses || !nu)
        return ERR_INVAL;
    /* a boot disk of the image's own size: that size, read once (a failure, logged by the
     * client, leaves the disks uncounted until a later read) */
    if (x->disk_gb <= 0 && !(x->image_gb > 0) && gcp_disk_quota_metric(x->disk_type))
        (void)gcp_image_disk_gb(x->compute, x->image, &x->image_gb, &e);
    read = calloc(x->n_offers, sizeof(*read));
    nread = calloc(x->n_offers, sizeof(*nread));
    rc = read && nread ? gcp_project_quotas(x->compute, &project, &np, &e) : ERR_NOMEM;
    for (size_t i = 0; rc == 0 && i < x->n_offers; i++) {
        const struct gcp_quota *q = NULL;
        size_t n = 0;

        rc = region_quotas(x, i, read, nread, &q, &n);
        if (rc == 0)
            rc = offer_uses(&g, x, &x->offers[i], q, n, project, np);
    }
    for (size_t i = 0; read && i < x->n_offers; i++)
        free(read[i]);
    free(read);
    free(nread);
    free(project);
    if (rc < 0) {
        free(g.quotas);
        free(g.uses);
        /* a refusal (403, or 401 with a new token) or a project Compute Engine does not show */
        return rc == ERR_INVAL || rc == ERR_NOENT ? ERR_PERM : rc;
    }
    *out = g.quotas;
    *nq = g.nq;
    *uses = g.uses;
    *nu = g.nu;
    return 0;
}

static const struct cloud_ops gcp_ops = {
    .name = "gcp",
    .offers = offers,
    .list = list,
    .launch = launch,
    .terminate = terminate,
    .destroy = destroy,
    .quotas = quotas,
};

/* Fill *o from c; ERR_INVAL with e saying why (file "gcp offers", no location). */
static int make_offer(const struct cloud_gcp_offer *c, struct offer *o, struct error *e)
{
    const char *builtin = NULL;
    char gpus[96] = "";
    int n, count = 0;

    if (!c->machine_type || !c->zone || strlen(c->machine_type) >= sizeof(o->machine_type) ||
        strlen(c->zone) >= sizeof(o->zone))
        return err_set(e, ERR_INVAL, "gcp offers", 0, 0, "needs a machine type and a zone");
    snprintf(o->machine_type, sizeof(o->machine_type), "%s", c->machine_type);
    snprintf(o->zone, sizeof(o->zone), "%s", c->zone);
    snprintf(o->family, sizeof(o->family), "%.*s", (int)strcspn(c->machine_type, "-"),
             c->machine_type);
    if (gcp_zone_region(c->zone, o->region, sizeof(o->region)) < 0)
        return err_set(e, ERR_INVAL, "gcp offers", 0, 0,
                       "%.64s is not a zone (<region>-<letter>: us-central1-a)", c->zone);
    o->spot = !!c->spot;
    if (gcp_machine_gpus(c->machine_type, &count, &builtin) == 0) {
        if (c->accelerator_count > 0)
            return err_set(e, ERR_INVAL, "gcp offers", 0, 0,
                           "%.64s comes with its GPUs; attach none", c->machine_type);
        snprintf(o->accelerator, sizeof(o->accelerator), "%s", builtin);
        o->gpus = count;
    } else if (c->accelerator_count > 0) {
        if (!c->accelerator_type || strlen(c->accelerator_type) >= sizeof(o->accelerator))
            return err_set(e, ERR_INVAL, "gcp offers", 0, 0,
                           "attached GPUs need their accelerator type");
        snprintf(o->accelerator, sizeof(o->accelerator), "%s", c->accelerator_type);
        o->gpus = c->accelerator_count;
        o->attached = 1;
        snprintf(gpus, sizeof(gpus), "+%.40sx%d", c->accelerator_type, c->accelerator_count);
    }
    o->vcpus = c->vcpus;
    o->memory_gib = c->memory_gib;
    if (o->vcpus <= 0 || o->memory_gib <= 0)
        gcp_machine_shape(c->machine_type, &o->vcpus, &o->memory_gib);
    n = snprintf(o->name, sizeof(o->name), "%s%s/%s/%s", o->machine_type, gpus, o->zone,
                 o->spot ? "spot" : "standard");
    if (n < 0 || (size_t)n >= sizeof(o->name))
        return err_set(e, ERR_INVAL, "gcp offers", 0, 0, "its name is too long");
    return 0;
}

int cloud_gcp_offer_name(const struct cloud_gcp_offer *c, char name[CLOUD_NAME_MAX],
                         struct error *e)
{
    struct offer o = {0};
    int rc = c ? make_offer(c, &o, e) : err_set(e, ERR_INVAL, "gcp offers", 0, 0, "no offer");

    if (rc == 0)
        memcpy(name, o.name, CLOUD_NAME_MAX);
    return rc;
}

/* A copy of s, or NULL for NULL; *failed set when out of memory. */
static char *copy(const char *s, int *failed)
{
    char *c = s ? strdup(s) : NULL;

    if (s && !c)
        *failed = 1;
    return c;
}

int cloud_gcp_new(const struct cloud_gcp_config *cfg, struct cloud *out, struct error *e)
{
    struct ctx *x;
    int rc = 0, failed = 0;

    if (!cfg || !out || !cfg->compute || !cfg->instance.source_image || !cfg->offers ||
        cfg->n_offers == 0)
        return err_set(e, ERR_INVAL, "gcp", 0, 0,
                       "a Compute Engine client, a source image and offers are needed");
    x = calloc(1, sizeof(*x));
    if (!x)
        return ERR_NOMEM;
    x->offers = calloc(cfg->n_offers, sizeof(*x->offers));
    if (!x->offers) {
        rc = ERR_NOMEM;
        goto fail;
    }
    for (size_t i = 0; i < cfg->n_offers; i++) {
        struct error sub = {0};

        rc = make_offer(&cfg->offers[i], &x->offers[i], &sub);
        if (rc < 0) {
            err_set(e, rc, "gcp offers", 0, 0, "offer %zu: %.300s", i, sub.msg);
            goto fail;
        }
        if (find_offer(x, x->offers[i].name)) {
            rc = err_set(e, ERR_CONFLICT, "gcp offers", 0, 0, "offer %s is given twice",
                         x->offers[i].name);
            goto fail;
        }
        x->n_offers++;
    }
    x->compute = cfg->compute;
    x->billing = cfg->billing;
    x->image = copy(cfg->instance.source_image, &failed);
    x->disk_type = copy(cfg->instance.disk_type, &failed);
    x->network = copy(cfg->instance.network, &failed);
    x->subnetwork = copy(cfg->instance.subnetwork, &failed);
    x->service_account = copy(cfg->instance.service_account, &failed);
    x->startup_script = copy(cfg->instance.startup_script, &failed);
    x->disk_gb = cfg->instance.disk_gb;
    x->external_ip = cfg->instance.external_ip;
    x->zone_hold_s = cfg->zone_hold_s > 0 ? cfg->zone_hold_s : CLOUD_GCP_ZONE_HOLD_S;
    x->quota_hold_s = cfg->quota_hold_s > 0 ? cfg->quota_hold_s : CLOUD_GCP_QUOTA_HOLD_S;
    x->clock = cfg->clock ? cfg->clock : retry_default_clock;
    x->hook_arg = cfg->hook_arg;
    if (failed) {
        rc = ERR_NOMEM;
        goto fail;
    }
    out->ops = &gcp_ops;
    out->ctx = x;
    return 0;
fail:
    destroy(x);
    return rc;
}
