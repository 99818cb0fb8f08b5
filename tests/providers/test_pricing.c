/* test_pricing.c: the Price List client against the strict fake switched to the Price List API
 * (SigV4 for "pricing", the JSON protocol): the GetProducts request (filters, pages), the price
 * read from PriceList documents inside strings (OnDemand terms only), errors with the request id
 * (throttling retried, refusals, unknown types, a wrong secret), bad answers (a price that does
 * not parse, an entry that is not JSON, no PriceList, a truncated answer), and the cache (a day's
 * prices, failures not asked again for a while, the last price kept when a call fails). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "providers/aws/pricing.h"
#include "providers/fake_ec2.h"
#include "support/aws_json_fixture.h"
#include "support/hooks.h"
#include "util/json.h"

#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define NOW 1700000000

struct fixture {
    struct fake_ec2 *fake;
    struct aws_credential_source *creds;
    struct aws_pricing *p;
    struct hooks h;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct aws_credential_config cc = {.imds_disabled = 1, .credentials_file = "/nonexistent"};
    struct aws_pricing_config cfg = {0};

    if (!f)
        return -1;
    f->h.now = NOW;
    aws_json_test_env(AKID, SECRET, "AWS_ENDPOINT_URL_PRICING");
    f->fake = fake_ec2_start(AKID, SECRET, "us-east-1");
    if (!f->fake || aws_credential_source_new(&cc, &f->creds) < 0)
        return -1;
    fake_ec2_set_pricing(f->fake);
    cfg.json = aws_json_test_quick(fake_ec2_url(f->fake), f->creds, &f->h);
    if (aws_pricing_new(&cfg, &f->p, NULL) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(fake_ec2_pending(f->fake), 0);
    aws_pricing_free(f->p);
    aws_credential_source_free(f->creds);
    fake_ec2_stop(f->fake);
    free(f);
    return 0;
}

/* A product document as the Price List API writes one: its attributes, an OnDemand term with
 * one hourly dimension at od_usd (NULL: no OnDemand term) and a Reserved one at 0.3. */
static struct jv *product(const char *type, const char *od_usd)
{
    struct jv *doc = jv_object(), *prod = jv_object(), *attrs = jv_object();
    struct jv *terms = jv_object(), *od = jv_object(), *term = jv_object(), *dims = jv_object();
    struct jv *dim = jv_object(), *ppu = jv_object();
    struct jv *rterms = jv_object(), *rterm = jv_object(), *rdims = jv_object();
    struct jv *rdim = jv_object(), *rppu = jv_object();

    jv_set(attrs, "instanceType", jv_string(type));
    jv_set(attrs, "regionCode", jv_string("us-east-1"));
    jv_set(attrs, "location", jv_string("US East (N. Virginia)"));
    jv_set(attrs, "operatingSystem", jv_string("Linux"));
    jv_set(attrs, "tenancy", jv_string("Shared"));
    jv_set(attrs, "preInstalledSw", jv_string("NA"));
    jv_set(attrs, "capacitystatus", jv_string("Used"));
    jv_set(prod, "productFamily", jv_string("Compute Instance"));
    jv_set(prod, "attributes", attrs);
    jv_set(prod, "sku", jv_string("SKU123"));
    jv_set(doc, "product", prod);
    jv_set(doc, "serviceCode", jv_string("AmazonEC2"));
    jv_set(ppu, "USD", jv_string(od_usd ? od_usd : "0"));
    jv_set(dim, "unit", jv_string("Hrs"));
    jv_set(dim, "pricePerUnit", ppu);
    jv_set(dim, "description", jv_string("per On Demand Linux Instance Hour"));
    jv_set(dims, "SKU123.JRTCKXETXF.6YS6EN2CT7", dim);
    jv_set(term, "priceDimensions", dims);
    jv_set(term, "offerTermCode", jv_string("JRTCKXETXF"));
    jv_set(od, "SKU123.JRTCKXETXF", term);
    jv_set(rppu, "USD", jv_string("0.3000000000"));
    jv_set(rdim, "unit", jv_string("Hrs"));
    jv_set(rdim, "pricePerUnit", rppu);
    jv_set(rdims, "SKU123.4NA7Y494T4.6YS6EN2CT7", rdim);
    jv_set(rterm, "priceDimensions", rdims);
    jv_set(rterms, "SKU123.4NA7Y494T4", rterm);
    if (od_usd)
        jv_set(terms, "OnDemand", od);
    else
        jv_free(od);
    jv_set(terms, "Reserved", rterms);
    jv_set(doc, "terms", terms);
    jv_set(doc, "version", jv_string("20231115"));
    return doc;
}

