/* compute.c: the Compute Engine REST client: requests built as JSON, answers read field by field,
 * operations polled until DONE. */
#include "providers/gcp/compute.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/crypto.h"
#include "util/json.h"
#include "util/strbuf.h"
#include "util/timestamp.h"
#include "util/vec.h"

#define DEFAULT_PAGE_SIZE 500
#define DEFAULT_POLL_MS 2000
#define DEFAULT_OPERATION_S 600
#define MAX_PAGES 10000 /* a server that never stops paging is an error, not a hang */
#define CLOUD_PLATFORM_SCOPE "https://www.googleapis.com/auth/cloud-platform"

struct gcp_compute {
    char project[128];
    int page_size;
    long poll_ms;
    long operation_s;
    struct gcp_rest *rest;
};

/* 1 when s may go into a URL path as it is: 1 to max of a-z 0-9 - . : _ (projects, zones,
 * names). */
static int segment_ok(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > max)
        return 0;
    for (; *s; s++)
        if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && !strchr("-.:_", *s))
            return 0;
    return 1;
}

int gcp_compute_new(const struct gcp_compute_config *cfg, struct gcp_compute **out, struct error *e)
{
    struct gcp_compute *c;
    int rc;

    if (!cfg || !out)
        return err_set(e, ERR_INVAL, "gce", 0, 0, "no configuration or output");
    if (!segment_ok(cfg->project, sizeof(c->project) - 1))
        return err_set(e, ERR_INVAL, "gce", 0, 0,
                       "the project id must be 1 to 127 of a-z, 0-9, '-', '.', ':' and '_'");
    c = calloc(1, sizeof(*c));
    if (!c)
        return ERR_NOMEM;
    snprintf(c->project, sizeof(c->project), "%s", cfg->project);
    c->page_size = cfg->page_size > 0 ? cfg->page_size : DEFAULT_PAGE_SIZE;
    c->poll_ms = cfg->poll_interval_ms > 0 ? cfg->poll_interval_ms : DEFAULT_POLL_MS;
    c->operation_s = cfg->operation_timeout_s > 0 ? cfg->operation_timeout_s : DEFAULT_OPERATION_S;
    rc = gcp_rest_new(&cfg->rest, "gce", GCP_COMPUTE_ENDPOINT, &c->rest, e);
    if (rc < 0) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void gcp_compute_free(struct gcp_compute *c)
{
    if (!c)
        return;
    gcp_rest_free(c->rest);
    free(c);
}

/* ---- names ---- */

/* 1 when s is a UUID in the 8-4-4-4-12 hex form. */
static int is_uuid(const char *s)
{
    if (strlen(s) != GCP_UUID_LEN)
        return 0;
    for (int i = 0; i < GCP_UUID_LEN; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;

        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return 0;
    }
    return 1;
}

int gcp_request_id(const char *token, char out[GCP_UUID_LEN + 1])
{
    unsigned char md[CRYPTO_SHA256_LEN];
    struct strbuf b = {0};
    char hex[33];
    int rc;

    if (!token || !*token || !out)
        return ERR_INVAL;
    if (is_uuid(token)) {
        for (int i = 0; i <= GCP_UUID_LEN; i++)
            out[i] = (char)tolower((unsigned char)token[i]);
        if (strcmp(out, "00000000-0000-0000-0000-000000000000") != 0)
            return 0;
    }
    strbuf_str(&b, "castor launch token ");
    strbuf_str(&b, token);
    if (b.failed)
        return ERR_NOMEM;
    rc = crypto_sha256(b.p, b.len, md);
    strbuf_free(&b);
    if (rc < 0)
        return rc;
    md[6] = (unsigned char)((md[6] & 0x0f) | 0x80); /* version 8: custom (RFC 9562) */
    md[8] = (unsigned char)((md[8] & 0x3f) | 0x80); /* the RFC's variant */
    crypto_hex(md, 16, hex);
    snprintf(out, GCP_UUID_LEN + 1, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
             hex + 20);
    return 0;
}

int gcp_instance_name(const char *cluster, const char *token, char out[GCP_NAME_MAX])
{
    struct strbuf b = {0};
    char hex[CRYPTO_SHA256_HEX_LEN + 1];
    int rc;

    if (!cluster || !*cluster || !token || !*token || !out)
        return ERR_INVAL;
    strbuf_str(&b, cluster);
    strbuf_chr(&b, '/');
    strbuf_str(&b, token);
    if (b.failed)
        return ERR_NOMEM;
    rc = crypto_sha256_hex(b.p, b.len, hex);
    strbuf_free(&b);
    if (rc < 0)
        return rc;
    snprintf(out, GCP_NAME_MAX, "castor-%.20s", hex);
    return 0;
}

int gcp_label_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > 63)
        return 0;
    for (; *s; s++)
        if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '-' && *s != '_')
            return 0;
    return 1;
}

