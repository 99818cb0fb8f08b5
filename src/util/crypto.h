/* crypto.h: SHA-256, HMAC-SHA256, RS256 signatures, hex, constant-time compare, wiping and random
 * bytes (wraps OpenSSL's libcrypto; no OpenSSL header is included outside crypto.c). */
#ifndef CASTOR_UTIL_CRYPTO_H
#define CASTOR_UTIL_CRYPTO_H

#include <stddef.h>

#define CRYPTO_SHA256_LEN 32                          /* bytes of a SHA-256 digest */
#define CRYPTO_SHA256_HEX_LEN (2 * CRYPTO_SHA256_LEN) /* its hex form, without the NUL */

/* SHA-256 of len bytes at data (data may be NULL when len is 0) into out, which the caller owns.
 * ERR_INVAL (data NULL with len > 0, out NULL) or ERR_INTERNAL (libcrypto failed); out is then
 * unchanged. */
int crypto_sha256(const void *data, size_t len, unsigned char out[CRYPTO_SHA256_LEN]);

/* The same digest as lowercase hex with a final NUL (65 bytes written). Errors as crypto_sha256. */
int crypto_sha256_hex(const void *data, size_t len, char out[CRYPTO_SHA256_HEX_LEN + 1]);

/* HMAC-SHA256 (RFC 2104) of data under key into out (caller-owned; it may alias key or data).
 * key may be NULL when key_len is 0, data when len is 0. ERR_INVAL or ERR_INTERNAL as
 * crypto_sha256; out is then unchanged. The copy of the key libcrypto makes is wiped by it. */
int crypto_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                       unsigned char out[CRYPTO_SHA256_LEN]);

/* Lowercase hex of len bytes into out, which must hold 2 * len + 1 bytes (a final NUL). Cannot
 * fail. */
void crypto_hex(const void *data, size_t len, char *out);

/* Turn off core dumps for this process and the children it starts from now on (RLIMIT_CORE, soft
 * and hard, set to 0), so that no core file holds a secret of its memory. ERR_INTERNAL when the
 * system refuses (it does not refuse lowering a limit). */
int crypto_no_core_dumps(void);

/* 1 when the len bytes at a and b are equal, else 0, in a time that depends only on len (for
 * comparing signatures and tokens). */
int crypto_equal(const void *a, const void *b, size_t len);

/* Overwrite len bytes at p with zeros in a way the compiler may not remove (for secrets before
 * they are freed or go out of scope). p may be NULL when len is 0. */
void crypto_wipe(void *p, size_t len);

/* Wipe the NUL-terminated string s (a secret: a key, a token) and free it; NULL is ignored. */
void crypto_free_string(char *s);

/* Fill buf with len bytes from the operating system's cryptographic generator (for tokens, never
 * for simulations, which take a seed). ERR_INVAL (buf NULL with len > 0) or ERR_IO (the generator
 * could not be seeded or failed; buf's content is then unspecified). */
int crypto_random(void *buf, size_t len);

#define CRYPTO_RS256_MAX_SIG 1024 /* bytes of the longest RS256 signature (an 8192-bit key) */

/*
 * RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 section 3.3) of len bytes at data under the RSA
 * private key in pem (pem_len bytes: "PRIVATE KEY" (PKCS #8) or "RSA PRIVATE KEY", not
 * encrypted; at least 2048 bits, as RFC 7518 asks). The signature (as long as the modulus) goes
 * into sig, which holds sig_size bytes, and its length into *sig_len. Deterministic: the same key
 * and data always give the same signature. Errors: ERR_INVAL (a NULL argument), ERR_PARSE (pem is
 * not an unencrypted RSA private key; the message never quotes it), ERR_RANGE (a key under 2048
 * bits, or sig_size too small), ERR_INTERNAL (libcrypto failed); the outputs are then unchanged.
 * The key material libcrypto decoded is wiped when freed; pem itself is the caller's to wipe.
 */
int crypto_rs256_sign(const char *pem, size_t pem_len, const void *data, size_t len,
                      unsigned char *sig, size_t sig_size, size_t *sig_len);

/*
 * Check an RS256 signature of len bytes at data against the RSA public key in pem ("PUBLIC KEY",
 * SubjectPublicKeyInfo, or the key of an X.509 "CERTIFICATE": its validity and issuer are not
 * checked). 1 when it verifies, 0 when it does not; ERR_INVAL (a NULL argument), ERR_PARSE (pem is
 * not an RSA public key or certificate), ERR_INTERNAL.
 */
int crypto_rs256_verify(const char *pem, size_t pem_len, const void *data, size_t len,
                        const unsigned char *sig, size_t sig_len);

#endif
