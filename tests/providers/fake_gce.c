/* fake_gce.c: the fake Google Cloud endpoints (see fake_gce.h): JWTs verified with util/crypto,
 * answers built with util/json in the shapes of the real APIs, state kept in fixed tables. */
#include "providers/fake_gce.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/auth.h"
#include "support/loopback_http.h"
#include "util/base64.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/json.h"
#include "util/strbuf.h"

#define MAX_SCRIPT 64
#define MAX_TOKENS 64
#define MAX_INSTANCES 512
#define MAX_OPS 512
#define MAX_SEEN 64
#define MAX_QUOTAS 128
#define MAX_IMAGES 8

struct script {
    char prefix[128];
    enum lh_action how;
    int status;
    char *body;
    long cut;
    int used;
};

struct instance {
    char zone[64], name[64], cluster[64], token[64], status[16], machine[64];
    int spot;
    long id;
    char disk_metric[32]; /* the regional quota its boot disk counts in */
    double disk_gb;
};

struct op {
    char name[64], zone[64], target[64], request_id[64], type[16];
    int polls;       /* GETs so far: PENDING, RUNNING, then DONE */
    char error[64];  /* the error code it ends with, or "" */
    char metric[64]; /* the quota metric of a QUOTA_EXCEEDED */
    char region[64]; /* and its region ("" for a quota forced by fake_gce_quota) */
    double limit;
    int instance; /* index of the instance it makes RUNNING or deletes, or -1 */
};

struct quota {
    char region[64]; /* "" for the project */
    char metric[64];
    double limit, usage;
};

struct seen {
    char prefix[32];
    char target[2048];
    char *body;
};

struct fake_gce {
    struct lh_server *server;
    pthread_mutex_t lock;
    char url[64], project[64], email[128];
    char *pub;
    size_t pub_len;
    int64_t now;
    int ttl;
    char tokens[MAX_TOKENS][64];
    size_t n_tokens, issued, auth_failures;
    struct script script[MAX_SCRIPT];
    size_t n_script;
    struct instance instances[MAX_INSTANCES];
    int live[MAX_INSTANCES];
    size_t n_instances;
    long next_id;
    struct op ops[MAX_OPS];
    size_t n_ops;
    char exhausted[8][64];
    int exhausted_details[8];
    size_t n_exhausted;
    char quota[64];
    struct quota quotas[MAX_QUOTAS];
    size_t n_quotas;
    struct {
        char path[160]; /* "projects/P/global/images/NAME" or ".../images/family/F" */
        double gb;
    } images[MAX_IMAGES];
    size_t n_images;
    size_t requests;
    char (*paths)[256]; /* every request's path, for counting by prefix */
    size_t n_paths, cap_paths;
    struct seen last[MAX_SEEN];
    size_t n_last;
    char claims[1024];
};

/* ---- replies ---- */

static void reply_json(struct lh_reply *r, int status, struct jv *v)
{
    char *text = NULL;

    if (!v || jv_dump(v, &text) < 0) {
        lh_reply_text(r, 500, "text/plain", "fake: out of memory");
    } else {
        lh_reply_text(r, status, "application/json; charset=UTF-8", text);
        free(text);
    }
    jv_free(v);
}

/* A Google error document with one error of reason. */
static void reply_error(struct lh_reply *r, int status, const char *reason, const char *message)
{
    struct strbuf b = {0};

    strbuf_printf(&b, "{\"error\":{\"code\":%d,\"message\":\"", status);
    strbuf_str(&b, message);
    strbuf_str(&b, "\",\"errors\":[{\"message\":\"");
    strbuf_str(&b, message);
    strbuf_str(&b, "\",\"domain\":\"global\",\"reason\":\"");
    strbuf_str(&b, reason);
    strbuf_str(&b, "\"}]}}");
    lh_reply_text(r, status, "application/json; charset=UTF-8", b.p ? b.p : "{}");
    strbuf_free(&b);
}

/* ---- the script ---- */

/* The first queued entry for path, taken off the queue, or NULL. */
static struct script *scripted(struct fake_gce *f, const char *path)
{
    for (size_t i = 0; i < f->n_script; i++)
        if (!f->script[i].used &&
            strncmp(path, f->script[i].prefix, strlen(f->script[i].prefix)) == 0) {
            f->script[i].used = 1;
            return &f->script[i];
        }
    return NULL;
}

/* Answer from a script entry; @TOKEN@ becomes the bearer token. */
static void play(struct script *s, const char *bearer, struct lh_reply *r)
{
    struct strbuf b = {0};
    const char *p = s->body ? s->body : "", *at;

    r->action = s->how;
    if (s->how != LH_REPLY)
        return;
    while ((at = strstr(p, "@TOKEN@")) != NULL) {
        strbuf_add(&b, p, (size_t)(at - p));
        strbuf_str(&b, bearer ? bearer : "");
        p = at + 7;
    }
    strbuf_str(&b, p);
    lh_reply_text(r, s->status, "application/json; charset=UTF-8", b.p ? b.p : "");
    r->cut_after = s->cut;
    strbuf_free(&b);
}

static void push(struct fake_gce *f, const char *prefix, enum lh_action how, int status,
                 const char *body, long cut)
{
    struct script *s;

    pthread_mutex_lock(&f->lock);
    if (f->n_script < MAX_SCRIPT) {
        s = &f->script[f->n_script++];
        snprintf(s->prefix, sizeof(s->prefix), "%s", prefix);
        s->how = how;
        s->status = status;
        s->body = body ? strdup(body) : NULL;
        s->cut = cut;
    }
    pthread_mutex_unlock(&f->lock);
}

void fake_gce_push(struct fake_gce *f, const char *prefix, int status, const char *body)
{
    push(f, prefix, LH_REPLY, status, body, 0);
}

void fake_gce_push_hang(struct fake_gce *f, const char *prefix)
{
    push(f, prefix, LH_HANG, 0, NULL, 0);
}

void fake_gce_push_cut(struct fake_gce *f, const char *prefix, const char *body, long cut)
{
    push(f, prefix, LH_REPLY, 200, body, cut);
}

