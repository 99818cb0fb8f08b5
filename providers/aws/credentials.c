/* credentials.c: the AWS credential chain (environment, shared file, IMDSv2) and its cache. */
#include "providers/aws/credentials.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "util/crypto.h"
#include "util/http_client.h"
#include "util/file.h"
#include "util/json.h"
#include "util/timestamp.h"

#define IMDS_DEFAULT_ENDPOINT "http://169.254.169.254"
#define IMDS_TOKEN_TTL "21600"
#define DEFAULT_IMDS_TIMEOUT_MS 1000
#define DEFAULT_REFRESH_SECONDS 300
/* File credentials are read again at least this often (a helper may rewrite the file without
 * its times changing, or within the same tick of a coarse clock). */
#define FILE_RECHECK_SECONDS 300

void aws_credentials_clear(struct aws_credentials *c)
{
    if (!c)
        return;
    crypto_free_string(c->access_key_id);
    crypto_free_string(c->secret_access_key);
    crypto_free_string(c->session_token);
    crypto_wipe(c, sizeof(*c));
}

/* Fill *out from the three strings (copied; token may be NULL). ERR_NOMEM; *out then unchanged. */
static int make(const char *id, const char *secret, const char *token, int64_t expiration,
                const char *source, struct aws_credentials *out)
{
    struct aws_credentials c = {0};

    c.access_key_id = strdup(id);
    c.secret_access_key = strdup(secret);
    c.session_token = token && *token ? strdup(token) : NULL;
    if (!c.access_key_id || !c.secret_access_key || (token && *token && !c.session_token)) {
        aws_credentials_clear(&c);
        return ERR_NOMEM;
    }
    c.expiration = expiration;
    snprintf(c.source, sizeof(c.source), "%s", source);
    *out = c;
    return 0;
}

int aws_credentials_copy(const struct aws_credentials *src, struct aws_credentials *dst)
{
    if (!src || !dst || !src->access_key_id || !src->secret_access_key)
        return ERR_INVAL;
    return make(src->access_key_id, src->secret_access_key, src->session_token, src->expiration,
                src->source, dst);
}

int aws_credentials_from_env(struct aws_credentials *out, struct error *e)
{
    const char *id = getenv("AWS_ACCESS_KEY_ID");
    const char *secret = getenv("AWS_SECRET_ACCESS_KEY");

    if (!out)
        return ERR_INVAL;
    if (!id && !secret)
        return err_set(e, ERR_NOENT, "environment", 0, 0, "AWS_ACCESS_KEY_ID is not set");
    if (!id || !secret || !*id || !*secret)
        return err_set(e, ERR_INVAL, "environment", 0, 0,
                       "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set");
    return make(id, secret, getenv("AWS_SESSION_TOKEN"), 0, "environment", out);
}

