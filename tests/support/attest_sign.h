/* attest_sign.h: EC2 identity documents for the tests, signed as the metadata service's
 * /latest/dynamic/instance-identity/signature is (base64 of RS256 over the document's bytes, in
 * lines of 64), and Compute Engine identity tokens as Google signs them (RS256 JWTs with a key
 * id), with the test keys in tests/data/attest. */
#ifndef CASTOR_TESTS_ATTEST_SIGN_H
#define CASTOR_TESTS_ATTEST_SIGN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/strbuf.h"

#define ATTEST_CERT CASTOR_TEST_DATA "/attest/test-cert.pem"
#define ATTEST_KEY CASTOR_TEST_DATA "/attest/test-key.pem"
#define ATTEST_OTHER_KEY CASTOR_TEST_DATA "/attest/other-key.pem"

/* A document of instance id in account and region, into buf. */
static inline void attest_document(char *buf, size_t size, const char *id, const char *account,
                                   const char *region)
{
    snprintf(buf, size,
             "{\n  \"accountId\" : \"%s\",\n  \"architecture\" : \"x86_64\",\n"
             "  \"availabilityZone\" : \"%sa\",\n  \"imageId\" : \"ami-0123456789abcdef0\",\n"
             "  \"instanceId\" : \"%s\",\n  \"instanceType\" : \"g4dn.12xlarge\",\n"
             "  \"pendingTime\" : \"2026-11-27T10:00:00Z\",\n  \"privateIp\" : \"10.0.1.7\",\n"
             "  \"region\" : \"%s\",\n  \"version\" : \"2017-09-30\"\n}",
             account, region, id, region);
}

/* The signature of doc under the key in key_path, as EC2 gives it, into buf. 0, or -1. */
static inline int attest_signature(const char *key_path, const char *doc, char *buf, size_t size)
{
    unsigned char sig[CRYPTO_RS256_MAX_SIG];
    struct strbuf b = {0};
    char *pem = NULL;
    size_t pem_len = 0, sig_len = 0, n = 0, out = 0;

    if (file_read_all(key_path, &pem, &pem_len, NULL) < 0 ||
        crypto_rs256_sign(pem, pem_len, doc, strlen(doc), sig, sizeof(sig), &sig_len) < 0) {
        free(pem);
        return -1;
    }
    free(pem);
    base64_url_encode(&b, sig, sig_len);
    if (!b.p)
        return -1;
    n = strlen(b.p);
    for (size_t i = 0; i < n && out + 3 < size; i++) {
        char c = b.p[i];

        buf[out++] = c == '-' ? '+' : c == '_' ? '/' : c;
        if (i % 64 == 63)
            buf[out++] = '\n';
    }
    while (n % 4 != 0 && out + 1 < size) {
        buf[out++] = '=';
        n++;
    }
    buf[out] = '\0';
    free(b.p);
    return 0;
}

/* The claims of a Compute Engine identity token (format=full) for zone/name in project, for
 * audience, issued at iat and expiring an hour later, into buf. */
static inline void attest_gcp_claims(char *buf, size_t size, const char *zone, const char *name,
                                     const char *project, const char *audience, double iat)
{
    snprintf(buf, size,
             "{\"aud\":\"%s\",\"azp\":\"1234567890\",\"exp\":%.0f,"
             "\"google\":{\"compute_engine\":{\"instance_creation_timestamp\":1764230000,"
             "\"instance_id\":\"4567890123456789012\",\"instance_name\":\"%s\","
             "\"project_id\":\"%s\",\"project_number\":123456789012,\"zone\":\"%s\"}},"
             "\"iat\":%.0f,\"iss\":\"https://accounts.google.com\",\"sub\":\"1234567890\"}",
             audience, iat + 3600, name, project, zone, iat);
}

/* A JWT of header and claims (JSON texts) signed by the key in key_path, into buf. 0, or -1. */
static inline int attest_gcp_token(const char *key_path, const char *header, const char *claims,
                                   char *buf, size_t size)
{
    unsigned char sig[CRYPTO_RS256_MAX_SIG];
    struct strbuf b = {0};
    char *pem = NULL;
    size_t pem_len = 0, sig_len = 0;
    int rc = -1;

    base64_url_encode(&b, header, strlen(header));
    strbuf_chr(&b, '.');
    base64_url_encode(&b, claims, strlen(claims));
    if (b.p && file_read_all(key_path, &pem, &pem_len, NULL) == 0 &&
        crypto_rs256_sign(pem, pem_len, b.p, strlen(b.p), sig, sizeof(sig), &sig_len) == 0) {
        strbuf_chr(&b, '.');
        base64_url_encode(&b, sig, sig_len);
        if (b.p && strlen(b.p) < size) {
            snprintf(buf, size, "%s", b.p);
            rc = 0;
        }
    }
    free(pem);
    free(b.p);
    return rc;
}

/* Google's certificates file as its v1 endpoint gives it: {kid: the test certificate, "other":
 * another PEM}, at path. 0, or -1. */
static inline int attest_gcp_certs_file(const char *path, const char *kid)
{
    char *cert = NULL, *text = NULL;
    size_t len = 0;
    int rc = -1;
    struct strbuf b = {0};

    if (file_read_all(ATTEST_CERT, &cert, &len, NULL) < 0)
        return -1;
    strbuf_printf(&b, "{\n  \"%s\": \"", kid);
    for (size_t i = 0; i < len; i++)
        strbuf_str(&b, cert[i] == '\n' ? "\\n" : (char[]){cert[i], 0});
    strbuf_str(&b, "\",\n  \"other\": \"-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END "
                   "CERTIFICATE-----\\n\"\n}\n");
    text = b.p;
    if (text && file_write_atomic(path, text, strlen(text), 0644, NULL) == 0)
        rc = 0;
    free(text);
    free(cert);
    return rc;
}

#endif
