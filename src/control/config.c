/* config.c: reading and checking the daemon's configuration, and job specs from YAML. */
#include "control/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/realworld.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/http_server.h"
#include "util/json.h"
#include "util/timestamp.h"

const char *const config_worlds[] = {"local", "aws", "gcp", "fake", NULL};

static const char *const config_levels[] = {"debug", "info", "warn", "error", NULL};

/* ---- helpers ---- */

/* A fault at node n: ERR_PARSE with its location. */
static int cf_bad(const struct conf_node *n, struct error *e, const char *what)
{
    return err_set(e, ERR_PARSE, n->file, n->line, n->column, "%s: %s", n->path, what);
}

/* A name as the API takes it, of at most max bytes. */
static int cf_name_ok(const char *s, size_t max)
{
    return strlen(s) <= max && api_name_ok(s);
}

/* A string under key of at most max bytes: 1 with *out set, 0 when absent, or an error. */
static int cf_string(const struct conf_node *m, const char *key, size_t max, const char **out,
                     struct error *e)
{
    const char *s = NULL;
    int rc = conf_get_string(m, key, &s, e);

    if (rc == 1 && strlen(s) > max) {
        const struct conf_node *n = conf_find(m, key);

        return err_set(e, ERR_RANGE, n->file, n->line, n->column, "%s: at most %zu bytes", n->path,
                       max);
    }
    if (rc == 1)
        *out = s;
    return rc;
}

/* A number under key that must be above 0 (and at most hi). */
static int cf_positive(const struct conf_node *m, const char *key, double hi, double *out,
                       struct error *e)
{
    double v = 0;
    int rc = conf_get_double(m, key, 0, hi, &v, e);

    if (rc == 1 && !(v > 0)) {
        const struct conf_node *n = conf_find(m, key);

        return err_set(e, ERR_RANGE, n->file, n->line, n->column,
                       "%s: must be above 0 (and at most %g)", n->path, hi);
    }
    if (rc == 1)
        *out = v;
    return rc;
}

/* A required key: ERR_PARSE at m when absent. */
static int cf_required(const struct conf_node *m, const char *key, struct error *e)
{
    if (conf_find(m, key))
        return 0;
    return err_set(e, ERR_PARSE, m->file, m->line, m->column, "%s%s%s is required", m->path,
                   m->path[0] ? "." : "", key);
}

/* path made absolute against dir (a copy either way); NULL when out of memory. */
static char *cf_path(const char *dir, const char *path)
{
    char *out;
    size_t n;

    if (path[0] == '/' || !dir)
        return strdup(path);
    n = strlen(dir) + strlen(path) + 2;
    if ((out = malloc(n)))
        snprintf(out, n, "%s/%s", dir, path);
    return out;
}

/* ---- job specs ---- */

struct cf_env {
    struct jv *obj;
    int rc;
};

/* env: a mapping of variable names to strings. */
static int cf_env(const struct conf_node *n, struct jv **out, struct error *e)
{
    struct jv *o;
    int rc = 0;

    if (n->kind != CONF_MAPPING && n->kind != CONF_NULL)
        return cf_bad(n, e, "expected a mapping of variable names to strings");
    if (n->n > 256)
        return cf_bad(n, e, "at most 256 variables");
    if (!(o = jv_object()))
        return ERR_NOMEM;
    for (size_t i = 0; i < n->n && rc == 0; i++) {
        const struct conf_entry *en = &n->entries[i];
        const char *v = NULL;

        if (!api_env_name_ok(en->key) || strlen(en->key) > 256)
            rc = err_set(e, ERR_PARSE, n->file, en->line, en->column,
                         "%s: \"%.64s\" is not a variable name", n->path, en->key);
        else if ((rc = conf_as_string(en->value, &v, e)) == 0 && strlen(v) > 32768)
            rc = cf_bad(en->value, e, "at most 32768 bytes");
        else if (rc == 0 && jv_set(o, en->key, jv_string(v)) < 0)
            rc = ERR_NOMEM;
    }
    if (rc < 0) {
        jv_free(o);
        return rc;
    }
    *out = o;
    return 0;
}