/* 1 when s is a valid instance name: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63. */
static int name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > 63 || !islower((unsigned char)s[0]) || s[n - 1] == '-')
        return 0;
    for (; *s; s++)
        if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '-')
            return 0;
    return 1;
}

/* Machine types whose GPUs come with them (Compute Engine's GPU machine types page). */
static const struct {
    const char *type;
    int gpus;
    const char *accelerator;
} builtin_gpus[] = {
    {"a2-highgpu-1g", 1, "nvidia-tesla-a100"},   {"a2-highgpu-2g", 2, "nvidia-tesla-a100"},
    {"a2-highgpu-4g", 4, "nvidia-tesla-a100"},   {"a2-highgpu-8g", 8, "nvidia-tesla-a100"},
    {"a2-megagpu-16g", 16, "nvidia-tesla-a100"}, {"a2-ultragpu-1g", 1, "nvidia-a100-80gb"},
    {"a2-ultragpu-2g", 2, "nvidia-a100-80gb"},   {"a2-ultragpu-4g", 4, "nvidia-a100-80gb"},
    {"a2-ultragpu-8g", 8, "nvidia-a100-80gb"},   {"a3-highgpu-8g", 8, "nvidia-h100-80gb"},
    {"g2-standard-4", 1, "nvidia-l4"},           {"g2-standard-8", 1, "nvidia-l4"},
    {"g2-standard-12", 1, "nvidia-l4"},          {"g2-standard-16", 1, "nvidia-l4"},
    {"g2-standard-24", 2, "nvidia-l4"},          {"g2-standard-32", 1, "nvidia-l4"},
    {"g2-standard-48", 4, "nvidia-l4"},          {"g2-standard-96", 8, "nvidia-l4"},
};

int gcp_machine_gpus(const char *machine_type, int *count, const char **accelerator)
{
    if (!machine_type || !count || !accelerator)
        return ERR_INVAL;
    for (size_t i = 0; i < sizeof(builtin_gpus) / sizeof(builtin_gpus[0]); i++)
        if (strcmp(machine_type, builtin_gpus[i].type) == 0) {
            *count = builtin_gpus[i].gpus;
            *accelerator = builtin_gpus[i].accelerator;
            return 0;
        }
    return ERR_UNKNOWN;
}

/* Predefined shapes by family (Compute Engine's machine family pages): vCPUs and GiB per unit of
 * the number in the type's name (vCPUs for N1 and G2, GPUs for A2). */
static const struct {
    const char *prefix;
    double vcpus, gib;
} shapes[] = {
    {"n1-standard-", 1, 3.75}, {"n1-highmem-", 1, 6.5},   {"n1-highcpu-", 1, 0.9},
    {"a2-highgpu-", 12, 85},   {"a2-ultragpu-", 12, 170}, {"a2-megagpu-", 6, 85},
    {"g2-standard-", 1, 4},
};

int gcp_machine_shape(const char *machine_type, int *vcpus, double *memory_gib)
{
    if (!machine_type || !vcpus || !memory_gib)
        return ERR_INVAL;
    if (strcmp(machine_type, "a3-highgpu-8g") == 0) {
        *vcpus = 208;
        *memory_gib = 1872;
        return 0;
    }
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        size_t n = strlen(shapes[i].prefix);
        char *end;
        long k;

        if (strncmp(machine_type, shapes[i].prefix, n) != 0)
            continue;
        k = strtol(machine_type + n, &end, 10);
        /* A2 types count GPUs ("a2-highgpu-2g"), the others vCPUs */
        if (k < 1 || k > 416 || strcmp(end, machine_type[0] == 'a' ? "g" : "") != 0)
            return ERR_UNKNOWN;
        *vcpus = (int)(k * shapes[i].vcpus);
        *memory_gib = k * shapes[i].gib;
        return 0;
    }
    return ERR_UNKNOWN;
}

int gcp_zone_region(const char *zone, char *buf, size_t size)
{
    const char *dash = zone ? strrchr(zone, '-') : NULL;
    size_t n;

    if (!dash || dash == zone || !dash[1] || !buf)
        return ERR_PARSE;
    n = (size_t)(dash - zone);
    if (n + 1 > size)
        return ERR_RANGE;
    memcpy(buf, zone, n);
    buf[n] = '\0';
    return 0;
}

/* ---- reading answers ---- */

/* Copy the string obj[key] into buf; ERR_PARSE when required and missing or empty, or too long. */
static int text(const struct jv *obj, const char *key, int required, char *buf, size_t size)
{
    const char *s = jv_string_value(jv_get(obj, key));

    buf[0] = '\0';
    if (!s || !*s)
        return required || jv_get(obj, key) ? ERR_PARSE : 0;
    if (strlen(s) >= size)
        return ERR_PARSE;
    memcpy(buf, s, strlen(s) + 1);
    strbuf_printable(buf);
    return 0;
}

