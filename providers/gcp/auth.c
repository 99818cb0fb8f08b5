/* auth.c: service-account JWTs, the token endpoint, the metadata server, and the token cache. */
#include "providers/gcp/auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/base64.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/http_client.h"
#include "util/json.h"
#include "util/strbuf.h"

#define DEFAULT_TIMEOUT_MS 10000
#define DEFAULT_REFRESH_SECONDS 300
#define JWT_GRANT "urn:ietf:params:oauth:grant-type:jwt-bearer"

void gcp_sa_key_clear(struct gcp_sa_key *k)
{
    if (!k)
        return;
    crypto_free_string(k->client_email);
    crypto_free_string(k->private_key);
    crypto_free_string(k->private_key_id);
    crypto_free_string(k->token_uri);
    crypto_free_string(k->project_id);
    crypto_wipe(k, sizeof(*k));
}

/* A copy of the string field key of obj into *out (NULL when absent and optional). ERR_PARSE
 * (absent or empty when required, or not a string), ERR_NOMEM. */
static int string_field(const struct jv *obj, const char *key, int required, char **out,
                        const char *where, struct error *e)
{
    const struct jv *v = jv_get(obj, key);
    const char *s = jv_string_value(v);

    *out = NULL;
    if (!v && !required)
        return 0;
    if (!s || (required && !*s))
        return err_set(e, ERR_PARSE, where, 0, 0, "%s is %s", key,
                       !v   ? "missing"
                       : !s ? "not a string"
                            : "empty");
    *out = strdup(s);
    return *out ? 0 : ERR_NOMEM;
}

/* 0 when url may receive a signed assertion: https, or http on loopback. */
static int check_token_uri(const char *url, const char *where, struct error *e)
{
    struct http_client_url u;

    if (http_client_parse_url(url, &u) < 0)
        return err_set(e, ERR_INVAL, where, 0, 0, "token_uri is not an http(s) URL");
    if (strcmp(u.scheme, "https") != 0 && !u.loopback)
        return err_set(e, ERR_INVAL, where, 0, 0,
                       "token_uri must be https (plain http only on loopback): %.200s", url);
    return 0;
}

/* Sign a probe with the key: a key that cannot sign is refused when loaded, not at the first
 * launch. */
static int check_private_key(const char *pem, const char *where, struct error *e)
{
    unsigned char sig[CRYPTO_RS256_MAX_SIG];
    size_t n = 0;
    int rc = crypto_rs256_sign(pem, strlen(pem), "castor", 6, sig, sizeof(sig), &n);

    crypto_wipe(sig, sizeof(sig));
    if (rc == ERR_PARSE)
        return err_set(e, ERR_INVAL, where, 0, 0,
                       "private_key is not an unencrypted RSA private key in PEM");
    if (rc == ERR_RANGE)
        return err_set(e, ERR_INVAL, where, 0, 0, "private_key is shorter than 2048 bits");
    return rc < 0 ? err_set(e, rc, where, 0, 0, "private_key cannot sign (%s)", err_str(rc)) : 0;
}

/* gcp_sa_key_parse with the name to use in messages. */
static int parse_key(const char *text, size_t len, const char *where, struct gcp_sa_key *out,
                     struct error *e)
{
    struct gcp_sa_key k = {0};
    struct error sub = {0};
    struct jv *v = NULL;
    const char *type;
    int rc;

    rc = jv_parse(text, len, &v, &sub);
    if (rc < 0)
        return rc == ERR_PARSE ? err_set(e, ERR_PARSE, where, sub.line, sub.column,
                                         "not a JSON key file: %.200s", sub.msg)
                               : rc;
    if (jv_type_of(v) != JV_OBJECT) {
        rc = err_set(e, ERR_PARSE, where, 0, 0, "not a JSON object");
        goto out;
    }
    type = jv_string_value(jv_get(v, "type"));
    if (!type || strcmp(type, "service_account") != 0) {
        char shown[48];

        snprintf(shown, sizeof(shown), "%.40s", type ? type : "");
        strbuf_printable(shown);
        rc = err_set(e, ERR_INVAL, where, 0, 0,
                     "not a service-account key (type \"%s\"; castor needs \"service_account\")",
                     type ? shown : "(none)");
        goto out;
    }
    rc = string_field(v, "client_email", 1, &k.client_email, where, e);
    if (rc == 0)
        rc = string_field(v, "private_key", 1, &k.private_key, where, e);
    if (rc == 0)
        rc = string_field(v, "token_uri", 1, &k.token_uri, where, e);
    if (rc == 0)
        rc = string_field(v, "private_key_id", 0, &k.private_key_id, where, e);
    if (rc == 0)
        rc = string_field(v, "project_id", 0, &k.project_id, where, e);
    if (rc == 0)
        rc = check_token_uri(k.token_uri, where, e);
    if (rc == 0)
        rc = check_private_key(k.private_key, where, e);
    if (rc < 0)
        goto out;
    *out = k;
    memset(&k, 0, sizeof(k));
out:
    gcp_sa_key_clear(&k);
    jv_free_wiped(v);
    return rc;
}

