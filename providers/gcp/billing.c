/* billing.c: Billing Catalog SKUs into a price table, the static table, and the cache. */
#include "providers/gcp/billing.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/rest.h"
#include "util/conf.h"
#include "util/json.h"
#include "util/strbuf.h"
#include "util/timestamp.h"
#include "util/vec.h"

#define DEFAULT_PAGE_SIZE 5000
#define DEFAULT_TTL_S 86400
#define DEFAULT_RETRY_S 3600
#define MAX_PAGES 1000

/* ---- the table ---- */

void gcp_prices_clear(struct gcp_prices *t)
{
    if (!t)
        return;
    free(t->items);
    memset(t, 0, sizeof(*t));
}

/* The entry for the key, or NULL. */
static const struct gcp_price *find(const struct gcp_prices *t, enum gcp_price_kind kind,
                                    const char *name, const char *region, int spot)
{
    for (size_t i = 0; t && name && region && i < t->n; i++) {
        const struct gcp_price *p = &t->items[i];

        if (p->kind == kind && p->spot == !!spot && strcmp(p->name, name) == 0 &&
            strcmp(p->region, region) == 0)
            return p;
    }
    return NULL;
}

int gcp_prices_add(struct gcp_prices *t, enum gcp_price_kind kind, const char *name,
                   const char *region, int spot, double usd_per_hour)
{
    struct gcp_price *p;

    if (!t || !name || !region || strlen(name) >= sizeof(p->name) ||
        strlen(region) >= sizeof(p->region) || !isfinite(usd_per_hour) || usd_per_hour < 0)
        return ERR_INVAL;
    if (find(t, kind, name, region, spot))
        return 0;
    if (!(p = vec_grow(t->items, &t->cap, t->n, sizeof(*p))))
        return ERR_NOMEM;
    t->items = p;
    p = &t->items[t->n++];
    memset(p, 0, sizeof(*p));
    p->kind = kind;
    snprintf(p->name, sizeof(p->name), "%s", name);
    snprintf(p->region, sizeof(p->region), "%s", region);
    p->spot = !!spot;
    p->usd_per_hour = usd_per_hour;
    return 0;
}

double gcp_prices_lookup(const struct gcp_prices *t, enum gcp_price_kind kind, const char *name,
                         const char *region, int spot)
{
    const struct gcp_price *p = find(t, kind, name, region, spot);

    return p ? p->usd_per_hour : NAN;
}

double gcp_prices_node(const struct gcp_prices *t, const char *family, int vcpus, double mem_gib,
                       const char *gpu, int gpus, const char *region, int spot)
{
    double total = vcpus * gcp_prices_lookup(t, GCP_PRICE_CORE, family, region, spot) +
                   mem_gib * gcp_prices_lookup(t, GCP_PRICE_RAM, family, region, spot);

    if (gpus > 0)
        total += gpus * gcp_prices_lookup(t, GCP_PRICE_GPU, gpu, region, spot);
    return total;
}

double gcp_prices_disk(const struct gcp_prices *t, const char *disk_type, double gb,
                       const char *region)
{
    return gb *
           gcp_prices_lookup(t, GCP_PRICE_DISK, disk_type ? disk_type : "pd-standard", region, 0);
}

/* ---- catalog SKUs ---- */

/* GPU models by the words of their SKU descriptions ("Nvidia Tesla T4 GPU running in
 * Americas"); longer names first, so that "A100 80GB" is not taken for "A100". */
static const struct {
    const char *words;
    const char *accelerator;
} gpu_models[] = {
    {"A100 80GB", "nvidia-a100-80gb"}, {"H100 80GB Mega", "nvidia-h100-mega-80gb"},
    {"H100 80GB", "nvidia-h100-80gb"}, {"A100", "nvidia-tesla-a100"},
    {"T4", "nvidia-tesla-t4"},         {"V100", "nvidia-tesla-v100"},
    {"P100", "nvidia-tesla-p100"},     {"P4", "nvidia-tesla-p4"},
    {"K80", "nvidia-tesla-k80"},       {"L4", "nvidia-l4"},
};