/* An answer page: PriceList holding each of the n documents as a string (or the raw strings of
 * raw), NextToken when next is not NULL. The caller frees it. */
static char *page(struct jv **docs, size_t n, const char *const *raw, size_t n_raw,
                  const char *next)
{
    struct jv *answer = jv_object(), *list = jv_array();
    char *text = NULL;

    for (size_t i = 0; i < n; i++) {
        assert_int_equal(jv_dump(docs[i], &text), 0);
        jv_push(list, jv_string(text));
        free(text);
        jv_free(docs[i]);
    }
    for (size_t i = 0; i < n_raw; i++)
        jv_push(list, jv_string(raw[i]));
    jv_set(answer, "FormatVersion", jv_string("aws_v1"));
    jv_set(answer, "PriceList", list);
    if (next)
        jv_set(answer, "NextToken", jv_string(next));
    assert_int_equal(jv_dump(answer, &text), 0);
    jv_free(answer);
    return text;
}

/* Queue page(...) on the fake. */
static void push_page(struct fixture *f, struct jv **docs, size_t n, const char *next)
{
    char *text = page(docs, n, NULL, 0, next);

    fake_ec2_push(f->fake, 200, text);
    free(text);
}

/* The value of filter field in request i's body, or NULL. */
static char *filter_value(struct fixture *f, size_t i, const char *field, char *buf, size_t size)
{
    struct jv *body = NULL;
    const struct jv *filters;
    char *found = NULL;

    assert_int_equal(
        jv_parse(fake_ec2_body(f->fake, i), strlen(fake_ec2_body(f->fake, i)), &body, NULL), 0);
    filters = jv_get(body, "Filters");
    for (size_t k = 0; k < jv_size(filters); k++) {
        const struct jv *it = jv_at(filters, k);

        assert_string_equal(jv_string_value(jv_get(it, "Type")), "TERM_MATCH");
        if (strcmp(jv_string_value(jv_get(it, "Field")), field) == 0) {
            snprintf(buf, size, "%s", jv_string_value(jv_get(it, "Value")));
            found = buf;
        }
    }
    jv_free(body);
    return found;
}

/* Two pages: the first holds only another type's product and a product without an OnDemand
 * term (its Reserved price is not taken), the second the type's price; the request names the
 * service, the six filters and the format, the second one carries the first page's token. */
static void get__filters_pages_and_the_on_demand_price(void **state)
{
    struct fixture *f = *state;
    struct jv *p1[] = {product("g5.2xlarge", "1.2120000000"), product("g5.xlarge", NULL)};
    struct jv *p2[] = {product("g5.xlarge", "1.0060000000")};
    struct jv *body = NULL;
    char buf[64];
    double usd = 0;

    push_page(f, p1, 2, "next/page=2");
    push_page(f, p2, 1, NULL);
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "g5.xlarge", &usd, NULL), 0);
    assert_float_equal(usd, 1.006, 1e-12);
    assert_int_equal(fake_ec2_requests(f->fake), 2);
    assert_int_equal(fake_ec2_auth_failures(f->fake), 0);
    assert_string_equal(filter_value(f, 0, "instanceType", buf, sizeof(buf)), "g5.xlarge");
    assert_string_equal(filter_value(f, 0, "regionCode", buf, sizeof(buf)), "us-east-1");
    assert_string_equal(filter_value(f, 0, "operatingSystem", buf, sizeof(buf)), "Linux");
    assert_string_equal(filter_value(f, 0, "tenancy", buf, sizeof(buf)), "Shared");
    assert_string_equal(filter_value(f, 0, "preInstalledSw", buf, sizeof(buf)), "NA");
    assert_string_equal(filter_value(f, 0, "capacitystatus", buf, sizeof(buf)), "Used");
    assert_int_equal(
        jv_parse(fake_ec2_body(f->fake, 0), strlen(fake_ec2_body(f->fake, 0)), &body, NULL), 0);
    assert_string_equal(jv_string_value(jv_get(body, "ServiceCode")), "AmazonEC2");
    assert_string_equal(jv_string_value(jv_get(body, "FormatVersion")), "aws_v1");
    assert_null(jv_get(body, "NextToken"));
    jv_free(body);
    assert_int_equal(
        jv_parse(fake_ec2_body(f->fake, 1), strlen(fake_ec2_body(f->fake, 1)), &body, NULL), 0);
    assert_string_equal(jv_string_value(jv_get(body, "NextToken")), "next/page=2");
    jv_free(body);
}

