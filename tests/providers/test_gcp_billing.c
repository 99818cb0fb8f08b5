/* test_gcp_billing.c: Billing Catalog SKUs into prices (what is kept, what is left out, units
 * and nanos, tiers, spot), a VM's price from its parts, malformed pages, the repository's static
 * table and tables it must refuse, and the cache against the fake Google Cloud: pages, the TTL,
 * the static table while the catalog cannot be reached, the last catalog over the static one. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gcp_fixture.h"
#include "providers/gcp/billing.h"

#define SKUS_PATH FAKE_GCE_BILLING "/services/6F81-5844-456A/skus"
#define PRICES CASTOR_CONFDIR "/gcp-prices.yaml"

struct fixture {
    struct gcp_world w;
    struct fake_gce *fake; /* w.fake */
    struct gcp_billing *b;
};

/* A client of the fake: 2 attempts a call, the static table, a TTL of an hour, a retry after
 * ten minutes; the clock stays at GCP_NOW (the cache is judged by the now passed in). */
static struct gcp_billing *client(struct fixture *f, const char *fallback, int attempts)
{
    struct gcp_billing_config cfg = {
        .rest = gcp_world_rest(&f->w, f->w.billing, attempts),
        .fallback_path = fallback,
        .ttl_s = 3600,
        .retry_s = 600,
    };
    struct gcp_billing *b = NULL;

    assert_int_equal(gcp_billing_new(&cfg, &b, NULL), 0);
    return b;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f || gcp_world_start(&f->w) < 0)
        return -1;
    f->fake = f->w.fake;
    f->b = client(f, PRICES, 2);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    gcp_billing_free(f->b);
    gcp_world_stop(&f->w);
    free(f);
    return 0;
}

static char *fixture_text(const char *name)
{
    char path[512], *text = NULL;
    size_t len = 0;

    snprintf(path, sizeof(path), "%s/gcp/%s", CASTOR_TEST_DATA, name);
    assert_int_equal(file_read_all(path, &text, &len, NULL), 0);
    return text;
}

/* Both pages read into one table: each kept SKU once per region, at units + nanos of its first
 * tier (a persistent disk's GiB-month over 730 hours); commitments, workstations, custom cores
 * and monthly RAM left out. */
static void gcp_prices_parse_skus__kept_and_left_out(void **state)
{
    char *p1 = fixture_text("skus-page1.json"), *p2 = fixture_text("skus-page2.json");
    struct gcp_prices t = {0};
    struct error e = {0};
    char next[64];

    (void)state;
    assert_int_equal(gcp_prices_parse_skus(p1, strlen(p1), &t, next, sizeof(next), &e), 0);
    assert_string_equal(next, "p2");
    assert_int_equal(t.n, 14); /* T4, N1 core and RAM, on-demand and spot, and pd-standard, in two
                                * regions */
    assert_int_equal(gcp_prices_parse_skus(p2, strlen(p2), &t, next, sizeof(next), &e), 0);
    assert_string_equal(next, "");
    assert_int_equal(t.n, 19);
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_GPU, "nvidia-tesla-t4", "us-east1", 0), 0.35,
                       1e-12);
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_DISK, "pd-standard", "us-east1", 0),
                       0.04 / 730, 1e-15);
    /* 200 GiB of the default type (pd-standard): $8 a month; no pd-balanced price: unknown */
    assert_float_equal(gcp_prices_disk(&t, NULL, 200, "us-central1"), 8.0 / 730, 1e-12);
    assert_true(isnan(gcp_prices_disk(&t, "pd-balanced", 200, "us-central1")));
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_GPU, "nvidia-tesla-t4", "us-central1", 1),
                       0.112, 1e-12);
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_CORE, "n1", "us-central1", 0), 0.031611,
                       1e-12);
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_RAM, "n1", "us-central1", 1), 0.000892,
                       1e-12);
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_GPU, "nvidia-tesla-a100", "us-central1", 0),
                       2.933908, 1e-12);
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_GPU, "nvidia-a100-80gb", "us-central1", 0),
                       3.928, 1e-12);
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_CORE, "a2", "us-central1", 0), 0.031611,
                       1e-12);
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_GPU, "nvidia-l4", "europe-west1", 0), 0.616,
                       1e-12);
    assert_true(isnan(gcp_prices_lookup(&t, GCP_PRICE_RAM, "n1", "australia-southeast1", 0)));
    assert_true(isnan(gcp_prices_lookup(&t, GCP_PRICE_GPU, "nvidia-tesla-t4", "europe-west1", 0)));
    gcp_prices_clear(&t);
    free(p1);
    free(p2);
}