/* Zonal persistent disks by their SKU descriptions ("Balanced PD Capacity in Iowa"); regional
 * ones ("Regional Balanced PD Capacity") are not what a boot disk pays. */
static const struct {
    const char *words;
    const char *type;
} disk_types[] = {
    {"Balanced PD Capacity", "pd-balanced"},
    {"SSD backed PD Capacity", "pd-ssd"},
    {"Storage PD Capacity", "pd-standard"},
};

/* SKUs whose price is not what an on-demand or spot VM pays. */
static const char *const excluded[] = {
    "Commitment", "Reserved", "Workstation", "Custom",    "Sole Tenancy", "Extended",
    "DWS",        "Calendar", "Flex",        "Licensing", "License",      "Premium",
};

/* 1 when words occur in s as whole words (bounded by the ends or spaces). */
static int has_words(const char *s, const char *words)
{
    size_t n = strlen(words);

    for (const char *at = strstr(s, words); at; at = strstr(at + 1, words))
        if ((at == s || at[-1] == ' ') && (at[n] == '\0' || at[n] == ' '))
            return 1;
    return 0;
}

/* What a SKU's description prices: its kind and name ("nvidia-tesla-t4", "n1"); 0, or -1 for a
 * SKU castor does not use. */
static int classify(const char *desc, enum gcp_price_kind *kind, char *name, size_t size)
{
    const char *inst;

    for (size_t i = 0; i < sizeof(excluded) / sizeof(excluded[0]); i++)
        if (has_words(desc, excluded[i]))
            return -1;
    for (size_t i = 0; i < sizeof(disk_types) / sizeof(disk_types[0]); i++)
        if (strncmp(desc, disk_types[i].words, strlen(disk_types[i].words)) == 0) {
            *kind = GCP_PRICE_DISK;
            snprintf(name, size, "%s", disk_types[i].type);
            return 0;
        }
    if (has_words(desc, "GPU")) {
        for (size_t i = 0; i < sizeof(gpu_models) / sizeof(gpu_models[0]); i++)
            if (has_words(desc, gpu_models[i].words)) {
                *kind = GCP_PRICE_GPU;
                snprintf(name, size, "%s", gpu_models[i].accelerator);
                return 0;
            }
        return -1;
    }
    /* "<family> [Predefined ]Instance Core|Ram running in ..." */
    inst = strstr(desc, " Instance Core");
    *kind = GCP_PRICE_CORE;
    if (!inst) {
        inst = strstr(desc, " Instance Ram");
        *kind = GCP_PRICE_RAM;
    }
    if (!inst)
        return -1;
    if (inst - desc >= 11 && strncmp(inst - 11, " Predefined", 11) == 0)
        inst -= 11;
    {
        const char *start = inst;
        size_t n;

        while (start > desc && start[-1] != ' ')
            start--;
        n = (size_t)(inst - start);
        if (n < 2 || n > 4 || n >= size)
            return -1;
        for (size_t i = 0; i < n; i++) {
            if (!isalnum((unsigned char)start[i]))
                return -1;
            name[i] = (char)tolower((unsigned char)start[i]);
        }
        name[n] = '\0';
    }
    return 0;
}