/* command: a list of 1 to 256 strings (the argv). */
static int cf_command(const struct conf_node *n, struct jv **out, struct error *e)
{
    struct jv *a;
    int rc = 0;

    if (n->kind != CONF_SEQUENCE || n->n == 0 || n->n > 256)
        return cf_bad(n, e, "expected a list of 1 to 256 strings (the argv)");
    if (!(a = jv_array()))
        return ERR_NOMEM;
    for (size_t i = 0; i < n->n && rc == 0; i++) {
        const char *s = NULL;

        if ((rc = conf_as_string(n->items[i], &s, e)) == 0 && strlen(s) > 4096)
            rc = cf_bad(n->items[i], e, "at most 4096 bytes");
        else if (rc == 0 && jv_push(a, jv_string(s)) < 0)
            rc = ERR_NOMEM;
    }
    if (rc < 0) {
        jv_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

/* deadline: seconds since the epoch, or an ISO 8601 time. */
static int cf_deadline(const struct conf_node *m, double *out, struct error *e)
{
    const struct conf_node *n = conf_find(m, "deadline");
    int64_t t;

    if (!n)
        return 0;
    if (n->kind == CONF_SCALAR && !n->quoted &&
        conf_as_double(n, -HUGE_VAL, HUGE_VAL, out, NULL) == 0)
        return conf_as_double(n, 0, 253402300799.0, out, e); /* seconds, in range */
    if (n->kind != CONF_SCALAR || timestamp_parse_iso8601(n->text, &t) < 0)
        return cf_bad(n, e,
                      "expected seconds since the epoch or an ISO 8601 time "
                      "(2024-05-01T12:00:00Z)");
    *out = (double)t;
    return 0;
}

int config_job_spec(const struct conf_node *m, int in_template, char **json, char **name,
                    struct error *e)
{
    const char *const *keys = api_job_spec_keys;
    const char *nm = NULL, *workdir = NULL, *image = NULL, *family = NULL;
    const char *reconf = API_RECONFIGURE_RESTART;
    double m0 = 0, maxb = 0, local = 0, ckpt = 600, samples = NAN, deadline = NAN;
    double hang = API_HANG_TIMEOUT_DEFAULT, max_dollars = NAN;
    long minr = 1, maxr = 0, reqr = 0, prio = 0, restarts = API_MAX_RESTARTS_DEFAULT;
    struct jv *o = NULL, *cmd = NULL, *env = NULL;
    const struct conf_node *n;
    char *text = NULL, *name_copy = NULL;
    int rc;

    if ((rc = conf_check_keys(m, keys, e)) < 0)
        return rc;
    if (m->kind != CONF_MAPPING)
        return cf_bad(m, e, "expected a job: a mapping of its keys");
    if (in_template && (n = conf_find(m, "name")))
        return cf_bad(n, e, "a template's job is named after the template");
    if (in_template && (n = conf_find(m, "deadline")))
        return cf_bad(n, e, "a template's job takes the template's deadline_after");
    if (!in_template && ((rc = cf_required(m, "name", e)) < 0 ||
                         (rc = cf_string(m, "name", CONFIG_NAME_MAX, &nm, e)) < 0))
        return rc;
    if (nm && !cf_name_ok(nm, CONFIG_NAME_MAX))
        return cf_bad(conf_find(m, "name"), e,
                      "letters, digits, '.', '_' or '-', starting with a letter or digit");
    if ((rc = cf_required(m, "command", e)) < 0 ||
        (rc = cf_command(conf_find(m, "command"), &cmd, e)) < 0)
        return rc;
    if ((rc = cf_string(m, "workdir", 4096, &workdir, e)) < 0 ||
        (rc = cf_string(m, "image", 1024, &image, e)) < 0)
        goto out;
    if (!workdir && !image) {
        rc = err_set(e, ERR_PARSE, m->file, m->line, m->column,
                     "%s: a workdir or an image is required", m->path);
        goto out;
    }
    if ((n = conf_find(m, "env")) && (rc = cf_env(n, &env, e)) < 0)
        goto out;
    if ((rc = cf_required(m, "init_batch_size", e)) < 0 ||
        (rc = cf_positive(m, "init_batch_size", API_BATCH_MAX, &m0, e)) < 0 ||
        (rc = cf_required(m, "max_batch_size", e)) < 0 ||
        (rc = conf_get_double(m, "max_batch_size", m0, API_BATCH_MAX, &maxb, e)) < 0 ||
        (rc = cf_required(m, "max_local_bsz", e)) < 0 ||
        (rc = conf_get_double(m, "max_local_bsz", API_LOCAL_BSZ_MIN, API_BATCH_MAX, &local, e)) <
            0 ||
        (rc = conf_get_long(m, "min_replicas", 1, 100000, &minr, e)) < 0 ||
        (rc = cf_required(m, "max_replicas", e)) < 0 ||
        (rc = conf_get_long(m, "max_replicas", minr, 100000, &maxr, e)) < 0 ||
        (rc = conf_get_long(m, "replicas", minr, maxr, &reqr, e)) < 0 ||
        (rc = cf_positive(m, "checkpoint_interval", 1e7, &ckpt, e)) < 0 ||
        (rc = cf_positive(m, "samples", API_SAMPLES_MAX, &samples, e)) < 0 ||
        (rc = cf_string(m, "family", API_FAMILY_MAX, &family, e)) < 0 ||
        (rc = cf_deadline(m, &deadline, e)) < 0 ||
        (rc = conf_get_long(m, "priority", -1000, 1000, &prio, e)) < 0 ||
        (rc = conf_get_long(m, "max_restarts", 0, API_MAX_RESTARTS_MAX, &restarts, e)) < 0 ||
        (rc = conf_get_double(m, "hang_timeout", 0, 1e7, &hang, e)) < 0 ||
        (rc = cf_positive(m, "max_dollars", API_MAX_DOLLARS_MAX, &max_dollars, e)) < 0 ||
        (rc = cf_string(m, "reconfigure", 16, &reconf, e)) < 0)
        goto out;
    if (strcmp(reconf, API_RECONFIGURE_RESTART) != 0 &&
        strcmp(reconf, API_RECONFIGURE_IN_FLIGHT) != 0) {
        rc = cf_bad(conf_find(m, "reconfigure"), e, "expected restart or in_flight");
        goto out;
    }
    if (family && !api_family_ok(family)) {
        rc = cf_bad(conf_find(m, "family"), e, API_FAMILY_CHARS);
        goto out;
    }
    rc = 0;
    if (reqr == 0) /* not given: the gang minimum */
        reqr = minr;
    if (!(o = jv_object())) {
        rc = ERR_NOMEM;
        goto out;
    }
    if (nm)
        rc |= jv_set(o, "name", jv_string(nm));
    rc |= jv_set(o, "command", cmd);
    cmd = NULL;
    rc |= jv_set(o, "workdir", workdir ? jv_string(workdir) : jv_null());
    rc |= jv_set(o, "image", image ? jv_string(image) : jv_null());
    rc |= jv_set(o, "env", env ? env : jv_object());
    env = NULL;
    rc |= jv_set(o, "init_batch_size", jv_number(m0));
    rc |= jv_set(o, "max_batch_size", jv_number(maxb));
    rc |= jv_set(o, "max_local_bsz", jv_number(local));
    rc |= jv_set(o, "min_replicas", jv_integer(minr));
    rc |= jv_set(o, "max_replicas", jv_integer(maxr));
    rc |= jv_set(o, "replicas", jv_integer(reqr));
    rc |= jv_set(o, "checkpoint_interval", jv_number(ckpt));
    rc |= jv_set(o, "samples", jv_number(samples)); /* NAN (not given): null, as the API */
    rc |= jv_set(o, "family", family ? jv_string(family) : jv_null());
    if (!in_template)
        rc |= jv_set(o, "deadline", jv_number(deadline));
    rc |= jv_set(o, "priority", jv_integer(prio));
    rc |= jv_set(o, "max_restarts", jv_integer(restarts));
    rc |= jv_set(o, "hang_timeout", jv_number(hang));
    rc |= jv_set(o, "max_dollars", jv_number(max_dollars)); /* NAN (no limit): null */
    rc |= jv_set(o, "reconfigure", jv_string(reconf));
    if (rc != 0 || jv_dump(o, &text) < 0 || (nm && !(name_copy = strdup(nm)))) {
        rc = ERR_NOMEM;
        goto out;
    }
    *json = text;
    text = NULL;
    *name = name_copy;
    name_copy = NULL;
out:
    free(text);
    free(name_copy);
    jv_free(o);
    jv_free(cmd);
    jv_free(env);
    return rc;
}

/* ---- the sections ---- */

/* api.attestation's Compute Engine part: google_certificates (a path, read at each check, so
 * not now), audience and project (required with it). */
static int cf_attestation_gcp(struct config *c, const struct conf_node *s, struct error *e)
{
    const char *certs = NULL, *audience = NULL, *project = NULL;
    int rc;

    if ((rc = cf_string(s, "google_certificates", 4000, &certs, e)) < 0 ||
        (rc = cf_string(s, "audience", 512, &audience, e)) < 0 ||
        (rc = cf_string(s, "project", 64, &project, e)) < 0)
        return rc;
    if (!certs && (audience || project))
        return cf_bad(conf_find(s, audience ? "audience" : "project"), e,
                      "goes with google_certificates (Compute Engine nodes' identity tokens)");
    if (!certs)
        return 0;
    if (!audience)
        return cf_bad(s, e,
                      "audience is required with google_certificates: the controller URL that "
                      "castor-node asks its identity tokens for (its CASTOR_URL)");
    /* a token names the instance by zone and name, which anyone picks in a project of their own:
     * only the project says the instance is the fleet's */
    if (!project)
        return cf_bad(s, e,
                      "project is required with google_certificates: an instance of any project "
                      "may carry a fleet node's zone and name");
    if (!(c->api.attest_google_certs = cf_path(c->dir, certs)) ||
        !(c->api.attest_audience = strdup(audience)) ||
        (project && !(c->api.attest_project = strdup(project))))
        return ERR_NOMEM;
    return 0;
}

/* api.attestation's static_nodes: instance ids that register without a proof. */
static int cf_attestation_static(struct config *c, const struct conf_node *s, struct error *e)
{
    const struct conf_node *list = conf_find(s, "static_nodes");
    int rc;

    if (!list)
        return 0;
    if (list->kind != CONF_SEQUENCE || list->n > 4096)
        return cf_bad(list, e, "expected a list of at most 4096 instance ids");
    if (!(c->api.attest_static_nodes = calloc(list->n + 1, sizeof(char *))))
        return ERR_NOMEM;
    for (size_t i = 0; i < list->n; i++) {
        const char *id = NULL;

        if ((rc = conf_as_string(list->items[i], &id, e)) < 0)
            return rc;
        if (!cf_name_ok(id, 128))
            return cf_bad(list->items[i], e,
                          "an instance id is 1 to 128 letters, digits, '.', '_' or '-'");
        if (!(c->api.attest_static_nodes[i] = strdup(id)))
            return ERR_NOMEM;
    }
    return 0;
}

/* api.attestation: {certificate: FILE, account, region (EC2); google_certificates: FILE,
 * audience, project (Compute Engine); static_nodes: [ids]}, with at least one cloud's. The EC2
 * certificate is read now, and must hold an RSA key. */
static int cf_attestation(struct config *c, const struct conf_node *api, struct error *e)
{
    static const char *const keys[] = {"certificate",         "account",  "region",
                                       "google_certificates", "audience", "project",
                                       "static_nodes",        NULL};
    const struct conf_node *s = NULL;
    const char *cert = NULL, *account = NULL, *region = NULL;
    char *path = NULL;
    unsigned char sig = 0;
    struct error fe = {0};
    int rc;

    if (!api || (rc = conf_get_section(api, "attestation", keys, &s, e)) < 0 || !s)
        return api ? rc : 0;
    if ((rc = cf_string(s, "certificate", 4000, &cert, e)) < 0 ||
        (rc = cf_string(s, "account", 64, &account, e)) < 0 ||
        (rc = cf_string(s, "region", 64, &region, e)) < 0 || (rc = cf_attestation_gcp(c, s, e)) < 0)
        return rc;
    if (!cert && (account || region))
        return cf_bad(conf_find(s, account ? "account" : "region"), e,
                      "goes with certificate (EC2 nodes' identity documents)");
    if (!cert && !c->api.attest_google_certs)
        return cf_bad(s, e,
                      "certificate (EC2: the PEM file of AWS's RSA certificate for the region, "
                      "which signs the instances' identity documents) or google_certificates "
                      "(Compute Engine) is required");
    if (cert) {
        if (!(path = cf_path(c->dir, cert)))
            return ERR_NOMEM;
        rc = file_read_all(path, &c->api.attest_certificate, &c->api.attest_certificate_len, &fe);
        free(path);
        if (rc < 0)
            return cf_bad(conf_find(s, "certificate"), e, fe.msg);
        /* a key that cannot be read says so now, not at the first registration */
        if (crypto_rs256_verify(c->api.attest_certificate, c->api.attest_certificate_len, "", 0,
                                &sig, 1) < 0)
            return cf_bad(conf_find(s, "certificate"), e,
                          "not a PEM certificate or public key of RSA");
    }
    if ((account && !(c->api.attest_account = strdup(account))) ||
        (region && !(c->api.attest_region = strdup(region))))
        return ERR_NOMEM;
    return cf_attestation_static(c, s, e);
}

static int cf_api(struct config *c, const struct conf_node *root, struct error *e)
{
    static const char *const keys[] = {
        "address",     "port",          "tls_cert",   "tls_key",    "threads",
        "max_body",    "insecure_http", "rate_limit", "rate_burst", "max_client_connections",
        "node_tokens", "attestation",   NULL};
    static const char *const node_tokens[] = {"shared", "per-node", NULL};
    const struct conf_node *s = NULL, *at;
    const char *addr = "127.0.0.1", *cert = NULL, *key = NULL;
    long port = 8470, threads = 0, body = 1024 * 1024, burst = 0,
         client_conns = CONFIG_API_MAX_CLIENT_CONNECTIONS;
    double rate = CONFIG_API_RATE_LIMIT;
    int rc, insecure = 0, per_node = 0;

    if ((rc = conf_get_section(root, "api", keys, &s, e)) < 0)
        return rc;
    if (s && ((rc = cf_string(s, "address", 64, &addr, e)) < 0 ||
              (rc = conf_get_long(s, "port", 0, 65535, &port, e)) < 0 ||
              (rc = cf_string(s, "tls_cert", 4000, &cert, e)) < 0 ||
              (rc = cf_string(s, "tls_key", 4000, &key, e)) < 0 ||
              (rc = conf_get_long(s, "threads", 0, 64, &threads, e)) < 0 ||
              (rc = conf_get_long(s, "max_body", 1024, 64L * 1024 * 1024, &body, e)) < 0 ||
              (rc = conf_get_bool(s, "insecure_http", &insecure, e)) < 0 ||
              (rc = conf_get_double(s, "rate_limit", 0, 1e6, &rate, e)) < 0 ||
              (rc = conf_get_long(s, "rate_burst", 1, 1000000, &burst, e)) < 0 ||
              (rc = conf_get_long(s, "max_client_connections", 0, 100000, &client_conns, e)) < 0 ||
              (rc = conf_get_choice(s, "node_tokens", node_tokens, &per_node, e)) < 0))
        return rc;
    if (!cert != !key)
        return err_set(e, ERR_PARSE, s->file, s->line, s->column,
                       "api: tls_cert and tls_key go together (both for TLS, or neither)");
    at = s ? conf_find(s, "address") : NULL;
    if (at && http_server_address_loopback(addr) < 0)
        return err_set(e, ERR_PARSE, at->file, at->line, at->column,
                       "api.address: '%.64s' is not a numeric IPv4 or IPv6 address", addr);
    if (at && !cert && !insecure && http_server_address_loopback(addr) == 0)
        return err_set(e, ERR_PARSE, at->file, at->line, at->column,
                       "api.address: %.64s is not a loopback address, and plain HTTP would send "
                       "the tokens in clear text: set tls_cert and tls_key (or put a TLS proxy in "
                       "front on loopback), or set insecure_http: true to accept that",
                       addr);
    if (burst > 0 && rate == 0)
        return err_set(e, ERR_PARSE, s->file, s->line, s->column,
                       "api: rate_burst needs a rate_limit above 0");
    c->api.port = (int)port;
    c->api.threads = (unsigned)threads;
    c->api.max_body = (size_t)body;
    c->api.insecure_http = insecure;
    c->api.per_node_tokens = per_node;
    c->api.rate_limit = rate;
    c->api.rate_burst = burst > 0 ? (unsigned)burst : (unsigned)ceil(fmax(1.0, 2 * rate));
    c->api.max_client_connections = (unsigned)client_conns;
    if (!(c->api.address = strdup(addr)) || (cert && !(c->api.tls_cert = cf_path(c->dir, cert))) ||
        (key && !(c->api.tls_key = cf_path(c->dir, key))))
        return ERR_NOMEM;
    return cf_attestation(c, s, e);
}

/* faults: {rate, seed, timeout}: the cloud's calls fail at rate (a chaos run's setting). */
static int cf_faults(struct config *c, const struct conf_node *root, struct error *e)
{
    static const char *const keys[] = {"rate", "seed", "timeout", NULL};
    const struct conf_node *s = NULL;
    long seed = 1;
    int rc;

    if ((rc = conf_get_section(root, "faults", keys, &s, e)) < 0)
        return rc;
    if (rc == 0)
        return 0;
    c->faults = (struct config_faults){.on = 1, .rate = 0.2, .seed = 1, .timeout_s = 1.0};
    if (s && ((rc = conf_get_double(s, "rate", 0, 1, &c->faults.rate, e)) < 0 ||
              (rc = conf_get_long(s, "seed", 0, 2147483647, &seed, e)) < 0 ||
              (rc = conf_get_double(s, "timeout", 0, 600, &c->faults.timeout_s, e)) < 0))
        return rc;
    c->faults.seed = (uint64_t)seed;
    return 0;
}

static int cf_spend(struct config *c, const struct conf_node *root, struct error *e)
{
    static const char *const keys[] = {"dollars", "period", NULL};
    static const char *const periods[] = {"day", "week", "month", NULL};
    const struct conf_node *s = NULL;
    int rc, period = 2;

    if ((rc = conf_get_section(root, "spend_limit", keys, &s, e)) < 1)
        return rc;
    if ((rc = cf_required(s, "dollars", e)) < 0 ||
        (rc = cf_positive(s, "dollars", 1e9, &c->spend.dollars, e)) < 0 ||
        (rc = conf_get_choice(s, "period", periods, &period, e)) < 0)
        return rc;
    c->spend.period = period;
    return 0;
}

static int cf_tokens(struct config *c, const struct conf_node *root, struct error *e)
{
    static const char *const keys[] = {"node", "job", "user", "metrics", NULL};
    const struct conf_node *s = NULL;
    int rc;

    if ((rc = conf_get_section(root, "tokens", keys, &s, e)) < 1)
        return rc;
    for (int r = 0; r < API_NROLES; r++) {
        const char *p = NULL;

        if (r != API_ROLE_METRICS && (rc = cf_required(s, keys[r], e)) < 0)
            return rc;
        if ((rc = cf_string(s, keys[r], 4000, &p, e)) < 0)
            return rc;
        if (p && !(c->token_files[r] = cf_path(c->dir, p)))
            return ERR_NOMEM;
    }
    return 0;
}

static int cf_policy(struct config *c, const struct conf_node *root, struct error *e)
{
    static const char *const pollux_keys[] = {"p_mean", "restart_penalty", NULL};
    const char *names[16] = {NULL};
    const struct conf_node *s = NULL;
    int rc, k = 0;

    for (size_t i = 0; policy_registry[i] && i < 15; i++)
        names[i] = policy_registry[i]->name;
    for (k = 0; names[k] && strcmp(names[k], "pollux") != 0; k++)
        ;
    if ((rc = conf_get_choice(root, "policy", names, &k, e)) < 0)
        return rc;
    if (!(c->policy = strdup(names[k] ? names[k] : names[0])))
        return ERR_NOMEM;
    if ((rc = conf_get_section(root, "pollux", pollux_keys, &s, e)) < 0)
        return rc;
    if (s && (rc = conf_get_double(s, "p_mean", -100, 100, &c->pcfg.p_mean, e)) < 0)
        return rc;
    c->pcfg.p_mean_set = s && rc == 1;
    if (s && (rc = conf_get_double(s, "restart_penalty", 1, 3600, &c->pcfg.restart_penalty, e)) < 0)
        return rc;
    return 0;
}

static int cf_fleet(struct config *c, const struct conf_node *root, struct error *e)
{
    static const char *const keys[] = {"planner",  "mode",      "value",  "budget",
                                       "patience", "max_nodes", "offer",  "nodes",
                                       "high",     "low",       "window", NULL};
    static const char *const modes[] = {"efficiency", "budget", "deadline", NULL};
    const char *planners[8] = {NULL};
    const struct conf_node *s = NULL;
    const char *offer = NULL;
    int rc, k = 0, mode = 0;
    long v;

    for (size_t i = 0; fleet_registry[i] && i < 7; i++)
        planners[i] = fleet_registry[i]->name;
    for (k = 0; planners[k] && strcmp(planners[k], "castor") != 0; k++)
        ;
    c->fcfg.offer = -1;
    c->fcfg.nodes = 1;
    c->fcfg.max_nodes = 16;
    if ((rc = conf_get_section(root, "fleet", keys, &s, e)) < 0)
        return rc;
    if (s && ((rc = conf_get_choice(s, "planner", planners, &k, e)) < 0 ||
              (rc = conf_get_choice(s, "mode", modes, &mode, e)) < 0 ||
              (rc = conf_get_double(s, "value", 0.001, 1e6, &c->fcfg.value, e)) < 0 ||
              (rc = conf_get_double(s, "budget", 0.01, 1e7, &c->fcfg.budget, e)) < 0 ||
              (rc = conf_get_long(s, "patience", 1, 1000, &v, e)) < 0 ||
              (rc == 1 && (c->fcfg.patience = (int)v, 0)) ||
              (rc = conf_get_long(s, "max_nodes", 1, 4096, &v, e)) < 0 ||
              (rc == 1 && (c->fcfg.max_nodes = (int)v, 0)) ||
              (rc = cf_string(s, "offer", CONFIG_OFFER_MAX, &offer, e)) < 0 ||
              (rc = conf_get_long(s, "nodes", 0, 4096, &v, e)) < 0 ||
              (rc == 1 && (c->fcfg.nodes = (int)v, 0)) ||
              (rc = conf_get_double(s, "high", 0.01, 1, &c->fcfg.util_high, e)) < 0 ||
              (rc = conf_get_double(s, "low", 0.01, 1, &c->fcfg.util_low, e)) < 0 ||
              (rc = conf_get_long(s, "window", 1, 1000, &v, e)) < 0 ||
              (rc == 1 && (c->fcfg.window = (int)v, 0))))
        return rc;
    c->fcfg.mode = (enum fleet_mode)mode;
    if (c->fcfg.mode == FLEET_BUDGET && !(c->fcfg.budget > 0))
        return err_set(e, ERR_PARSE, s->file, s->line, s->column,
                       "fleet: mode budget needs a budget ($/h)");
    if ((rc = conf_check_below(s, "low", c->fcfg.util_low, FLEET_UTIL_LOW, "high",
                               c->fcfg.util_high, FLEET_UTIL_HIGH, e)) < 0)
        return rc;
    if (!(c->fleet = strdup(planners[k])) || (offer && !(c->fleet_offer = strdup(offer))))
        return ERR_NOMEM;
    return 0;
}

static int cf_offers(struct config *c, const struct conf_node *root, struct error *e)
{
    static const char *const keys[] = {"name",  "zone",     "boot", "preemption_rate",
                                       "price", "discount", NULL};
    const struct conf_node *l = conf_find(root, "offers");
    int rc;

    if (!l || l->kind == CONF_NULL)
        return 0;
    if (l->kind != CONF_SEQUENCE)
        return cf_bad(l, e, "expected a list of offers");
    if (!(c->offers = calloc(l->n + 1, sizeof(*c->offers))))
        return ERR_NOMEM;
    for (size_t i = 0; i < l->n; i++) {
        const struct conf_node *m = l->items[i];
        struct config_offer *o = &c->offers[i];
        const char *name = NULL, *zone = NULL;

        o->boot_s = 180;
        o->preempt_rate = NAN;
        if ((rc = conf_check_keys(m, keys, e)) < 0 || (rc = cf_required(m, "name", e)) < 0 ||
            (rc = cf_string(m, "name", CONFIG_OFFER_MAX, &name, e)) < 0 ||
            (rc = cf_string(m, "zone", 127, &zone, e)) < 0 ||
            (rc = conf_get_double(m, "boot", 0, 86400, &o->boot_s, e)) < 0 ||
            (rc = conf_get_double(m, "preemption_rate", 0, 100, &o->preempt_rate, e)) < 0 ||
            (rc = conf_get_double(m, "price", 1e-6, 1e6, &o->price, e)) < 0 ||
            (rc = conf_get_double(m, "discount", 0, 0.99, &o->discount, e)) < 0)
            return rc;
        if (conf_find(m, "price") && conf_find(m, "discount"))
            return cf_bad(conf_find(m, "discount"), e,
                          "give the offer a price or a discount off the cloud's, not both");
        if (config_offer_find(c, name)) /* c->noffers: those read so far */
            return cf_bad(conf_find(m, "name"), e, "this offer is listed twice");
        if (!(o->name = strdup(name)) || (zone && !(o->zone = strdup(zone))))
            return ERR_NOMEM;
        c->noffers++;
    }
    return 0;
}

static int cf_jobs(struct config *c, const struct conf_node *root, struct error *e)
{
    const struct conf_node *l = conf_find(root, "jobs");
    int rc;

    if (!l || l->kind == CONF_NULL)
        return 0;
    if (l->kind != CONF_SEQUENCE)
        return cf_bad(l, e, "expected a list of jobs");
    if (!(c->jobs = calloc(l->n + 1, sizeof(*c->jobs))))
        return ERR_NOMEM;
    for (size_t i = 0; i < l->n; i++) {
        struct config_job *j = &c->jobs[i];

        if ((rc = config_job_spec(l->items[i], 0, &j->spec, &j->name, e)) < 0)
            return rc;
        c->njobs++;
        for (size_t k = 0; k < i; k++)
            if (strcmp(c->jobs[k].name, j->name) == 0)
                return cf_bad(conf_find(l->items[i], "name"), e, "a job of this name is listed");
    }
    return 0;
}

/*
 * The file's column of byte offset (1-based) of scalar n's text, when the file shows that text as
 * it is on n's line (plain, or quoted without an escape): read again from n's file, on this error
 * path only. 0 when it does not (a block scalar `|` or `>`, an escape, a scalar over several
 * lines, a file that changed or cannot be read): no column inside the text is then known.
 */
static int cf_text_column(const struct conf_node *n, int offset)
{
    char *data = NULL;
    const char *p, *end;
    size_t len = 0, tl = strlen(n->text), q = n->quoted ? 1 : 0;
    int line = 1, col = 1, rc = 0;

    if (offset < 1 || (size_t)offset > tl + 1 || memchr(n->text, '\n', tl) ||
        file_read_all(n->file, &data, &len, NULL) < 0)
        return 0;
    p = data + conf_bom_len(data, len); /* skipped by the parser too */
    end = data + len;
    for (; p < end && line < n->line; p++)
        line += *p == '\n';
    /* columns count characters: a UTF-8 sequence is one */
    while (p < end && *p != '\n' && col < n->column) {
        for (p++; p < end && ((unsigned char)*p & 0xC0) == 0x80; p++)
            ;
        col++;
    }
    if (line != n->line || col != n->column || (size_t)(end - p) < tl + 2 * q ||
        (q && *p != '"' && *p != '\'') || memcmp(p + q, n->text, tl) != 0 || (q && p[q + tl] != *p))
        goto out;
    rc = n->column + (int)q;
    for (int i = 0; i < offset - 1; i++)
        rc += ((unsigned char)n->text[i] & 0xC0) != 0x80;
out:
    free(data);
    return rc;
}

static int cf_templates(struct config *c, const struct conf_node *root, struct error *e)
{
    static const char *const keys[] = {"name", "schedule", "deadline_after", "job", NULL};
    const struct conf_node *l = conf_find(root, "templates");
    int rc;

    if (!l || l->kind == CONF_NULL)
        return 0;
    if (l->kind != CONF_SEQUENCE)
        return cf_bad(l, e, "expected a list of job templates");
    if (!(c->templates = calloc(l->n + 1, sizeof(*c->templates))))
        return ERR_NOMEM;
    for (size_t i = 0; i < l->n; i++) {
        const struct conf_node *m = l->items[i], *sn, *jn;
        struct config_template *t = &c->templates[i];
        const char *name = NULL, *sched = NULL;
        char *ignored = NULL;
        struct error ce = {0};

        if ((rc = conf_check_keys(m, keys, e)) < 0 || (rc = cf_required(m, "name", e)) < 0 ||
            (rc = cf_string(m, "name", CONFIG_NAME_MAX - CONFIG_TEMPLATE_SUFFIX, &name, e)) < 0 ||
            (rc = cf_required(m, "schedule", e)) < 0 ||
            (rc = conf_get_string(m, "schedule", &sched, e)) < 0 ||
            (rc = conf_get_double(m, "deadline_after", 1, 1e8, &t->deadline_after, e)) < 0 ||
            (rc = cf_required(m, "job", e)) < 0)
            return rc;
        if (!cf_name_ok(name, CONFIG_NAME_MAX - CONFIG_TEMPLATE_SUFFIX))
            return cf_bad(conf_find(m, "name"), e,
                          "letters, digits, '.', '_' or '-', starting with a letter or digit");
        for (size_t k = 0; k < i; k++)
            if (strcmp(c->templates[k].name, name) == 0)
                return cf_bad(conf_find(m, "name"), e, "a template of this name is listed");
        sn = conf_find(m, "schedule");
        if (cron_parse(sched, &t->schedule, &ce) < 0) {
            /* at the fault inside the text where the file shows it, else where the value starts */
            int col = cf_text_column(sn, ce.column);

            if (col > 0 || ce.column < 1)
                return err_set(e, ERR_PARSE, sn->file, sn->line, col > 0 ? col : sn->column,
                               "%s: %s", sn->path, ce.msg);
            return err_set(e, ERR_PARSE, sn->file, sn->line, sn->column,
                           "%s: %s (at character %d of the value)", sn->path, ce.msg, ce.column);
        }
        jn = conf_find(m, "job");
        if ((rc = config_job_spec(jn, 1, &t->spec, &ignored, e)) < 0)
            return rc;
        free(ignored);
        if (!(t->name = strdup(name)) || !(t->schedule_text = strdup(sched)))
            return ERR_NOMEM;
        c->ntemplates++;
    }
    return 0;
}

/* The top level. */
static int cf_read(struct config *c, struct error *e)
{
    static const char *const keys[] = {"cluster",
                                       "world",
                                       "cloud",
                                       "interval",
                                       "state",
                                       "log_level",
                                       "launch_timeout",
                                       "seed",
                                       "tput_model",
                                       "api",
                                       "tokens",
                                       "policy",
                                       "pollux",
                                       "fleet",
                                       "offers",
                                       "jobs",
                                       "templates",
                                       "faults",
                                       "register_timeout",
                                       "heartbeat_timeout",
                                       "spend_limit",
                                       NULL};
    static const char *const models[] = {"castor", "pollux", "default", NULL};
    const struct conf_node *root = c->doc->root, *n;
    const char *cluster = NULL, *state = "castor-state.db";
    int rc, world = 0, level = LOG_INFO, model = 0;
    long v;

    c->interval = 60;
    c->launch_timeout = 600;
    c->register_timeout = 900;
    c->heartbeat_timeout = 300;
    c->seed = 1;
    if ((rc = conf_check_keys(root, keys, e)) < 0 || (rc = cf_required(root, "cluster", e)) < 0 ||
        (rc = cf_string(root, "cluster", CONFIG_CLUSTER_MAX, &cluster, e)) < 0)
        return rc;
    if (!cf_name_ok(cluster, CONFIG_CLUSTER_MAX))
        return cf_bad(conf_find(root, "cluster"), e,
                      "letters, digits, '.', '_' or '-', starting with a letter or digit");
    if ((rc = cf_required(root, "world", e)) < 0 ||
        (rc = conf_get_choice(root, "world", config_worlds, &world, e)) < 0)
        return rc;
    /* gcp labels its instances with the cluster id and the launch tokens made of it
     * ("<cluster>-<16 hex digits>"): label values, 1 to 63 of a-z, 0-9, '-' and '_' */
    _Static_assert(CONFIG_CLUSTER_MAX + 17 <= 63, "a launch token must fit a GCE label value");
    if (strcmp(config_worlds[world], "gcp") == 0 &&
        strspn(cluster, "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(cluster))
        return cf_bad(conf_find(root, "cluster"), e,
                      "with world gcp, lower-case letters, digits, '-' or '_' (it labels the "
                      "instances, and Compute Engine's labels take no other)");
    n = conf_find(root, "cloud");
    if (n && n->kind != CONF_MAPPING && n->kind != CONF_NULL)
        return cf_bad(n, e, "expected a mapping (the world's own settings)");
    c->cloud = n;
    if ((rc = conf_get_long(root, "interval", 1, 86400, &v, e)) < 0)
        return rc;
    if (rc == 1)
        c->interval = (int)v;
    if ((rc = cf_string(root, "state", 4000, &state, e)) < 0 ||
        (rc = conf_get_choice(root, "log_level", config_levels, &level, e)) < 0 ||
        (rc = conf_get_double(root, "launch_timeout", 1, 86400, &c->launch_timeout, e)) < 0 ||
        (rc = conf_get_double(root, "register_timeout", 0, 86400, &c->register_timeout, e)) < 0 ||
        (rc = conf_get_double(root, "heartbeat_timeout", 0, 86400, &c->heartbeat_timeout, e)) < 0 ||
        (rc = conf_get_long(root, "seed", 0, 2147483647, &v, e)) < 0)
        return rc;
    if (rc == 1)
        c->seed = (uint64_t)v;
    if ((rc = conf_get_choice(root, "tput_model", models, &model, e)) < 0)
        return rc;
    c->tput_model = tput_model_find(models[model]);
    c->log_level = (enum log_level)level;
    if (!(c->cluster = strdup(cluster)) || !(c->world = strdup(config_worlds[world])) ||
        !(c->state_path = cf_path(c->dir, state)))
        return ERR_NOMEM;
    if ((rc = cf_api(c, root, e)) < 0 || (rc = cf_tokens(c, root, e)) < 0 ||
        (rc = cf_policy(c, root, e)) < 0 || (rc = cf_fleet(c, root, e)) < 0 ||
        (rc = cf_offers(c, root, e)) < 0 || (rc = cf_jobs(c, root, e)) < 0 ||
        (rc = cf_templates(c, root, e)) < 0 || (rc = cf_faults(c, root, e)) < 0 ||
        (rc = cf_spend(c, root, e)) < 0)
        return rc;
    fleet_policy_defaults(c->fleet, c->policy, &c->pcfg);
    return 0;
}

int config_load(const char *path, struct config **out, struct error *e)
{
    struct config *c;
    const char *slash;
    int rc;

    if (!path || !out)
        return err_set(e, ERR_INVAL, "", 0, 0, "no configuration file");
    if (!(c = calloc(1, sizeof(*c))))
        return err_set(e, ERR_NOMEM, path, 0, 0, "out of memory");
    slash = strrchr(path, '/');
    c->path = strdup(path);
    c->dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!c->path || !c->dir) {
        rc = err_set(e, ERR_NOMEM, path, 0, 0, "out of memory");
        goto out;
    }
    if ((rc = conf_load(path, &c->doc, e)) < 0)
        goto out;
    rc = cf_read(c, e);
    if (rc == ERR_NOMEM)
        err_set(e, ERR_NOMEM, path, 0, 0, "out of memory");
out:
    if (rc < 0) {
        config_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

const struct config_offer *config_offer_find(const struct config *c, const char *name)
{
    for (size_t i = 0; name && i < c->noffers; i++)
        if (strcmp(c->offers[i].name, name) == 0)
            return &c->offers[i];
    return NULL;
}

void config_free(struct config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->noffers; i++) {
        free(c->offers[i].name);
        free(c->offers[i].zone);
    }
    if (c->offers) { /* a half-read entry, or the zeroed one after the last */
        free(c->offers[c->noffers].name);
        free(c->offers[c->noffers].zone);
    }
    for (size_t i = 0; c->jobs && i <= c->njobs; i++) {
        free(c->jobs[i].name);
        free(c->jobs[i].spec);
    }
    for (size_t i = 0; c->templates && i <= c->ntemplates; i++) {
        free(c->templates[i].name);
        free(c->templates[i].schedule_text);
        free(c->templates[i].spec);
    }
    free(c->offers);
    free(c->jobs);
    free(c->templates);
    for (int r = 0; r < API_NROLES; r++)
        free(c->token_files[r]);
    free(c->api.address);
    free(c->api.tls_cert);
    free(c->api.tls_key);
    free(c->api.attest_certificate);
    free(c->api.attest_account);
    free(c->api.attest_region);
    for (size_t i = 0; c->api.attest_static_nodes && c->api.attest_static_nodes[i]; i++)
        free(c->api.attest_static_nodes[i]);
    free(c->api.attest_static_nodes);
    free(c->api.attest_google_certs);
    free(c->api.attest_audience);
    free(c->api.attest_project);
    free(c->policy);
    free(c->fleet);
    free(c->fleet_offer);
    free(c->cluster);
    free(c->world);
    free(c->state_path);
    conf_free(c->doc);
    free(c->path);
    free(c->dir);
    free(c);
}

static int cf_same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* 1 when two api sections ask the same attestation. */
static int cf_attest_same(const struct config_api *a, const struct config_api *b)
{
    size_t i = 0;

    if (!a->attest_certificate != !b->attest_certificate ||
        a->attest_certificate_len != b->attest_certificate_len ||
        (a->attest_certificate &&
         memcmp(a->attest_certificate, b->attest_certificate, a->attest_certificate_len) != 0) ||
        !cf_same(a->attest_account, b->attest_account) ||
        !cf_same(a->attest_region, b->attest_region) ||
        !cf_same(a->attest_google_certs, b->attest_google_certs) ||
        !cf_same(a->attest_audience, b->attest_audience) ||
        !cf_same(a->attest_project, b->attest_project) ||
        !a->attest_static_nodes != !b->attest_static_nodes)
        return 0;
    for (; a->attest_static_nodes && a->attest_static_nodes[i]; i++)
        if (!cf_same(a->attest_static_nodes[i], b->attest_static_nodes[i]))
            return 0;
    return !a->attest_static_nodes || !b->attest_static_nodes[i];
}

/* 1 when two document subtrees (either may be NULL) say the same: kinds, texts and quoting, keys
 * in order, items; where they are written is not compared. */
static int cf_tree_same(const struct conf_node *a, const struct conf_node *b)
{
    if (!a || !b)
        return !a && !b;
    if (a->kind != b->kind || a->n != b->n || a->quoted != b->quoted ||
        ((a->kind == CONF_SCALAR || a->kind == CONF_NULL) && !cf_same(a->text, b->text)))
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->kind == CONF_MAPPING ? !cf_same(a->entries[i].key, b->entries[i].key) ||
                                          !cf_tree_same(a->entries[i].value, b->entries[i].value)
                                    : !cf_tree_same(a->items[i], b->items[i]))
            return 0;
    return 1;
}

/* Add name and a space to the list in warn (size bytes) at *len, truncating. */
static void cf_warn_add(char *warn, size_t size, size_t *len, const char *name)
{
    *len += (size_t)snprintf(warn + *len, *len < size ? size - *len : 0, "%s ", name);
}

int config_reload_check(const struct config *old, const struct config *now, char *why,
                        size_t why_size, char *warn, size_t warn_size)
{
    size_t len = 0;

    warn[0] = '\0';
    if (!cf_same(old->cluster, now->cluster))
        return snprintf(why, why_size, "cluster changed (%s to %s): restart to change it",
                        old->cluster, now->cluster),
               1;
    if (!cf_same(old->world, now->world))
        return snprintf(why, why_size, "world changed (%s to %s): restart to change it", old->world,
                        now->world),
               1;
    if (!cf_same(old->state_path, now->state_path))
        return snprintf(why, why_size, "state changed: restart to change it"), 1;
    if (!cf_same(old->api.address, now->api.address) || old->api.port != now->api.port ||
        !cf_same(old->api.tls_cert, now->api.tls_cert) ||
        !cf_same(old->api.tls_key, now->api.tls_key) || old->api.threads != now->api.threads ||
        old->api.max_body != now->api.max_body ||
        old->api.insecure_http != now->api.insecure_http ||
        old->api.rate_limit != now->api.rate_limit || old->api.rate_burst != now->api.rate_burst ||
        old->api.max_client_connections != now->api.max_client_connections ||
        old->api.per_node_tokens != now->api.per_node_tokens ||
        !cf_attest_same(&old->api, &now->api))
        cf_warn_add(warn, warn_size, &len, "api");
    for (int r = 0; r < API_NROLES; r++)
        if (!cf_same(old->token_files[r], now->token_files[r])) {
            cf_warn_add(warn, warn_size, &len, "tokens");
            break;
        }
    if (!cf_tree_same(old->cloud, now->cloud))
        cf_warn_add(warn, warn_size, &len, "cloud");
    if (old->faults.on != now->faults.on || old->faults.rate != now->faults.rate ||
        old->faults.seed != now->faults.seed || old->faults.timeout_s != now->faults.timeout_s)
        cf_warn_add(warn, warn_size, &len, "faults");
    if (old->log_level != now->log_level)
        cf_warn_add(warn, warn_size, &len, "log_level");
    if (old->tput_model != now->tput_model)
        cf_warn_add(warn, warn_size, &len, "tput_model");
    if (len > 0 && len < warn_size)
        warn[len - 1] = '\0';
    return 0;
}

int config_template_job_name(const struct config_template *t, int64_t at, char *buf, size_t size)
{
    char iso[TIMESTAMP_ISO8601_LEN + 1];
    int n;

    if (timestamp_format_iso8601(at, iso) < 0)
        return ERR_RANGE;
    /* "YYYY-MM-DDTHH:MM:SSZ" -> "YYYYMMDDTHHMMZ" */
    n = snprintf(buf, size, "%s-%.4s%.2s%.2sT%.2s%.2sZ", t->name, iso, iso + 5, iso + 8, iso + 11,
                 iso + 14);
    return n < 0 || (size_t)n >= size ? ERR_RANGE : 0;
}

struct cf_copy {
    struct jv *to;
    int rc;
};

static int cf_copy_entry(void *ctx, const char *key, const struct jv *val)
{
    struct cf_copy *k = ctx;

    if (jv_set(k->to, key, jv_ref(val)) < 0)
        k->rc = ERR_NOMEM;
    return k->rc;
}

int config_template_spec(const struct config_template *t, const char *name, int64_t at, char **json)
{
    struct jv *v = NULL;
    struct cf_copy k = {NULL, 0};
    char *text = NULL;
    int rc;

    if ((rc = jv_parse(t->spec, strlen(t->spec), &v, NULL)) < 0)
        return rc;
    rc = ERR_NOMEM;
    /* the name first, then the template's fields in their order, then the deadline */
    if (!(k.to = jv_object()) || jv_set(k.to, "name", jv_string(name)) < 0 ||
        jv_each(v, cf_copy_entry, &k) != 0 ||
        jv_set(k.to, "deadline",
               t->deadline_after > 0 ? jv_number((double)at + t->deadline_after) : jv_null()) < 0 ||
        jv_dump(k.to, &text) < 0)
        goto out;
    *json = text;
    rc = 0;
out:
    jv_free(v);
    jv_free(k.to);
    return rc;
}

void config_api_url(const struct config *c, int port, char *buf, size_t size)
{
    const char *addr = c->api.address ? c->api.address : "127.0.0.1";

    if (strcmp(addr, "0.0.0.0") == 0)
        addr = "127.0.0.1";
    else if (strcmp(addr, "::") == 0)
        addr = "::1";
    if (port <= 0)
        port = c->api.port ? c->api.port : 8470;
    snprintf(buf, size, "%s://%s%s%s:%d", c->api.tls_cert ? "https" : "http",
             strchr(addr, ':') ? "[" : "", addr, strchr(addr, ':') ? "]" : "", port);
}

int config_offer_meta(const struct config *cfg, struct realworld_offer **out)
{
    struct realworld_offer *m = calloc(cfg->noffers + 1, sizeof(*m));

    if (!m)
        return ERR_NOMEM;
    for (size_t i = 0; i < cfg->noffers; i++)
        m[i] = (struct realworld_offer){.name = cfg->offers[i].name,
                                        .zone = cfg->offers[i].zone,
                                        .boot_s = cfg->offers[i].boot_s,
                                        .preempt_rate = cfg->offers[i].preempt_rate,
                                        .price = cfg->offers[i].price,
                                        .discount = cfg->offers[i].discount};
    *out = m;
    return 0;
}