/* Throttling is retried after a jittered wait (logged with the request id; its type read with a
 * namespace before it and extra data after it, as the AWS JSON protocol allows); refusals are not:
 * access denied is ERR_INVAL, an unknown type ERR_UNKNOWN, both naming the request id; a
 * server error every time is ERR_AGAIN after the attempts. *usd is never written on error. */
static void get__errors_with_the_request_id(void **state)
{
    struct fixture *f = *state;
    struct jv *p1[] = {product("p4d.24xlarge", "32.7726000000")};
    struct error e = {0};
    double usd = -1;

    fake_ec2_push(f->fake, 400,
                  "{\"__type\":\"com.amazonaws.pricing#ThrottlingException:http://internal."
                  "amazon.com/coral/com.amazon.coral.validate/\",\"message\":\"Rate exceeded\"}");
    push_page(f, p1, 1, NULL);
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "p4d.24xlarge", &usd, &e), 0);
    assert_float_equal(usd, 32.7726, 1e-12);
    assert_int_equal(f->h.n_sleeps, 1);
    assert_true(f->h.sleeps[0] >= 0 && f->h.sleeps[0] <= 100);
    assert_non_null(strstr(f->h.last_log, "ThrottlingException"));
    assert_non_null(strstr(f->h.last_log, "fake-req-1"));

    usd = -1;
    fake_ec2_push(f->fake, 400,
                  "{\"__type\":\"com.amazon.coral.service#AccessDeniedException\",\"Message\":"
                  "\"User is not authorized to perform: pricing:GetProducts\"}");
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "p4d.24xlarge", &usd, &e), ERR_INVAL);
    assert_string_equal(e.file, "pricing GetProducts");
    assert_non_null(strstr(e.msg, "AccessDeniedException"));
    assert_non_null(strstr(e.msg, "pricing:GetProducts"));
    assert_non_null(strstr(e.msg, "fake-req-3"));
    fake_ec2_push(f->fake, 400, "{\"__type\":\"BrandNewException\",\"message\":\"what\"}");
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "p4d.24xlarge", &usd, &e), ERR_UNKNOWN);
    assert_non_null(strstr(e.msg, "BrandNewException"));
    assert_non_null(strstr(e.msg, "fake-req-4"));
    for (int i = 0; i < 3; i++)
        fake_ec2_push(f->fake, 503, "<html>Service Unavailable</html>");
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "p4d.24xlarge", &usd, &e), ERR_AGAIN);
    assert_non_null(strstr(e.msg, "gave up after 3 attempts"));
    assert_non_null(strstr(e.msg, "HTTP 503"));
    assert_non_null(strstr(e.msg, "fake-req-7"));
    /* the failure is logged too */
    assert_non_null(strstr(f->h.last_log, "pricing GetProducts failed"));
    assert_true(usd == -1);
}

/* Bad answers are ERR_PARSE naming what is wrong and the request id: a price that does not
 * parse, a PriceList entry that is not JSON, one without its product, an answer without
 * PriceList, an answer that is not JSON; a page with no product of the type is ERR_NOENT; a
 * truncated answer is a transport failure, retried, then ERR_IO. */
static void get__bad_answers(void **state)
{
    struct fixture *f = *state;
    struct jv *bad_price[] = {product("g5.xlarge", "1,006")};
    static const char *const not_json[] = {"{\"product\": {\"attributes\""};
    static const char *const no_product[] = {"{\"terms\": {}}"};
    struct error e = {0};
    char *text;
    double usd = -1;

    push_page(f, bad_price, 1, NULL);
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "g5.xlarge", &usd, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "\"1,006\" does not parse"));
    assert_non_null(strstr(e.msg, "fake-req-1"));
    text = page(NULL, 0, not_json, 1, NULL);
    fake_ec2_push(f->fake, 200, text);
    free(text);
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "g5.xlarge", &usd, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "PriceList entry 0 is not a JSON document"));
    assert_non_null(strstr(e.msg, "fake-req-2"));
    text = page(NULL, 0, no_product, 1, NULL);
    fake_ec2_push(f->fake, 200, text);
    free(text);
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "g5.xlarge", &usd, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "no product.attributes.instanceType"));
    fake_ec2_push(f->fake, 200, "{\"FormatVersion\":\"aws_v1\"}");
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "g5.xlarge", &usd, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "without PriceList"));
    assert_non_null(strstr(e.msg, "fake-req-4"));
    fake_ec2_push(f->fake, 200, "{\"PriceList\": [");
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "g5.xlarge", &usd, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "not JSON"));
    assert_non_null(strstr(e.msg, "fake-req-5"));
    text = page(NULL, 0, NULL, 0, NULL);
    fake_ec2_push(f->fake, 200, text);
    free(text);
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "g5.xlarge", &usd, &e), ERR_NOENT);
    assert_non_null(strstr(e.msg, "no on-demand Linux price for g5.xlarge in us-east-1"));
    for (int i = 0; i < 3; i++)
        fake_ec2_push_cut(f->fake, "{\"FormatVersion\":\"aws_v1\",\"PriceList\":[]}", 10);
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "g5.xlarge", &usd, &e), ERR_IO);
    assert_true(usd == -1);
}