int gcp_sa_key_parse(const char *text, size_t len, struct gcp_sa_key *out, struct error *e)
{
    if (!out || (!text && len > 0))
        return err_set(e, ERR_INVAL, "gcp key", 0, 0, "no text or no output");
    return parse_key(text, len, "gcp key", out, e);
}

int gcp_sa_key_load(const char *path, struct gcp_sa_key *out, struct error *e)
{
    char *text = NULL;
    size_t len = 0;
    int rc;

    if (!path || !out)
        return err_set(e, ERR_INVAL, "gcp key", 0, 0, "no path or no output");
    rc = file_read_all(path, &text, &len, e);
    if (rc < 0)
        return rc;
    rc = parse_key(text, len, path, out, e);
    crypto_wipe(text, len);
    free(text);
    return rc;
}

/* Append the base64url of v's compact JSON to b. ERR_NOMEM. */
static int add_json_b64(struct strbuf *b, struct jv *v)
{
    char *text = NULL;
    int rc = v ? jv_dump(v, &text) : ERR_NOMEM;

    if (rc == 0) {
        base64_url_encode(b, text, strlen(text));
        crypto_wipe(text, strlen(text));
        free(text);
    }
    return rc;
}

int gcp_jwt_assertion(const struct gcp_sa_key *k, const char *scope, int64_t now, char **out,
                      struct error *e)
{
    struct jv *header = jv_object(), *claims = jv_object();
    struct strbuf b = {0};
    unsigned char sig[CRYPTO_RS256_MAX_SIG];
    size_t sig_len = 0;
    int rc;

    if (!k || !k->client_email || !k->private_key || !k->token_uri || !scope || now < 0 || !out) {
        rc = err_set(e, ERR_INVAL, "gcp jwt", 0, 0, "a key, a scope and a time are needed");
        goto out;
    }
    rc = jv_set(header, "alg", jv_string("RS256"));
    if (rc == 0)
        rc = jv_set(header, "typ", jv_string("JWT"));
    if (rc == 0 && k->private_key_id)
        rc = jv_set(header, "kid", jv_string(k->private_key_id));
    if (rc == 0)
        rc = jv_set(claims, "iss", jv_string(k->client_email));
    if (rc == 0)
        rc = jv_set(claims, "scope", jv_string(scope));
    if (rc == 0)
        rc = jv_set(claims, "aud", jv_string(k->token_uri));
    if (rc == 0)
        rc = jv_set(claims, "iat", jv_integer(now));
    if (rc == 0)
        rc = jv_set(claims, "exp", jv_integer(now + GCP_JWT_LIFETIME));
    if (rc == 0)
        rc = add_json_b64(&b, header);
    strbuf_chr(&b, '.');
    if (rc == 0)
        rc = add_json_b64(&b, claims);
    if (rc == 0 && b.failed)
        rc = ERR_NOMEM;
    if (rc < 0) {
        rc = err_set(e, rc, "gcp jwt", 0, 0, "cannot build the JWT (%s)", err_str(rc));
        goto out;
    }
    rc = crypto_rs256_sign(k->private_key, strlen(k->private_key), b.p, b.len, sig, sizeof(sig),
                           &sig_len);
    if (rc < 0) {
        rc = err_set(e, rc, "gcp jwt", 0, 0, "cannot sign the JWT (%s)", err_str(rc));
        goto out;
    }
    strbuf_chr(&b, '.');
    base64_url_encode(&b, sig, sig_len);
    *out = strbuf_take(&b);
    if (!*out)
        rc = err_set(e, ERR_NOMEM, "gcp jwt", 0, 0, "out of memory");
out:
    crypto_wipe(sig, sizeof(sig));
    strbuf_free(&b);
    jv_free_wiped(header);
    jv_free_wiped(claims);
    return rc;
}

struct gcp_auth {
    struct gcp_sa_key key;
    int have_key;
    char *metadata_url;
    char *scope;
    long timeout_ms;
    int64_t refresh_seconds;
    int tls_insecure;
    struct http_client *http;
    char *token; /* the cached access token, or NULL */
    int64_t expires;
};

