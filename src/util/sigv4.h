/* sigv4.h: AWS Signature Version 4 request signing (pure: no I/O, no clock; hashing through
 * util/crypto). */
#ifndef CASTOR_UTIL_SIGV4_H
#define CASTOR_UTIL_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "util/crypto.h"

/* A header as the caller will send it: name in any case, value untrimmed. A value may span lines
 * (obsolete line folding: "a\n  b"); the signer folds it. Borrowed, never freed by the signer. */
struct sigv4_header {
    const char *name;
    const char *value;
};

/* The request to sign; every pointer is borrowed for the duration of the call. */
struct sigv4_request {
    const char *method; /* "GET", "POST", ...: an HTTP token, used as given */
    /* The path as on the request line, without the query: starts with '/'; NULL or "" is "/".
     * Bytes outside the unreserved set (a space, UTF-8) may appear raw; see SIGV4_NORMALIZE_PATH
     * for how they and existing %XX escapes are encoded. */
    const char *path;
    /* The query as on the request line, without '?' (NULL or "" for none): pairs separated by
     * '&', each "key=value" or "key", percent-encoded where needed ('+' is a plus, not a space).
     * Keys and values are decoded and encoded again in canonical form. */
    const char *query;
    const struct sigv4_header *headers; /* all of them are signed; one must be Host */
    size_t n_headers;
    const void *payload; /* the body; may be NULL when payload_len is 0 */
    size_t payload_len;
};

/* Credentials; borrowed. The secret is only read, to derive the signing key, and never appears in
 * any output. session_token is NULL for long-term credentials. */
struct sigv4_credentials {
    const char *access_key_id;
    const char *secret_access_key;
    const char *session_token;
};

enum sigv4_flags {
    /* Normalise the path (every service but S3): RFC 3986 dot segments and repeated slashes are
     * removed, then every byte outside the unreserved set is percent-encoded, '%' included, so
     * that a path already encoded for the wire is encoded a second time as AWS requires. Without
     * it (S3) the path is kept as given and encoded once: %XX escapes are decoded, then every byte
     * outside the unreserved set and '/' is encoded ("/a b" and "/a%20b" sign alike). */
    SIGV4_NORMALIZE_PATH = 1u << 0,
    /* Add X-Amz-Security-Token after signing (some services want it unsigned), instead of
     * signing it with the other headers. */
    SIGV4_TOKEN_UNSIGNED = 1u << 1,
    /* Add and sign x-amz-content-sha256 with the payload hash (S3). */
    SIGV4_CONTENT_SHA256 = 1u << 2,
};

struct sigv4_params {
    const char *region;  /* "us-east-1" */
    const char *service; /* "ec2", "s3", ... */
    int64_t time;        /* the request time in UNIX seconds (UTC), years 1000 to 9999 */
    unsigned flags;      /* enum sigv4_flags, or'ed */
    /* NULL: the hex SHA-256 of the payload; else this string is used as the payload hash as is
     * (for example "UNSIGNED-PAYLOAD" for S3). */
    const char *payload_hash;
};

/* A header the caller must add to the request before sending it, besides Authorization. */
struct sigv4_added_header {
    const char *name; /* static storage */
    char *value;      /* owned by the struct sigv4_signed */
};

#define SIGV4_MAX_ADDED 3

/*
 * The result of signing. Every string is owned by this struct and released by sigv4_signed_free;
 * the struct itself is usually on the caller's stack.
 */
struct sigv4_signed {
    char *canonical_request;
    char *string_to_sign;
    char *authorization; /* the Authorization header's value */
    char signature[CRYPTO_SHA256_HEX_LEN + 1];
    char amz_date[17]; /* "20150830T123600Z" */
    /* In this order, each only when needed: X-Amz-Date (when the request has none),
     * X-Amz-Security-Token (when a token is given and the request has none),
     * x-amz-content-sha256 (with SIGV4_CONTENT_SHA256, when the request has none). */
    struct sigv4_added_header added[SIGV4_MAX_ADDED];
    size_t n_added;
};

/*
 * Sign req with cred for params->region and params->service at params->time. Headers the request
 * already carries are checked instead of added: X-Amz-Date must equal the formatted time, and
 * X-Amz-Security-Token the session token (and may not be there with SIGV4_TOKEN_UNSIGNED).
 * On success *out is filled (release it with sigv4_signed_free) and 0 is returned. Errors:
 * ERR_INVAL (a NULL or empty required field, a method, region, service or key id with characters
 * they cannot hold, a header name that is not an HTTP token or is Authorization, a value with
 * control characters, no Host header, a path not starting with '/', a bad %XX escape in the
 * query or, without SIGV4_NORMALIZE_PATH, the path, a conflicting X-Amz-Date or token header),
 * ERR_RANGE (time outside the years 1000 to 9999), ERR_NOMEM, ERR_INTERNAL (libcrypto failed);
 * *out is then unchanged. Intermediate keys are wiped before returning, in every case.
 */
int sigv4_sign(const struct sigv4_request *req, const struct sigv4_credentials *cred,
               const struct sigv4_params *params, struct sigv4_signed *out);

/* Wipe and free the strings of s (the session token may be among them) and zero it; s may be
 * NULL or already freed. */
void sigv4_signed_free(struct sigv4_signed *s);

#endif
