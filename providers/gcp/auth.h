/* auth.h: Google OAuth 2.0 access tokens for castor's GCP clients: from a service-account JSON
 * key (an RS256-signed JWT exchanged at the key's token_uri) or, on Compute Engine, from the
 * metadata server; cached and fetched again before they expire. Secrets (the private key, the
 * signed assertion, the tokens) are wiped after use and never appear in a message. */
#ifndef CASTOR_PROVIDERS_GCP_AUTH_H
#define CASTOR_PROVIDERS_GCP_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define GCP_SCOPE_CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"
#define GCP_METADATA_TOKEN_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define GCP_METADATA_HOST "metadata.google.internal"
#define GCP_JWT_LIFETIME 3600 /* seconds: the longest Google accepts */

/* A service-account key's fields castor uses; every string owned (gcp_sa_key_clear wipes). */
struct gcp_sa_key {
    char *client_email;
    char *private_key;    /* PEM; the secret */
    char *private_key_id; /* the JWT's "kid"; NULL when the file has none */
    char *token_uri;      /* where the JWT is exchanged */
    char *project_id;     /* NULL when the file has none */
};

/*
 * Read a service-account key from len bytes of JSON text. Errors, with e naming "gcp key" (or the
 * caller's name for it) and never quoting the text: ERR_PARSE (not JSON, not an object, a missing
 * or empty client_email, private_key or token_uri, a field of the wrong type), ERR_INVAL (a
 * "type" other than service_account, such as authorized_user; a token_uri that is not https,
 * except on loopback; a private_key that is not an unencrypted RSA key of 2048 bits or more),
 * ERR_NOMEM. On success *out owns the strings; on error it is untouched. The caller wipes text.
 */
int gcp_sa_key_parse(const char *text, size_t len, struct gcp_sa_key *out, struct error *e);

/* The same from the file at path, whose text is wiped after reading; ERR_NOENT, ERR_IO as
 * file_read_all, else as gcp_sa_key_parse (e->file is the path). */
int gcp_sa_key_load(const char *path, struct gcp_sa_key *out, struct error *e);

/* Wipe and free the strings of k and zero it; k may be NULL or cleared. */
void gcp_sa_key_clear(struct gcp_sa_key *k);

/*
 * The signed JWT for the token endpoint (RFC 7523): header {"alg":"RS256","typ":"JWT","kid"},
 * claims {"iss": client_email, "scope", "aud": token_uri, "iat": now, "exp": now + 3600}, as
 * base64url(header).base64url(claims).base64url(RS256 signature). *out is a new string (wipe it
 * with crypto_free_string). ERR_INVAL (a NULL argument, a negative now), ERR_PARSE or
 * ERR_RANGE (the key, as crypto_rs256_sign), ERR_NOMEM; *out then untouched.
 */
int gcp_jwt_assertion(const struct gcp_sa_key *k, const char *scope, int64_t now, char **out,
                      struct error *e);

/* Where tokens come from; NULL or 0 members take the defaults said here. Copied at gcp_auth_new. */
struct gcp_auth_config {
    /* A service-account key file; NULL or "": GOOGLE_APPLICATION_CREDENTIALS, else none (the
     * metadata server). */
    const char *key_file;
    /* The metadata server's token URL; NULL: http://$GCE_METADATA_HOST<GCP_METADATA_TOKEN_PATH>,
     * else http://metadata.google.internal<GCP_METADATA_TOKEN_PATH>. */
    const char *metadata_url;
    const char *scope;       /* NULL: GCP_SCOPE_CLOUD_PLATFORM */
    long timeout_ms;         /* per token request; 0: 10000 */
    int64_t refresh_seconds; /* fetch again this long before expiry; 0: 300 */
    /* 1: do not verify the token endpoint's TLS certificate; refused unless it is loopback. */
    int tls_insecure;
};

struct gcp_auth; /* a token source and its cache; one thread at a time */

/* A new source in *out (gcp_auth_free). The key file, if any, is read and checked now. Errors as
 * gcp_sa_key_load, ERR_INVAL (tls_insecure off loopback, a metadata URL that is not http(s)),
 * ERR_NOMEM; *out then untouched. */
int gcp_auth_new(const struct gcp_auth_config *cfg, struct gcp_auth **out, struct error *e);

/* Wipe the cache and the key and free a; NULL is ignored. */
void gcp_auth_free(struct gcp_auth *a);

/* "service-account" or "metadata": where tokens come from (for messages). */
const char *gcp_auth_source(const struct gcp_auth *a);

/* The key file's project_id, or NULL (metadata server, or none in the file). Borrowed. */
const char *gcp_auth_project(const struct gcp_auth *a);

/*
 * An access token valid at now (UNIX seconds) into *out (a new string: crypto_free_string):
 * the cached one while it is more than refresh_seconds from expiry, else a new one (the JWT
 * exchanged at token_uri, or the metadata server's). When fetching fails, a cached token that
 * has not expired still serves. Errors, with e naming the source but never a secret: ERR_AGAIN
 * (a timeout, HTTP 429 or 5xx), ERR_IO (cannot connect, another status), ERR_INVAL (the token
 * endpoint refused the key: HTTP 400, 401 or 403, with Google's error and description),
 * ERR_NOENT (the metadata server has no service account: 404), ERR_PARSE (an answer without
 * access_token or a positive expires_in, a token that cannot go into a header), ERR_NOMEM; *out
 * then untouched.
 */
int gcp_auth_token(struct gcp_auth *a, int64_t now, char **out, struct error *e);

/* Forget the cached token (after a server refused it with 401), so that the next
 * gcp_auth_token fetches a new one. */
void gcp_auth_invalidate(struct gcp_auth *a);

#endif