/* Trim white space at both ends of [s, s + strlen(s)) in place; returns the new start. */
static char *trim(char *s)
{
    char *end = s + strlen(s);

    while (*s && isspace((unsigned char)*s))
        s++;
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

int aws_credentials_from_file(const char *path, const char *profile, struct aws_credentials *out,
                              struct error *e)
{
    char *text = NULL, *line;
    const char *id = NULL, *secret = NULL, *token = NULL;
    size_t len = 0;
    int rc, in_profile = 0, seen = 0, lineno = 0;
    char *p, *next;

    if (!path || !profile || !out)
        return err_set(e, ERR_INVAL, "credentials", 0, 0, "no path or no profile");
    rc = file_read_all(path, &text, &len, e);
    if (rc < 0)
        return rc;
    /* walk lines by hand: strtok would skip empty lines and miscount */
    for (p = text; p && *p; p = next) {
        char *eq, *key, *value;

        next = strchr(p, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        line = trim(p);
        if (!*line || *line == '#' || *line == ';')
            continue;
        if (*line == '[') {
            char *close = strchr(line, ']');

            if (!close || *trim(close + 1)) {
                rc = err_set(e, ERR_PARSE, path, lineno, 0, "a section header without ']'");
                goto out;
            }
            *close = '\0';
            in_profile = strcmp(trim(line + 1), profile) == 0;
            seen |= in_profile;
            continue;
        }
        eq = strchr(line, '=');
        if (!eq) {
            /* never quote the line: it may be a secret */
            rc = err_set(e, ERR_PARSE, path, lineno, 0, "expected 'key = value'");
            goto out;
        }
        *eq = '\0';
        key = trim(line);
        value = trim(eq + 1);
        if (!in_profile)
            continue;
        if (strcmp(key, "aws_access_key_id") == 0)
            id = value;
        else if (strcmp(key, "aws_secret_access_key") == 0)
            secret = value;
        else if (strcmp(key, "aws_session_token") == 0)
            token = value;
    }
    if (!seen) {
        rc = err_set(e, ERR_UNKNOWN, path, 0, 0, "no profile [%s]", profile);
        goto out;
    }
    if (!id || !*id || !secret || !*secret) {
        rc = err_set(e, ERR_UNKNOWN, path, 0, 0, "profile [%s] lacks %s", profile,
                     !id || !*id ? "aws_access_key_id" : "aws_secret_access_key");
        goto out;
    }
    rc = make(id, secret, token, 0, "file", out);
out:
    crypto_wipe(text, len);
    free(text);
    return rc;
}

/* One IMDS request: method, path, the session token header (or the TTL request when token is
 * NULL); the answer's body is handed over (the caller wipes and frees it). */
static int imds_call(struct http_client *http, const struct aws_imds *imds, const char *method,
                     const char *path, const char *token, char **body, struct error *e)
{
    struct http_client_header h;
    struct http_client_request req = {0};
    struct http_client_response r = {0};
    char url[1024];
    int rc = 0;

    if ((size_t)snprintf(url, sizeof(url), "%s%s", imds->endpoint, path) >= sizeof(url))
        return err_set(e, ERR_INVAL, "imds", 0, 0, "endpoint too long");
    if (token) {
        h.name = "X-aws-ec2-metadata-token";
        h.value = token;
    } else {
        h.name = "X-aws-ec2-metadata-token-ttl-seconds";
        h.value = IMDS_TOKEN_TTL;
    }
    req.method = method;
    req.url = url;
    req.headers = &h;
    req.nheaders = 1;
    req.timeout_ms = imds->timeout_ms > 0 ? imds->timeout_ms : DEFAULT_IMDS_TIMEOUT_MS;
    rc = http_client_do(http, &req, &r, e);
    if (rc < 0)
        return rc;
    if (r.status == 404) {
        rc = err_set(e, ERR_NOENT, "imds", 0, 0, "%s %s: not found (no instance role?)", method,
                     path);
        goto out;
    }
    if (r.status != 200) {
        rc = err_set(e, ERR_IO, "imds", 0, 0, "%s %s: HTTP %ld", method, path, r.status);
        goto out;
    }
    *body = r.body;
    r.body = NULL;
out:
    if (r.body)
        crypto_wipe(r.body, r.body_len);
    http_client_response_clear(&r);
    return rc;
}

/* 1 when a role name may go into a URL path as it is. */
static int role_name_ok(const char *s)
{
    if (!*s || strlen(s) > 128)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("+=,.@_-", *s))
            return 0;
    return 1;
}

/* Turn the role's JSON answer into credentials. */
static int imds_parse(const char *text, struct aws_credentials *out, struct error *e)
{
    struct jv *v = NULL;
    const char *code, *id, *secret, *token, *exp;
    int64_t expiration = 0;
    int rc;

    rc = jv_parse(text, strlen(text), &v, NULL);
    if (rc < 0)
        return rc == ERR_PARSE
                   ? err_set(e, ERR_PARSE, "imds", 0, 0, "the role's credentials are not JSON")
                   : rc;
    code = jv_string_value(jv_get(v, "Code"));
    id = jv_string_value(jv_get(v, "AccessKeyId"));
    secret = jv_string_value(jv_get(v, "SecretAccessKey"));
    token = jv_string_value(jv_get(v, "Token"));
    exp = jv_string_value(jv_get(v, "Expiration"));
    if (!code || strcmp(code, "Success") != 0) {
        rc = err_set(e, ERR_PARSE, "imds", 0, 0, "the role's credentials say Code %.64s",
                     code ? code : "(none)");
        goto out;
    }
    if (!id || !*id || !secret || !*secret || !token || !*token || !exp) {
        rc = err_set(e, ERR_PARSE, "imds", 0, 0,
                     "the role's credentials lack AccessKeyId, SecretAccessKey, Token or "
                     "Expiration");
        goto out;
    }
    if (timestamp_parse_iso8601(exp, &expiration) < 0) {
        rc = err_set(e, ERR_PARSE, "imds", 0, 0, "Expiration %.40s does not parse", exp);
        goto out;
    }
    rc = make(id, secret, token, expiration, "imds", out);
out:
    jv_free_wiped(v);
    return rc;
}

int aws_credentials_from_imds(const struct aws_imds *imds, struct aws_credentials *out,
                              struct error *e)
{
    struct http_client *http = NULL;
    char *token = NULL, *roles = NULL, *creds = NULL, *role, path[256];
    int rc;

    if (!imds || !imds->endpoint || !out)
        return err_set(e, ERR_INVAL, "imds", 0, 0, "no endpoint");
    rc = http_client_new(&http);
    if (rc < 0)
        return rc;
    rc = imds_call(http, imds, "PUT", "/latest/api/token", NULL, &token, e);
    if (rc < 0)
        goto out;
    {
        /* the token goes into a header: it must be one line */
        char *t = trim(token);

        if (!*t || strpbrk(t, "\r\n")) {
            rc = err_set(e, ERR_PARSE, "imds", 0, 0, "the session token is empty or not a line");
            goto out;
        }
        memmove(token, t, strlen(t) + 1);
    }
    rc = imds_call(http, imds, "GET", "/latest/meta-data/iam/security-credentials/", token, &roles,
                   e);
    if (rc < 0)
        goto out;
    role = trim(roles);
    role[strcspn(role, "\r\n")] = '\0';
    if (!role_name_ok(role)) {
        rc = err_set(e, ERR_PARSE, "imds", 0, 0, "the instance role's name is empty or odd");
        goto out;
    }
    snprintf(path, sizeof(path), "/latest/meta-data/iam/security-credentials/%s", role);
    rc = imds_call(http, imds, "GET", path, token, &creds, e);
    if (rc < 0)
        goto out;
    rc = imds_parse(creds, out, e);
out:
    crypto_free_string(token);
    crypto_free_string(roles);
    crypto_free_string(creds);
    http_client_free(http);
    return rc;
}

struct aws_credential_source {
    char *profile;
    int profile_named; /* given in the config or AWS_PROFILE: missing is an error */
    char *file;
    char *imds_endpoint;
    int imds_disabled;
    long imds_timeout_ms;
    int64_t refresh_seconds;
    struct aws_credentials cached;
    int have_cached;
    /* cached credentials from the file: what the file was when they were read, and when */
    struct file_stamp {
        int ok; /* 0: the file could not be looked at */
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
    } stamp;
    int64_t read_at;
};

void aws_credential_source_free(struct aws_credential_source *s)
{
    if (!s)
        return;
    aws_credentials_clear(&s->cached);
    free(s->profile);
    free(s->file);
    free(s->imds_endpoint);
    free(s);
}

void aws_credential_source_forget(struct aws_credential_source *s)
{
    if (!s)
        return;
    aws_credentials_clear(&s->cached);
    s->have_cached = 0;
}

/* The first of a, b, c that is set and not empty, as a new string; NULL on no memory. */
static char *first_of(const char *a, const char *b, const char *c)
{
    const char *v = a && *a ? a : b && *b ? b : c;

    return strdup(v);
}

int aws_credential_source_new(const struct aws_credential_config *cfg,
                              struct aws_credential_source **out)
{
    static const struct aws_credential_config none;
    struct aws_credential_source *s;
    const char *home = getenv("HOME"), *disabled = getenv("AWS_EC2_METADATA_DISABLED");
    char deffile[1024];

    if (!out)
        return ERR_INVAL;
    if (!cfg)
        cfg = &none;
    s = calloc(1, sizeof(*s));
    if (!s)
        return ERR_NOMEM;
    snprintf(deffile, sizeof(deffile), "%s/.aws/credentials", home ? home : "");
    s->profile_named =
        (cfg->profile && *cfg->profile) || (getenv("AWS_PROFILE") && *getenv("AWS_PROFILE"));
    s->profile = first_of(cfg->profile, getenv("AWS_PROFILE"), "default");
    s->file = first_of(cfg->credentials_file, getenv("AWS_SHARED_CREDENTIALS_FILE"), deffile);
    s->imds_endpoint = first_of(cfg->imds_endpoint, getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT"),
                                IMDS_DEFAULT_ENDPOINT);
    if (!s->profile || !s->file || !s->imds_endpoint) {
        aws_credential_source_free(s);
        return ERR_NOMEM;
    }
    /* the SDKs' endpoint variable may carry a trailing slash */
    {
        size_t n = strlen(s->imds_endpoint);

        while (n > 0 && s->imds_endpoint[n - 1] == '/')
            s->imds_endpoint[--n] = '\0';
    }
    s->imds_disabled = cfg->imds_disabled || (disabled && strcasecmp(disabled, "true") == 0);
    s->imds_timeout_ms = cfg->imds_timeout_ms > 0 ? cfg->imds_timeout_ms : DEFAULT_IMDS_TIMEOUT_MS;
    s->refresh_seconds = cfg->refresh_seconds > 0 ? cfg->refresh_seconds : DEFAULT_REFRESH_SECONDS;
    *out = s;
    return 0;
}

/* What path is now (its device, inode, size and modification time); ok 0 when it cannot be
 * looked at. */
static struct file_stamp file_stamp_of(const char *path)
{
    struct file_stamp st = {0};
    struct stat sb;

    if (stat(path, &sb) == 0) {
        st.ok = 1;
        st.dev = sb.st_dev;
        st.ino = sb.st_ino;
        st.size = sb.st_size;
        st.mtime = sb.st_mtim;
    }
    return st;
}

static int file_stamp_same(const struct file_stamp *a, const struct file_stamp *b)
{
    return a->ok == b->ok && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* 1 while the cached credentials serve as they are: IMDS (and environment) ones until
 * refresh_seconds before their expiry; the file's (which say no expiry, though SSO and
 * assume-role helpers write session credentials there and replace them) while the file is
 * unchanged and they were read less than FILE_RECHECK_SECONDS before now. */
static int cache_fresh(const struct aws_credential_source *s, int64_t now)
{
    struct file_stamp st;

    if (!s->have_cached)
        return 0;
    if (strcmp(s->cached.source, "file") == 0) {
        if (now < s->read_at || now >= s->read_at + FILE_RECHECK_SECONDS)
            return 0;
        st = file_stamp_of(s->file);
        return file_stamp_same(&st, &s->stamp);
    }
    return s->cached.expiration == 0 || now < s->cached.expiration - s->refresh_seconds;
}

/* Walk the chain into *out. */
static int resolve(struct aws_credential_source *s, struct aws_credentials *out, struct error *e)
{
    struct aws_imds imds = {s->imds_endpoint, s->imds_timeout_ms};
    struct error sub = {0};
    char file_note[160], imds_note[200] = "disabled";
    int rc;

    rc = aws_credentials_from_env(out, &sub);
    if (rc != ERR_NOENT) {
        if (rc < 0 && e)
            *e = sub;
        return rc;
    }
    rc = aws_credentials_from_file(s->file, s->profile, out, &sub);
    if (rc == 0 || (rc != ERR_NOENT && (rc != ERR_UNKNOWN || s->profile_named))) {
        if (rc < 0 && e)
            *e = sub;
        return rc;
    }
    snprintf(file_note, sizeof(file_note), "%.150s", rc == ERR_NOENT ? "no file" : sub.msg);
    if (!s->imds_disabled) {
        rc = aws_credentials_from_imds(&imds, out, &sub);
        if (rc == 0 || (rc != ERR_IO && rc != ERR_AGAIN && rc != ERR_NOENT)) {
            if (rc < 0 && e)
                *e = sub;
            return rc;
        }
        snprintf(imds_note, sizeof(imds_note), "%.190s", sub.msg);
    }
    return err_set(e, ERR_NOENT, "credentials", 0, 0,
                   "none found: environment not set; %.100s: %.150s; IMDS: %.150s", s->file,
                   file_note, imds_note);
}

int aws_credential_source_get(struct aws_credential_source *s, int64_t now,
                              struct aws_credentials *out, struct error *e)
{
    struct aws_credentials fresh = {0};
    struct file_stamp stamp;
    int rc;

    if (!s || !out)
        return ERR_INVAL;
    if (cache_fresh(s, now))
        return aws_credentials_copy(&s->cached, out);
    /* the file as it is before it is read: a change while it is read is seen next time */
    stamp = file_stamp_of(s->file);
    rc = resolve(s, &fresh, e);
    if (rc < 0) {
        /* credentials that have not expired yet still serve */
        if (s->have_cached && (s->cached.expiration == 0 || now < s->cached.expiration))
            return aws_credentials_copy(&s->cached, out);
        return rc;
    }
    rc = aws_credentials_copy(&fresh, out);
    if (rc < 0) {
        aws_credentials_clear(&fresh);
        return rc;
    }
    aws_credentials_clear(&s->cached);
    s->cached = fresh;
    s->have_cached = 1;
    s->stamp = stamp;
    s->read_at = now;
    return 0;
}
