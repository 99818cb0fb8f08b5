/* attest.c: an EC2 instance identity document checked against AWS's RSA certificate: the
 * signature over its exact bytes (RS256), then its instance, account and region. */
#include "control/attest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/crypto.h"
#include "util/error.h"
#include "util/json.h"

/* Set why and return rc. */
static int at_fail(int rc, char *why, size_t size, const char *fmt, const char *a, const char *b)
{
    snprintf(why, size, fmt, a, b);
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
        return at_fail(ERR_INVAL, why, size, "%s%s", "no certificate or no document", "");
    rc = base64_decode(signature, strlen(signature), &sig, &sig_len);
    if (rc < 0)
        return at_fail(rc, why, size, "%s%s",
                       rc == ERR_NOMEM ? "out of memory" : "the signature is not base64", "");
    rc = crypto_rs256_verify(cfg->certificate, cfg->certificate_len, document, len, sig, sig_len);
    free(sig);
    if (rc < 0)
        return at_fail(rc == ERR_PARSE ? ERR_INTERNAL : rc, why, size, "%s%s",
                       "the attestation certificate cannot be read", "");
    if (rc == 0)
        return at_fail(ERR_PERM, why, size, "%s%s",
                       "the identity document's signature does not verify under the "
                       "configured certificate",
                       "");
    /* signed: what it says can be believed */
    if (jv_parse(document, len, &doc, NULL) < 0 || jv_type_of(doc) != JV_OBJECT) {
        jv_free(doc);
        return at_fail(ERR_PERM, why, size, "%s%s", "the identity document is not a JSON object",
                       "");
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