/* ---- requests ---- */

/* The decoded value of key in a query or form string, or NULL (a new string). */
static char *param(const char *query, const char *key)
{
    size_t klen = strlen(key);

    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);

        if ((size_t)(end - p) > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
            struct strbuf b = {0};

            strbuf_add_uri_decoded(&b, p + klen + 1, (size_t)(end - p - klen - 1));
            return strbuf_take(&b);
        }
        p = amp ? amp + 1 : end;
    }
    return NULL;
}

/* Remember the request under the prefixes tests ask for. */
static void remember(struct fake_gce *f, const char *path, const struct lh_request *req)
{
    size_t slot = f->n_last < MAX_SEEN ? f->n_last++ : (f->requests % MAX_SEEN);

    free(f->last[slot].body);
    snprintf(f->last[slot].prefix, sizeof(f->last[slot].prefix), "%s", "");
    snprintf(f->last[slot].target, sizeof(f->last[slot].target), "%s", req->target);
    f->last[slot].body = strdup(req->body ? req->body : "");
    if (f->n_paths == f->cap_paths) {
        size_t cap = f->cap_paths ? 2 * f->cap_paths : 64;
        char(*g)[256] = realloc(f->paths, cap * sizeof(*g));

        if (!g)
            return;
        f->paths = g;
        f->cap_paths = cap;
    }
    snprintf(f->paths[f->n_paths++], 256, "%.255s", path);
}

/* ---- the token endpoint ---- */

/* The JSON of base64url part [s, s + n) into a new value, or NULL. */
static struct jv *decode_part(const char *s, size_t n, char *keep, size_t keep_size)
{
    unsigned char *raw = NULL;
    size_t len = 0;
    struct jv *v = NULL;

    if (base64_url_decode(s, n, &raw, &len) < 0)
        return NULL;
    if (jv_parse((const char *)raw, len, &v, NULL) < 0)
        v = NULL;
    if (keep)
        snprintf(keep, keep_size, "%.*s", (int)len, (const char *)raw);
    free(raw);
    return v;
}

