/* test_local_conf.c: the local cloud from the daemon's configuration (world `local` in the
 * registry): every key read back through the cloud's offers, the defaults taken from the
 * controller (its URL, its token files, castor-node beside it), and every bad key refused at its
 * file:line:column. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "control/config.h"
#include "providers/cloud.h"
#include "util/conf.h"

struct fx {
    char dir[64];
    struct cloud_host host;
};

static int fx_setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/castor-test-local-conf-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    f->host.api_url = "http://127.0.0.1:8470";
    f->host.bin_dir = "/opt/castor/bin";
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

/* Make the local cloud from the `cloud:` section of text. */
static int make(struct fx *f, const char *text, const struct cloud_host *host, struct cloud *out,
                struct error *e)
{
    struct conf *doc = NULL;
    int rc;

    assert_int_equal(conf_parse("castor.yaml", text, strlen(text), &doc, NULL), 0);
    rc = cloud_new("local", conf_find(doc->root, "cloud"), f->dir, host, out, e);
    conf_free(doc);
    return rc;
}

/* Every key, read back through the cloud's offers; a relative run folder made under the
 * configuration's folder. */
static void cloud_local_from_conf__every_key(void **state)
{
    static const char text[] = "cloud:\n"
                               "  run_dir: run\n"
                               "  node_bin: /usr/lib/castor/castor-node\n"
                               "  url: http://10.0.0.1:9000\n"
                               "  node_token_file: node.token\n"
                               "  job_token_file: /etc/castor/job.token\n"
                               "  grace: 5\n"
                               "  offers:\n"
                               "    - name: box.2gpu/spot\n"
                               "      gpus: 2\n"
                               "      gpu_gib: 24\n"
                               "      spot: true\n"
                               "      price: 1.25\n"
                               "      capacity: 3\n"
                               "    - name: big.8gpu\n"
                               "      gpus: 8\n"
                               "      capacity: -1\n"
                               "  env:\n"
                               "    CASTOR_NODE_HEARTBEAT_S: 0.5\n"
                               "    CASTOR_EMULATOR_SPEED: \"200\"\n";
    struct fx *f = *state;
    struct cloud c = {0};
    struct cloud_offer *offers = NULL;
    struct error e = {0};
    char run[128];
    size_t n = 0;

    assert_non_null(cloud_find("local"));
    assert_int_equal(make(f, text, &f->host, &c, &e), 0);
    assert_string_equal(c.ops->name, "local");
    assert_int_equal(cloud_offers(&c, &offers, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(offers[0].name, "box.2gpu/spot");
    assert_int_equal(offers[0].gpus, 2);
    assert_int_equal(offers[0].spot, 1);
    assert_float_equal(offers[0].price, 1.25, 1e-12);
    assert_string_equal(offers[1].name, "big.8gpu");
    assert_int_equal(offers[1].gpus, 8);
    assert_int_equal(offers[1].spot, 0);
    assert_float_equal(offers[1].price, 0, 0);
    free(offers);
    cloud_free(&c);
    snprintf(run, sizeof(run), "%s/run", f->dir);
    assert_int_equal(access(run, F_OK), 0);
}

/* Without a section: one offer of 4 GPUs, the URL and castor-node from the controller. Without
 * the controller's URL or folder, url and node_bin are required. */
static void cloud_local_from_conf__defaults_from_the_controller(void **state)
{
    struct fx *f = *state;
    struct cloud c = {0};
    struct cloud_offer *offers = NULL;
    struct cloud_host none = {0};
    struct error e = {0};
    size_t n = 0;

    assert_int_equal(make(f, "world: local\n", &f->host, &c, &e), 0);
    assert_int_equal(cloud_offers(&c, &offers, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(offers[0].gpus, 4);
    free(offers);
    cloud_free(&c);

    assert_int_equal(make(f, "cloud:\n  url: http://127.0.0.1:1\n", &none, &c, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "node_bin: required"));
    assert_int_equal(make(f, "cloud:\n  node_bin: /bin/true\n", &none, &c, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "url: required"));
    assert_null(c.ops);
}

/* Every bad key: refused with the file, line and column of the fault and a reason. */
static void cloud_local_from_conf__bad_keys(void **state)
{
    static const struct {
        const char *text;
        int code, line, column;
        const char *what;
    } bad[] = {
        {"cloud:\n  grase: 3\n", ERR_UNKNOWN, 2, 3, "grace"},
        {"cloud:\n  grace: -1\n", ERR_RANGE, 2, 10, "cloud.grace"},
        {"cloud:\n  grace: soon\n", ERR_PARSE, 2, 10, "cloud.grace"},
        {"cloud:\n  url: ftp://x\n", ERR_PARSE, 2, 8, "http://"},
        {"cloud:\n  offers: box\n", ERR_PARSE, 2, 11, "list of offers"},
        {"cloud:\n  offers: []\n", ERR_RANGE, 2, 11, "from 1 to"},
        {"cloud:\n  offers:\n    - gpus: 2\n", ERR_PARSE, 3, 7, "name: required"},
        {"cloud:\n  offers:\n    - name: a b\n", ERR_PARSE, 3, 13, "letters, digits"},
        {"cloud:\n  offers:\n    - name: a\n      gpus: 0\n", ERR_RANGE, 4, 13, "gpus"},
        {"cloud:\n  offers:\n    - name: a\n      gpus: 65\n", ERR_RANGE, 4, 13, "gpus"},
        {"cloud:\n  offers:\n    - name: a\n      spot: maybe\n", ERR_PARSE, 4, 13, "spot"},
        {"cloud:\n  offers:\n    - name: a\n      price: -1\n", ERR_RANGE, 4, 14, "price"},
        {"cloud:\n  offers:\n    - name: a\n      capacity: -2\n", ERR_RANGE, 4, 17, "capacity"},
        {"cloud:\n  offers:\n    - name: a\n      gpu: 2\n", ERR_UNKNOWN, 4, 7, "gpus"},
        {"cloud:\n  offers:\n    - name: a\n    - name: a\n", ERR_PARSE, 4, 13, "listed twice"},
        {"cloud:\n  env: [A]\n", ERR_PARSE, 2, 8, "mapping"},
        {"cloud:\n  env:\n    9A: x\n", ERR_PARSE, 3, 5, "not a variable name"},
        {"cloud:\n  env:\n    CASTOR_NODE_TOKEN: s3cret\n", ERR_PARSE, 3, 5, "secrets"},
        {"cloud:\n  env:\n    A: [1]\n", ERR_PARSE, 3, 8, "expected a value"},
    };
    struct fx *f = *state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cloud c = {0};
        struct error e = {0};
        int rc = make(f, bad[i].text, &f->host, &c, &e);

        if (rc != bad[i].code || e.line != bad[i].line || e.column != bad[i].column ||
            strcmp(e.file, "castor.yaml") != 0 || !strstr(e.msg, bad[i].what))
            fail_msg("case %zu: %s:%d:%d: %s (%s), expected %d:%d %s (%s)", i, e.file, e.line,
                     e.column, e.msg, err_name(rc), bad[i].line, bad[i].column, bad[i].what,
                     err_name(bad[i].code));
        assert_null(c.ops);
        assert_null(strstr(e.msg, "s3cret"));
    }
}

/* config/castor-local.yaml reads whole, and its cloud section makes a local cloud with its two
 * offers (the run folder made under a temporary folder, not config/). */
static void cloud_local_from_conf__the_example(void **state)
{
    struct fx *f = *state;
    struct config *cfg = NULL;
    struct cloud c = {0};
    struct cloud_offer *offers = NULL;
    struct error e = {0};
    size_t n = 0;

    if (config_load(CASTOR_CONFDIR "/castor-local.yaml", &cfg, &e) < 0)
        fail_msg("%s:%d:%d: %s", e.file, e.line, e.column, e.msg);
    assert_string_equal(cfg->world, "local");
    assert_int_equal(cloud_new(cfg->world, cfg->cloud, f->dir, &f->host, &c, &e), 0);
    assert_int_equal(cloud_offers(&c, &offers, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(offers[0].name, cfg->fleet_offer);
    free(offers);
    cloud_free(&c);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(cloud_local_from_conf__every_key, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(cloud_local_from_conf__defaults_from_the_controller,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(cloud_local_from_conf__bad_keys, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(cloud_local_from_conf__the_example, fx_setup, fx_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