/* The last segment of the URL at obj[key] into buf; ERR_PARSE when required and missing. */
static int segment(const struct jv *obj, const char *key, int required, char *buf, size_t size)
{
    const char *s = jv_string_value(jv_get(obj, key));

    buf[0] = '\0';
    if (!s)
        return required || jv_get(obj, key) ? ERR_PARSE : 0;
    if (gcp_last_segment(s, buf, size) < 0)
        return ERR_PARSE;
    strbuf_printable(buf);
    return 0;
}

/* ERR_PARSE naming the call and what is wrong, logged. */
static int bad_answer(struct gcp_compute *c, struct error *e, const char *call, const char *what)
{
    char where[80];
    struct error local = {0};

    snprintf(where, sizeof(where), "gce %s", call);
    err_set(e ? e : &local, ERR_PARSE, where, 0, 0, "%s", what);
    return gcp_rest_logged(c->rest, ERR_PARSE, e ? e : &local);
}

/* An operation from its JSON into *op. */
static int read_operation(struct gcp_compute *c, const struct jv *v, const char *call,
                          struct gcp_operation *op, struct error *e)
{
    struct gcp_operation o = {0};
    const struct jv *err = jv_get(v, "error");
    const char *id = jv_string_value(jv_get(v, "targetId"));

    if (text(v, "name", 1, o.name, sizeof(o.name)) < 0 ||
        text(v, "status", 1, o.status, sizeof(o.status)) < 0 ||
        segment(v, "zone", 0, o.zone, sizeof(o.zone)) < 0 ||
        segment(v, "targetLink", 0, o.target, sizeof(o.target)) < 0)
        return bad_answer(c, e, call, "an operation without its name, status, zone or target");
    if (strcmp(o.status, "PENDING") != 0 && strcmp(o.status, "RUNNING") != 0 &&
        strcmp(o.status, "DONE") != 0)
        return bad_answer(c, e, call, "an operation whose status is not PENDING, RUNNING or DONE");
    if (id)
        snprintf(o.target_id, sizeof(o.target_id), "%s", id);
    strbuf_printable(o.target_id);
    if (err && gcp_error_read(err, &o.error) < 0)
        return bad_answer(c, e, call, "an operation error without errors[].code");
    if (!err)
        o.error.err = 0;
    *op = o;
    return 0;
}

/* Read the JSON of one instance into *out. */
static int read_instance(const struct jv *v, struct gcp_instance *out)
{
    struct gcp_instance in = {0};
    const struct jv *labels = jv_get(v, "labels"), *sched = jv_get(v, "scheduling");
    const struct jv *id = jv_get(v, "id");
    const char *model = jv_string_value(jv_get(sched, "provisioningModel"));
    char when[64];
    long long n;
    int preemptible = 0;

    if (text(v, "name", 1, in.name, sizeof(in.name)) < 0 ||
        segment(v, "zone", 1, in.zone, sizeof(in.zone)) < 0 ||
        segment(v, "machineType", 1, in.machine_type, sizeof(in.machine_type)) < 0 ||
        text(v, "status", 1, in.status, sizeof(in.status)) < 0 ||
        text(labels, GCP_LABEL_CLUSTER, 0, in.cluster, sizeof(in.cluster)) < 0 ||
        text(labels, GCP_LABEL_TOKEN, 0, in.token, sizeof(in.token)) < 0 ||
        text(jv_at(jv_get(v, "networkInterfaces"), 0), "networkIP", 0, in.ip, sizeof(in.ip)) < 0 ||
        text(v, "creationTimestamp", 0, when, sizeof(when)) < 0)
        return ERR_PARSE;
    if (jv_string_value(id))
        snprintf(in.id, sizeof(in.id), "%s", jv_string_value(id));
    else if (jv_integer_value(id, &n) == 0)
        snprintf(in.id, sizeof(in.id), "%lld", n);
    strbuf_printable(in.id);
    jv_bool_value(jv_get(sched, "preemptible"), &preemptible);
    in.spot = (model && strcmp(model, "SPOT") == 0) || preemptible;
    if (when[0] && timestamp_parse_iso8601(when, &in.created) < 0)
        return ERR_PARSE;
    *out = in;
    return 0;
}

/* ---- calls ---- */

/* "/projects/<project>/zones/<zone>/<rest>" with the optional requestId query. */
static char *zone_path(struct gcp_compute *c, const char *zone, const char *rest,
                       const char *request_id)
{
    struct strbuf b = {0};

    strbuf_printf(&b, "/projects/%s/zones/%s/%s", c->project, zone, rest);
    if (request_id)
        strbuf_printf(&b, "?requestId=%s", request_id);
    return strbuf_take(&b);
}

/* Call, then read the answer as an operation. */
static int operation_call(struct gcp_compute *c, const char *call, const char *method, char *path,
                          const char *body, struct gcp_operation *op, struct error *e)
{
    struct gcp_error_info info;
    struct jv *v = NULL;
    int rc;

    if (!path)
        return ERR_NOMEM;
    rc = gcp_rest_call(c->rest, call, method, path, body, &v, &info, e);
    free(path);
    if (rc < 0)
        return rc;
    rc = read_operation(c, v, call, op, e);
    jv_free(v);
    return rc;
}