/* The first tier's unit price (units + nanos) in USD; ERR_PARSE. */
static int unit_price(const struct jv *expr, double *out)
{
    const struct jv *rates = jv_get(expr, "tieredRates"), *best = NULL, *price;
    double best_start = INFINITY, units = 0, nanos = 0;
    const char *cur, *u;

    for (size_t i = 0; i < jv_size(rates); i++) {
        double start = 0;

        jv_number_value(jv_get(jv_at(rates, i), "startUsageAmount"), &start);
        if (start < best_start) {
            best_start = start;
            best = jv_at(rates, i);
        }
    }
    price = jv_get(best, "unitPrice");
    cur = jv_string_value(jv_get(price, "currencyCode"));
    if (!price || !cur || strcmp(cur, "USD") != 0)
        return ERR_PARSE;
    u = jv_string_value(jv_get(price, "units"));
    if (u) {
        char *end;

        units = strtod(u, &end);
        if (*end || !isfinite(units))
            return ERR_PARSE;
    } else if (jv_get(price, "units") && jv_number_value(jv_get(price, "units"), &units) < 0) {
        return ERR_PARSE;
    }
    if (jv_get(price, "nanos") && jv_number_value(jv_get(price, "nanos"), &nanos) < 0)
        return ERR_PARSE;
    *out = units + nanos * 1e-9;
    return *out >= 0 ? 0 : ERR_PARSE;
}

/* One SKU into t (a SKU castor does not use adds nothing). */
static int read_sku(const struct jv *sku, struct gcp_prices *t, struct error *e)
{
    const struct jv *cat = jv_get(sku, "category"), *regions = jv_get(sku, "serviceRegions");
    const struct jv *expr = jv_get(jv_at(jv_get(sku, "pricingInfo"), 0), "pricingExpression");
    const char *desc = jv_string_value(jv_get(sku, "description"));
    const char *family = jv_string_value(jv_get(cat, "resourceFamily"));
    const char *usage = jv_string_value(jv_get(cat, "usageType"));
    const char *unit = jv_string_value(jv_get(expr, "usageUnit"));
    enum gcp_price_kind kind;
    char name[32], id[48];
    double price;
    int spot, rc;

    if (!desc || classify(desc, &kind, name, sizeof(name)) < 0)
        return 0;
    snprintf(id, sizeof(id), "%.40s",
             jv_string_value(jv_get(sku, "skuId")) ? jv_string_value(jv_get(sku, "skuId"))
                                                   : "(no skuId)");
    strbuf_printable(id);
    if (!family || !usage)
        return err_set(e, ERR_PARSE, "billing skus", 0, 0, "SKU %s has no category", id);
    if (strcmp(family, kind == GCP_PRICE_DISK ? "Storage" : "Compute") != 0)
        return 0;
    if (strcmp(usage, "OnDemand") == 0)
        spot = 0;
    else if (strcmp(usage, "Preemptible") == 0)
        spot = 1;
    else
        return 0;
    if (!unit || jv_size(regions) == 0 || unit_price(expr, &price) < 0)
        return err_set(e, ERR_PARSE, "billing skus", 0, 0,
                       "SKU %s has no regions, usage unit or USD unit price", id);
    if (strcmp(unit, kind == GCP_PRICE_RAM    ? "GiBy.h"
                     : kind == GCP_PRICE_DISK ? "GiBy.mo"
                                              : "h") != 0 ||
        (kind == GCP_PRICE_DISK && spot))
        return 0;
    if (kind == GCP_PRICE_DISK)
        price /= GCP_HOURS_PER_MONTH;
    for (size_t i = 0; i < jv_size(regions); i++) {
        const char *region = jv_string_value(jv_at(regions, i));

        if (!region)
            return err_set(e, ERR_PARSE, "billing skus", 0, 0, "SKU %s: a region is not text", id);
        rc = gcp_prices_add(t, kind, name, region, spot, price);
        if (rc == ERR_NOMEM)
            return rc;
    }
    return 0;
}

/* One page (a parsed JSON value) into t and its next page token into next. */
static int read_page(const struct jv *v, struct gcp_prices *t, char *next, size_t next_size,
                     struct error *e)
{
    const struct jv *skus = jv_get(v, "skus");
    const char *token = jv_string_value(jv_get(v, "nextPageToken"));
    int rc = 0;