/* A wrong secret is refused by the fake's verifier (InvalidSignatureException): ERR_INVAL. */
static void get__wrong_secret_refused(void **state)
{
    struct fixture *f = *state;
    struct error e = {0};
    double usd = -1;

    fake_ec2_stop(f->fake);
    f->fake = fake_ec2_start(AKID, "not-the-secret", "us-east-1");
    assert_non_null(f->fake);
    fake_ec2_set_pricing(f->fake);
    aws_pricing_free(f->p);
    {
        struct aws_pricing_config cfg = {
            .json = aws_json_test_config(fake_ec2_url(f->fake), f->creds, &f->h)};

        assert_int_equal(aws_pricing_new(&cfg, &f->p, NULL), 0);
    }
    assert_int_equal(aws_pricing_get(f->p, "us-east-1", "g5.xlarge", &usd, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "InvalidSignatureException"));
    assert_int_equal(fake_ec2_auth_failures(f->fake), 1);
    assert_null(strstr(e.msg, SECRET));
}

/* The cache: a price serves a day without a call; then a failed call keeps the last price and
 * is not tried again for 15 minutes; a type never read that fails is ERR_AGAIN meanwhile; after
 * that the API is asked again. */
static void on_demand__cached_a_day_failures_held(void **state)
{
    struct fixture *f = *state;
    struct jv *p1[] = {product("g5.xlarge", "1.0060000000")};
    struct jv *p2[] = {product("g4dn.xlarge", "0.5260000000")};
    static const char denied[] = "{\"__type\":\"AccessDeniedException\",\"message\":\"no\"}";
    struct error e = {0};
    double usd = 0, t = NOW;

    push_page(f, p1, 1, NULL);
    assert_int_equal(aws_pricing_on_demand(f->p, "us-east-1", "g5.xlarge", t, &usd, &e), 0);
    assert_float_equal(usd, 1.006, 1e-12);
    usd = 0;
    assert_int_equal(aws_pricing_on_demand(f->p, "us-east-1", "g5.xlarge", t + 86399, &usd, &e), 0);
    assert_float_equal(usd, 1.006, 1e-12);
    assert_int_equal(fake_ec2_requests(f->fake), 1);
    /* stale: asked again; the call fails, the last price serves */
    fake_ec2_push(f->fake, 400, denied);
    assert_int_equal(aws_pricing_on_demand(f->p, "us-east-1", "g5.xlarge", t + 86400, &usd, &e), 0);
    assert_float_equal(usd, 1.006, 1e-12);
    assert_int_equal(fake_ec2_requests(f->fake), 2);
    assert_int_equal(
        aws_pricing_on_demand(f->p, "us-east-1", "g5.xlarge", t + 86400 + 899, &usd, &e), 0);
    assert_int_equal(fake_ec2_requests(f->fake), 2);
    /* another type, another region: its own entry */
    fake_ec2_push(f->fake, 400, denied);
    assert_int_equal(aws_pricing_on_demand(f->p, "eu-west-1", "g4dn.xlarge", t, &usd, &e),
                     ERR_INVAL);
    assert_int_equal(aws_pricing_on_demand(f->p, "eu-west-1", "g4dn.xlarge", t + 899, &usd, &e),
                     ERR_AGAIN);
    assert_int_equal(fake_ec2_requests(f->fake), 3);
    push_page(f, p2, 1, NULL);
    assert_int_equal(aws_pricing_on_demand(f->p, "eu-west-1", "g4dn.xlarge", t + 900, &usd, &e), 0);
    assert_float_equal(usd, 0.526, 1e-12);
    {
        char buf[32];

        assert_string_equal(filter_value(f, 3, "regionCode", buf, sizeof(buf)), "eu-west-1");
    }
}

/* An EBS volume type's product as the Price List writes one: volumeApiName, an OnDemand term
 * with one GB-Mo dimension at usd. */
