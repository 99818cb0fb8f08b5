/* crypto.c: the wrapper around OpenSSL's libcrypto; the one file that includes OpenSSL headers. */
#include "util/crypto.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "util/error.h"

/* Hand over a digest libcrypto wrote into md (EVP_MAX_MD_SIZE bytes): copied into out when ok and
 * of SHA-256's length, else ERR_INTERNAL; md is wiped either way. */
static int take_digest(int ok, unsigned char *md, unsigned int md_len,
                       unsigned char out[CRYPTO_SHA256_LEN])
{
    int rc = ok && md_len == CRYPTO_SHA256_LEN ? 0 : ERR_INTERNAL;

    if (rc == 0)
        memcpy(out, md, CRYPTO_SHA256_LEN);
    crypto_wipe(md, EVP_MAX_MD_SIZE);
    return rc;
}

int crypto_sha256(const void *data, size_t len, unsigned char out[CRYPTO_SHA256_LEN])
{
    static const unsigned char none;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    int ok;

    if ((!data && len > 0) || !out)
        return ERR_INVAL;
    ok = EVP_Digest(len ? data : &none, len, md, &md_len, EVP_sha256(), NULL) == 1;
    return take_digest(ok, md, md_len, out);
}

int crypto_sha256_hex(const void *data, size_t len, char out[CRYPTO_SHA256_HEX_LEN + 1])
{
    unsigned char md[CRYPTO_SHA256_LEN];
    int rc;

    if (!out)
        return ERR_INVAL;
    rc = crypto_sha256(data, len, md);
    if (rc == 0)
        crypto_hex(md, sizeof(md), out);
    return rc;
}

int crypto_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                       unsigned char out[CRYPTO_SHA256_LEN])
{
    static const unsigned char none;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    int ok;

    if ((!key && key_len > 0) || (!data && len > 0) || !out || key_len > INT_MAX)
        return ERR_INVAL;
    ok = HMAC(EVP_sha256(), key_len ? key : &none, (int)key_len, len ? data : &none, len, md,
              &md_len) != NULL;
    return take_digest(ok, md, md_len, out);
}

void crypto_hex(const void *data, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 0x0f];
    }
    out[2 * len] = '\0';
}

int crypto_equal(const void *a, const void *b, size_t len)
{
    if (len == 0)
        return 1;
    return CRYPTO_memcmp(a, b, len) == 0;
}

void crypto_wipe(void *p, size_t len)
{
    if (p && len > 0)
        OPENSSL_cleanse(p, len);
}

void crypto_free_string(char *s)
{
    if (s) {
        crypto_wipe(s, strlen(s));
        free(s);
    }
}

int crypto_random(void *buf, size_t len)
{
    unsigned char *p = buf;

    if (!buf && len > 0)
        return ERR_INVAL;
    while (len > 0) {
        int chunk = len > INT_MAX ? INT_MAX : (int)len;

        if (RAND_bytes(p, chunk) != 1)
            return ERR_IO;
        p += chunk;
        len -= (size_t)chunk;
    }
    return 0;
}

/* A password callback that gives none: an encrypted key fails to load instead of prompting. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return 0;
}

/* The RSA key in pem (private or public), or NULL when it is not one. */
/* 1 when the len bytes at pem hold text. */
static int pem_has(const char *pem, size_t len, const char *text)
{
    size_t n = strlen(text);

    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(pem + i, text, n) == 0)
            return 1;
    return 0;
}

static EVP_PKEY *read_rsa_key(const char *pem, size_t pem_len, int private_key)
{
    BIO *bio;
    EVP_PKEY *key;

    if (pem_len > INT_MAX)
        return NULL;
    bio = BIO_new_mem_buf(pem, (int)pem_len);
    if (!bio)
        return NULL;
    if (private_key) {
        key = PEM_read_bio_PrivateKey(bio, NULL, no_password, NULL);
    } else if (pem_has(pem, pem_len, "-----BEGIN CERTIFICATE-----")) {
        /* a certificate's public key (a cloud publishes its signing keys so) */
        X509 *cert = PEM_read_bio_X509(bio, NULL, no_password, NULL);

        key = cert ? X509_get_pubkey(cert) : NULL;
        X509_free(cert);
    } else {
        key = PEM_read_bio_PUBKEY(bio, NULL, no_password, NULL);
    }
    BIO_free(bio);
    if (key && EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    return key;
}

int crypto_rs256_sign(const char *pem, size_t pem_len, const void *data, size_t len,
                      unsigned char *sig, size_t sig_size, size_t *sig_len)
{
    static const unsigned char none;
    EVP_PKEY *key = NULL;
    EVP_MD_CTX *md = NULL;
    unsigned char buf[CRYPTO_RS256_MAX_SIG];
    size_t n = sizeof(buf);
    int rc;

    if (!pem || (!data && len > 0) || !sig || !sig_len)
        return ERR_INVAL;
    ERR_clear_error();
    key = read_rsa_key(pem, pem_len, 1);
    if (!key) {
        rc = ERR_PARSE;
        goto out;
    }
    if (EVP_PKEY_get_bits(key) < 2048 || (size_t)EVP_PKEY_get_size(key) > sizeof(buf)) {
        rc = ERR_RANGE;
        goto out;
    }
    md = EVP_MD_CTX_new();
    if (!md || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
        EVP_DigestSign(md, buf, &n, len ? data : &none, len) != 1) {
        rc = ERR_INTERNAL;
        goto out;
    }
    if (n > sig_size) {
        rc = ERR_RANGE;
        goto out;
    }
    memcpy(sig, buf, n);
    *sig_len = n;
    rc = 0;
out:
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    crypto_wipe(buf, sizeof(buf));
    ERR_clear_error();
    return rc;
}

int crypto_rs256_verify(const char *pem, size_t pem_len, const void *data, size_t len,
                        const unsigned char *sig, size_t sig_len)
{
    static const unsigned char none;
    EVP_PKEY *key = NULL;
    EVP_MD_CTX *md = NULL;
    int rc;

    if (!pem || (!data && len > 0) || !sig)
        return ERR_INVAL;
    ERR_clear_error();
    key = read_rsa_key(pem, pem_len, 0);
    if (!key) {
        rc = ERR_PARSE;
        goto out;
    }
    md = EVP_MD_CTX_new();
    if (!md || EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) != 1) {
        rc = ERR_INTERNAL;
        goto out;
    }
    rc = EVP_DigestVerify(md, sig, sig_len, len ? data : &none, len) == 1;
out:
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return rc;
}

int crypto_no_core_dumps(void)
{
    const struct rlimit none = {0, 0};

    return setrlimit(RLIMIT_CORE, &none) == 0 ? 0 : ERR_INTERNAL;
}