/* Why the assertion is refused, or NULL when it verifies. */
static const char *check_jwt(struct fake_gce *f, const char *jwt)
{
    const char *dot1 = strchr(jwt, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    struct jv *header = NULL, *claims = NULL;
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    const char *why = NULL, *s;
    char aud[128];
    long long iat = 0, exp = 0;

    if (!dot2 || strchr(dot2 + 1, '.'))
        return "not three parts";
    header = decode_part(jwt, (size_t)(dot1 - jwt), NULL, 0);
    claims = decode_part(dot1 + 1, (size_t)(dot2 - dot1 - 1), f->claims, sizeof(f->claims));
    if (!header || !claims) {
        why = "a part is not base64url JSON";
        goto out;
    }
    if (base64_url_decode(dot2 + 1, strlen(dot2 + 1), &sig, &sig_len) < 0 ||
        crypto_rs256_verify(f->pub, f->pub_len, jwt, (size_t)(dot2 - jwt), sig, sig_len) != 1) {
        why = "Invalid JWT Signature.";
        goto out;
    }
    s = jv_string_value(jv_get(header, "alg"));
    if (!s || strcmp(s, "RS256") != 0 || !jv_string_value(jv_get(header, "typ"))) {
        why = "alg is not RS256 or typ is missing";
        goto out;
    }
    snprintf(aud, sizeof(aud), "%s%s", f->url, FAKE_GCE_TOKEN);
    s = jv_string_value(jv_get(claims, "iss"));
    if (!s || strcmp(s, f->email) != 0) {
        why = "iss is not the service account";
        goto out;
    }
    s = jv_string_value(jv_get(claims, "aud"));
    if (!s || strcmp(s, aud) != 0) {
        why = "aud is not the token endpoint";
        goto out;
    }
    s = jv_string_value(jv_get(claims, "scope"));
    if (!s || !strstr(s, "https://www.googleapis.com/auth/cloud-platform")) {
        why = "scope lacks cloud-platform";
        goto out;
    }
    if (jv_integer_value(jv_get(claims, "iat"), &iat) < 0 ||
        jv_integer_value(jv_get(claims, "exp"), &exp) < 0 || iat > f->now + 60 ||
        iat < f->now - 60 || exp <= iat || exp - iat > 3600) {
        why = "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable "
              "timeframe.";
        goto out;
    }
out:
    free(sig);
    jv_free(header);
    jv_free(claims);
    return why;
}

/* A new token, remembered, into a reply. */
static void issue(struct fake_gce *f, struct lh_reply *r)
{
    struct jv *v = jv_object();
    char token[64];

    snprintf(token, sizeof(token), "ya29.fake-%zu-%08lx", f->issued,
             (unsigned long)(f->now * 2654435761u + f->issued));
    if (f->n_tokens < MAX_TOKENS)
        snprintf(f->tokens[f->n_tokens++], sizeof(f->tokens[0]), "%s", token);
    f->issued++;
    jv_set(v, "access_token", jv_string(token));
    jv_set(v, "expires_in", jv_integer(f->ttl));
    jv_set(v, "token_type", jv_string("Bearer"));
    reply_json(r, 200, v);
}

static void token_endpoint(struct fake_gce *f, const struct lh_request *req, struct lh_reply *r)
{
    char *grant = param(req->body, "grant_type"), *jwt = param(req->body, "assertion");
    const char *ct = lh_header(req, "Content-Type"), *why;
    char body[512];

    if (strcmp(req->method, "POST") != 0 || !ct ||
        strcmp(ct, "application/x-www-form-urlencoded") != 0 || !grant ||
        strcmp(grant, "urn:ietf:params:oauth:grant-type:jwt-bearer") != 0 || !jwt) {
        f->auth_failures++;
        lh_reply_text(r, 400, "application/json",
                      "{\"error\":\"unsupported_grant_type\",\"error_description\":\"Invalid "
                      "grant_type.\"}");
        goto out;
    }
    why = check_jwt(f, jwt);
    if (why) {
        f->auth_failures++;
        snprintf(body, sizeof(body), "{\"error\":\"invalid_grant\",\"error_description\":\"%s\"}",
                 why);
        lh_reply_text(r, 400, "application/json", body);
        goto out;
    }
    issue(f, r);
out:
    free(grant);
    free(jwt);
}

/* ---- compute ---- */

/* 1 when the bearer token is one the fake issued. */
static int authorized(struct fake_gce *f, const char *bearer)
{
    for (size_t i = 0; bearer && i < f->n_tokens; i++)
        if (strcmp(bearer, f->tokens[i]) == 0)
            return 1;
    return 0;
}

static struct jv *instance_json(struct fake_gce *f, const struct instance *in)
{
    struct jv *v = jv_object(), *labels = jv_object(), *sched = jv_object();
    struct jv *nics = jv_array(), *nic = jv_object();
    char buf[512];

    jv_set(v, "kind", jv_string("compute#instance"));
    snprintf(buf, sizeof(buf), "%ld", in->id);
    jv_set(v, "id", jv_string(buf));
    jv_set(v, "name", jv_string(in->name));
    snprintf(buf, sizeof(buf), "https://www.googleapis.com/compute/v1/projects/%s/zones/%s",
             f->project, in->zone);
    jv_set(v, "zone", jv_string(buf));
    snprintf(buf, sizeof(buf),
             "https://www.googleapis.com/compute/v1/projects/%s/zones/%s/machineTypes/%s",
             f->project, in->zone, in->machine);
    jv_set(v, "machineType", jv_string(buf));
    jv_set(v, "status", jv_string(in->status));
    jv_set(v, "creationTimestamp", jv_string("2026-11-22T02:00:00.000-08:00"));
    jv_set(sched, "provisioningModel", jv_string(in->spot ? "SPOT" : "STANDARD"));
    if (in->spot)
        jv_set(sched, "instanceTerminationAction", jv_string("DELETE"));
    jv_set(v, "scheduling", sched);
    if (in->cluster[0])
        jv_set(labels, "castor-cluster", jv_string(in->cluster));
    if (in->token[0])
        jv_set(labels, "castor-token", jv_string(in->token));
    jv_set(v, "labels", labels);
    snprintf(buf, sizeof(buf), "10.128.0.%ld", in->id % 250 + 2);
    jv_set(nic, "networkIP", jv_string(buf));
    jv_push(nics, nic);
    jv_set(v, "networkInterfaces", nics);
    return v;
}

static struct jv *op_json(struct fake_gce *f, const struct op *o)
{
    struct jv *v = jv_object();
    const char *status = o->polls == 0 ? "PENDING" : o->polls == 1 ? "RUNNING" : "DONE";
    char buf[512];

    jv_set(v, "kind", jv_string("compute#operation"));
    jv_set(v, "id", jv_string("7000000000000000001"));
    jv_set(v, "name", jv_string(o->name));
    snprintf(buf, sizeof(buf), "https://www.googleapis.com/compute/v1/projects/%s/zones/%s",
             f->project, o->zone);
    jv_set(v, "zone", jv_string(buf));
    jv_set(v, "operationType", jv_string(o->type));
    snprintf(buf, sizeof(buf),
             "https://www.googleapis.com/compute/v1/projects/%s/zones/%s/instances/%s", f->project,
             o->zone, o->target);
    jv_set(v, "targetLink", jv_string(buf));
    jv_set(v, "status", jv_string(status));
    if (strcmp(status, "DONE") == 0 && o->error[0]) {
        struct jv *err = jv_object(), *errs = jv_array(), *one = jv_object();

        jv_set(one, "code", jv_string(o->error));
        if (strcmp(o->error, "QUOTA_EXCEEDED") == 0) {
            struct jv *details = jv_array(), *d = jv_object(), *qi = jv_object();

            if (o->region[0])
                snprintf(buf, sizeof(buf), "Quota '%s' exceeded.  Limit: %.1f in region %s.",
                         o->metric, o->limit, o->region);
            else
                snprintf(buf, sizeof(buf), "Quota '%s' exceeded.  Limit: 0.0 globally.", o->metric);
            jv_set(one, "message", jv_string(buf));
            /* as Compute Engine names it: the service, then the metric in lower case
             * ("compute.googleapis.com/nvidia_t4_gpus"); the message keeps the quota's name */
            snprintf(buf, sizeof(buf), "compute.googleapis.com/%s", o->metric);
            for (char *c = strchr(buf, '/'); *c; c++)
                *c = (char)tolower((unsigned char)*c);
            jv_set(qi, "metricName", jv_string(buf));
            jv_set(qi, "limit", jv_number(o->limit));
            jv_set(d, "quotaInfo", qi);
            jv_push(details, d);
            jv_set(one, "errorDetails", details);
        } else {
            snprintf(buf, sizeof(buf),
                     "The zone 'projects/%s/zones/%s' does not have enough resources available "
                     "to fulfill the request.  Try a different zone, or try again later.",
                     f->project, o->zone);
            jv_set(one, "message", jv_string(buf));
        }
        jv_push(errs, one);
        jv_set(err, "errors", errs);
        jv_set(v, "error", err);
        jv_set(v, "httpErrorStatusCode",
               jv_integer(strcmp(o->error, "QUOTA_EXCEEDED") ? 503 : 403));
    }
    return v;
}

static struct op *new_op(struct fake_gce *f, const char *zone, const char *type, const char *target,
                         const char *request_id)
{
    struct op *o;

    if (f->n_ops == MAX_OPS)
        return NULL;
    o = &f->ops[f->n_ops];
    memset(o, 0, sizeof(*o));
    snprintf(o->name, sizeof(o->name), "operation-%zu-fake", f->n_ops);
    snprintf(o->zone, sizeof(o->zone), "%s", zone);
    snprintf(o->type, sizeof(o->type), "%s", type);
    snprintf(o->target, sizeof(o->target), "%s", target);
    snprintf(o->request_id, sizeof(o->request_id), "%s", request_id ? request_id : "");
    o->instance = -1;
    f->n_ops++;
    return o;
}

static int find_instance(struct fake_gce *f, const char *zone, const char *name)
{
    for (size_t i = 0; i < f->n_instances; i++)
        if (f->live[i] && strcmp(f->instances[i].zone, zone) == 0 &&
            strcmp(f->instances[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int add_instance(struct fake_gce *f, const char *zone, const char *name, const char *machine,
                        const char *cluster, const char *token, const char *status, int spot)
{
    struct instance *in;

    if (f->n_instances == MAX_INSTANCES)
        return -1;
    in = &f->instances[f->n_instances];
    memset(in, 0, sizeof(*in));
    snprintf(in->zone, sizeof(in->zone), "%s", zone);
    snprintf(in->name, sizeof(in->name), "%s", name);
    snprintf(in->machine, sizeof(in->machine), "%s", machine);
    snprintf(in->cluster, sizeof(in->cluster), "%s", cluster ? cluster : "");
    snprintf(in->token, sizeof(in->token), "%s", token ? token : "");
    snprintf(in->status, sizeof(in->status), "%s", status);
    in->spot = spot;
    in->id = ++f->next_id + 4000000000L;
    f->live[f->n_instances] = 1;
    return (int)f->n_instances++;
}

/* "zones/Z/machineTypes/M" -> M, or "" when the shape is wrong. */
static void machine_of(const char *s, const char *zone, char *out, size_t size)
{
    char prefix[128];

    snprintf(prefix, sizeof(prefix), "zones/%s/machineTypes/", zone);
    out[0] = '\0';
    if (s && strncmp(s, prefix, strlen(prefix)) == 0)
        snprintf(out, size, "%s", s + strlen(prefix));
}

/* The region of zone ("us-central1-a" -> "us-central1"). */
static void region_of(const char *zone, char *out, size_t size)
{
    const char *dash = strrchr(zone, '-');

    snprintf(out, size, "%.*s", dash ? (int)(dash - zone) : (int)strlen(zone), zone);
}

/* A boot disk's quota metric and size from its initializeParams, as Compute Engine counts them:
 * pd-ssd and pd-balanced in SSD_TOTAL_GB, pd-standard (the type of a disk that names none) in
 * DISKS_TOTAL_GB, others in none (""); without diskSizeGb, its image's size (10 GB for an image
 * the fake does not know). */
static void boot_disk(const struct fake_gce *f, const struct jv *init, char *metric, double *gb)
{
    const struct jv *size = jv_get(init, "diskSizeGb");
    const char *type = jv_string_value(jv_get(init, "diskType")), *slash;
    const char *s = jv_string_value(size), *image = jv_string_value(jv_get(init, "sourceImage"));

    *gb = 10;
    for (size_t i = 0; image && i < f->n_images; i++)
        if (strcmp(f->images[i].path, image) == 0)
            *gb = f->images[i].gb;
    if (s)
        *gb = strtod(s, NULL);
    else if (size)
        jv_number_value(size, gb);
    slash = type ? strrchr(type, '/') : NULL;
    type = slash ? slash + 1 : type;
    if (!type || strcmp(type, "pd-standard") == 0)
        snprintf(metric, 32, "DISKS_TOTAL_GB");
    else if (strcmp(type, "pd-ssd") == 0 || strcmp(type, "pd-balanced") == 0)
        snprintf(metric, 32, "SSD_TOTAL_GB");
    else
        metric[0] = '\0';
}

/* GB of the live instances' disks in region that count in metric. */
static double disks_in_use(const struct fake_gce *f, const char *region, const char *metric)
{
    double gb = 0;
    char r[64];

    for (size_t i = 0; metric[0] && i < f->n_instances; i++) {
        region_of(f->instances[i].zone, r, sizeof(r));
        if (f->live[i] && strcmp(r, region) == 0 &&
            strcmp(f->instances[i].disk_metric, metric) == 0)
            gb += f->instances[i].disk_gb;
    }
    return gb;
}

/* A disk of gb counted in metric, in zone's region, past what the region's quota of that metric
 * leaves (where it lists one): o ends QUOTA_EXCEEDED on it. */
static void disk_quota_check(struct fake_gce *f, const char *zone, const char *metric, double gb,
                             struct op *o)
{
    char region[64];

    region_of(zone, region, sizeof(region));
    for (size_t i = 0; metric[0] && i < f->n_quotas; i++) {
        const struct quota *q = &f->quotas[i];

        if (strcmp(q->region, region) != 0 || strcmp(q->metric, metric) != 0 ||
            q->usage + disks_in_use(f, region, metric) + gb <= q->limit)
            continue;
        snprintf(o->error, sizeof(o->error), "QUOTA_EXCEEDED");
        snprintf(o->metric, sizeof(o->metric), "%s", metric);
        snprintf(o->region, sizeof(o->region), "%s", region);
        o->limit = q->limit;
    }
}

static void insert(struct fake_gce *f, const char *zone, const char *query,
                   const struct lh_request *req, struct lh_reply *r)
{
    char *request_id = param(query, "requestId"), machine[64], disk_metric[32];
    double disk_gb;
    struct jv *body = NULL;
    const char *name, *cluster, *token, *model, *action;
    const struct jv *labels, *sched, *accs;
    struct op *o;
    int idx;

    for (size_t i = 0; request_id && i < f->n_ops; i++)
        if (strcmp(f->ops[i].request_id, request_id) == 0) {
            reply_json(r, 200, op_json(f, &f->ops[i])); /* the same request: the same operation */
            goto out;
        }
    if (jv_parse(req->body, req->body_len, &body, NULL) < 0) {
        reply_error(r, 400, "parseError", "This API does not support parsing form-encoded input.");
        goto out;
    }
    name = jv_string_value(jv_get(body, "name"));
    labels = jv_get(body, "labels");
    sched = jv_get(body, "scheduling");
    accs = jv_get(body, "guestAccelerators");
    cluster = jv_string_value(jv_get(labels, "castor-cluster"));
    token = jv_string_value(jv_get(labels, "castor-token"));
    model = jv_string_value(jv_get(sched, "provisioningModel"));
    action = jv_string_value(jv_get(sched, "instanceTerminationAction"));
    machine_of(jv_string_value(jv_get(body, "machineType")), zone, machine, sizeof(machine));
    if (!name || !machine[0] || !model || !jv_get(jv_at(jv_get(body, "disks"), 0), "boot") ||
        !jv_get(body, "networkInterfaces")) {
        reply_error(r, 400, "required", "Required field is missing.");
        goto out;
    }
    if (strcmp(model, "SPOT") == 0 && (!action || strcmp(action, "DELETE") != 0)) {
        reply_error(r, 400, "invalid", "Spot VMs here must be deleted when preempted.");
        goto out;
    }
    if (accs && (strncmp(machine, "a2-", 3) == 0 || strncmp(machine, "g2-", 3) == 0)) {
        reply_error(r, 400, "invalid", "Machine type with GPUs cannot take guestAccelerators.");
        goto out;
    }
    if (find_instance(f, zone, name) >= 0) {
        char msg[512];

        snprintf(msg, sizeof(msg),
                 "The resource 'projects/%s/zones/%s/instances/%s' already "
                 "exists",
                 f->project, zone, name);
        reply_error(r, 409, "alreadyExists", msg);
        goto out;
    }
    o = new_op(f, zone, "insert", name, request_id);
    if (!o) {
        reply_error(r, 500, "backendError", "fake: too many operations");
        goto out;
    }
    for (size_t i = 0; i < f->n_exhausted; i++)
        if (strcmp(f->exhausted[i], zone) == 0)
            snprintf(o->error, sizeof(o->error), "%s",
                     f->exhausted_details[i] ? "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"
                                             : "ZONE_RESOURCE_POOL_EXHAUSTED");
    if (!o->error[0] && f->quota[0]) {
        snprintf(o->error, sizeof(o->error), "QUOTA_EXCEEDED");
        snprintf(o->metric, sizeof(o->metric), "%s", f->quota);
    }
    boot_disk(f, jv_get(jv_at(jv_get(body, "disks"), 0), "initializeParams"), disk_metric,
              &disk_gb);
    if (!o->error[0])
        disk_quota_check(f, zone, disk_metric, disk_gb, o);
    if (!o->error[0]) {
        idx = add_instance(f, zone, name, machine, cluster, token, "PROVISIONING",
                           strcmp(model, "SPOT") == 0);
        o->instance = idx;
        if (idx >= 0) {
            snprintf(f->instances[idx].disk_metric, sizeof(f->instances[idx].disk_metric), "%s",
                     disk_metric);
            f->instances[idx].disk_gb = disk_gb;
        }
    }
    reply_json(r, 200, op_json(f, o));
out:
    jv_free(body);
    free(request_id);
}

static void get_op(struct fake_gce *f, const char *zone, const char *name, struct lh_reply *r)
{
    for (size_t i = 0; i < f->n_ops; i++) {
        struct op *o = &f->ops[i];

        if (strcmp(o->name, name) != 0 || strcmp(o->zone, zone) != 0)
            continue;
        if (o->polls < 2 && ++o->polls == 2 && o->instance >= 0) {
            if (strcmp(o->type, "insert") == 0)
                snprintf(f->instances[o->instance].status, 16, "RUNNING");
            else
                f->live[o->instance] = 0;
        }
        reply_json(r, 200, op_json(f, o));
        return;
    }
    reply_error(r, 404, "notFound", "The resource operation was not found");
}

/* aggregatedList: the cluster's instances by (zone, name), maxResults a page. */
static void aggregated(struct fake_gce *f, const char *query, struct lh_reply *r)
{
    char *filter = param(query, "filter"), *max = param(query, "maxResults");
    char *page = param(query, "pageToken"), prefix[] = "labels.castor-cluster=";
    size_t order[MAX_INSTANCES], n = 0, from = page ? strtoul(page + 1, NULL, 10) : 0;
    size_t size = max ? strtoul(max, NULL, 10) : 500;
    struct jv *v = jv_object(), *items = jv_object(), *empty = jv_object(), *warn = jv_object();

    if (!filter || strncmp(filter, prefix, strlen(prefix)) != 0 || size == 0 ||
        (page && page[0] != 'o')) {
        jv_free(v);
        jv_free(items);
        jv_free(empty);
        jv_free(warn);
        reply_error(r, 400, "invalid", "Invalid value for field 'filter' or 'pageToken'.");
        goto out;
    }
    for (size_t i = 0; i < f->n_instances; i++)
        if (f->live[i] && strcmp(f->instances[i].cluster, filter + strlen(prefix)) == 0)
            order[n++] = i;
    for (size_t i = 1; i < n; i++) /* insertion sort by zone, then name */
        for (size_t j = i; j > 0; j--) {
            struct instance *a = &f->instances[order[j - 1]], *b = &f->instances[order[j]];
            int c = strcmp(a->zone, b->zone);
            size_t t;

            if (c < 0 || (c == 0 && strcmp(a->name, b->name) <= 0))
                break;
            t = order[j - 1];
            order[j - 1] = order[j];
            order[j] = t;
        }
    for (size_t i = from; i < n && i < from + size; i++) {
        const struct instance *in = &f->instances[order[i]];
        char key[96];
        struct jv *scope, *list;

        snprintf(key, sizeof(key), "zones/%s", in->zone);
        scope = (struct jv *)jv_get(items, key);
        if (!scope) {
            jv_set(items, key, jv_object());
            scope = (struct jv *)jv_get(items, key);
            jv_set(scope, "instances", jv_array());
        }
        list = (struct jv *)jv_get(scope, "instances");
        jv_push(list, instance_json(f, in));
    }
    jv_set(warn, "code", jv_string("NO_RESULTS_ON_PAGE"));
    jv_set(warn, "message",
           jv_string("There are no results for scope 'zones/asia-east1-a' on "
                     "this page."));
    jv_set(empty, "warning", warn);
    jv_set(items, "zones/asia-east1-a", empty);
    jv_set(v, "kind", jv_string("compute#instanceAggregatedList"));
    jv_set(v, "items", items);
    if (from + size < n) {
        char next[32];

        snprintf(next, sizeof(next), "o%zu", from + size);
        jv_set(v, "nextPageToken", jv_string(next));
    }
    reply_json(r, 200, v);
out:
    free(filter);
    free(max);
    free(page);
}

/* The quotas of region ("" for the project) as Compute Engine lists them; NULL when the fake
 * knows no such region. */
static struct jv *quotas_json(struct fake_gce *f, const char *region)
{
    struct jv *list = NULL;

    for (size_t i = 0; i < f->n_quotas; i++) {
        struct jv *q;

        if (strcmp(f->quotas[i].region, region) != 0)
            continue;
        if (!list)
            list = jv_array();
        q = jv_object();
        jv_set(q, "metric", jv_string(f->quotas[i].metric));
        jv_set(q, "limit", jv_number(f->quotas[i].limit));
        jv_set(q, "usage",
               jv_number(f->quotas[i].usage +
                         (region[0] ? disks_in_use(f, region, f->quotas[i].metric) : 0)));
        jv_push(list, q);
    }
    return list;
}

/* regions.get: the region's zones and quotas, or 404 as Compute Engine answers an unknown one. */
static void get_region(struct fake_gce *f, const char *region, struct lh_reply *r)
{
    struct jv *quotas = quotas_json(f, region), *v, *zones;
    char buf[512];

    if (!quotas) {
        snprintf(buf, sizeof(buf), "The resource 'projects/%s/regions/%s' was not found",
                 f->project, region);
        reply_error(r, 404, "notFound", buf);
        return;
    }
    v = jv_object();
    zones = jv_array();
    jv_set(v, "kind", jv_string("compute#region"));
    jv_set(v, "id", jv_string("1000"));
    jv_set(v, "creationTimestamp", jv_string("1969-12-31T16:00:00.000-08:00"));
    jv_set(v, "name", jv_string(region));
    jv_set(v, "description", jv_string(region));
    jv_set(v, "status", jv_string("UP"));
    for (const char *z = "abc"; *z; z++) {
        snprintf(buf, sizeof(buf), "https://www.googleapis.com/compute/v1/projects/%s/zones/%s-%c",
                 f->project, region, *z);
        jv_push(zones, jv_string(buf));
    }
    jv_set(v, "zones", zones);
    jv_set(v, "quotas", quotas);
    snprintf(buf, sizeof(buf), "https://www.googleapis.com/compute/v1/projects/%s/regions/%s",
             f->project, region);
    jv_set(v, "selfLink", jv_string(buf));
    jv_set(v, "supportsPzs", jv_bool(0));
    reply_json(r, 200, v);
}

/* projects.get: the project with its project-wide quotas. */
static void get_project(struct fake_gce *f, struct lh_reply *r)
{
    struct jv *v = jv_object(), *quotas = quotas_json(f, "");
    char buf[256];

    jv_set(v, "kind", jv_string("compute#project"));
    jv_set(v, "id", jv_string("5000000000000000001"));
    jv_set(v, "creationTimestamp", jv_string("2026-01-05T01:00:00.000-08:00"));
    jv_set(v, "name", jv_string(f->project));
    jv_set(v, "quotas", quotas ? quotas : jv_array());
    snprintf(buf, sizeof(buf), "https://www.googleapis.com/compute/v1/projects/%s", f->project);
    jv_set(v, "selfLink", jv_string(buf));
    snprintf(buf, sizeof(buf), "123456789012-compute@developer.gserviceaccount.com");
    jv_set(v, "defaultServiceAccount", jv_string(buf));
    jv_set(v, "xpnProjectStatus", jv_string("UNSPECIFIED_XPN_PROJECT_STATUS"));
    jv_set(v, "defaultNetworkTier", jv_string("PREMIUM"));
    reply_json(r, 200, v);
}

/* images.get and images.getFromFamily (path: "projects/P/global/images/..."), of any project
 * (public images live in their own): the image with its diskSizeGb, or 404. */
static void get_image(struct fake_gce *f, const char *path, struct lh_reply *r)
{
    char buf[512];
    const char *name = strrchr(path, '/') + 1;

    for (size_t i = 0; i < f->n_images; i++) {
        struct jv *v;

        if (strcmp(f->images[i].path, path) != 0)
            continue;
        v = jv_object();
        jv_set(v, "kind", jv_string("compute#image"));
        jv_set(v, "name", jv_string(strstr(path, "/family/") ? "fake-image-v1" : name));
        if (strstr(path, "/family/"))
            jv_set(v, "family", jv_string(name));
        snprintf(buf, sizeof(buf), "%.0f", f->images[i].gb);
        jv_set(v, "diskSizeGb", jv_string(buf)); /* an int64, written as a string */
        jv_set(v, "status", jv_string("READY"));
        reply_json(r, 200, v);
        return;
    }
    snprintf(buf, sizeof(buf), "The resource '%.300s' was not found", path);
    reply_error(r, 404, "notFound", buf);
}

/* /compute/v1/projects/P/... */
static void compute(struct fake_gce *f, const char *path, const char *query,
                    const struct lh_request *req, struct lh_reply *r)
{
    char proj[64] = "", zone[64] = "", kind[32] = "", name[128] = "", extra[8] = "", self[128];
    int n = sscanf(path, "/compute/v1/projects/%63[^/]/zones/%63[^/]/%31[^/]/%127[^/]%7s", proj,
                   zone, kind, name, extra);

    if (strcmp(req->method, "GET") == 0 && strstr(path, "/global/images/")) {
        get_image(f, path + strlen("/compute/v1/"), r);
        return;
    }
    if (strcmp(proj, f->project) != 0 && sscanf(path, "/compute/v1/projects/%63[^/]", proj) == 1 &&
        strcmp(proj, f->project) != 0) {
        reply_error(r, 404, "notFound", "The resource 'projects/x' was not found");
        return;
    }
    snprintf(self, sizeof(self), FAKE_GCE_COMPUTE "/projects/%s", f->project);
    if (strcmp(req->method, "GET") == 0 && strcmp(path, self) == 0) {
        get_project(f, r);
        return;
    }
    if (strcmp(req->method, "GET") == 0 &&
        sscanf(path, "/compute/v1/projects/%63[^/]/regions/%63[^/]%7s", proj, zone, extra) == 2) {
        get_region(f, zone, r);
        return;
    }
    if (n == 3 && strcmp(kind, "instances") == 0 && strcmp(req->method, "POST") == 0)
        insert(f, zone, query, req, r);
    else if (n == 4 && strcmp(kind, "operations") == 0 && strcmp(req->method, "GET") == 0)
        get_op(f, zone, name, r);
    else if (n == 4 && strcmp(kind, "instances") == 0) {
        int i = find_instance(f, zone, name);
        char msg[512];

        snprintf(msg, sizeof(msg), "The resource 'projects/%s/zones/%s/instances/%s' was not found",
                 f->project, zone, name);
        if (i < 0) {
            reply_error(r, 404, "notFound", msg);
        } else if (strcmp(req->method, "GET") == 0) {
            reply_json(r, 200, instance_json(f, &f->instances[i]));
        } else if (strcmp(req->method, "DELETE") == 0) {
            char *request_id = param(query, "requestId");
            struct op *o = new_op(f, zone, "delete", name, request_id);

            free(request_id);
            if (!o) {
                reply_error(r, 500, "backendError", "fake: too many operations");
                return;
            }
            o->instance = i;
            snprintf(f->instances[i].status, 16, "STOPPING");
            reply_json(r, 200, op_json(f, o));
        } else {
            reply_error(r, 400, "badRequest", "method");
        }
    } else if (strcmp(path + strlen("/compute/v1/projects/") + strlen(f->project),
                      "/aggregated/instances") == 0 &&
               strcmp(req->method, "GET") == 0) {
        aggregated(f, query, r);
    } else {
        reply_error(r, 404, "notFound", "fake: no such call");
    }
}

static void handle(void *arg, const struct lh_request *req, struct lh_reply *r)
{
    struct fake_gce *f = arg;
    char path[2048];
    const char *q = strchr(req->target, '?'), *auth = lh_header(req, "Authorization");
    const char *bearer = auth && strncmp(auth, "Bearer ", 7) == 0 ? auth + 7 : NULL;
    const char *query = q ? q + 1 : "";
    struct script *s;

    snprintf(path, sizeof(path), "%.*s", (int)(q ? (size_t)(q - req->target) : strlen(req->target)),
             req->target);
    pthread_mutex_lock(&f->lock);
    f->requests++;
    remember(f, path, req);
    if (strcmp(path, FAKE_GCE_TOKEN) == 0) {
        s = scripted(f, path);
        if (s)
            play(s, NULL, r);
        else
            token_endpoint(f, req, r);
    } else if (strcmp(path, GCP_METADATA_TOKEN_PATH) == 0) {
        const char *flavor = lh_header(req, "Metadata-Flavor");

        s = scripted(f, path);
        if (s)
            play(s, NULL, r);
        else if (!flavor || strcmp(flavor, "Google") != 0)
            lh_reply_text(r, 403, "text/html", "Missing Metadata-Flavor:Google header.");
        else
            issue(f, r);
    } else if (!authorized(f, bearer)) {
        f->auth_failures++;
        reply_error(r, 401, "authError", "Request had invalid authentication credentials.");
    } else if ((s = scripted(f, path)) != NULL) {
        play(s, bearer, r);
    } else if (strncmp(path, FAKE_GCE_COMPUTE "/", strlen(FAKE_GCE_COMPUTE) + 1) == 0) {
        compute(f, path, query, req, r);
    } else {
        reply_error(r, 404, "notFound", "fake: no such path");
    }
    pthread_mutex_unlock(&f->lock);
}

/* ---- setup and queries ---- */

static const char *const default_regions[] = {"us-central1",  "us-east1",   "us-west1",
                                              "europe-west4", "asia-east1", NULL};

struct fake_gce *fake_gce_start(const char *project, const char *client_email,
                                const char *pub_pem_path)
{
    struct fake_gce *f = calloc(1, sizeof(*f));

    if (!f)
        return NULL;
    pthread_mutex_init(&f->lock, NULL);
    snprintf(f->project, sizeof(f->project), "%s", project);
    snprintf(f->email, sizeof(f->email), "%s", client_email);
    f->ttl = 3600;
    for (const char *const *region = default_regions; *region; region++)
        fake_gce_set_quota(f, *region, "CPUS", 96, 0);
    fake_gce_set_quota(f, NULL, "GPUS_ALL_REGIONS", 16, 0);
    fake_gce_set_quota(f, NULL, "CPUS_ALL_REGIONS", 512, 0);
    fake_gce_set_image(f, "projects/debian-cloud/global/images/family/debian-12", 10);
    if (file_read_all(pub_pem_path, &f->pub, &f->pub_len, NULL) < 0 ||
        lh_start(handle, f, &f->server) < 0) {
        free(f->pub);
        free(f);
        return NULL;
    }
    lh_url(f->server, f->url, sizeof(f->url));
    return f;
}

void fake_gce_stop(struct fake_gce *f)
{
    if (!f)
        return;
    lh_stop(f->server);
    for (size_t i = 0; i < f->n_script; i++)
        free(f->script[i].body);
    for (size_t i = 0; i < f->n_last; i++)
        free(f->last[i].body);
    free(f->paths);
    free(f->pub);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

const char *fake_gce_url(const struct fake_gce *f)
{
    return f->url;
}

void fake_gce_set_now(struct fake_gce *f, int64_t now)
{
    pthread_mutex_lock(&f->lock);
    f->now = now;
    pthread_mutex_unlock(&f->lock);
}

void fake_gce_set_token_ttl(struct fake_gce *f, int seconds)
{
    pthread_mutex_lock(&f->lock);
    f->ttl = seconds;
    pthread_mutex_unlock(&f->lock);
}

void fake_gce_revoke_tokens(struct fake_gce *f)
{
    pthread_mutex_lock(&f->lock);
    f->n_tokens = 0;
    pthread_mutex_unlock(&f->lock);
}

void fake_gce_exhaust_zone(struct fake_gce *f, const char *zone, int details)
{
    pthread_mutex_lock(&f->lock);
    if (f->n_exhausted < 8) {
        snprintf(f->exhausted[f->n_exhausted], 64, "%s", zone);
        f->exhausted_details[f->n_exhausted++] = details;
    }
    pthread_mutex_unlock(&f->lock);
}

void fake_gce_restore_zone(struct fake_gce *f, const char *zone)
{
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n_exhausted;)
        if (strcmp(f->exhausted[i], zone) == 0) {
            f->n_exhausted--;
            memmove(f->exhausted[i], f->exhausted[f->n_exhausted], sizeof(f->exhausted[i]));
            f->exhausted_details[i] = f->exhausted_details[f->n_exhausted];
        } else {
            i++;
        }
    pthread_mutex_unlock(&f->lock);
}

void fake_gce_quota(struct fake_gce *f, const char *metric)
{
    pthread_mutex_lock(&f->lock);
    snprintf(f->quota, sizeof(f->quota), "%s", metric ? metric : "");
    pthread_mutex_unlock(&f->lock);
}

void fake_gce_set_quota(struct fake_gce *f, const char *region, const char *metric, double limit,
                        double usage)
{
    size_t i;

    pthread_mutex_lock(&f->lock);
    for (i = 0; i < f->n_quotas; i++)
        if (strcmp(f->quotas[i].region, region ? region : "") == 0 &&
            strcmp(f->quotas[i].metric, metric) == 0)
            break;
    if (i < MAX_QUOTAS) {
        snprintf(f->quotas[i].region, sizeof(f->quotas[i].region), "%s", region ? region : "");
        snprintf(f->quotas[i].metric, sizeof(f->quotas[i].metric), "%s", metric);
        f->quotas[i].limit = limit;
        f->quotas[i].usage = usage;
        if (i == f->n_quotas)
            f->n_quotas++;
    }
    pthread_mutex_unlock(&f->lock);
}

int fake_gce_add_instance(struct fake_gce *f, const char *zone, const char *name,
                          const char *cluster, const char *token, const char *status, int spot)
{
    int rc;

    pthread_mutex_lock(&f->lock);
    rc = add_instance(f, zone, name, "n1-standard-8", cluster, token, status ? status : "RUNNING",
                      spot);
    pthread_mutex_unlock(&f->lock);
    return rc < 0 ? -1 : 0;
}

size_t fake_gce_requests(const struct fake_gce *f, const char *prefix)
{
    size_t n = 0;

    pthread_mutex_lock((pthread_mutex_t *)&f->lock);
    for (size_t i = 0; i < f->n_paths; i++)
        n += strncmp(f->paths[i], prefix, strlen(prefix)) == 0;
    pthread_mutex_unlock((pthread_mutex_t *)&f->lock);
    return n;
}

size_t fake_gce_tokens_issued(const struct fake_gce *f)
{
    return f->issued;
}

size_t fake_gce_auth_failures(const struct fake_gce *f)
{
    return f->auth_failures;
}

int fake_gce_set_status(struct fake_gce *f, const char *zone, const char *name, const char *status)
{
    int i;

    pthread_mutex_lock(&f->lock);
    i = find_instance(f, zone, name);
    if (i >= 0)
        snprintf(f->instances[i].status, sizeof(f->instances[i].status), "%s", status);
    pthread_mutex_unlock(&f->lock);
    return i < 0 ? -1 : 0;
}

int fake_gce_instance_at(const struct fake_gce *f, size_t i, struct fake_gce_instance *out)
{
    int rc = -1;

    pthread_mutex_lock((pthread_mutex_t *)&f->lock);
    if (i < f->n_instances) {
        const struct instance *in = &f->instances[i];

        memset(out, 0, sizeof(*out));
        snprintf(out->zone, sizeof(out->zone), "%s", in->zone);
        snprintf(out->name, sizeof(out->name), "%s", in->name);
        snprintf(out->cluster, sizeof(out->cluster), "%s", in->cluster);
        snprintf(out->token, sizeof(out->token), "%s", in->token);
        snprintf(out->status, sizeof(out->status), "%s", in->status);
        snprintf(out->machine, sizeof(out->machine), "%s", in->machine);
        out->spot = in->spot;
        out->live = f->live[i];
        rc = 0;
    }
    pthread_mutex_unlock((pthread_mutex_t *)&f->lock);
    return rc;
}

size_t fake_gce_instance_count(const struct fake_gce *f)
{
    size_t n = 0;

    for (size_t i = 0; i < f->n_instances; i++)
        n += f->live[i];
    return n;
}

/* The newest remembered request whose target starts with prefix, or NULL. */
static const struct seen *last_seen(const struct fake_gce *f, const char *prefix)
{
    const struct seen *best = NULL;

    /* the slots are filled in order until full, then reused round-robin: scan in order of age */
    for (size_t k = 0; k < f->n_last; k++) {
        size_t i = f->n_last < MAX_SEEN ? k : (f->requests + k) % MAX_SEEN;

        if (strncmp(f->last[i].target, prefix, strlen(prefix)) == 0)
            best = &f->last[i];
    }
    return best;
}

const char *fake_gce_last_target(const struct fake_gce *f, const char *prefix)
{
    const struct seen *s = last_seen(f, prefix);

    return s ? s->target : NULL;
}

const char *fake_gce_last_body(const struct fake_gce *f, const char *prefix)
{
    const struct seen *s = last_seen(f, prefix);

    return s ? s->body : NULL;
}

const char *fake_gce_last_claims(const struct fake_gce *f)
{
    return f->claims;
}

void fake_gce_set_image(struct fake_gce *f, const char *path, double gb)
{
    size_t i;

    pthread_mutex_lock(&f->lock);
    for (i = 0; i < f->n_images && strcmp(f->images[i].path, path) != 0; i++)
        ;
    if (i < MAX_IMAGES) {
        snprintf(f->images[i].path, sizeof(f->images[i].path), "%s", path);
        f->images[i].gb = gb;
        if (i == f->n_images)
            f->n_images++;
    }
    pthread_mutex_unlock(&f->lock);
}