    if ((skus && jv_type_of(skus) != JV_ARRAY) || jv_type_of(v) != JV_OBJECT ||
        (jv_get(v, "nextPageToken") && !token))
        return err_set(e, ERR_PARSE, "billing skus", 0, 0,
                       "the page is not an object with a skus list and a text nextPageToken");
    for (size_t i = 0; rc == 0 && i < jv_size(skus); i++)
        rc = read_sku(jv_at(skus, i), t, e);
    if (rc < 0)
        return rc;
    if (token && strlen(token) >= next_size)
        return err_set(e, ERR_RANGE, "billing skus", 0, 0, "nextPageToken too long");
    snprintf(next, next_size, "%s", token ? token : "");
    return 0;
}

int gcp_prices_parse_skus(const char *json, size_t len, struct gcp_prices *t, char *next,
                          size_t next_size, struct error *e)
{
    struct jv *v = NULL;
    int rc;

    if (!json || !t || !next || next_size == 0)
        return err_set(e, ERR_INVAL, "billing skus", 0, 0, "no text, table or page token");
    rc = jv_parse(json, len, &v, NULL);
    if (rc < 0)
        return err_set(e, rc == ERR_NOMEM ? rc : ERR_PARSE, "billing skus", 0, 0,
                       "the page is not JSON");
    rc = read_page(v, t, next, next_size, e);
    jv_free(v);
    return rc;
}

/* ---- the static table ---- */

/* One {name: {on_demand, spot}} section of a region into t. */
static int read_kind(const struct conf_node *m, enum gcp_price_kind kind, const char *region,
                     double spot_factor, struct gcp_prices *t, struct error *e)
{
    static const char *const price_keys[] = {"on_demand", "spot", NULL};

    for (size_t i = 0; m && m->kind == CONF_MAPPING && i < m->n; i++) {
        const struct conf_node *p = m->entries[i].value;
        double od = 0, sp = -1;
        int rc = conf_check_keys(p, price_keys, e);

        if (rc == 0 && (rc = conf_get_double(p, "on_demand", 0, 1e6, &od, e)) == 0)
            rc = err_set(e, ERR_PARSE, p->file, p->line, p->column, "%s: on_demand is missing",
                         p->path);
        if (rc >= 0)
            rc = conf_get_double(p, "spot", 0, 1e6, &sp, e);
        if (rc < 0)
            return rc;
        if (sp < 0)
            sp = od * spot_factor;
        if (gcp_prices_add(t, kind, m->entries[i].key, region, 0, od) < 0 ||
            gcp_prices_add(t, kind, m->entries[i].key, region, 1, sp) < 0)
            return err_set(e, ERR_INVAL, p->file, p->line, p->column,
                           "%s: a name too long, or out of memory", p->path);
    }
    return 0;
}

/* A region's {disk type: $ per GiB-month} into t, per GiB-hour (Spot VMs pay the same). */
static int read_disks(const struct conf_node *m, const char *region, struct gcp_prices *t,
                      struct error *e)
{
    if (m->kind != CONF_MAPPING)
        return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                       "%s: a mapping of disk types to $ per GiB-month", m->path);
    for (size_t i = 0; i < m->n; i++) {
        double month = 0;
        int rc = conf_get_double(m, m->entries[i].key, 0, 100, &month, e);

        if (rc < 0)
            return rc;
        if (gcp_prices_add(t, GCP_PRICE_DISK, m->entries[i].key, region, 0,
                           month / GCP_HOURS_PER_MONTH) < 0)
            return err_set(e, ERR_INVAL, m->file, m->line, m->column,
                           "%s: a name too long, or out of memory", m->path);
    }
    return 0;
}

