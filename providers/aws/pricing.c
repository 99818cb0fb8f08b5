/* pricing.c: the Price List Query API's GetProducts over the JSON protocol (X-Amz-Target, a
 * JSON body, SigV4 for "pricing": providers/aws/json_api.c), its answers' PriceList read as JSON
 * documents inside strings, errors mapped into castor's table, and a cache of prices by (region,
 * type). */
#include "providers/aws/pricing.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/aws/json_api.h"
#include "util/json.h"
#include "util/strbuf.h"

#define PRICING_TTL_S 86400.0
#define PRICING_RETRY_S 900.0
#define PRICING_MAX_PAGES 100
#define PRICING_WHERE "pricing GetProducts"

/* One cached price (or a failure) of a type in a region. */
struct pricing_entry {
    char region[32];
    char type[32];
    double usd;       /* NAN: none read yet */
    double read_at;   /* when usd was read */
    double failed_at; /* the last failed lookup (NAN: none since the last read) */
};

struct aws_pricing {
    struct aws_json *json;
    double ttl_s, retry_s;
    struct pricing_entry *cache;
    size_t n_cache;
};

/* castor's codes for the error types of the Price List API; 0: retried (credentials refused as
 * expired are asked again once by json_api.c, then ERR_PERM). */
static const struct aws_json_code pricing_codes[] = {
    {"ThrottlingException", 0},
    {"InternalErrorException", 0},
    {"ServiceUnavailableException", 0},
    {"InvalidParameterException", ERR_INVAL},
    {"InvalidNextTokenException", ERR_INVAL},
    {"ExpiredNextTokenException", ERR_INVAL},
    {"AccessDeniedException", ERR_INVAL},
    {"InvalidSignatureException", ERR_INVAL},
    {"IncompleteSignature", ERR_INVAL},
    {"MissingAuthenticationToken", ERR_INVAL},
    {"NotFoundException", ERR_NOENT},
};

static const struct aws_json_api pricing_api = {"pricing", "pricing", "AWS_ENDPOINT_URL_PRICING",
                                                pricing_codes,
                                                sizeof(pricing_codes) / sizeof(pricing_codes[0])};

int aws_pricing_new(const struct aws_pricing_config *cfg, struct aws_pricing **out, struct error *e)
{
    struct aws_pricing *p;
    int rc;

    if (!cfg || !out || !cfg->json.credentials)
        return err_set(e, ERR_INVAL, "pricing", 0, 0, "a credential source is needed");
    p = calloc(1, sizeof(*p));
    if (!p)
        return ERR_NOMEM;
    rc = aws_json_new(&pricing_api, PRICING_DEFAULT_ENDPOINT, "us-east-1", &cfg->json, &p->json, e);
    if (rc < 0) {
        free(p);
        return rc;
    }
    p->ttl_s = cfg->ttl_s > 0 ? cfg->ttl_s : PRICING_TTL_S;
    p->retry_s = cfg->retry_s > 0 ? cfg->retry_s : PRICING_RETRY_S;
    *out = p;
    return 0;
}

void aws_pricing_free(struct aws_pricing *p)
{
    if (!p)
        return;
    aws_json_free(p->json);
    free(p->cache);
    free(p);
}

const char *aws_pricing_endpoint(const struct aws_pricing *p)
{
    return aws_json_endpoint(p->json);
}

/* ---- GetProducts ---- */

/* {"Type": "TERM_MATCH", "Field": field, "Value": value} appended to filters. */
static void pricing_filter(struct jv *filters, const char *field, const char *value)
{
    struct jv *f = jv_object();

    jv_set(f, "Type", jv_string("TERM_MATCH"));
    jv_set(f, "Field", jv_string(field));
    jv_set(f, "Value", jv_string(value));
    jv_push(filters, f);
}

/* What a lookup asks the Price List for: an instance type's hourly Linux price, or an EBS volume
 * type's price per GB-month. */
struct pricing_ask {
    const char *attr; /* the product attribute that names it */
    const char *name; /* "g5.xlarge", "gp3" */
    const char *unit; /* its price dimension's unit */
    int volume;
};

/* The request body for a page (token NULL: the first), in *out (free). */
static int pricing_body(const char *region, const struct pricing_ask *ask, const char *token,
                        char **out)
{
    struct jv *req = jv_object(), *filters = jv_array();
    int rc;

    pricing_filter(filters, ask->attr, ask->name);
    pricing_filter(filters, "regionCode", region);
    if (ask->volume) {
        pricing_filter(filters, "productFamily", "Storage");
    } else {
        pricing_filter(filters, "operatingSystem", "Linux");
        pricing_filter(filters, "tenancy", "Shared");
        pricing_filter(filters, "preInstalledSw", "NA");
        pricing_filter(filters, "capacitystatus", "Used");
    }
    jv_set(req, "ServiceCode", jv_string("AmazonEC2"));
    jv_set(req, "Filters", filters);
    jv_set(req, "FormatVersion", jv_string("aws_v1"));
    jv_set(req, "MaxResults", jv_integer(100));
    if (token)
        jv_set(req, "NextToken", jv_string(token));
    rc = jv_dump(req, out);
    jv_free(req);
    return rc;
}

