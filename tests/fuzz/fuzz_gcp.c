/* fuzz_gcp.c: libFuzzer target for the Google Cloud answers: Compute Engine's instances, an
 * aggregated list page, operations and their errors, and the quotas of regions.get and
 * projects.get (read_instance, read_zone, read_operation and read_quotas in
 * providers/gcp/compute.c; gcp_error_read in providers/gcp/rest.c), and a Cloud Billing
 * Catalog page of SKUs (gcp_prices_parse_skus in providers/gcp/billing.c). The Compute readers are
 * static in compute.c; this file includes compute.c to reach them (a fuzzing seam that compiles
 * the very code castor runs; no second copy of compute.o is linked). */
#include "providers/gcp/compute.c"

#include "fuzz/fuzz_support.h"
#include "providers/gcp/billing.h"

static struct gcp_compute *fz_c;

static void fz_log(void *arg, const char *line)
{
    (void)arg;
    (void)line;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static int never_called; /* the token source is never asked: no call is made */
    struct gcp_compute_config cfg = {.project = "fuzz"};

    (void)argc;
    (void)argv;
    cfg.rest.endpoint = "http://127.0.0.1:9";
    cfg.rest.auth = (struct gcp_auth *)&never_called;
    cfg.rest.log = fz_log;
    if (gcp_compute_new(&cfg, &fz_c, NULL) < 0)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gcp_prices prices = {0};
    struct gcp_operation op;
    struct gcp_instance in;
    struct gcp_error_info info;
    struct list x = {.cluster = "fuzz"};
    struct error e = {0};
    struct gcp_quota *quotas = NULL;
    size_t nquotas = 0;
    struct jv *v = NULL;
    char next[256];

    (void)gcp_prices_parse_skus((const char *)data, size, &prices, next, sizeof(next), &e);
    gcp_prices_clear(&prices);
    if (jv_parse((const char *)data, size, &v, NULL) < 0)
        return 0;
    (void)read_instance(v, &in);
    (void)read_operation(fz_c, v, "fuzz", &op, &e);
    (void)gcp_error_read(jv_get(v, "error"), &info);
    (void)jv_each(jv_get(v, "items"), read_zone, &x);
    free(x.items);
    if (read_quotas(fz_c, v, "fuzz", &quotas, &nquotas, &e) == 0)
        free(quotas);
    jv_free(v);
    return 0;
}