/* Unless rc is an error: obj[key] = a string from the printf format. rc, or the new error. */
static int set_str(int rc, struct jv *obj, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int set_str(int rc, struct jv *obj, const char *key, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    int n;

    if (rc < 0)
        return rc;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(buf))
        return ERR_RANGE;
    return jv_set(obj, key, jv_string(buf));
}

/* Hand *child over to parent (as parent[key], or appended when key is NULL) and clear *child;
 * when rc is already an error the child is freed. rc, or the new error. */
static int put(int rc, struct jv *parent, const char *key, struct jv **child)
{
    struct jv *v = *child;

    *child = NULL;
    if (rc < 0) {
        jv_free(v);
        return rc;
    }
    return key ? jv_set(parent, key, v) : jv_push(parent, v);
}

/* The instance's JSON body for instances.insert into *out (a new string). */
static int insert_body(const struct gcp_insert_request *q, char **out)
{
    struct jv *body = jv_object(), *labels = jv_object(), *sched = jv_object();
    struct jv *disk = jv_object(), *init = jv_object(), *disks = jv_array();
    struct jv *nic = jv_object(), *nics = jv_array();
    struct jv *acc = NULL, *accs = NULL, *ac = NULL, *acs = NULL;
    struct jv *sa = NULL, *sas = NULL, *scopes = NULL, *md = NULL, *items = NULL, *item = NULL;
    int rc = body && labels && sched && disk && init && disks && nic && nics ? 0 : ERR_NOMEM;

    rc = set_str(rc, body, "name", "%s", q->name);
    rc = set_str(rc, body, "machineType", "zones/%s/machineTypes/%s", q->zone, q->machine_type);
    rc = set_str(rc, labels, GCP_LABEL_CLUSTER, "%s", q->cluster);
    rc = set_str(rc, labels, GCP_LABEL_TOKEN, "%s", q->token);
    rc = put(rc, body, "labels", &labels);
    rc = set_str(rc, sched, "provisioningModel", "%s", q->spot ? "SPOT" : "STANDARD");
    if (q->spot)
        rc = set_str(rc, sched, "instanceTerminationAction", "DELETE");
    rc = set_str(rc, sched, "onHostMaintenance", "TERMINATE");
    if (rc == 0)
        rc = jv_set(sched, "automaticRestart", jv_bool(!q->spot));
    rc = put(rc, body, "scheduling", &sched);
    if (q->accelerator_count > 0) {
        acc = jv_object();
        accs = jv_array();
        rc = set_str(rc, acc, "acceleratorType", "zones/%s/acceleratorTypes/%s", q->zone,
                     q->accelerator_type);
        if (rc == 0)
            rc = jv_set(acc, "acceleratorCount", jv_integer(q->accelerator_count));
        rc = put(rc, accs, NULL, &acc);
        rc = put(rc, body, "guestAccelerators", &accs);
    }
    rc = set_str(rc, init, "sourceImage", "%s", q->source_image);
    if (q->disk_gb > 0)
        rc = set_str(rc, init, "diskSizeGb", "%ld", q->disk_gb);
    if (q->disk_type)
        rc = set_str(rc, init, "diskType", "zones/%s/diskTypes/%s", q->zone, q->disk_type);
    if (rc == 0)
        rc = jv_set(disk, "boot", jv_bool(1));
    if (rc == 0)
        rc = jv_set(disk, "autoDelete", jv_bool(1));
    rc = put(rc, disk, "initializeParams", &init);
    rc = put(rc, disks, NULL, &disk);
    rc = put(rc, body, "disks", &disks);
    rc = set_str(rc, nic, "network", "%s", q->network ? q->network : "global/networks/default");
    if (q->subnetwork)
        rc = set_str(rc, nic, "subnetwork", "%s", q->subnetwork);
    if (q->external_ip) {
        ac = jv_object();
        acs = jv_array();
        rc = set_str(rc, ac, "type", "ONE_TO_ONE_NAT");
        rc = set_str(rc, ac, "name", "External NAT");
        rc = put(rc, acs, NULL, &ac);
        rc = put(rc, nic, "accessConfigs", &acs);
    }
    rc = put(rc, nics, NULL, &nic);
    rc = put(rc, body, "networkInterfaces", &nics);
    if (q->service_account) {
        sa = jv_object();
        sas = jv_array();
        scopes = jv_array();
        rc = set_str(rc, sa, "email", "%s", q->service_account);
        if (rc == 0)
            rc = jv_push(scopes, jv_string(CLOUD_PLATFORM_SCOPE));
        rc = put(rc, sa, "scopes", &scopes);
        rc = put(rc, sas, NULL, &sa);
        rc = put(rc, body, "serviceAccounts", &sas);
    }
    if (q->startup_script) {
        md = jv_object();
        items = jv_array();
        item = jv_object();
        rc = set_str(rc, item, "key", "startup-script");
        if (rc == 0)
            rc = jv_set(item, "value", jv_string(q->startup_script));
        rc = put(rc, items, NULL, &item);
        rc = put(rc, md, "items", &items);
        rc = put(rc, body, "metadata", &md);
    }
    if (rc == 0)
        rc = jv_dump(body, out);
    jv_free(body);
    return rc;
}