/* A persistent disk SKU of the Storage family, priced per GiB-month. */
#define DISK_SKU(id, desc, family, usage, nanos)                                          \
    "{\"skuId\":\"" id "\",\"description\":\"" desc                                       \
    "\",\"category\":{\"resourceFamily\":\"" family "\",\"usageType\":\"" usage           \
    "\"},\"serviceRegions\":[\"us-central1\"],"                                           \
    "\"pricingInfo\":[{\"pricingExpression\":{\"usageUnit\":\"GiBy.mo\",\"tieredRates\":" \
    "[{\"startUsageAmount\":0,\"unitPrice\":{\"currencyCode\":\"USD\",\"units\":\"0\","   \
    "\"nanos\":" nanos "}}]}}]}"

/* Zonal persistent disks by their descriptions, at their GiB-month over 730 hours: pd-balanced
 * ($0.10) and pd-ssd ($0.17) kept; a regional disk, one in the Compute family and a commitment
 * left out. */
static void gcp_prices_parse_skus__disks(void **state)
{
    static const char *const skus[] = {
        DISK_SKU("B", "Balanced PD Capacity in Iowa", "Storage", "OnDemand", "100000000"),
        DISK_SKU("S", "SSD backed PD Capacity in Iowa", "Storage", "OnDemand", "170000000"),
        DISK_SKU("R", "Regional Balanced PD Capacity in Iowa", "Storage", "OnDemand", "200000000"),
        DISK_SKU("C", "Balanced PD Capacity in Iowa", "Compute", "OnDemand", "300000000"),
        DISK_SKU("K", "Commitment v1: Balanced PD Capacity in Iowa", "Storage", "Commit1Yr",
                 "50000000"),
    };
    struct gcp_prices t = {0};
    struct error e = {0};
    char page[4096], next[64];
    size_t used = 0;

    (void)state;
    used += (size_t)snprintf(page, sizeof(page), "{\"skus\":[");
    for (size_t i = 0; i < sizeof(skus) / sizeof(skus[0]); i++)
        used += (size_t)snprintf(page + used, sizeof(page) - used, "%s%s", i ? "," : "", skus[i]);
    snprintf(page + used, sizeof(page) - used, "]}");
    assert_int_equal(gcp_prices_parse_skus(page, strlen(page), &t, next, sizeof(next), &e), 0);
    assert_int_equal(t.n, 2);
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_DISK, "pd-balanced", "us-central1", 0),
                       0.10 / 730, 1e-15);
    assert_float_equal(gcp_prices_disk(&t, "pd-ssd", 100, "us-central1"), 17.0 / 730, 1e-12);
    gcp_prices_clear(&t);
}

/* A VM is the sum of its parts; a part without a price makes it unknown. */
static void gcp_prices_node__sum_of_parts(void **state)
{
    char *p1 = fixture_text("skus-page1.json");
    struct gcp_prices t = {0};
    char next[64];
    double od, spot;

    (void)state;
    assert_int_equal(gcp_prices_parse_skus(p1, strlen(p1), &t, next, sizeof(next), NULL), 0);
    od = gcp_prices_node(&t, "n1", 8, 30, "nvidia-tesla-t4", 1, "us-central1", 0);
    spot = gcp_prices_node(&t, "n1", 8, 30, "nvidia-tesla-t4", 1, "us-central1", 1);
    assert_float_equal(od, 8 * 0.031611 + 30 * 0.004237 + 0.35, 1e-9);
    assert_float_equal(spot, 8 * 0.006655 + 30 * 0.000892 + 0.112, 1e-9);
    assert_float_equal(gcp_prices_node(&t, "n1", 4, 15, NULL, 0, "us-east1", 0),
                       4 * 0.031611 + 15 * 0.004237, 1e-9);
    assert_true(isnan(gcp_prices_node(&t, "n1", 8, 30, "nvidia-tesla-v100", 1, "us-central1", 0)));
    assert_true(isnan(gcp_prices_node(&t, "g2", 4, 16, NULL, 0, "us-central1", 0)));
    gcp_prices_clear(&t);
    free(p1);
}