/* What reading one product looks for and finds. */
struct pricing_find {
    const char *unit; /* the dimension's unit looked for: "Hrs", "GB-Mo" */
    double usd;       /* the first positive price in that unit (NAN: none yet) */
    const char *bad;  /* a price string that did not parse, or NULL */
    char bad_text[48];
};

/* One price dimension (jv_each): a positive USD price in the unit looked for. */
static int pricing_dimension(void *ctx, const char *key, const struct jv *dim)
{
    struct pricing_find *f = ctx;
    const char *unit = jv_string_value(jv_get(dim, "unit"));
    const char *usd = jv_string_value(jv_get(jv_get(dim, "pricePerUnit"), "USD"));
    char *end;
    double v;

    (void)key;
    if (!usd || (unit && strcmp(unit, f->unit) != 0))
        return 0;
    errno = 0;
    v = strtod(usd, &end);
    if (errno || end == usd || *end || !isfinite(v) || v < 0) {
        snprintf(f->bad_text, sizeof(f->bad_text), "%.40s", usd);
        strbuf_printable(f->bad_text);
        f->bad = f->bad_text;
        return 1;
    }
    if (v > 0 && isnan(f->usd))
        f->usd = v;
    return 0;
}

/* One OnDemand term (jv_each): its price dimensions. */
static int pricing_term(void *ctx, const char *key, const struct jv *term)
{
    (void)key;
    return jv_each(jv_get(term, "priceDimensions"), pricing_dimension, ctx) > 0;
}

/* One page's PriceList: each entry a JSON document in a string. */
static int pricing_page(const struct jv *page, const struct pricing_ask *ask, const char *rid,
                        struct pricing_find *f, struct error *e)
{
    const struct jv *list = jv_get(page, "PriceList");

    if (jv_type_of(list) != JV_ARRAY)
        return err_set(e, ERR_PARSE, PRICING_WHERE, 0, 0,
                       "an answer without PriceList "
                       "(request id %s)",
                       rid);
    for (size_t i = 0; i < jv_size(list); i++) {
        const char *text = jv_string_value(jv_at(list, i));
        const char *t;
        struct jv *doc = NULL;
        struct error sub = {0};

        if (!text)
            return err_set(e, ERR_PARSE, PRICING_WHERE, 0, 0,
                           "PriceList entry %zu is not a string (request id %s)", i, rid);
        if (jv_parse(text, strlen(text), &doc, &sub) < 0)
            return err_set(e, ERR_PARSE, PRICING_WHERE, 0, 0,
                           "PriceList entry %zu is not a JSON document: %.150s (request id %s)", i,
                           sub.msg, rid);
        t = jv_string_value(jv_get(jv_get(jv_get(doc, "product"), "attributes"), ask->attr));
        if (!t || !jv_get(doc, "terms")) {
            jv_free(doc);
            return err_set(e, ERR_PARSE, PRICING_WHERE, 0, 0,
                           "PriceList entry %zu has no product.attributes.%s or terms "
                           "(request id %s)",
                           i, ask->attr, rid);
        }
        if (strcmp(t, ask->name) == 0)
            jv_each(jv_get(jv_get(doc, "terms"), "OnDemand"), pricing_term, f);
        jv_free(doc);
        if (f->bad)
            return err_set(e, ERR_PARSE, PRICING_WHERE, 0, 0,
                           "%s: the price \"%s\" does not parse (request id %s)", ask->name, f->bad,
                           rid);
    }
    return 0;
}

/* The Price List's price of ask in region, page after page (aws_pricing_get's errors). */
/* 1 when a lookup lacks its client, region, name or answer. */
static int pricing_bad(const struct aws_pricing *p, const char *region,
                       const struct pricing_ask *ask, const double *usd)
{
    return !p || !region || !*region || !ask->name || !*ask->name || !usd;
}

static int pricing_lookup(struct aws_pricing *p, const char *region, const struct pricing_ask *ask,
                          double *usd, struct error *e)
{
    struct pricing_find f = {.unit = ask->unit, .usd = NAN};
    char *token = NULL, rid[160] = "(none)";
    int rc = 0;

    if (pricing_bad(p, region, ask, usd))
        return err_set(e, ERR_INVAL, PRICING_WHERE, 0, 0, "needs a region and a type");
    for (int page = 0; rc == 0; page++) {
        struct jv *doc = NULL;
        char *body = NULL;
        const char *next;

        if (page == PRICING_MAX_PAGES) {
            rc =
                err_set(e, ERR_RANGE, PRICING_WHERE, 0, 0, "more than %d pages", PRICING_MAX_PAGES);
            break;
        }
        if (pricing_body(region, ask, token, &body) < 0) {
            rc = err_set(e, ERR_NOMEM, PRICING_WHERE, 0, 0, "out of memory");
            break;
        }
        rc = aws_json_call(p->json, PRICING_WHERE, PRICING_TARGET, body, &doc, rid, sizeof(rid), e);
        free(body);
        if (rc == 0)
            rc = pricing_page(doc, ask, rid, &f, e);
        next = jv_string_value(jv_get(doc, "NextToken"));
        free(token);
        token = rc == 0 && next && *next ? strdup(next) : NULL;
        jv_free(doc);
        if (rc == 0 && !token)
            break;
    }
    free(token);
    if (rc == 0 && isnan(f.usd))
        rc = err_set(e, ERR_NOENT, PRICING_WHERE, 0, 0,
                     "no %s price for %.40s in %.40s (request id %s)",
                     ask->volume ? "EBS" : "on-demand Linux", ask->name, region, rid);
    if (rc < 0) {
        aws_json_log(p->json, "%s failed: %s", PRICING_WHERE, e ? e->msg : err_str(rc));
        return rc;
    }
    *usd = f.usd;
    return 0;
}

