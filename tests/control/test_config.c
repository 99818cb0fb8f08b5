/* test_config.c: the daemon's configuration: a file with every key read back, the example in
 * config/ read, and every bad key refused with its file, line and column; job specs as the API
 * stores them; the reload check; template job names and specs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "control/config.h"
#include "util/file.h"
#include "util/json.h"

#define DATA CASTOR_TEST_DATA "/run"

/* The config text written to a new file; *path (static buffer) names it. */
static int load_text(const char *yaml, struct config **out, struct error *e, const char **path)
{
    static char dir[64], file[96];
    FILE *f;
    int rc;

    snprintf(dir, sizeof(dir), "/tmp/castor-test-config-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(file, sizeof(file), "%s/castor.yaml", dir);
    f = fopen(file, "w");
    if (!f)
        return -1;
    fputs(yaml, f);
    fclose(f);
    rc = config_load(file, out, e);
    unlink(file);
    rmdir(dir);
    if (path)
        *path = file;
    return rc;
}

static const struct jv *get(const struct jv *o, const char *key)
{
    const struct jv *v = jv_get(o, key);

    if (!v)
        fail_msg("no key %s", key);
    return v;
}

static double num(const struct jv *o, const char *key)
{
    double v = NAN;

    assert_int_equal(jv_number_value(get(o, key), &v), 0);
    return v;
}

static void config_load__every_key(void **state)
{
    struct config *c = NULL;
    struct error e = {0};
    struct jv *spec = NULL;
    char buf[600];

    (void)state;
    if (config_load(DATA "/good.yaml", &c, &e) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_string_equal(c->cluster, "test-cluster");
    assert_string_equal(c->world, "fake");
    assert_non_null(c->cloud);
    assert_int_equal(c->interval, 5);
    assert_string_equal(c->state_path, DATA "/data/state.db");
    assert_int_equal(c->log_level, LOG_DEBUG);
    assert_true(c->launch_timeout == 30);
    assert_true(c->register_timeout == 120 && c->heartbeat_timeout == 0);
    assert_true(c->spend.dollars == 2500 && c->spend.period == 1); /* a week */
    assert_int_equal(c->seed, 7);
    assert_string_equal(c->tput_model->name, "pollux");
    assert_string_equal(c->api.address, "0.0.0.0");
    assert_int_equal(c->api.port, 0);
    assert_string_equal(c->api.tls_cert, DATA "/tls/cert.pem");
    assert_string_equal(c->api.tls_key, "/etc/castor/key.pem");
    assert_int_equal(c->api.threads, 4);
    assert_int_equal(c->api.max_body, 65536);
    assert_int_equal(c->api.per_node_tokens, 1);
    assert_string_equal(c->token_files[API_ROLE_NODE], DATA "/node.token");
    assert_string_equal(c->token_files[API_ROLE_USER], "/etc/castor/user.token");
    assert_null(c->token_files[API_ROLE_METRICS]);
    assert_string_equal(c->policy, "castor");
    assert_true(c->pcfg.p_mean == -2 && c->pcfg.p_mean_set && c->pcfg.restart_penalty == 60);
    assert_string_equal(c->fleet, "fixed");
    assert_int_equal(c->fcfg.mode, FLEET_BUDGET);
    assert_true(c->fcfg.value == 2.5 && c->fcfg.budget == 12);
    assert_int_equal(c->fcfg.patience, 3);
    assert_int_equal(c->fcfg.max_nodes, 8);
    assert_int_equal(c->fcfg.nodes, 3);
    assert_int_equal(c->fcfg.window, 10);
    assert_true(c->fcfg.util_high == 0.8 && c->fcfg.util_low == 0.2);
    assert_string_equal(c->fleet_offer, "small/spot");
    assert_int_equal(c->noffers, 2);
    assert_string_equal(c->offers[0].zone, "zone-a");
    assert_true(c->offers[0].boot_s == 30 && c->offers[0].preempt_rate == 0.2);
    assert_true(c->offers[0].price == 1.25 && c->offers[0].discount == 0);
    assert_null(c->offers[1].zone);
    assert_true(c->offers[1].boot_s == 180 && isnan(c->offers[1].preempt_rate));
    assert_true(c->offers[1].price == 0 && c->offers[1].discount == 0.3);
    /* found by name, whichever entry; a name not listed, or none, finds nothing */
    assert_ptr_equal(config_offer_find(c, c->offers[1].name), &c->offers[1]);
    assert_ptr_equal(config_offer_find(c, c->offers[0].name), &c->offers[0]);
    assert_null(config_offer_find(c, "no/such"));
    assert_null(config_offer_find(c, NULL));
    /* jobs: the spec as the API stores it, defaults filled in */
    assert_int_equal(c->njobs, 2);
    assert_string_equal(c->jobs[0].name, "resnet");
    assert_int_equal(jv_parse(c->jobs[0].spec, strlen(c->jobs[0].spec), &spec, NULL), 0);
    assert_string_equal(jv_string_value(get(spec, "name")), "resnet");
    assert_int_equal(jv_size(get(spec, "command")), 4);
    assert_string_equal(jv_string_value(jv_at(get(spec, "command"), 3)), "0.1");
    assert_string_equal(jv_string_value(get(spec, "image")), "pytorch:2");
    assert_string_equal(jv_string_value(get(get(spec, "env"), "SEED")), "42");
    assert_true(num(spec, "init_batch_size") == 128 && num(spec, "max_batch_size") == 4096);
    assert_true(num(spec, "max_local_bsz") == 256 && num(spec, "min_replicas") == 2);
    assert_true(num(spec, "max_replicas") == 16 && num(spec, "checkpoint_interval") == 300);
    assert_true(num(spec, "replicas") == 8);
    assert_true(num(spec, "samples") == 1.2e8);
    assert_string_equal(jv_string_value(get(spec, "family")), "resnet50-imagenet/t4");
    assert_true(num(spec, "deadline") == 1714651200.0); /* 2024-05-02T12:00:00Z */
    assert_true(num(spec, "priority") == 5);
    assert_true(num(spec, "max_restarts") == 7 && num(spec, "hang_timeout") == 900);
    assert_true(num(spec, "max_dollars") == 250.5);
    assert_string_equal(jv_string_value(get(spec, "reconfigure")), "in_flight");
    jv_free(spec);
    assert_int_equal(jv_parse(c->jobs[1].spec, strlen(c->jobs[1].spec), &spec, NULL), 0);
    assert_int_equal(jv_type_of(get(spec, "workdir")), JV_NULL);
    assert_true(num(spec, "min_replicas") == 1 && num(spec, "checkpoint_interval") == 600);
    assert_true(num(spec, "replicas") == 1); /* not given: the gang minimum */
    assert_true(num(spec, "deadline") == 1714650000.0 && num(spec, "priority") == 0);
    assert_int_equal(jv_type_of(get(spec, "samples")), JV_NULL); /* not given: unknown */
    assert_int_equal(jv_type_of(get(spec, "family")), JV_NULL);  /* not given: none */
    assert_int_equal(jv_size(get(spec, "env")), 0);
    assert_true(num(spec, "max_restarts") == API_MAX_RESTARTS_DEFAULT);
    assert_true(num(spec, "hang_timeout") == API_HANG_TIMEOUT_DEFAULT);
    assert_int_equal(jv_type_of(get(spec, "max_dollars")), JV_NULL); /* not given: no limit */
    assert_string_equal(jv_string_value(get(spec, "reconfigure")), "restart"); /* any worker */
    jv_free(spec);
    /* a template: no name, no deadline of its own */
    assert_int_equal(c->ntemplates, 1);
    assert_string_equal(c->templates[0].name, "nightly");
    assert_true(c->templates[0].deadline_after == 3600);
    assert_int_equal(c->templates[0].schedule.hours, 1u << 2);
    assert_int_equal(jv_parse(c->templates[0].spec, strlen(c->templates[0].spec), &spec, NULL), 0);
    assert_null(jv_get(spec, "name"));
    assert_null(jv_get(spec, "deadline"));
    jv_free(spec);
    config_free(c);
}

static void config_load__the_example(void **state)
{
    struct config *c = NULL;
    struct error e = {0};
    char buf[600];

    (void)state;
    if (config_load(CASTOR_TEST_DATA "/../../config/castor.yaml", &c, &e) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_string_equal(c->world, "fake");
    assert_true(c->njobs >= 1 && c->ntemplates >= 1);
    config_free(c);
}

static void config_template__job_name_and_spec(void **state)
{
    struct config *c = NULL;
    struct jv *spec = NULL;
    char name[CONFIG_NAME_MAX + 1], *json = NULL;
    const int64_t at = 1714530600; /* 2024-05-01T02:30:00Z */

    (void)state;
    assert_int_equal(config_load(DATA "/good.yaml", &c, NULL), 0);
    assert_int_equal(config_template_job_name(&c->templates[0], at, name, sizeof(name)), 0);
    assert_string_equal(name, "nightly-20240501T0230Z");
    assert_int_equal(config_template_job_name(&c->templates[0], at, name, 10), ERR_RANGE);
    assert_int_equal(config_template_spec(&c->templates[0], "nightly-20240501T0230Z", at, &json),
                     0);
    assert_int_equal(jv_parse(json, strlen(json), &spec, NULL), 0);
    assert_string_equal(jv_string_value(get(spec, "name")), "nightly-20240501T0230Z");
    assert_true(num(spec, "deadline") == (double)at + 3600);
    assert_string_equal(jv_string_value(get(spec, "workdir")), "/eval");
    assert_true(num(spec, "samples") == 640000);
    assert_string_equal(jv_string_value(get(spec, "family")), "eval:v1");
    jv_free(spec);
    free(json);
    config_free(c);
}

static void config_reload_check__restart_only_keys(void **state)
{
    struct config *a = NULL, *b = NULL;
    char why[256], warn[128];

    (void)state;
    assert_int_equal(config_load(DATA "/good.yaml", &a, NULL), 0);
    assert_int_equal(config_load(DATA "/good.yaml", &b, NULL), 0);
    assert_int_equal(config_reload_check(a, b, why, sizeof(why), warn, sizeof(warn)), 0);
    assert_string_equal(warn, "");
    b->api.port = 9000;
    free(b->token_files[API_ROLE_JOB]);
    b->token_files[API_ROLE_JOB] = strdup("/other");
    assert_int_equal(config_reload_check(a, b, why, sizeof(why), warn, sizeof(warn)), 0);
    assert_string_equal(warn, "api tokens");
    free(b->cluster);
    b->cluster = strdup("another");
    assert_int_equal(config_reload_check(a, b, why, sizeof(why), warn, sizeof(warn)), 1);
    assert_non_null(strstr(why, "cluster changed (test-cluster to another)"));
    config_free(a);
    config_free(b);
}

/* Reload cases' texts (state absolute: each text is loaded from a new folder). */
#define RELOAD_HEAD "cluster: c\nworld: fake\nstate: /tmp/castor-test-reload.db\n"
#define RELOAD_BASE                                                      \
    RELOAD_HEAD "cloud:\n  offers:\n    - name: a/spot\n      gpus: 2\n" \
                "      price: 0.5\n"

/* What the reload check says of the configuration after, read again, to the one before (both
 * loaded from text): 1 (refused) or 0, with warn written. */
static int reload_check(const char *before, const char *after, char *warn, size_t size)
{
    struct config *a = NULL, *b = NULL;
    struct error e = {0};
    char why[256], buf[600];
    int rc;

    if (load_text(before, &a, &e, NULL) < 0 || load_text(after, &b, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    rc = config_reload_check(a, b, why, sizeof(why), warn, size);
    config_free(a);
    config_free(b);
    return rc;
}

/* Every key that takes effect only at a restart is warned of by name when it changes: the
 * cloud section (compared as a tree: the same values written otherwise are no change), the API's
 * node tokens and connection limit, faults, log_level and tput_model. */
static void config_reload_check__warns_of_every_restart_key(void **state)
{
    static const struct {
        const char *after, *warn;
    } cases[] = {
        {RELOAD_BASE, ""},
        {RELOAD_HEAD "cloud: {offers: [{name: a/spot, gpus: 2, price: 0.5}]}\n", ""},
        {RELOAD_HEAD "cloud:\n  offers:\n    - name: a/spot\n      gpus: 2\n"
                     "      price: 0.6\n",
         "cloud"},
        {RELOAD_HEAD "cloud:\n  offers:\n    - name: a/spot\n      gpus: 2\n"
                     "      price: \"0.5\"\n",
         "cloud"},
        {RELOAD_HEAD "", "cloud"},
        {RELOAD_BASE "api:\n  node_tokens: per-node\n", "api"},
        {RELOAD_BASE "api:\n  max_client_connections: 4\n", "api"},
        {RELOAD_BASE "faults:\n", "faults"},
        {RELOAD_BASE "log_level: debug\n", "log_level"},
        {RELOAD_BASE "tput_model: pollux\n", "tput_model"},
        {RELOAD_HEAD "log_level: error\nfaults: {rate: 0.1}\n", "cloud faults log_level"},
    };
    char warn[128];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(reload_check(RELOAD_BASE, cases[i].after, warn, sizeof(warn)), 0);
        if (strcmp(warn, cases[i].warn) != 0)
            fail_msg("case %zu: warned \"%s\", expected \"%s\"", i, warn, cases[i].warn);
    }
    /* and the other way round */
    assert_int_equal(reload_check(RELOAD_BASE "faults:\n  seed: 2\n",
                                  RELOAD_BASE "faults:\n  seed: 3\n", warn, sizeof(warn)),
                     0);
    assert_string_equal(warn, "faults");
    assert_int_equal(reload_check(RELOAD_HEAD "", RELOAD_BASE, warn, sizeof(warn)), 0);
    assert_string_equal(warn, "cloud");
}

static void config_job_spec__a_job_file(void **state)
{
    struct conf *doc = NULL;
    char *json = NULL, *name = NULL;
    struct error e = {0};

    (void)state;
    assert_int_equal(conf_load(DATA "/job.yaml", &doc, NULL), 0);
    assert_int_equal(config_job_spec(doc->root, 0, &json, &name, &e), 0);
    assert_string_equal(name, "submitted-job");
    assert_non_null(strstr(json, "\"max_replicas\":4"));
    free(json);
    free(name);
    json = name = NULL;
    /* the same mapping as a template's job: its name is refused */
    assert_int_equal(config_job_spec(doc->root, 1, &json, &name, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "named after the template"));
    assert_null(json);
    conf_free(doc);
}

#define BASE "cluster: c\nworld: fake\n"
#define JOB_HEAD "jobs:\n  - name: j\n"
#define JOB_REST \
    "    init_batch_size: 8\n    max_batch_size: 64\n    max_local_bsz: 8\n    max_replicas: 2\n"
#define JOB_CMD "    command: [a]\n    workdir: /w\n"
#define TMPL_HEAD "templates:\n  - name: t\n    schedule: \"0 2 * * *\"\n"
#define TMPL_JOB                                                                  \
    "    job:\n      command: [a]\n      workdir: /w\n      init_batch_size: 8\n" \
    "      max_batch_size: 8\n      max_local_bsz: 8\n      max_replicas: 1\n"

struct bad_case {
    const char *yaml;
    int code;
    int line, column;
    const char *msg;
};

static const struct bad_case bad_cases[] = {
    {"clustr: c\nworld: fake\n", ERR_UNKNOWN, 1, 1, "did you mean \"cluster\""},
    {"world: fake\n", ERR_PARSE, 1, 1, "cluster is required"},
    {"cluster: a b\nworld: fake\n", ERR_PARSE, 1, 10, "letters, digits"},
    {"cluster: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nworld: fake\n", ERR_RANGE, 1, 10,
     "at most 40 bytes"},
    {"cluster: c\n", ERR_PARSE, 1, 1, "world is required"},
    /* gcp labels instances with it (and the launch tokens made of it): a-z, 0-9, '-', '_' */
    {"cluster: Alpha\nworld: gcp\n", ERR_PARSE, 1, 10, "with world gcp, lower-case letters"},
    {"cluster: a.b\nworld: gcp\n", ERR_PARSE, 1, 10, "Compute Engine's labels"},
    {"cluster: c\nworld: lcoal\n", ERR_UNKNOWN, 2, 8, "local"},
    {BASE "cloud: 3\n", ERR_PARSE, 3, 8, "expected a mapping"},
    {BASE "interval: 0\n", ERR_RANGE, 3, 11, "interval"},
    {BASE "interval: \"60\"\n", ERR_PARSE, 3, 11, "interval"},
    {BASE "state:\n", ERR_PARSE, 3, 7, "state"},
    {BASE "log_level: loud\n", ERR_UNKNOWN, 3, 12, "log_level"},
    {BASE "launch_timeout: 0\n", ERR_RANGE, 3, 17, "launch_timeout"},
    {BASE "seed: 1.5\n", ERR_PARSE, 3, 7, "seed"},
    {BASE "tput_model: foo\n", ERR_UNKNOWN, 3, 13, "tput_model"},
    {BASE "api:\n  port: 70000\n", ERR_RANGE, 4, 9, "api.port"},
    {BASE "api:\n  prot: 1\n", ERR_UNKNOWN, 4, 3, "did you mean \"api.port\""},
    {BASE "api:\n  tls_cert: c.pem\n", ERR_PARSE, 4, 3, "tls_cert and tls_key go together"},
    {BASE "api:\n  address: 0.0.0.0\n", ERR_PARSE, 4, 12, "not a loopback address"},
    {BASE "api:\n  address: \"::\"\n", ERR_PARSE, 4, 12, "insecure_http: true"},
    {BASE "api:\n  address: 10.0.0.5\n  insecure_http: false\n", ERR_PARSE, 4, 12, "clear text"},
    {BASE "api:\n  address: localhost\n", ERR_PARSE, 4, 12, "not a numeric"},
    {BASE "api:\n  insecure_http: yes please\n", ERR_PARSE, 4, 18, "api.insecure_http"},
    {BASE "api:\n  rate_limit: -1\n", ERR_RANGE, 4, 15, "api.rate_limit"},
    {BASE "api:\n  rate_burst: 0\n", ERR_RANGE, 4, 15, "api.rate_burst"},
    {BASE "api:\n  max_client_connections: -1\n", ERR_RANGE, 4, 27, "api.max_client_connections"},
    {BASE "api:\n  max_client_connections: many\n", ERR_PARSE, 4, 27, "api.max_client_connections"},
    {BASE "api:\n  node_tokens: each\n", ERR_UNKNOWN, 4, 16, "api.node_tokens"},
    {BASE "api:\n  attestation:\n    account: \"1\"\n", ERR_PARSE, 5, 14, "goes with certificate"},
    {BASE "api:\n  attestation:\n    static_nodes: [a]\n", ERR_PARSE, 5, 5,
     "or google_certificates (Compute Engine) is required"},
    {BASE "api:\n  attestation:\n    google_certificates: g.json\n", ERR_PARSE, 5, 5,
     "audience is required with google_certificates"},
    {BASE "api:\n  attestation:\n    google_certificates: g.json\n    audience: http://c:8470\n",
     ERR_PARSE, 5, 5, "project is required with google_certificates"},
    {BASE "api:\n  attestation:\n    project: p\n", ERR_PARSE, 5, 14,
     "goes with google_certificates"},
    {BASE "api:\n  attestation:\n    certificate: /no/such.pem\n", ERR_PARSE, 5, 18,
     "api.attestation.certificate"},
    {BASE "api:\n  attestation:\n    certificate: " CASTOR_TEST_DATA "/attest/README.md\n",
     ERR_PARSE, 5, 18, "not a PEM certificate or public key of RSA"},
    {BASE "api:\n  attestation:\n    certificate: " CASTOR_TEST_DATA
          "/attest/test-cert.pem\n    static_nodes: box\n",
     ERR_PARSE, 6, 19, "a list of at most 4096 instance ids"},
    {BASE "api:\n  attestation:\n    certificate: " CASTOR_TEST_DATA
          "/attest/test-cert.pem\n    static_nodes: [\"a b\"]\n",
     ERR_PARSE, 6, 20, "an instance id is"},
    {BASE "api:\n  attestation:\n    region: [x]\n", ERR_PARSE, 5, 13, "api.attestation.region"},
    {BASE "api:\n  attestation:\n    certs: x\n", ERR_UNKNOWN, 5, 5, "certs"},
    {BASE "api:\n  rate_limit: 0\n  rate_burst: 5\n", ERR_PARSE, 4, 3,
     "rate_burst needs a rate_limit"},
    {BASE "tokens:\n  node: n\n  job: j\n", ERR_PARSE, 4, 3, "tokens.user is required"},
    {BASE "tokens:\n  node: n\n  jobs: j\n", ERR_UNKNOWN, 5, 3, "tokens.jobs"},
    {BASE "policy: nope\n", ERR_UNKNOWN, 3, 9, "policy"},
    {BASE "pollux:\n  p_mean: 200\n", ERR_RANGE, 4, 11, "pollux.p_mean"},
    {BASE "fleet:\n  planner: nope\n", ERR_UNKNOWN, 4, 12, "fleet.planner"},
    {BASE "fleet:\n  mode: budget\n", ERR_PARSE, 4, 3, "needs a budget"},
    {BASE "fleet:\n  patience: 0\n", ERR_RANGE, 4, 13, "fleet.patience"},
    {BASE "fleet:\n  high: 0.3\n  low: 0.5\n", ERR_RANGE, 5, 8,
     "fleet.low: 0.5 must be below high (0.3)"},
    {BASE "fleet:\n  high: 0.3\n  low: 0.3\n", ERR_RANGE, 5, 8, "must be below high (0.3)"},
    {BASE "fleet:\n  low: 0.8\n", ERR_RANGE, 4, 8,
     "fleet.low: 0.8 must be below high (0.667, the default)"},
    {BASE "fleet:\n  high: 0.2\n", ERR_RANGE, 4, 9,
     "fleet.high: 0.2 must be above low (0.333, the default)"},
    {BASE "offers: x\n", ERR_PARSE, 3, 9, "expected a list of offers"},
    {BASE "offers:\n  - zone: a\n", ERR_PARSE, 4, 5, "offers[0].name is required"},
    {BASE "offers:\n  - name: a\n  - name: a\n", ERR_PARSE, 5, 11, "listed twice"},
    {BASE "offers:\n  - name: a\n    boot: -5\n", ERR_RANGE, 5, 11, "offers[0].boot"},
    {BASE "offers:\n  - name: a\n    zones: b\n", ERR_UNKNOWN, 5, 5, "offers[0].zones"},
    {BASE "offers:\n  - name: a\n    price: 0\n", ERR_RANGE, 5, 12, "offers[0].price"},
    {BASE "offers:\n  - name: a\n    discount: 1\n", ERR_RANGE, 5, 15, "offers[0].discount"},
    {BASE "offers:\n  - name: a\n    price: 2\n    discount: 0.1\n", ERR_PARSE, 6, 15,
     "a price or a discount off the cloud's, not both"},
    {BASE "jobs: x\n", ERR_PARSE, 3, 7, "expected a list of jobs"},
    {BASE JOB_HEAD "    workdir: /w\n" JOB_REST, ERR_PARSE, 4, 5, "jobs[0].command is required"},
    {BASE JOB_HEAD "    command: []\n    workdir: /w\n" JOB_REST, ERR_PARSE, 5, 14,
     "list of 1 to 256 strings"},
    {BASE JOB_HEAD "    command: a\n    workdir: /w\n" JOB_REST, ERR_PARSE, 5, 14,
     "list of 1 to 256 strings"},
    {BASE JOB_HEAD "    command: [a]\n" JOB_REST, ERR_PARSE, 4, 5, "a workdir or an image"},
    {BASE JOB_HEAD JOB_CMD "    env:\n      1X: a\n" JOB_REST, ERR_PARSE, 8, 7,
     "not a variable name"},
    {BASE JOB_HEAD JOB_CMD "    env:\n      A: {b: c}\n" JOB_REST, ERR_PARSE, 8, 10, "env.A"},
    {BASE JOB_HEAD JOB_CMD "    init_batch_size: 0\n    max_batch_size: 64\n    max_local_bsz: 8\n"
                           "    max_replicas: 2\n",
     ERR_RANGE, 7, 22, "must be above 0"},
    {BASE JOB_HEAD JOB_CMD "    init_batch_size: 8\n    max_batch_size: 4\n    max_local_bsz: 8\n"
                           "    max_replicas: 2\n",
     ERR_RANGE, 8, 21, "max_batch_size"},
    {BASE JOB_HEAD JOB_CMD "    init_batch_size: 8\n    max_batch_size: 64\n    max_replicas: 2\n",
     ERR_PARSE, 4, 5, "max_local_bsz is required"},
    /* a local batch is at least one sample: below it no configuration fits the limit */
    {BASE JOB_HEAD JOB_CMD
     "    init_batch_size: 8\n    max_batch_size: 64\n    max_local_bsz: 0.5\n"
     "    max_replicas: 2\n",
     ERR_RANGE, 9, 20, "max_local_bsz"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    min_replicas: 0\n", ERR_RANGE, 11, 19, "min_replicas"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    min_replicas: 3\n", ERR_RANGE, 10, 19, "max_replicas"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    replicas: 3\n", ERR_RANGE, 11, 15, "jobs[0].replicas"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    replicas: 0\n", ERR_RANGE, 11, 15, "jobs[0].replicas"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    checkpoint_interval: 0\n", ERR_RANGE, 11, 26,
     "must be above 0"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    samples: 0\n", ERR_RANGE, 11, 14,
     "jobs[0].samples: must be above 0"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    samples: abc\n", ERR_PARSE, 11, 14,
     "jobs[0].samples: expected a number"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    samples: 1e16\n", ERR_RANGE, 11, 14,
     "is outside [0, 1e+15]"},
    {BASE TMPL_HEAD TMPL_JOB "      samples: -5\n", ERR_RANGE, 13, 16, "templates[0].job.samples"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    family: \"\"\n", ERR_PARSE, 11, 13,
     "jobs[0].family: expected text"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    family: resnet 50\n", ERR_PARSE, 11, 13,
     "jobs[0].family: letters, digits"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    family: [a]\n", ERR_PARSE, 11, 13, "jobs[0].family"},
    {BASE JOB_HEAD JOB_CMD JOB_REST
     "    family: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
     ERR_RANGE, 11, 13, "jobs[0].family: at most 64 bytes"},
    {BASE TMPL_HEAD TMPL_JOB "      family: a*b\n", ERR_PARSE, 13, 15, "templates[0].job.family"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    deadline: tomorrow\n", ERR_PARSE, 11, 15, "ISO 8601"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    priority: 2000\n", ERR_RANGE, 11, 15, "priority"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    max_restarts: -1\n", ERR_RANGE, 11, 19,
     "jobs[0].max_restarts"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    max_restarts: often\n", ERR_PARSE, 11, 19,
     "jobs[0].max_restarts"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    hang_timeout: -5\n", ERR_RANGE, 11, 19,
     "jobs[0].hang_timeout"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    max_dollars: 0\n", ERR_RANGE, 11, 18,
     "jobs[0].max_dollars: must be above 0"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    max_dollars: lots\n", ERR_PARSE, 11, 18,
     "jobs[0].max_dollars"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    reconfigure: sometimes\n", ERR_PARSE, 11, 18,
     "jobs[0].reconfigure: expected restart or in_flight"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    reconfigure: [in_flight]\n", ERR_PARSE, 11, 18,
     "jobs[0].reconfigure"},
    {BASE "heartbeat_timeout: -1\n", ERR_RANGE, 3, 20, "heartbeat_timeout"},
    {BASE "spend_limit:\n  dollars: 0\n", ERR_RANGE, 4, 12, "spend_limit.dollars: must be above 0"},
    {BASE "spend_limit:\n  dollars: 5\n  period: year\n", ERR_UNKNOWN, 5, 11, "spend_limit.period"},
    {BASE "spend_limit:\n  period: day\n", ERR_PARSE, 4, 3, "dollars"},
    {BASE "spend_limit:\n  dolars: 5\n", ERR_UNKNOWN, 4, 3, "dollars"},
    {BASE "register_timeout: soon\n", ERR_PARSE, 3, 19, "register_timeout"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "    gpu: 1\n", ERR_UNKNOWN, 11, 5, "jobs[0].gpu"},
    {BASE "jobs:\n  - name: -j\n" JOB_CMD JOB_REST, ERR_PARSE, 4, 11, "letters, digits"},
    {BASE JOB_HEAD JOB_CMD JOB_REST "  - name: j\n" JOB_CMD JOB_REST, ERR_PARSE, 11, 11,
     "a job of this name is listed"},
    {BASE "templates:\n  - name: t\n" TMPL_JOB, ERR_PARSE, 4, 5,
     "templates[0].schedule is required"},
    {BASE "templates:\n  - name: t\n    schedule: \"0 25 * * *\"\n" TMPL_JOB, ERR_PARSE, 5, 18,
     "hour: the value must be from 0 to 23"},
    {BASE "templates:\n  - name: t\n    schedule: 0 2 * * * *\n" TMPL_JOB, ERR_PARSE, 5, 25,
     "more than five fields"},
    /* a block scalar, escapes, a quoted value on the next line: mapped where the file shows the
     * text as it is, else at the value's start with the character in the message */
    {BASE "templates:\n  - name: t\n    schedule: >-\n      0 0 * * x\n" TMPL_JOB, ERR_PARSE, 5, 15,
     "(at character 9 of the value)"},
    {BASE "templates:\n  - name: t\n    schedule: |\n      0 0 * * x\n" TMPL_JOB, ERR_PARSE, 5, 15,
     "(at character 9 of the value)"},
    {BASE "templates:\n  - name: t\n    schedule: \"0\\x20 25 * * *\"\n" TMPL_JOB, ERR_PARSE, 5, 15,
     "hour: the value must be from 0 to 23 (at character 4 of the value)"},
    {BASE "templates:\n  - name: t\n    schedule:\n      \"0 0 * * x\"\n" TMPL_JOB, ERR_PARSE, 6,
     16, "templates[0].schedule: "},
    {BASE "templates:\n  - name: t\n    schedule: \"0  0 * * x\"  # comment\n" TMPL_JOB, ERR_PARSE,
     5, 25, "templates[0].schedule: day of week"},
    {BASE TMPL_HEAD TMPL_JOB "      name: x\n", ERR_PARSE, 13, 13, "named after the template"},
    {BASE TMPL_HEAD TMPL_JOB "      deadline: 5\n", ERR_PARSE, 13, 17, "deadline_after"},
    {BASE TMPL_HEAD "    deadline_after: 0\n" TMPL_JOB, ERR_RANGE, 6, 21, "deadline_after"},
    {BASE TMPL_HEAD TMPL_JOB "  - name: t\n    schedule: \"@daily\"\n" TMPL_JOB, ERR_PARSE, 13, 11,
     "a template of this name is listed"},
    {BASE "templates:\n  - name: t\n    schedule: \"0 2 * * *\"\n", ERR_PARSE, 4, 5,
     "templates[0].job is required"},
    {BASE "faults:\n  rate: 1.5\n", ERR_RANGE, 4, 9, "faults.rate"},
    {BASE "faults:\n  timeout: -1\n", ERR_RANGE, 4, 12, "faults.timeout"},
    {BASE "faults:\n  rat: 1\n", ERR_UNKNOWN, 4, 3, "did you mean \"faults.rate\""},
    {"cluster: [c\n", ERR_PARSE, 2, 1, ""},
    {"cluster: a\ncluster: b\nworld: fake\n", ERR_PARSE, 2, 1, "cluster"},
};

static void config_load__every_bad_key_located(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const struct bad_case *b = &bad_cases[i];
        struct config *c = NULL;
        struct error e = {0};
        const char *path = NULL;
        int rc = load_text(b->yaml, &c, &e, &path);

        if (rc != b->code || e.line != b->line || e.column != b->column || !strstr(e.msg, b->msg) ||
            strcmp(e.file, path) != 0)
            fail_msg("case %zu: %s at %s:%d:%d \"%s\"; expected %s at %d:%d \"%s\"", i,
                     err_name(rc), e.file, e.line, e.column, e.msg, err_name(b->code), b->line,
                     b->column, b->msg);
        assert_null(c);
    }
}

/* faults: absent, off; alone, the defaults (20%, seed 1, 1 s timeouts); each key read. */
static void config_load__faults(void **state)
{
    struct config *c = NULL;
    struct error e = {0};
    const char *path = NULL;

    (void)state;
    assert_int_equal(load_text(BASE, &c, &e, &path), 0);
    assert_int_equal(c->faults.on, 0);
    /* (and the nodes' timeouts at their defaults) */
    assert_true(c->register_timeout == 900 && c->heartbeat_timeout == 300);
    assert_true(c->spend.dollars == 0); /* no limit */
    config_free(c);
    assert_int_equal(load_text(BASE "faults:\n", &c, &e, &path), 0);
    assert_int_equal(c->faults.on, 1);
    assert_true(c->faults.rate == 0.2 && c->faults.seed == 1 && c->faults.timeout_s == 1.0);
    config_free(c);
    assert_int_equal(
        load_text(BASE "faults:\n  rate: 0.5\n  seed: 9\n  timeout: 0\n", &c, &e, &path), 0);
    assert_true(c->faults.on && c->faults.rate == 0.5 && c->faults.seed == 9 &&
                c->faults.timeout_s == 0);
    config_free(c);
}

/* One bound of fleet's utilisation band alone is checked against the other's default (high 2/3,
 * low 1/3): on the right side of it, it loads and the other stays unset (the planner's default). */
static void config_load__fleet_band_one_bound(void **state)
{
    struct config *c = NULL;
    struct error e = {0};
    char buf[600];

    (void)state;
    if (load_text(BASE "fleet:\n  low: 0.5\n", &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_true(c->fcfg.util_low == 0.5 && c->fcfg.util_high == 0);
    config_free(c);
    c = NULL;
    if (load_text(BASE "fleet:\n  high: 0.5\n", &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_true(c->fcfg.util_high == 0.5 && c->fcfg.util_low == 0);
    config_free(c);
}

/* The API's URL as a node on this machine reaches it: a wildcard as loopback, IPv6 in brackets,
 * https with TLS, the bound port or the configured one. */
static void config_api_url__as_a_local_process_reaches_it(void **state)
{
    struct config *c = NULL;
    struct error e = {0};
    const char *path = NULL;
    char url[96];

    (void)state;
    assert_int_equal(load_text(BASE
                               "api:\n  address: 0.0.0.0\n  port: 9001\n  insecure_http: true\n",
                               &c, &e, &path),
                     0);
    config_api_url(c, 0, url, sizeof(url));
    assert_string_equal(url, "http://127.0.0.1:9001");
    config_api_url(c, 40001, url, sizeof(url));
    assert_string_equal(url, "http://127.0.0.1:40001");
    config_free(c);
    assert_int_equal(load_text(BASE
                               "api:\n  address: \"::\"\n  tls_cert: c.pem\n  tls_key: k.pem\n",
                               &c, &e, &path),
                     0);
    config_api_url(c, 0, url, sizeof(url));
    assert_string_equal(url, "https://[::1]:8470");
    config_free(c);
}

/* Plain HTTP off loopback loads only with insecure_http: true; TLS or a loopback address needs
 * no opt-in. The rate limit's defaults (CONFIG_API_RATE_LIMIT, twice that at once) and values;
 * the per-client connection limit's default (CONFIG_API_MAX_CLIENT_CONNECTIONS), 0 and a value. */
static void config_load__api_transport_and_limits(void **state)
{
    struct config *c = NULL;
    struct error e = {0};
    char buf[600];

    (void)state;
    if (load_text(BASE "api:\n  address: 0.0.0.0\n  insecure_http: true\n", &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_int_equal(c->api.insecure_http, 1);
    assert_true(c->api.rate_limit == CONFIG_API_RATE_LIMIT);
    assert_int_equal(c->api.rate_burst, (unsigned)(2 * CONFIG_API_RATE_LIMIT));
    assert_int_equal(c->api.max_client_connections, CONFIG_API_MAX_CLIENT_CONNECTIONS);
    config_free(c);
    c = NULL;
    if (load_text(BASE "api:\n  address: \"::1\"\n  rate_limit: 2.5\n", &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_int_equal(c->api.insecure_http, 0);
    assert_true(c->api.rate_limit == 2.5);
    assert_int_equal(c->api.rate_burst, 5);
    config_free(c);
    c = NULL;
    if (load_text(BASE "api:\n  address: 10.0.0.5\n  tls_cert: c.pem\n  tls_key: k.pem\n"
                       "  rate_limit: 0\n",
                  &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_true(c->api.rate_limit == 0);
    config_free(c);
    c = NULL;
    if (load_text(BASE "api:\n  rate_limit: 10\n  rate_burst: 3\n", &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_true(c->api.rate_limit == 10);
    assert_int_equal(c->api.rate_burst, 3);
    config_free(c);
    c = NULL;
    if (load_text(BASE "api:\n  max_client_connections: 0\n", &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_int_equal(c->api.max_client_connections, 0); /* no limit */
    config_free(c);
    c = NULL;
    if (load_text(BASE "api:\n  max_client_connections: 16\n", &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_int_equal(c->api.max_client_connections, 16);
    config_free(c);
}

/* api.attestation: the certificate read with the file (a path beside the config file, or
 * absolute), the account, region and static nodes kept; absent, nothing asked. */
static void config_load__api_attestation(void **state)
{
    struct config *c = NULL;
    struct error e = {0};
    char buf[600], *cert = NULL;
    size_t len = 0;

    (void)state;
    if (load_text(BASE, &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_null(c->api.attest_certificate);
    config_free(c);
    c = NULL;
    if (load_text(BASE "api:\n  attestation:\n    certificate: " CASTOR_TEST_DATA
                       "/attest/test-cert.pem\n    account: \"123456789012\"\n"
                       "    region: us-east-1\n    static_nodes: [gpu-box-1, gpu-box-2]\n",
                  &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_int_equal(file_read_all(CASTOR_TEST_DATA "/attest/test-cert.pem", &cert, &len, NULL), 0);
    assert_int_equal(c->api.attest_certificate_len, len);
    assert_memory_equal(c->api.attest_certificate, cert, len);
    assert_string_equal(c->api.attest_account, "123456789012");
    assert_string_equal(c->api.attest_region, "us-east-1");
    assert_string_equal(c->api.attest_static_nodes[0], "gpu-box-1");
    assert_string_equal(c->api.attest_static_nodes[1], "gpu-box-2");
    assert_null(c->api.attest_static_nodes[2]);
    assert_null(c->api.attest_google_certs);
    free(cert);
    config_free(c);
    c = NULL;
    /* Compute Engine alone: the certificates file's path beside the config (read at each check,
     * so it need not exist yet) */
    if (load_text(BASE "api:\n  attestation:\n    google_certificates: google-certs.json\n"
                       "    audience: http://10.128.0.5:8470\n    project: my-project\n",
                  &c, &e, NULL) < 0)
        fail_msg("%s", err_format(&e, buf, sizeof(buf)));
    assert_null(c->api.attest_certificate);
    assert_non_null(strstr(c->api.attest_google_certs, "/google-certs.json"));
    assert_true(c->api.attest_google_certs[0] == '/');
    assert_string_equal(c->api.attest_audience, "http://10.128.0.5:8470");
    assert_string_equal(c->api.attest_project, "my-project");
    config_free(c);
}

/* pollux's power mean: as given, 0 included (the geometric mean, not "unset"); not given, the
 * geometric mean when castor's planner rents the fleet (FLEET_CASTOR_P_MEAN) and pollux's own
 * default otherwise. */
static void config_load__pollux_power_mean(void **state)
{
    static const struct {
        const char *yaml;
        int set;
        double p;
    } cases[] = {
        {BASE "pollux:\n  p_mean: 0\nfleet:\n  planner: fixed\n", 1, 0.0},
        {BASE "pollux:\n  p_mean: -1\n", 1, -1.0},
        {BASE, 1, FLEET_CASTOR_P_MEAN},
        {BASE "pollux:\n  restart_penalty: 60\n", 1, FLEET_CASTOR_P_MEAN},
        {BASE "fleet:\n  planner: fixed\n", 0, 0.0},
        {BASE "policy: castor\n", 0, 0.0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct config *c = NULL;
        struct error e = {0};
        char buf[600];

        if (load_text(cases[i].yaml, &c, &e, NULL) < 0)
            fail_msg("case %zu: %s", i, err_format(&e, buf, sizeof(buf)));
        if (c->pcfg.p_mean_set != cases[i].set || c->pcfg.p_mean != cases[i].p)
            fail_msg("case %zu: p_mean %g (set %d), expected %g (set %d)", i, c->pcfg.p_mean,
                     c->pcfg.p_mean_set, cases[i].p, cases[i].set);
        config_free(c);
    }
}

static void config_load__missing_file(void **state)
{
    struct config *c = NULL;
    struct error e = {0};

    (void)state;
    assert_int_equal(config_load(DATA "/no-such.yaml", &c, &e), ERR_NOENT);
    assert_null(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_load__every_key),
        cmocka_unit_test(config_load__the_example),
        cmocka_unit_test(config_template__job_name_and_spec),
        cmocka_unit_test(config_load__faults),
        cmocka_unit_test(config_api_url__as_a_local_process_reaches_it),
        cmocka_unit_test(config_reload_check__restart_only_keys),
        cmocka_unit_test(config_reload_check__warns_of_every_restart_key),
        cmocka_unit_test(config_load__fleet_band_one_bound),
        cmocka_unit_test(config_job_spec__a_job_file),
        cmocka_unit_test(config_load__every_bad_key_located),
        cmocka_unit_test(config_load__api_transport_and_limits),
        cmocka_unit_test(config_load__api_attestation),
        cmocka_unit_test(config_load__missing_file),
        cmocka_unit_test(config_load__pollux_power_mean),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