/* Pages castor cannot read: ERR_PARSE naming the SKU where there is one. */
static void gcp_prices_parse_skus__malformed(void **state)
{
    static const struct {
        const char *page;
        const char *says;
    } cases[] = {
        {"not json", "not JSON"},
        {"{\"skus\":{}}", "skus list"},
        {"{\"skus\":[],\"nextPageToken\":7}", "nextPageToken"},
        {"{\"skus\":[{\"skuId\":\"T4-X\",\"description\":\"Nvidia Tesla T4 GPU running in "
         "Americas\","
         "\"category\":{\"resourceFamily\":\"Compute\",\"usageType\":\"OnDemand\"},"
         "\"serviceRegions\":[\"us-central1\"]}]}",
         "SKU T4-X has no regions, usage unit or USD unit price"},
        {"{\"skus\":[{\"skuId\":\"T4-Y\",\"description\":\"Nvidia Tesla T4 GPU running in "
         "Americas\","
         "\"serviceRegions\":[\"us-central1\"]}]}",
         "SKU T4-Y has no category"},
        {"{\"skus\":[{\"skuId\":\"T4-EUR\",\"description\":\"Nvidia Tesla T4 GPU running in EMEA\","
         "\"category\":{\"resourceFamily\":\"Compute\",\"usageType\":\"OnDemand\"},"
         "\"serviceRegions\":[\"europe-west1\"],\"pricingInfo\":[{\"pricingExpression\":"
         "{\"usageUnit\":\"h\",\"tieredRates\":[{\"startUsageAmount\":0,\"unitPrice\":"
         "{\"currencyCode\":\"EUR\",\"units\":\"0\",\"nanos\":320000000}}]}}]}]}",
         "SKU T4-EUR"},
    };
    struct gcp_prices t = {0};
    char next[64];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct error e = {0};

        assert_int_equal(
            gcp_prices_parse_skus(cases[i].page, strlen(cases[i].page), &t, next, sizeof(next), &e),
            ERR_PARSE);
        if (!strstr(e.msg, cases[i].says))
            fail_msg("case %zu: '%s' does not say '%s'", i, e.msg, cases[i].says);
    }
    assert_int_equal(t.n, 0);
    gcp_prices_clear(&t);
}

/* The repository's static table loads: its date, its source, on-demand prices as written and
 * spot at spot_factor of them. Tables with mistakes are refused with where they are. */
static void gcp_prices_load_yaml__table_and_refusals(void **state)
{
    struct gcp_prices t = {0};
    struct error e = {0};

    (void)state;
    assert_int_equal(gcp_prices_load_yaml(PRICES, &t, &e), 0);
    assert_int_equal(t.from_catalog, 0);
    assert_true(t.as_of > 1700000000);
    assert_non_null(strstr(t.source, "gcp-prices.yaml"));
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_GPU, "nvidia-tesla-t4", "us-central1", 0),
                       0.35, 1e-12);
    assert_float_equal(gcp_prices_lookup(&t, GCP_PRICE_GPU, "nvidia-tesla-t4", "us-central1", 1),
                       0.35 * 0.4, 1e-12);
    assert_false(isnan(gcp_prices_node(&t, "n1", 8, 30, "nvidia-tesla-t4", 1, "us-central1", 1)));
    assert_false(isnan(gcp_prices_node(&t, "g2", 4, 16, "nvidia-l4", 1, "us-central1", 0)));
    /* boot disks: $ per GiB-month over 730 hours */
    assert_float_equal(gcp_prices_disk(&t, "pd-balanced", 200, "us-central1"), 20.0 / 730, 1e-12);
    assert_true(isnan(gcp_prices_disk(&t, "pd-balanced", 200, "europe-west4")));
    gcp_prices_clear(&t);
    assert_int_equal(gcp_prices_load_yaml(CASTOR_TEST_DATA "/gcp/prices-no-on-demand.yaml", &t, &e),
                     ERR_PARSE);
    assert_non_null(strstr(e.msg, "on_demand is missing"));
    assert_int_equal(e.line, 6);
    assert_int_equal(gcp_prices_load_yaml(CASTOR_TEST_DATA "/gcp/prices-unknown-key.yaml", &t, &e),
                     ERR_UNKNOWN);
    assert_non_null(strstr(e.msg, "gpus"));
    assert_int_equal(gcp_prices_load_yaml(CASTOR_TEST_DATA "/gcp/prices-bad-date.yaml", &t, &e),
                     ERR_PARSE);
    assert_int_equal(gcp_prices_load_yaml("/nonexistent.yaml", &t, &e), ERR_NOENT);
    assert_null(t.items);
}

/* The catalog through the fake, with a token: both pages, USD, 5000 a page, the page token. */
static void gcp_billing_fetch__pages(void **state)
{
    struct fixture *f = *state;
    char *p1 = fixture_text("skus-page1.json"), *p2 = fixture_text("skus-page2.json");
    struct gcp_prices t = {0};
    struct error e = {0};

    fake_gce_push(f->fake, SKUS_PATH, 200, p1);
    fake_gce_push(f->fake, SKUS_PATH, 200, p2);
    assert_int_equal(gcp_billing_fetch(f->b, GCP_NOW, &t, &e), 0);
    assert_int_equal(t.n, 19);
    assert_int_equal(t.from_catalog, 1);
    assert_int_equal(t.as_of, GCP_NOW);
    assert_int_equal(fake_gce_requests(f->fake, SKUS_PATH), 2);
    assert_int_equal(fake_gce_auth_failures(f->fake), 0);
    assert_non_null(strstr(fake_gce_last_target(f->fake, SKUS_PATH),
                           "?currencyCode=USD&pageSize=5000&pageToken=p2"));
    gcp_prices_clear(&t);
    free(p1);
    free(p2);
}