void gcp_auth_free(struct gcp_auth *a)
{
    if (!a)
        return;
    gcp_sa_key_clear(&a->key);
    crypto_free_string(a->token);
    free(a->metadata_url);
    free(a->scope);
    http_client_free(a->http);
    free(a);
}

int gcp_auth_new(const struct gcp_auth_config *cfg, struct gcp_auth **out, struct error *e)
{
    static const struct gcp_auth_config none;
    const char *key_file, *env_key = getenv("GOOGLE_APPLICATION_CREDENTIALS");
    const char *host = getenv("GCE_METADATA_HOST");
    struct http_client_url u;
    struct gcp_auth *a;
    char url[512];
    int rc;

    if (!out)
        return ERR_INVAL;
    if (!cfg)
        cfg = &none;
    a = calloc(1, sizeof(*a));
    if (!a)
        return ERR_NOMEM;
    key_file = cfg->key_file && *cfg->key_file ? cfg->key_file
               : env_key && *env_key           ? env_key
                                               : NULL;
    if (key_file) {
        rc = gcp_sa_key_load(key_file, &a->key, e);
        if (rc < 0)
            goto fail;
        a->have_key = 1;
        rc = http_client_parse_url(a->key.token_uri, &u);
    } else {
        if (cfg->metadata_url && *cfg->metadata_url)
            snprintf(url, sizeof(url), "%s", cfg->metadata_url);
        else
            snprintf(url, sizeof(url), "http://%.200s%s", host && *host ? host : GCP_METADATA_HOST,
                     GCP_METADATA_TOKEN_PATH);
        rc = http_client_parse_url(url, &u);
        if (rc < 0) {
            rc = err_set(e, ERR_INVAL, "gcp auth", 0, 0,
                         "the metadata server's URL is not an http(s) URL: %.200s", url);
            goto fail;
        }
        a->metadata_url = strdup(url);
    }
    if (cfg->tls_insecure && !u.loopback) {
        rc = err_set(e, ERR_INVAL, "gcp auth", 0, 0,
                     "TLS verification may be turned off only for a loopback token endpoint");
        goto fail;
    }
    a->scope = strdup(cfg->scope && *cfg->scope ? cfg->scope : GCP_SCOPE_CLOUD_PLATFORM);
    if (!a->scope || (!a->have_key && !a->metadata_url)) {
        rc = ERR_NOMEM;
        goto fail;
    }
    a->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
    a->refresh_seconds = cfg->refresh_seconds > 0 ? cfg->refresh_seconds : DEFAULT_REFRESH_SECONDS;
    a->tls_insecure = cfg->tls_insecure;
    rc = http_client_new(&a->http);
    if (rc < 0)
        goto fail;
    *out = a;
    return 0;
fail:
    gcp_auth_free(a);
    return rc;
}

const char *gcp_auth_source(const struct gcp_auth *a)
{
    return a->have_key ? "service-account" : "metadata";
}

const char *gcp_auth_project(const struct gcp_auth *a)
{
    return a->have_key ? a->key.project_id : NULL;
}

void gcp_auth_invalidate(struct gcp_auth *a)
{
    if (a) {
        crypto_free_string(a->token);
        a->token = NULL;
        a->expires = 0;
    }
}

/* Google's OAuth error ({"error": code, "error_description": text}) as one clean line, or "". */
static void oauth_error(const char *body, size_t len, char *buf, size_t size)
{
    struct jv *v = NULL;
    const char *code, *desc;

    buf[0] = '\0';
    if (jv_parse(body, len, &v, NULL) < 0)
        return;
    code = jv_string_value(jv_get(v, "error"));
    desc = jv_string_value(jv_get(v, "error_description"));
    if (code)
        snprintf(buf, size, ": %.64s%s%.200s", code, desc ? ": " : "", desc ? desc : "");
    strbuf_printable(buf);
    jv_free_wiped(v);
}

