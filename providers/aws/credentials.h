/* credentials.h: AWS credentials from the environment, the shared credentials file (profiles) or
 * the instance role through IMDSv2, cached and refreshed before they expire; secrets wiped. */
#ifndef CASTOR_PROVIDERS_AWS_CREDENTIALS_H
#define CASTOR_PROVIDERS_AWS_CREDENTIALS_H

#include <stdint.h>

#include "util/error.h"

/* A set of credentials. Every string is owned by the struct (aws_credentials_clear wipes and
 * frees them); none of them is ever written to a log or an error message. */
struct aws_credentials {
    char *access_key_id;
    char *secret_access_key;
    char *session_token; /* NULL for long-term keys */
    int64_t expiration;  /* UNIX seconds; 0 when they do not expire */
    char source[16];     /* "environment", "file", "imds": for messages */
};

/* Wipe and free the strings of c and zero it; c may be NULL or already cleared. */
void aws_credentials_clear(struct aws_credentials *c);

/* A copy of src into *dst (cleared by the caller). ERR_NOMEM; *dst is then unchanged. */
int aws_credentials_copy(const struct aws_credentials *src, struct aws_credentials *dst);

/* From AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and (optionally) AWS_SESSION_TOKEN. ERR_NOENT
 * (neither key is set), ERR_INVAL (only one of the two, or an empty one), ERR_NOMEM; *out is
 * then unchanged. */
int aws_credentials_from_env(struct aws_credentials *out, struct error *e);

/*
 * From the [profile] section of the shared credentials file at path (INI: "key = value" lines,
 * '#' and ';' comments): aws_access_key_id, aws_secret_access_key, aws_session_token. ERR_NOENT
 * (no file), ERR_UNKNOWN (no such profile, or it lacks a key: e names the profile and the key,
 * never a value), ERR_PARSE (a line that is neither a section, a key = value nor a comment:
 * e->line says which), ERR_IO, ERR_NOMEM; *out is then unchanged. The file's text is wiped.
 */
int aws_credentials_from_file(const char *path, const char *profile, struct aws_credentials *out,
                              struct error *e);

/* How to reach IMDS (the instance metadata service). */
struct aws_imds {
    const char *endpoint; /* "http://169.254.169.254" or a fake's URL; no trailing path */
    long timeout_ms;      /* per request */
};

/*
 * From the instance role through IMDSv2: PUT /latest/api/token (a 6-hour token), GET the role's
 * name under /latest/meta-data/iam/security-credentials/, then GET its credentials (JSON with
 * AccessKeyId, SecretAccessKey, Token, Expiration). ERR_NOENT (no role: 404), ERR_IO (IMDS not
 * reachable, or an HTTP status other than 200), ERR_AGAIN (timed out), ERR_PARSE (an answer that is
 * not the expected JSON, a Code other than Success, an Expiration that does not parse), ERR_NOMEM;
 * *out is then unchanged. The token and every answer are wiped after use.
 */
int aws_credentials_from_imds(const struct aws_imds *imds, struct aws_credentials *out,
                              struct error *e);

/* Where credentials come from; NULL or 0 members take the defaults said here. */
struct aws_credential_config {
    const char *profile;          /* NULL: AWS_PROFILE, else "default" */
    const char *credentials_file; /* NULL: AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials */
    /* NULL: AWS_EC2_METADATA_SERVICE_ENDPOINT, else http://169.254.169.254 */
    const char *imds_endpoint;
    int imds_disabled;       /* 1: never ask IMDS (also when AWS_EC2_METADATA_DISABLED=true) */
    long imds_timeout_ms;    /* 0: 1000 */
    int64_t refresh_seconds; /* refresh this long before expiry; 0: 300 */
};

struct aws_credential_source; /* the chain and its cache; opaque */

/* A new source in *out (free with aws_credential_source_free); the configuration is copied.
 * ERR_NOMEM; *out is then unchanged. */
int aws_credential_source_new(const struct aws_credential_config *cfg,
                              struct aws_credential_source **out);

/* Wipe the cache and free s; s may be NULL. */
void aws_credential_source_free(struct aws_credential_source *s);

/*
 * Credentials valid at now (UNIX seconds) into *out (the caller clears them): the cached ones
 * while they are more than refresh_seconds from expiry (those of the shared credentials file,
 * which carry no expiry: while the file's inode, size and modification time are unchanged and
 * for at most 300 s after they were read, so that session credentials a helper rewrites there
 * are picked up), else the first source of the chain that has some: environment, shared
 * credentials file, IMDS. Cached credentials that are still valid (or carry no expiry) are kept
 * when a refresh fails. ERR_NOENT (no source has credentials; e says what was tried),
 * else the error of the source that failed (a malformed file or IMDS answer is reported, not
 * skipped); *out is then unchanged.
 */
int aws_credential_source_get(struct aws_credential_source *s, int64_t now,
                              struct aws_credentials *out, struct error *e);

/* Drop the cached credentials (AWS refused them as expired): the next get reads the chain
 * again, and a refresh that fails then is an error. s may be NULL. */
void aws_credential_source_forget(struct aws_credential_source *s);

#endif
