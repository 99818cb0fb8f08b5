/* attest.c: an EC2 instance identity document checked against AWS's RSA certificate (the
 * signature over its exact bytes, RS256; then its instance, account and region), and a Compute
 * Engine identity token against Google's certificates (its RS256 signature under the key its
 * header names; then issuer, audience, times, project and instance). */
#include "control/attest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/crypto.h"
#include "util/error.h"
#include "util/file.h"
#include "util/json.h"

/* Set why (fmt and what follows) and return rc. */
static int at_fail(int rc, char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int at_fail(int rc, char *why, size_t size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return rc;
}

/* 1 when doc[key] is the string want. */
static int at_field_is(const struct jv *doc, const char *key, const char *want)
{
    const char *s = jv_string_value(jv_get(doc, key));

    return s && strcmp(s, want) == 0;
}

/* A short printable copy of doc[key] for a reason, or "(none)". */
static const char *at_shown(const struct jv *doc, const char *key, char *buf, size_t size)
{
    const char *s = jv_string_value(jv_get(doc, key));
    size_t n = 0;

    if (!s)
        return "(none)";
    for (; s[n] && n + 1 < size && n < 64; n++)
        buf[n] = s[n] >= ' ' && s[n] < 127 && s[n] != '"' ? s[n] : '?';
    buf[n] = '\0';
    return buf;
}

int attest_aws_check(const struct attest_aws *cfg, const char *instance_id, const char *document,
                     size_t len, const char *signature, char *why, size_t size)
{
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    struct jv *doc = NULL;
    char shown[80];
    int rc;

    if (!why || size == 0)
        return ERR_INVAL;
    if (!cfg || !cfg->certificate || !instance_id || !document || !signature)
        return at_fail(ERR_INVAL, why, size, "no certificate or no document");
    rc = base64_decode(signature, strlen(signature), &sig, &sig_len);
    if (rc < 0)
        return at_fail(rc, why, size, "%s",
                       rc == ERR_NOMEM ? "out of memory" : "the signature is not base64");
    rc = crypto_rs256_verify(cfg->certificate, cfg->certificate_len, document, len, sig, sig_len);
    free(sig);
    if (rc < 0)
        return at_fail(rc == ERR_PARSE ? ERR_INTERNAL : rc, why, size,
                       "the attestation certificate cannot be read");
    if (rc == 0)
        return at_fail(ERR_PERM, why, size,
                       "the identity document's signature does not verify under the "
                       "configured certificate");
    /* signed: what it says can be believed */
    if (jv_parse(document, len, &doc, NULL) < 0 || jv_type_of(doc) != JV_OBJECT) {
        jv_free(doc);
        return at_fail(ERR_PERM, why, size, "the identity document is not a JSON object");
    }
    rc = 0;
    if (!at_field_is(doc, "instanceId", instance_id))
        rc = at_fail(ERR_PERM, why, size, "the identity document is instance %s's, not %s's",
                     at_shown(doc, "instanceId", shown, sizeof(shown)), instance_id);
    else if (cfg->account && !at_field_is(doc, "accountId", cfg->account))
        rc = at_fail(ERR_PERM, why, size, "the instance is in account %s, not %s",
                     at_shown(doc, "accountId", shown, sizeof(shown)), cfg->account);
    else if (cfg->region && !at_field_is(doc, "region", cfg->region))
        rc = at_fail(ERR_PERM, why, size, "the instance is in region %s, not %s",
                     at_shown(doc, "region", shown, sizeof(shown)), cfg->region);
    jv_free(doc);
    return rc;
}

/* The JSON object that the base64url text at s (len characters) encodes, or NULL. */
static struct jv *at_b64_json(const char *s, size_t len)
{
    unsigned char *raw = NULL;
    size_t n = 0;
    struct jv *v = NULL;

    if (base64_url_decode(s, len, &raw, &n) < 0)
        return NULL;
    if (jv_parse((const char *)raw, n, &v, NULL) < 0 || jv_type_of(v) != JV_OBJECT) {
        jv_free(v);
        v = NULL;
    }
    free(raw);
    return v;
}

/* The RS256 check of the token's signing input under the certificate of key id kid in the
 * certificates file: 1 verified, 0 not (why says), < 0 an error (why says). */
static int at_gcp_signed(const struct attest_gcp *cfg, const char *kid, const char *token,
                         size_t input_len, const char *sig64, char *why, size_t size)
{
    char *text = NULL;
    size_t text_len = 0, sig_len = 0;
    struct jv *certs = NULL;
    unsigned char *sig = NULL;
    const char *pem;
    struct error fe = {0};
    int rc = file_read_all(cfg->certificates_path, &text, &text_len, &fe);

    if (rc < 0)
        return at_fail(ERR_INTERNAL, why, size, "Google's certificates cannot be read: %s", fe.msg);
    if (jv_parse(text, text_len, &certs, NULL) < 0 || jv_type_of(certs) != JV_OBJECT) {
        rc = at_fail(ERR_INTERNAL, why, size,
                     "Google's certificates file is not a JSON object of key ids to PEM "
                     "certificates");
        goto out;
    }
    if (!(pem = jv_string_value(jv_get(certs, kid)))) {
        rc = at_fail(ERR_PERM, why, size,
                     "the token's key %.64s is not among Google's certificates (refresh "
                     "the file if Google has rotated its keys)",
                     kid);
        goto out;
    }
    if ((rc = base64_url_decode(sig64, strlen(sig64), &sig, &sig_len)) < 0) {
        rc = at_fail(ERR_PARSE, why, size, "the token's signature is not base64url");
        goto out;
    }
    rc = crypto_rs256_verify(pem, strlen(pem), token, input_len, sig, sig_len);
    if (rc < 0)
        rc = at_fail(ERR_INTERNAL, why, size, "Google's certificate %.64s cannot be read", kid);
    else if (rc == 0)
        at_fail(0, why, size, "the token's signature does not verify");
out:
    free(sig);
    jv_free(certs);
    free(text);
    return rc;
}

/* The claims of a token whose signature verified: issuer, audience, times, project, instance. */
static int at_gcp_claims(const struct attest_gcp *cfg, const char *instance_id,
                         const struct jv *claims, double now, char *why, size_t size)
{
    const struct jv *ce = jv_get(jv_get(claims, "google"), "compute_engine");
    const char *iss = jv_string_value(jv_get(claims, "iss"));
    const char *zone = jv_string_value(jv_get(ce, "zone"));
    const char *name = jv_string_value(jv_get(ce, "instance_name"));
    char shown[80], id[300];
    double exp = 0, iat = 0;

    if (!iss || (strcmp(iss, "https://accounts.google.com") != 0 &&
                 strcmp(iss, "accounts.google.com") != 0))
        return at_fail(ERR_PERM, why, size, "the token was issued by %s, not Google",
                       at_shown(claims, "iss", shown, sizeof(shown)));
    if (!at_field_is(claims, "aud", cfg->audience))
        return at_fail(ERR_PERM, why, size, "the token is for audience %s, not %s",
                       at_shown(claims, "aud", shown, sizeof(shown)), cfg->audience);
    if (jv_number_value(jv_get(claims, "exp"), &exp) < 0 ||
        jv_number_value(jv_get(claims, "iat"), &iat) < 0)
        return at_fail(ERR_PERM, why, size, "the token has no exp or iat");
    if (exp < now - ATTEST_SKEW_S)
        return at_fail(ERR_PERM, why, size, "the token has expired");
    if (iat > now + ATTEST_SKEW_S)
        return at_fail(ERR_PERM, why, size, "the token was issued in the future");
    if (!zone || !name)
        return at_fail(ERR_PERM, why, size,
                       "the token names no Compute Engine instance (ask for format=full)");
    if (cfg->project && !at_field_is(ce, "project_id", cfg->project))
        return at_fail(ERR_PERM, why, size, "the instance is in project %s, not %s",
                       at_shown(ce, "project_id", shown, sizeof(shown)), cfg->project);
    snprintf(id, sizeof(id), "%.100s.%.100s", zone, name);
    if (strcmp(id, instance_id) != 0)
        return at_fail(ERR_PERM, why, size, "the token is instance %s's, not %s's", id,
                       instance_id);
    return 0;
}

int attest_gcp_check(const struct attest_gcp *cfg, const char *instance_id, const char *token,
                     double now, char *why, size_t size)
{
    const char *dot1, *dot2;
    struct jv *header = NULL, *claims = NULL;
    const char *alg, *kid;
    int rc;

    if (!why || size == 0)
        return ERR_INVAL;
    if (!cfg || !cfg->certificates_path || !cfg->audience || !instance_id || !token)
        return at_fail(ERR_INVAL, why, size, "no certificates, audience or token");
    dot1 = strchr(token, '.');
    dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot2 || strchr(dot2 + 1, '.') || !(header = at_b64_json(token, (size_t)(dot1 - token))) ||
        !(claims = at_b64_json(dot1 + 1, (size_t)(dot2 - dot1 - 1)))) {
        rc = at_fail(ERR_PARSE, why, size,
                     "the identity token is not a JWT (three base64url parts of JSON)");
        goto out;
    }
    alg = jv_string_value(jv_get(header, "alg"));
    kid = jv_string_value(jv_get(header, "kid"));
    if (!alg || strcmp(alg, "RS256") != 0 || !kid) {
        rc = at_fail(ERR_PERM, why, size, "the token is not RS256 with a key id");
        goto out;
    }
    rc = at_gcp_signed(cfg, kid, token, (size_t)(dot2 - token), dot2 + 1, why, size);
    if (rc == 0)
        rc = ERR_PERM; /* (why says) */
    else if (rc == 1)
        rc = at_gcp_claims(cfg, instance_id, claims, now, why, size);
out:
    jv_free(header);
    jv_free(claims);
    return rc;
}