int gcp_prices_load_yaml(const char *path, struct gcp_prices *out, struct error *e)
{
    static const char *const top_keys[] = {"source", "date", "spot_factor", "regions", NULL};
    static const char *const kind_keys[] = {"gpu", "core", "ram", "disk", NULL};
    struct gcp_prices t = {0};
    struct conf *c = NULL;
    const struct conf_node *regions = NULL;
    const char *source = NULL, *date = NULL;
    double spot_factor = 0.4;
    char stamp[32];
    int rc;

    if (!path || !out)
        return err_set(e, ERR_INVAL, "gcp prices", 0, 0, "no path or output");
    rc = conf_load(path, &c, e);
    if (rc < 0)
        return rc;
    if ((rc = conf_check_keys(c->root, top_keys, e)) < 0 ||
        (rc = conf_get_string(c->root, "source", &source, e)) < 0 ||
        (rc = conf_get_string(c->root, "date", &date, e)) < 0 ||
        (rc = conf_get_double(c->root, "spot_factor", 0.01, 1, &spot_factor, e)) < 0)
        goto out;
    if (!source || !date) {
        rc = err_set(e, ERR_PARSE, path, 1, 1, "the table needs its source and date");
        goto out;
    }
    snprintf(stamp, sizeof(stamp), "%.10sT00:00:00Z", date);
    if (strlen(date) != 10 || timestamp_parse_iso8601(stamp, &t.as_of) < 0) {
        rc = err_set(e, ERR_PARSE, path, 0, 0, "date %.40s is not YYYY-MM-DD", date);
        goto out;
    }
    regions = conf_find(c->root, "regions");
    if (!regions || regions->kind != CONF_MAPPING) {
        rc = err_set(e, ERR_PARSE, path, 0, 0, "regions: a mapping of regions is needed");
        goto out;
    }
    for (size_t i = 0; i < regions->n; i++) {
        const struct conf_node *r = regions->entries[i].value, *k;
        const char *name = regions->entries[i].key;

        if ((rc = conf_check_keys(r, kind_keys, e)) < 0)
            goto out;
        if ((k = conf_find(r, "gpu")) &&
            (rc = read_kind(k, GCP_PRICE_GPU, name, spot_factor, &t, e)) < 0)
            goto out;
        if ((k = conf_find(r, "core")) &&
            (rc = read_kind(k, GCP_PRICE_CORE, name, spot_factor, &t, e)) < 0)
            goto out;
        if ((k = conf_find(r, "ram")) &&
            (rc = read_kind(k, GCP_PRICE_RAM, name, spot_factor, &t, e)) < 0)
            goto out;
        if ((k = conf_find(r, "disk")) && (rc = read_disks(k, name, &t, e)) < 0)
            goto out;
    }
    snprintf(t.source, sizeof(t.source), "static table %.100s (%.10s)", path, date);
    *out = t;
    memset(&t, 0, sizeof(t));
    rc = 0;
out:
    gcp_prices_clear(&t);
    conf_free(c);
    return rc;
}

/* ---- the client and its cache ---- */

struct gcp_billing {
    struct gcp_rest *rest;
    int page_size;
    char *fallback_path;
    int64_t ttl_s, retry_s;
    struct gcp_prices catalog;
    int have_catalog;
    struct gcp_prices fallback;
    int have_fallback;
    int64_t next_try; /* no catalog read before this, after a failure */
};

int gcp_billing_new(const struct gcp_billing_config *cfg, struct gcp_billing **out, struct error *e)
{
    struct gcp_billing *b;
    int rc;

    if (!cfg || !out)
        return err_set(e, ERR_INVAL, "billing", 0, 0, "no configuration or output");
    b = calloc(1, sizeof(*b));
    if (!b)
        return ERR_NOMEM;
    b->page_size = cfg->page_size > 0 ? cfg->page_size : DEFAULT_PAGE_SIZE;
    b->ttl_s = cfg->ttl_s > 0 ? cfg->ttl_s : DEFAULT_TTL_S;
    b->retry_s = cfg->retry_s > 0 ? cfg->retry_s : DEFAULT_RETRY_S;
    if (cfg->fallback_path && !(b->fallback_path = strdup(cfg->fallback_path))) {
        free(b);
        return ERR_NOMEM;
    }
    rc = gcp_rest_new(&cfg->rest, "billing", GCP_BILLING_ENDPOINT, &b->rest, e);
    if (rc < 0) {
        free(b->fallback_path);
        free(b);
        return rc;
    }
    *out = b;
    return 0;
}