static struct jv *volume_product(const char *type, const char *usd)
{
    struct jv *doc = jv_object(), *prod = jv_object(), *attrs = jv_object();
    struct jv *terms = jv_object(), *od = jv_object(), *term = jv_object(), *dims = jv_object();
    struct jv *dim = jv_object(), *ppu = jv_object();

    jv_set(attrs, "volumeApiName", jv_string(type));
    jv_set(attrs, "regionCode", jv_string("eu-west-1"));
    jv_set(prod, "productFamily", jv_string("Storage"));
    jv_set(prod, "attributes", attrs);
    jv_set(doc, "product", prod);
    jv_set(ppu, "USD", jv_string(usd));
    jv_set(dim, "unit", jv_string("GB-Mo"));
    jv_set(dim, "pricePerUnit", ppu);
    jv_set(dims, "VOL.JRTCKXETXF.6YS6EN2CT7", dim);
    jv_set(term, "priceDimensions", dims);
    jv_set(od, "VOL.JRTCKXETXF", term);
    jv_set(terms, "OnDemand", od);
    jv_set(doc, "terms", terms);
    return doc;
}

/* An EBS volume's price per GB-month: asked by volumeApiName, region and the Storage family (no
 * instance filters); another type's product in the answer is passed over; cached as the
 * on-demand prices are, apart from them. */
static void volume__price_per_gb_month(void **state)
{
    struct fixture *f = *state;
    struct jv *p1[] = {volume_product("gp2", "0.1100000000"),
                       volume_product("gp3", "0.0880000000")};
    char buf[32];
    double usd = 0;

    push_page(f, p1, 2, NULL);
    assert_int_equal(aws_pricing_volume(f->p, "eu-west-1", "gp3", NOW, &usd, NULL), 0);
    assert_float_equal(usd, 0.088, 1e-12);
    assert_string_equal(filter_value(f, 0, "volumeApiName", buf, sizeof(buf)), "gp3");
    assert_string_equal(filter_value(f, 0, "regionCode", buf, sizeof(buf)), "eu-west-1");
    assert_string_equal(filter_value(f, 0, "productFamily", buf, sizeof(buf)), "Storage");
    assert_null(filter_value(f, 0, "operatingSystem", buf, sizeof(buf)));
    usd = 0;
    assert_int_equal(aws_pricing_volume(f->p, "eu-west-1", "gp3", NOW + 60, &usd, NULL), 0);
    assert_float_equal(usd, 0.088, 1e-12);
    assert_int_equal(fake_ec2_requests(f->fake), 1);
    assert_int_equal(aws_pricing_volume(f->p, "eu-west-1", "", NOW, &usd, NULL), ERR_INVAL);
}

/* The endpoint: configured, else AWS_ENDPOINT_URL_PRICING, else AWS_ENDPOINT_URL, else the
 * public one; plain http off loopback is refused. */
static void new__endpoint_precedence(void **state)
{
    struct fixture *f = *state;
    struct aws_pricing_config cfg = {.json = {.credentials = f->creds}};
    struct aws_pricing *p = NULL;
    struct error e = {0};

    static const struct {
        const char *env, *value, *configured, *expect;
    } steps[] = {
        {NULL, NULL, NULL, PRICING_DEFAULT_ENDPOINT},
        {"AWS_ENDPOINT_URL", "http://127.0.0.1:1/", NULL, "http://127.0.0.1:1"},
        {"AWS_ENDPOINT_URL_PRICING", "http://127.0.0.1:2", NULL, "http://127.0.0.1:2"},
        {NULL, NULL, "http://localhost:3", "http://localhost:3"},
    };

    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        if (steps[i].env)
            setenv(steps[i].env, steps[i].value, 1);
        cfg.json.endpoint = steps[i].configured;
        assert_int_equal(aws_pricing_new(&cfg, &p, NULL), 0);
        assert_string_equal(aws_pricing_endpoint(p), steps[i].expect);
        aws_pricing_free(p);
    }
    cfg.json.endpoint = "http://pricing.example.com";
    p = NULL;
    assert_int_equal(aws_pricing_new(&cfg, &p, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "plain http"));
    assert_null(p);
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_ENDPOINT_URL_PRICING");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(get__filters_pages_and_the_on_demand_price),
        T(get__errors_with_the_request_id),
        T(get__bad_answers),
        T(get__wrong_secret_refused),
        T(on_demand__cached_a_day_failures_held),
        T(volume__price_per_gb_month),
        T(new__endpoint_precedence),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
