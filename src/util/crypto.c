/* crypto.c: the wrapper around OpenSSL's libcrypto; the one file that includes OpenSSL headers. */
#include "util/crypto.h"

#include <limits.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

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