void gcp_billing_free(struct gcp_billing *b)
{
    if (!b)
        return;
    gcp_rest_free(b->rest);
    gcp_prices_clear(&b->catalog);
    gcp_prices_clear(&b->fallback);
    free(b->fallback_path);
    free(b);
}

int gcp_billing_fetch(struct gcp_billing *b, int64_t now, struct gcp_prices *out, struct error *e)
{
    static const char call[] = "services.skus.list";
    struct gcp_prices t = {0};
    char token[1024] = "";
    int rc = 0;

    if (!b || !out)
        return err_set(e, ERR_INVAL, "billing", 0, 0, "no client or output");
    for (int page = 0;; page++) {
        struct strbuf path = {0};
        struct jv *v = NULL;

        if (page == MAX_PAGES) {
            rc = err_set(e, ERR_RANGE, "billing services.skus.list", 0, 0, "more than %d pages",
                         MAX_PAGES);
            break;
        }
        strbuf_printf(&path, "/services/%s/skus?currencyCode=USD&pageSize=%d",
                      GCP_COMPUTE_SERVICE_ID, b->page_size);
        if (token[0]) {
            strbuf_str(&path, "&pageToken=");
            strbuf_add_uri_encoded(&path, token, strlen(token));
        }
        rc = path.failed ? ERR_NOMEM
                         : gcp_rest_call(b->rest, call, "GET", path.p, NULL, &v, NULL, e);
        strbuf_free(&path);
        if (rc < 0)
            goto out;
        rc = read_page(v, &t, token, sizeof(token), e);
        jv_free(v);
        if (rc < 0)
            break;
        if (!token[0])
            break;
    }
    if (rc == 0 && t.n == 0)
        rc = err_set(e, ERR_EMPTY, "billing services.skus.list", 0, 0,
                     "the catalog has no GPU, core or RAM price castor can use");
    if (rc < 0) {
        gcp_rest_logged(b->rest, rc, e);
        goto out;
    }
    t.from_catalog = 1;
    t.as_of = now;
    snprintf(t.source, sizeof(t.source), "Cloud Billing Catalog (%s)", gcp_rest_endpoint(b->rest));
    *out = t;
    memset(&t, 0, sizeof(t));
out:
    gcp_prices_clear(&t);
    return rc;
}

int gcp_billing_prices(struct gcp_billing *b, int64_t now, const struct gcp_prices **out,
                       struct error *e)
{
    struct gcp_prices fresh = {0};
    struct error sub = {0};
    int rc = 0;

    if (!b || !out)
        return err_set(e, ERR_INVAL, "billing", 0, 0, "no client or output");
    if (b->have_catalog && now - b->catalog.as_of < b->ttl_s) {
        *out = &b->catalog;
        return 0;
    }
    if (now >= b->next_try) {
        rc = gcp_billing_fetch(b, now, &fresh, &sub);
        if (rc == 0) {
            gcp_prices_clear(&b->catalog);
            b->catalog = fresh;
            b->have_catalog = 1;
            *out = &b->catalog;
            return 0;
        }
        b->next_try = now + b->retry_s;
        gcp_rest_log(b->rest, "billing: the catalog cannot be read; using %s until %lld",
                     b->have_catalog    ? "the last catalog"
                     : b->fallback_path ? "the static table"
                                        : "nothing",
                     (long long)b->next_try);
    }
    if (b->have_catalog) {
        *out = &b->catalog;
        return 0;
    }
    if (!b->have_fallback && b->fallback_path) {
        rc = gcp_prices_load_yaml(b->fallback_path, &b->fallback, e);
        if (rc < 0)
            return rc;
        b->have_fallback = 1;
    }
    if (b->have_fallback) {
        *out = &b->fallback;
        return 0;
    }
    if (e)
        *e = sub;
    return rc < 0 ? rc
                  : err_set(e, ERR_AGAIN, "billing", 0, 0,
                            "no catalog yet and no static table (next try at %lld)",
                            (long long)b->next_try);
}