/* Read {"access_token", "expires_in", "token_type"} into a new token and its expiry. */
static int read_token(const char *body, size_t len, const char *where, int64_t now, char **token,
                      int64_t *expires, struct error *e)
{
    struct jv *v = NULL;
    const char *t, *type;
    double ttl = 0;
    int rc;

    rc = jv_parse(body, len, &v, NULL);
    if (rc < 0)
        return rc == ERR_PARSE ? err_set(e, ERR_PARSE, where, 0, 0, "the answer is not JSON") : rc;
    t = jv_string_value(jv_get(v, "access_token"));
    type = jv_string_value(jv_get(v, "token_type"));
    if (!t || !*t || jv_number_value(jv_get(v, "expires_in"), &ttl) < 0 || !(ttl > 0) ||
        ttl > 1e9) {
        rc = err_set(e, ERR_PARSE, where, 0, 0,
                     "the answer lacks access_token or a positive expires_in");
        goto out;
    }
    if (type && strcasecmp(type, "Bearer") != 0) {
        rc = err_set(e, ERR_PARSE, where, 0, 0, "the token is not a Bearer token");
        goto out;
    }
    for (const char *p = t; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f) {
            rc = err_set(e, ERR_PARSE, where, 0, 0, "the token is not one printable word");
            goto out;
        }
    *token = strdup(t);
    if (!*token) {
        rc = ERR_NOMEM;
        goto out;
    }
    *expires = now + (int64_t)ttl;
out:
    jv_free_wiped(v);
    return rc;
}

/* One request for a token: the JWT exchanged at token_uri, or the metadata server asked. */
static int fetch(struct gcp_auth *a, int64_t now, char **token, int64_t *expires, struct error *e)
{
    struct http_client_header h[1];
    struct http_client_request req = {0};
    struct http_client_response r = {0};
    struct strbuf body = {0};
    char *assertion = NULL, detail[300], where[64];
    int rc;

    snprintf(where, sizeof(where), "gcp auth (%s)", gcp_auth_source(a));
    req.timeout_ms = a->timeout_ms;
    req.insecure = a->tls_insecure;
    if (a->have_key) {
        rc = gcp_jwt_assertion(&a->key, a->scope, now, &assertion, e);
        if (rc < 0)
            goto out;
        strbuf_str(&body, "grant_type=");
        strbuf_add_uri_encoded(&body, JWT_GRANT, strlen(JWT_GRANT));
        strbuf_str(&body, "&assertion=");
        strbuf_add_uri_encoded(&body, assertion, strlen(assertion));
        if (body.failed) {
            rc = ERR_NOMEM;
            goto out;
        }
        h[0] = (struct http_client_header){"Content-Type", "application/x-www-form-urlencoded"};
        req.method = "POST";
        req.url = a->key.token_uri;
        req.body = body.p;
        req.body_len = body.len;
    } else {
        h[0] = (struct http_client_header){"Metadata-Flavor", "Google"};
        req.method = "GET";
        req.url = a->metadata_url;
    }
    req.headers = h;
    req.nheaders = 1;
    rc = http_client_do(a->http, &req, &r, e);
    if (rc < 0)
        goto out;
    if (r.status != 200) {
        oauth_error(r.body, r.body_len, detail, sizeof(detail));
        strbuf_redact(detail, assertion);
        if (r.status == 429 || r.status >= 500)
            rc = err_set(e, ERR_AGAIN, where, 0, 0, "%s answers HTTP %ld%s", req.url, r.status,
                         detail);
        else if (a->have_key && (r.status == 400 || r.status == 401 || r.status == 403))
            rc = err_set(e, ERR_INVAL, where, 0, 0,
                         "the token endpoint refused the key (HTTP %ld)%s", r.status, detail);
        else if (!a->have_key && r.status == 404)
            rc = err_set(e, ERR_NOENT, where, 0, 0,
                         "the metadata server has no service account for this instance");
        else
            rc =
                err_set(e, ERR_IO, where, 0, 0, "%s answers HTTP %ld%s", req.url, r.status, detail);
        goto out;
    }
    rc = read_token(r.body, r.body_len, where, now, token, expires, e);
out:
    if (r.body)
        crypto_wipe(r.body, r.body_len);
    http_client_response_clear(&r);
    strbuf_free(&body);
    crypto_free_string(assertion);
    return rc;
}

int gcp_auth_token(struct gcp_auth *a, int64_t now, char **out, struct error *e)
{
    char *fresh = NULL, *copy;
    int64_t expires = 0;
    int rc;

    if (!a || !out)
        return ERR_INVAL;
    if (!a->token || now >= a->expires - a->refresh_seconds) {
        rc = fetch(a, now, &fresh, &expires, e);
        if (rc < 0 && !(a->token && now < a->expires))
            return rc;
        if (rc == 0) {
            crypto_free_string(a->token);
            a->token = fresh;
            a->expires = expires;
        }
    }
    copy = strdup(a->token);
    if (!copy)
        return ERR_NOMEM;
    *out = copy;
    return 0;
}