/* A call's rc told apart: ERR_INVAL for a refusal (403; with second_401, also a 401 with a new
 * token) is ERR_PERM, in e too: a role without the permission, not a request castor got wrong.
 * Any other rc as it is. */
static int gcp_refused(int rc, const struct gcp_error_info *info, int second_401, struct error *e)
{
    if (rc != ERR_INVAL || !(info->http_status == 403 || (second_401 && info->http_status == 401)))
        return rc;
    if (e)
        e->code = ERR_PERM;
    return ERR_PERM;
}

/* ERR_INVAL naming what a request lacks. */
static int refuse(struct error *e, const char *call, const char *what)
{
    char where[80];

    snprintf(where, sizeof(where), "gce %s", call);
    return err_set(e, ERR_INVAL, where, 0, 0, "%s", what);
}

int gcp_instances_insert(struct gcp_compute *c, const struct gcp_insert_request *req,
                         struct gcp_operation *op, struct error *e)
{
    static const char call[] = "instances.insert";
    char request_id[GCP_UUID_LEN + 1], *body = NULL;
    const char *builtin;
    int gpus, rc;

    if (!c || !req || !op)
        return refuse(e, call, "no client, request or output");
    if (!segment_ok(req->zone, 63) || !name_ok(req->name) || !segment_ok(req->machine_type, 63))
        return refuse(e, call,
                      "needs a zone, an instance name ([a-z]([-a-z0-9]*[a-z0-9])?, at "
                      "most 63) and a machine type");
    if (!gcp_label_ok(req->cluster) || !gcp_label_ok(req->token))
        return refuse(e, call,
                      "the cluster id and the launch token must be label values: 1 to "
                      "63 of a-z, 0-9, '-' and '_'");
    if (!req->source_image || !*req->source_image)
        return refuse(e, call, "needs a source image");
    if (req->accelerator_count < 0 ||
        (req->accelerator_count > 0 && !segment_ok(req->accelerator_type, 63)))
        return refuse(e, call, "GPUs need an accelerator type and a positive count");
    if (req->accelerator_count > 0 && gcp_machine_gpus(req->machine_type, &gpus, &builtin) == 0)
        return refuse(e, call, "this machine type comes with its GPUs: give no guestAccelerators");
    rc = gcp_request_id(req->token, request_id);
    if (rc == 0)
        rc = insert_body(req, &body);
    if (rc == ERR_RANGE)
        return refuse(e, call, "a field of the request is too long");
    if (rc < 0)
        return rc;
    rc = operation_call(c, call, "POST", zone_path(c, req->zone, "instances", request_id), body, op,
                        e);
    free(body);
    return rc;
}

int gcp_operation_get(struct gcp_compute *c, struct gcp_operation *op, struct error *e)
{
    static const char call[] = "zoneOperations.get";
    struct strbuf rest = {0};
    char *path;

    if (!c || !op || !segment_ok(op->zone, 63) || !segment_ok(op->name, 63))
        return refuse(e, call, "needs an operation with its name and zone");
    strbuf_printf(&rest, "operations/%s", op->name);
    if (rest.failed)
        return ERR_NOMEM;
    path = zone_path(c, op->zone, rest.p, NULL);
    strbuf_free(&rest);
    return operation_call(c, call, "GET", path, NULL, op, e);
}

int gcp_operation_wait(struct gcp_compute *c, struct gcp_operation *op, struct error *e)
{
    int64_t start;
    char where[80];
    int rc;

    if (!c || !op)
        return refuse(e, "zoneOperations.get", "no client or operation");
    start = gcp_rest_now(c->rest);
    while (strcmp(op->status, "DONE") != 0) {
        if (gcp_rest_now(c->rest) - start >= c->operation_s) {
            rc = err_set(e, ERR_AGAIN, "gce zoneOperations.get", 0, 0,
                         "operation %s in %s is still %s after %ld s", op->name, op->zone,
                         op->status, c->operation_s);
            return gcp_rest_logged(c->rest, rc, e);
        }
        gcp_rest_sleep(c->rest, c->poll_ms);
        rc = gcp_operation_get(c, op, e);
        if (rc < 0)
            return rc;
    }
    if (op->error.err == 0)
        return 0;
    snprintf(where, sizeof(where), "gce operation %.60s", op->name);
    if (op->error.err == ERR_CAPACITY)
        rc = err_set(e, ERR_CAPACITY, where, 0, 0, "zone %s has no capacity for %s now: %s: %s",
                     op->zone, op->target[0] ? op->target : "the instance", op->error.reason,
                     op->error.message);
    else if (op->error.err == ERR_QUOTA)
        rc = err_set(e, ERR_QUOTA, where, 0, 0, "quota %s exceeded (zone %s): %s: %s",
                     op->error.quota_metric[0] ? op->error.quota_metric : "(unnamed)", op->zone,
                     op->error.reason, op->error.message);
    else
        rc = err_set(e, op->error.err, where, 0, 0, "%sfailed in zone %s: %s: %s",
                     op->error.err == ERR_UNKNOWN ? "unknown error code; " : "", op->zone,
                     op->error.reason, op->error.message);
    return gcp_rest_logged(c->rest, rc, e);
}