/* The cache: a catalog serves for ttl_s; then it is read again. While the catalog cannot be
 * read (503s), the static table serves and the catalog is not asked again before retry_s; a
 * catalog read once is preferred to the static table when a later read fails. */
static void gcp_billing_prices__cache_and_fallback(void **state)
{
    struct fixture *f = *state;
    char *p2 = fixture_text("skus-page2.json");
    const struct gcp_prices *t = NULL;
    struct error e = {0};

    fake_gce_push(f->fake, SKUS_PATH, 503, "{}");
    fake_gce_push(f->fake, SKUS_PATH, 503, "{}");
    assert_int_equal(gcp_billing_prices(f->b, GCP_NOW, &t, &e), 0);
    assert_int_equal(t->from_catalog, 0);
    assert_float_equal(gcp_prices_lookup(t, GCP_PRICE_GPU, "nvidia-tesla-t4", "us-central1", 0),
                       0.35, 1e-12);
    assert_int_equal(fake_gce_requests(f->fake, SKUS_PATH), 2);
    assert_int_equal(gcp_billing_prices(f->b, GCP_NOW + 300, &t, &e), 0);
    assert_int_equal(fake_gce_requests(f->fake, SKUS_PATH), 2); /* not before retry_s */
    fake_gce_push(f->fake, SKUS_PATH, 200, p2);
    assert_int_equal(gcp_billing_prices(f->b, GCP_NOW + 600, &t, &e), 0);
    assert_int_equal(t->from_catalog, 1);
    assert_int_equal(fake_gce_requests(f->fake, SKUS_PATH), 3);
    assert_int_equal(gcp_billing_prices(f->b, GCP_NOW + 600 + 3599, &t, &e), 0);
    assert_int_equal(fake_gce_requests(f->fake, SKUS_PATH), 3); /* within the TTL */
    fake_gce_push(f->fake, SKUS_PATH, 500, "{}");
    fake_gce_push(f->fake, SKUS_PATH, 500, "{}");
    assert_int_equal(gcp_billing_prices(f->b, GCP_NOW + 600 + 3600, &t, &e), 0);
    assert_int_equal(fake_gce_requests(f->fake, SKUS_PATH), 5);
    assert_int_equal(t->from_catalog, 1); /* the last catalog, not the static table */
    assert_float_equal(gcp_prices_lookup(t, GCP_PRICE_GPU, "nvidia-l4", "europe-west1", 0), 0.616,
                       1e-12);
    free(p2);
}

/* A catalog with nothing castor can use is an error (ERR_EMPTY), and with neither a catalog nor
 * a static table the prices are the catalog's error. */
static void gcp_billing_prices__nothing_to_serve(void **state)
{
    struct fixture *f = *state;
    struct gcp_billing *b = NULL;
    const struct gcp_prices *t = NULL;
    struct gcp_prices empty = {0};
    struct error e = {0};

    fake_gce_push(f->fake, SKUS_PATH, 200, "{\"skus\":[]}");
    assert_int_equal(gcp_billing_fetch(f->b, GCP_NOW, &empty, &e), ERR_EMPTY);
    b = client(f, NULL, 1);
    fake_gce_push(f->fake, SKUS_PATH, 403,
                  "{\"error\":{\"code\":403,\"message\":\"Cloud Billing API has not been used\","
                  "\"status\":\"PERMISSION_DENIED\"}}");
    assert_int_equal(gcp_billing_prices(b, GCP_NOW, &t, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "PERMISSION_DENIED"));
    assert_null(t);
    hooks_capture(e.msg);
    gcp_billing_free(b);
}

/* Run last: no message or log line of the run holds a secret. */
static void gcp_billing__no_secret_in_any_message(void **state)
{
    (void)state;
    assert_true(hooks_captured_len() > 0);
    assert_true(gcp_clean(hooks_captured()));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gcp_prices_parse_skus__kept_and_left_out),
        cmocka_unit_test(gcp_prices_node__sum_of_parts),
        cmocka_unit_test(gcp_prices_parse_skus__disks),
        cmocka_unit_test(gcp_prices_parse_skus__malformed),
        cmocka_unit_test(gcp_prices_load_yaml__table_and_refusals),
        cmocka_unit_test_setup_teardown(gcp_billing_fetch__pages, setup, teardown),
        cmocka_unit_test_setup_teardown(gcp_billing_prices__cache_and_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(gcp_billing_prices__nothing_to_serve, setup, teardown),
        cmocka_unit_test(gcp_billing__no_secret_in_any_message),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