static const struct pricing_ask *pricing_instance(struct pricing_ask *a, const char *type)
{
    *a = (struct pricing_ask){.attr = "instanceType", .name = type, .unit = "Hrs"};
    return a;
}

static const struct pricing_ask *pricing_volume(struct pricing_ask *a, const char *type)
{
    *a = (struct pricing_ask){.attr = "volumeApiName", .name = type, .unit = "GB-Mo", .volume = 1};
    return a;
}

int aws_pricing_get(struct aws_pricing *p, const char *region, const char *type, double *usd,
                    struct error *e)
{
    struct pricing_ask a;

    return pricing_lookup(p, region, pricing_instance(&a, type), usd, e);
}

int aws_pricing_volume_get(struct aws_pricing *p, const char *region, const char *type, double *usd,
                           struct error *e)
{
    struct pricing_ask a;

    return pricing_lookup(p, region, pricing_volume(&a, type), usd, e);
}

/* ---- the cache ---- */

/* The entry of (region, type), made when absent; NULL when out of memory. */
static struct pricing_entry *pricing_entry(struct aws_pricing *p, const char *region,
                                           const char *type)
{
    struct pricing_entry *g, *x;

    for (size_t i = 0; i < p->n_cache; i++)
        if (strcmp(p->cache[i].region, region) == 0 && strcmp(p->cache[i].type, type) == 0)
            return &p->cache[i];
    g = realloc(p->cache, (p->n_cache + 1) * sizeof(*g));
    if (!g)
        return NULL;
    p->cache = g;
    x = &g[p->n_cache++];
    memset(x, 0, sizeof(*x));
    snprintf(x->region, sizeof(x->region), "%s", region);
    snprintf(x->type, sizeof(x->type), "%s", type);
    x->usd = NAN;
    x->failed_at = NAN;
    return x;
}

/* The price of ask through the cache, under key (aws_pricing_on_demand's behaviour). */
static int pricing_cached(struct aws_pricing *p, const char *region, const struct pricing_ask *ask,
                          const char *key, double now, double *usd, struct error *e)
{
    const char *type = ask->name;
    struct pricing_entry *x;
    double v = NAN;
    int rc;

    if (pricing_bad(p, region, ask, usd) || strlen(region) >= sizeof(x->region) ||
        strlen(key) >= sizeof(x->type))
        return err_set(e, ERR_INVAL, PRICING_WHERE, 0, 0, "needs a region and a type");
    x = pricing_entry(p, region, key);
    if (!x)
        return err_set(e, ERR_NOMEM, PRICING_WHERE, 0, 0, "out of memory");
    if (!isnan(x->usd) && now - x->read_at < p->ttl_s) {
        *usd = x->usd;
        return 0;
    }
    if (!isnan(x->failed_at) && now - x->failed_at < p->retry_s) {
        if (!isnan(x->usd)) {
            *usd = x->usd;
            return 0;
        }
        return err_set(e, ERR_AGAIN, PRICING_WHERE, 0, 0,
                       "%.40s in %.40s: the last lookup failed %.0f s ago", type, region,
                       now - x->failed_at);
    }
    rc = pricing_lookup(p, region, ask, &v, e);
    if (rc < 0) {
        x->failed_at = now;
        if (isnan(x->usd))
            return rc;
        *usd = x->usd; /* the last price read, however old */
        return 0;
    }
    x->usd = v;
    x->read_at = now;
    x->failed_at = NAN;
    *usd = v;
    return 0;
}

int aws_pricing_on_demand(struct aws_pricing *p, const char *region, const char *type, double now,
                          double *usd, struct error *e)
{
    struct pricing_ask a;

    return pricing_cached(p, region, pricing_instance(&a, type), type ? type : "", now, usd, e);
}

int aws_pricing_volume(struct aws_pricing *p, const char *region, const char *type, double now,
                       double *usd, struct error *e)
{
    struct pricing_ask a;
    char key[40];

    snprintf(key, sizeof(key), "ebs/%.32s", type ? type : "");
    return pricing_cached(p, region, pricing_volume(&a, type), key, now, usd, e);
}