int gcp_instances_delete(struct gcp_compute *c, const char *zone, const char *name,
                         const char *token, struct gcp_operation *op, struct error *e)
{
    static const char call[] = "instances.delete";
    char request_id[GCP_UUID_LEN + 1], rest[128];

    if (!c || !op || !segment_ok(zone, 63) || !name_ok(name))
        return refuse(e, call, "needs a zone and an instance name");
    if (token && gcp_request_id(token, request_id) < 0)
        return refuse(e, call, "the token is empty");
    snprintf(rest, sizeof(rest), "instances/%s", name);
    return operation_call(c, call, "DELETE", zone_path(c, zone, rest, token ? request_id : NULL),
                          NULL, op, e);
}

int gcp_instance_get(struct gcp_compute *c, const char *zone, const char *name,
                     struct gcp_instance *out, struct error *e)
{
    static const char call[] = "instances.get";
    struct gcp_error_info info;
    struct jv *v = NULL;
    char rest[128], *path;
    int rc;

    if (!c || !out || !segment_ok(zone, 63) || !name_ok(name))
        return refuse(e, call, "needs a zone and an instance name");
    snprintf(rest, sizeof(rest), "instances/%s", name);
    path = zone_path(c, zone, rest, NULL);
    if (!path)
        return ERR_NOMEM;
    rc = gcp_rest_call(c->rest, call, "GET", path, NULL, &v, &info, e);
    free(path);
    /* refused (a role without compute.instances.get, a token not taken twice): not a request
     * castor got wrong, and nothing said of the instance */
    rc = gcp_refused(rc, &info, 1, e);
    if (rc < 0)
        return rc;
    if (read_instance(v, out) < 0)
        rc = bad_answer(c, e, call, "an instance without name, zone, machineType or status");
    jv_free(v);
    return rc;
}

/* The instances of one page, appended to the list. */
struct list {
    struct gcp_instance *items;
    size_t n, cap;
    const char *cluster;
    const char *bad;       /* what was wrong with the page, or NULL */
    char unreachable[128]; /* a zone whose warning says it could not be read */
};

/* One zone of an aggregated page (jv_each callback). */
static int read_zone(void *arg, const char *key, const struct jv *scope)
{
    struct list *x = arg;
    const struct jv *instances = jv_get(scope, "instances");
    const char *warning = jv_string_value(jv_get(jv_get(scope, "warning"), "code"));

    if (jv_type_of(scope) != JV_OBJECT || (instances && jv_type_of(instances) != JV_ARRAY)) {
        x->bad = "a zone that is not an object with an instances list";
        return ERR_PARSE;
    }
    if (warning && strcmp(warning, "UNREACHABLE") == 0) {
        snprintf(x->unreachable, sizeof(x->unreachable), "%.120s", key);
        strbuf_printable(x->unreachable);
        return ERR_AGAIN;
    }
    for (size_t i = 0; i < jv_size(instances); i++) {
        struct gcp_instance in, *g;

        if (read_instance(jv_at(instances, i), &in) < 0) {
            x->bad = "an instance without name, zone, machineType or status";
            return ERR_PARSE;
        }
        if (strcmp(in.cluster, x->cluster) != 0)
            continue; /* the filter is the server's; this check is castor's */
        if (!(g = vec_grow(x->items, &x->cap, x->n, sizeof(*g))))
            return ERR_NOMEM;
        x->items = g;
        x->items[x->n++] = in;
    }
    return 0;
}

int gcp_instances_list(struct gcp_compute *c, const char *cluster, struct gcp_instance **out,
                       size_t *n, struct error *e)
{
    static const char call[] = "instances.aggregatedList";
    struct list x = {0};
    struct strbuf token = {0};
    int rc = 0;

    if (!c || !out || !n)
        return refuse(e, call, "no client or output");
    if (!gcp_label_ok(cluster)) { /* logged: every reconciliation meets it, unasked */
        struct error local = {0};

        refuse(e ? e : &local, call,
               "the cluster id must be a label value: 1 to 63 of a-z, 0-9, '-' and '_'");
        return gcp_rest_logged(c->rest, ERR_INVAL, e ? e : &local);
    }
    x.cluster = cluster;
    for (int page = 0;; page++) {
        struct strbuf path = {0};
        struct jv *v = NULL;
        const struct jv *items, *next, *unreachables;
        char filter[96];

        if (page == MAX_PAGES) {
            rc = err_set(e, ERR_RANGE, "gce instances.aggregatedList", 0, 0, "more than %d pages",
                         MAX_PAGES);
            rc = gcp_rest_logged(c->rest, rc, e);
            break;
        }
        snprintf(filter, sizeof(filter), "labels.%s=%s", GCP_LABEL_CLUSTER, cluster);
        strbuf_printf(&path, "/projects/%s/aggregated/instances?filter=", c->project);
        strbuf_add_uri_encoded(&path, filter, strlen(filter));
        strbuf_printf(&path, "&maxResults=%d", c->page_size);
        if (token.len) {
            strbuf_str(&path, "&pageToken=");
            strbuf_add_uri_encoded(&path, token.p, token.len);
        }
        if (path.failed) {
            strbuf_free(&path);
            rc = ERR_NOMEM;
            break;
        }
        rc = gcp_rest_call(c->rest, call, "GET", path.p, NULL, &v, NULL, e);
        strbuf_free(&path);
        if (rc < 0)
            break;
        items = jv_get(v, "items");
        next = jv_get(v, "nextPageToken");
        unreachables = jv_get(v, "unreachables");
        if ((items && jv_type_of(items) != JV_OBJECT) || (next && !jv_string_value(next))) {
            rc = bad_answer(c, e, call, "items is not an object or nextPageToken not a string");
        } else if (jv_size(unreachables) > 0) {
            rc = err_set(e, ERR_AGAIN, "gce instances.aggregatedList", 0, 0,
                         "%zu zones could not be read: the list would be partial",
                         jv_size(unreachables));
            rc = gcp_rest_logged(c->rest, rc, e);
        } else if (items) {
            rc = jv_each(items, read_zone, &x);
            if (rc == ERR_PARSE)
                rc = bad_answer(c, e, call, x.bad);
            else if (rc == ERR_AGAIN) {
                rc = err_set(e, ERR_AGAIN, "gce instances.aggregatedList", 0, 0,
                             "%s could not be read: the list would be partial", x.unreachable);
                rc = gcp_rest_logged(c->rest, rc, e);
            }
        }
        /* a page that answers with the token it was asked with would be asked for without end */
        if (rc == 0 && token.len && jv_string_value(next) &&
            strcmp(jv_string_value(next), token.p) == 0)
            rc = bad_answer(c, e, call, "a page answered with the pageToken it was asked with");
        token.len = 0;
        if (rc == 0 && jv_string_value(next))
            strbuf_str(&token, jv_string_value(next));
        jv_free(v);
        if (rc < 0 || token.failed || token.len == 0) {
            if (rc == 0 && token.failed)
                rc = ERR_NOMEM;
            break;
        }
    }
    strbuf_free(&token);
    if (rc < 0) {
        free(x.items);
        return rc;
    }
    *out = x.items;
    *n = x.n;
    return 0;
}

/* ---- quotas ---- */

/* The regional quota metric of each GPU model castor rents (Compute Engine's Quota.metric
 * values; the name is not the accelerator type's in capitals: "nvidia-h100-80gb" counts under
 * NVIDIA_H100_GPUS, "nvidia-a100-80gb" under NVIDIA_A100_80GB_GPUS). */
static const struct {
    const char *accelerator, *metric;
} gpu_metrics[] = {
    {"nvidia-tesla-t4", "NVIDIA_T4_GPUS"},         {"nvidia-tesla-v100", "NVIDIA_V100_GPUS"},
    {"nvidia-tesla-p100", "NVIDIA_P100_GPUS"},     {"nvidia-tesla-p4", "NVIDIA_P4_GPUS"},
    {"nvidia-tesla-k80", "NVIDIA_K80_GPUS"},       {"nvidia-tesla-a100", "NVIDIA_A100_GPUS"},
    {"nvidia-a100-80gb", "NVIDIA_A100_80GB_GPUS"}, {"nvidia-l4", "NVIDIA_L4_GPUS"},
    {"nvidia-h100-80gb", "NVIDIA_H100_GPUS"},
};

const char *gcp_gpu_quota_metric(const char *accelerator)
{
    for (size_t i = 0; accelerator && i < sizeof(gpu_metrics) / sizeof(gpu_metrics[0]); i++)
        if (strcmp(accelerator, gpu_metrics[i].accelerator) == 0)
            return gpu_metrics[i].metric;
    return NULL;
}

const char *gcp_disk_quota_metric(const char *disk_type)
{
    if (!disk_type || !disk_type[0] || strcmp(disk_type, "pd-standard") == 0)
        return "DISKS_TOTAL_GB";
    if (strcmp(disk_type, "pd-ssd") == 0 || strcmp(disk_type, "pd-balanced") == 0)
        return "SSD_TOTAL_GB";
    return NULL;
}

/* The answer's "quotas" array into a new array *out of *n. */
static int read_quotas(struct gcp_compute *c, const struct jv *v, const char *call,
                       struct gcp_quota **out, size_t *n, struct error *e)
{
    const struct jv *list = jv_get(v, "quotas");
    size_t count = jv_size(list);
    struct gcp_quota *q;

    if (jv_type_of(list) != JV_ARRAY)
        return bad_answer(c, e, call, "an answer without its quotas array");
    q = calloc(count ? count : 1, sizeof(*q));
    if (!q)
        return ERR_NOMEM;
    for (size_t i = 0; i < count; i++) {
        const struct jv *item = jv_at(list, i), *usage = jv_get(item, "usage");

        if (text(item, "metric", 1, q[i].metric, sizeof(q[i].metric)) < 0 ||
            jv_number_value(jv_get(item, "limit"), &q[i].limit) < 0 ||
            (usage && jv_number_value(usage, &q[i].usage) < 0) || !(q[i].limit >= 0) ||
            !(q[i].usage >= 0)) {
            free(q);
            return bad_answer(c, e, call,
                              "a quota without its metric, or whose limit or usage is not a "
                              "number >= 0");
        }
    }
    *out = q;
    *n = count;
    return 0;
}

/* GET path (freed here), the answer into *out. A refusal (403) is ERR_PERM, told apart from a
 * request castor got wrong: a role without the permission. */
static int read_get(struct gcp_compute *c, const char *call, char *path, struct jv **out,
                    struct error *e)
{
    struct gcp_error_info info;
    int rc;

    if (!path)
        return ERR_NOMEM;
    rc = gcp_rest_call(c->rest, call, "GET", path, NULL, out, &info, e);
    free(path);
    return gcp_refused(rc, &info, 0, e);
}

/* GET path (freed here), then read the answer's quotas. */
static int quota_call(struct gcp_compute *c, const char *call, char *path, struct gcp_quota **out,
                      size_t *n, struct error *e)
{
    struct jv *v = NULL;
    int rc = read_get(c, call, path, &v, e);

    if (rc < 0)
        return rc;
    rc = read_quotas(c, v, call, out, n, e);
    jv_free(v);
    return rc;
}

int gcp_region_quotas(struct gcp_compute *c, const char *region, struct gcp_quota **out, size_t *n,
                      struct error *e)
{
    static const char call[] = "regions.get";
    struct strbuf path = {0};

    if (!c || !out || !n || !segment_ok(region, 63))
        return refuse(e, call, "needs a client, a region name and outputs");
    strbuf_printf(&path, "/projects/%s/regions/%s", c->project, region);
    return quota_call(c, call, strbuf_take(&path), out, n, e);
}

/* 1 when path (after "projects/" or "global/") holds only the letters of Compute Engine's
 * resource names and slashes, and no empty or dot segment. */
static int image_path_ok(const char *s)
{
    if (!*s || strlen(s) > 300 || strstr(s, "//") || strstr(s, "/.") || s[strlen(s) - 1] == '/')
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("-._/", *s))
            return 0;
    return 1;
}

int gcp_image_disk_gb(struct gcp_compute *c, const char *image, double *gb, struct error *e)
{
    static const char call[] = "images.get";
    const char *rel = image, *v1 = image ? strstr(image, "/compute/v1/") : NULL, *s;
    struct strbuf path = {0};
    struct jv *v = NULL;
    double size = 0;
    int rc;

    if (!c || !image || !gb)
        return refuse(e, call, "needs a client, an image and an output");
    if (v1 && strncmp(image, "https://", 8) == 0)
        rel = v1 + strlen("/compute/v1/");
    if (strncmp(rel, "projects/", 9) == 0 && strstr(rel, "/global/images/") && image_path_ok(rel))
        strbuf_printf(&path, "/%s", rel);
    else if (strncmp(rel, "global/images/", 14) == 0 && image_path_ok(rel))
        strbuf_printf(&path, "/projects/%s/%s", c->project, rel);
    else
        return refuse(e, call,
                      "an image named projects/P/global/images/NAME (or .../family/F) or "
                      "global/images/NAME");
    if ((rc = read_get(c, call, strbuf_take(&path), &v, e)) < 0)
        return rc;
    s = jv_string_value(jv_get(v, "diskSizeGb")); /* an int64: a string in Google's JSON */
    if (s)
        size = strtod(s, NULL);
    else if (jv_number_value(jv_get(v, "diskSizeGb"), &size) < 0)
        size = 0;
    jv_free(v);
    if (!(size > 0) || size > 1e6)
        return bad_answer(c, e, call, "an image without its diskSizeGb");
    *gb = size;
    return 0;
}

int gcp_project_quotas(struct gcp_compute *c, struct gcp_quota **out, size_t *n, struct error *e)
{
    static const char call[] = "projects.get";
    struct strbuf path = {0};

    if (!c || !out || !n)
        return refuse(e, call, "needs a client and outputs");
    strbuf_printf(&path, "/projects/%s", c->project);
    return quota_call(c, call, strbuf_take(&path), out, n, e);
}
