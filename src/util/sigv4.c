/* sigv4.c: AWS Signature Version 4: the canonical request, the string to sign, the signing key
 * chain and the Authorization header, written from the AWS General Reference's description. */
#include "util/sigv4.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "util/strbuf.h"

#define SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SIGV4_TERMINATOR "aws4_request"

/* An HTTP token character (RFC 9110 tchar). */
static int is_tchar(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int is_token(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (!is_tchar((unsigned char)*s))
            return 0;
    return 1;
}

/* A non-empty scope part (key id, region, service): printable ASCII without '/', ',', '='
 * or space, which would break the Credential field. */
static int is_scope_part(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c <= ' ' || c >= 0x7f || c == '/' || c == ',' || c == '=')
            return 0;
    }
    return 1;
}

/* Append n bytes of s, where %XX escapes are decoded first, in canonical form: every byte outside
 * the unreserved set (and keep_slash's '/') percent-encoded with upper-case hex. ERR_INVAL on a
 * '%' not followed by two hex digits. */
static int add_reencoded(struct strbuf *b, const char *s, size_t n, int keep_slash)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int from_escape = 0;

        if (c == '%') {
            int hi = i + 2 < n ? strbuf_hex_value((unsigned char)s[i + 1]) : -1;
            int lo = i + 2 < n ? strbuf_hex_value((unsigned char)s[i + 2]) : -1;

            if (hi < 0 || lo < 0)
                return ERR_INVAL;
            c = (unsigned char)(hi * 16 + lo);
            from_escape = 1;
            i += 2;
        }
        if (strbuf_unreserved(c) || (keep_slash && c == '/' && !from_escape))
            strbuf_chr(b, (char)c);
        else
            strbuf_add_escaped(b, c);
    }
    return 0;
}

/* The canonical URI of path, normalised (RFC 3986 dot segments, empty segments) and every byte
 * encoded, or (S3) encoded once as it stands. */
static int add_canonical_path(struct strbuf *b, const char *path, int normalize)
{
    struct seg {
        const char *s;
        size_t n;
    } *segs = NULL;
    size_t nseg = 0, len;
    int trailing = 0;

    if (!path || !*path)
        path = "/";
    if (path[0] != '/')
        return ERR_INVAL;
    if (!normalize)
        return add_reencoded(b, path, strlen(path), 1);

    len = strlen(path);
    segs = malloc((len / 2 + 1) * sizeof(*segs)); /* at most one segment per "/x" */
    if (!segs)
        return ERR_NOMEM;
    for (const char *p = path + 1;;) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);

        int dot = n == 1 && p[0] == '.', dotdot = n == 2 && p[0] == '.' && p[1] == '.';

        /* a path ending in "/", "/." or "/.." keeps a final slash: "/a/b/.." is "/a/" (RFC 3986,
         * 5.2.4), "/a/.." is "/" */
        trailing = n == 0 || dot || dotdot;
        if (dotdot) {
            nseg -= nseg > 0;
        } else if (!trailing) {
            segs[nseg].s = p;
            segs[nseg].n = n;
            nseg++;
        }
        if (!end)
            break;
        p = end + 1;
    }
    strbuf_chr(b, '/');
    for (size_t i = 0; i < nseg; i++) {
        strbuf_add_uri_encoded(b, segs[i].s, segs[i].n);
        if (i + 1 < nseg || trailing)
            strbuf_chr(b, '/');
    }
    free(segs);
    return 0;
}

struct qpair {
    char *key;   /* canonical (encoded) */
    char *value; /* canonical (encoded), "" when the pair has no '=' */
};

static int qpair_cmp(const void *a, const void *b)
{
    const struct qpair *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    return c ? c : strcmp(x->value, y->value);
}

/* The canonical query: pairs decoded and encoded again, sorted by key then value (byte order),
 * "k=v" joined with '&'; empty pairs ("a=1&&b=2") are dropped. */
static int add_canonical_query(struct strbuf *b, const char *query)
{
    struct qpair *pairs = NULL;
    size_t n = 0, max = 1;
    int rc = 0;

    if (!query || !*query)
        return 0;
    for (const char *p = query; *p; p++)
        max += *p == '&';
    pairs = calloc(max, sizeof(*pairs));
    if (!pairs)
        return ERR_NOMEM;
    for (const char *p = query;;) {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t klen = eq ? (size_t)(eq - p) : len;
        struct strbuf k = {0}, v = {0};

        if (len > 0) {
            rc = add_reencoded(&k, p, klen, 0);
            if (rc == 0 && eq)
                rc = add_reencoded(&v, eq + 1, len - klen - 1, 0);
            pairs[n].key = strbuf_take(&k);
            pairs[n].value = strbuf_take(&v);
            n++;
            if (rc)
                goto out;
            if (!pairs[n - 1].key || !pairs[n - 1].value) {
                rc = ERR_NOMEM;
                goto out;
            }
        }
        if (!end)
            break;
        p = end + 1;
    }
    qsort(pairs, n, sizeof(*pairs), qpair_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            strbuf_chr(b, '&');
        strbuf_str(b, pairs[i].key);
        strbuf_chr(b, '=');
        strbuf_str(b, pairs[i].value);
    }
out:
    for (size_t i = 0; i < n; i++) {
        free(pairs[i].key);
        free(pairs[i].value);
    }
    free(pairs);
    return rc;
}

/* A header on its way into the canonical request. */
struct hentry {
    char *name;  /* lower case */
    char *value; /* trimmed, runs of white space folded to one space */
    size_t order;
};

static int hentry_cmp(const void *a, const void *b)
{
    const struct hentry *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    if (c)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The lower-case copy of an HTTP token, or NULL (*rc set) when name is not one. */
static char *canonical_name(const char *name, int *rc)
{
    char *s;

    if (!is_token(name)) {
        *rc = ERR_INVAL;
        return NULL;
    }
    s = strdup(name);
    if (!s) {
        *rc = ERR_NOMEM;
        return NULL;
    }
    for (char *p = s; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return s;
}

/* value trimmed, every run of spaces, tabs and line breaks (folded lines) made one space; NULL
 * (*rc set) on other control characters. */
static char *canonical_value(const char *value, int *rc)
{
    struct strbuf b = {0};
    int space = 0;
    char *s;

    for (const char *p = value ? value : ""; *p; p++) {
        unsigned char c = (unsigned char)*p;

        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            space = 1;
            continue;
        }
        if (c < ' ' || c == 0x7f) {
            strbuf_free(&b);
            *rc = ERR_INVAL;
            return NULL;
        }
        if (space && b.len > 0)
            strbuf_chr(&b, ' ');
        space = 0;
        strbuf_chr(&b, (char)c);
    }
    s = strbuf_take(&b);
    if (!s)
        *rc = ERR_NOMEM;
    return s;
}

/* The n lowest decimal digits of v >= 0, zero-padded, at p (no NUL). */
static void put_digits(char *p, int v, int n)
{
    for (int i = n - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
}

/* "YYYYMMDDTHHMMSSZ" for t; ERR_RANGE outside the years 1000 to 9999. */
static int format_amz_date(int64_t t, char out[17])
{
    time_t tt = (time_t)t;
    struct tm tm;

    if ((int64_t)tt != t || !gmtime_r(&tt, &tm) || tm.tm_year + 1900 < 1000 ||
        tm.tm_year + 1900 > 9999)
        return ERR_RANGE;
    put_digits(out, tm.tm_year + 1900, 4);
    put_digits(out + 4, tm.tm_mon + 1, 2);
    put_digits(out + 6, tm.tm_mday, 2);
    out[8] = 'T';
    put_digits(out + 9, tm.tm_hour, 2);
    put_digits(out + 11, tm.tm_min, 2);
    put_digits(out + 13, tm.tm_sec, 2);
    out[15] = 'Z';
    out[16] = '\0';
    return 0;
}

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request"); every
 * intermediate key is wiped, on failure too. */
static int derive_key(const char *secret, const char *date8, const char *region,
                      const char *service, unsigned char key[CRYPTO_SHA256_LEN])
{
    size_t slen = strlen(secret);
    size_t klen = 4 + slen;
    unsigned char *k_secret = malloc(klen);
    unsigned char k[CRYPTO_SHA256_LEN];
    int rc;

    if (!k_secret)
        return ERR_NOMEM;
    memcpy(k_secret, "AWS4", 4);
    memcpy(k_secret + 4, secret, slen);
    rc = crypto_hmac_sha256(k_secret, klen, date8, 8, k); /* kDate */
    if (rc == 0)
        rc = crypto_hmac_sha256(k, sizeof(k), region, strlen(region), k); /* kRegion */
    if (rc == 0)
        rc = crypto_hmac_sha256(k, sizeof(k), service, strlen(service), k); /* kService */
    if (rc == 0)
        rc = crypto_hmac_sha256(k, sizeof(k), SIGV4_TERMINATOR, strlen(SIGV4_TERMINATOR), k);
    if (rc == 0)
        memcpy(key, k, sizeof(k));
    crypto_wipe(k_secret, klen);
    free(k_secret);
    crypto_wipe(k, sizeof(k));
    return rc;
}

/* A session token or payload hash goes into a header as is: printable ASCII without spaces. */
static int is_header_word(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

/* Append a header the signer adds: to the signed entries when hs is not NULL, and to the caller's
 * list of headers to add when name is not NULL. */
static int add_header(struct hentry *hs, size_t *nh, struct sigv4_signed *res, const char *name,
                      const char *value)
{
    if (hs) {
        struct hentry *h = &hs[*nh];
        int rc = 0;

        h->name = canonical_name(name, &rc);
        if (!h->name)
            return rc;
        h->value = strdup(value);
        h->order = *nh;
        ++*nh;
        if (!h->value)
            return ERR_NOMEM;
    }
    res->added[res->n_added].name = name;
    res->added[res->n_added].value = strdup(value);
    if (!res->added[res->n_added++].value)
        return ERR_NOMEM;
    return 0;
}

/* Check a header the caller set that the signer would otherwise add; ERR_INVAL when it conflicts
 * with the signer's inputs. Sets the matching bit in *have. */
static int check_own_header(const struct hentry *h, const struct sigv4_signed *res,
                            const char *token, unsigned flags, const char *payload_hash,
                            unsigned *have)
{
    if (strcmp(h->name, "authorization") == 0)
        return ERR_INVAL;
    if (strcmp(h->name, "host") == 0) {
        *have |= 1u;
        if (!*h->value)
            return ERR_INVAL;
    } else if (strcmp(h->name, "x-amz-date") == 0) {
        *have |= 2u;
        if (strcmp(h->value, res->amz_date) != 0)
            return ERR_INVAL;
    } else if (strcmp(h->name, "x-amz-security-token") == 0) {
        *have |= 4u;
        if (token && ((flags & SIGV4_TOKEN_UNSIGNED) || strcmp(h->value, token) != 0))
            return ERR_INVAL;
    } else if (strcmp(h->name, "x-amz-content-sha256") == 0) {
        *have |= 8u;
        if ((flags & SIGV4_CONTENT_SHA256) && strcmp(h->value, payload_hash) != 0)
            return ERR_INVAL;
    }
    return 0;
}

/* The canonical headers ("name:v1,v2\n" per name, sorted) into creq and the signed header names
 * ("a;b") into names; hs is sorted in place. */
static void add_canonical_headers(struct strbuf *creq, struct strbuf *names, struct hentry *hs,
                                  size_t nh)
{
    qsort(hs, nh, sizeof(*hs), hentry_cmp);
    for (size_t i = 0; i < nh; i++) {
        if (i > 0 && strcmp(hs[i].name, hs[i - 1].name) == 0) {
            strbuf_chr(creq, ',');
        } else {
            if (i > 0) {
                strbuf_chr(creq, '\n');
                strbuf_chr(names, ';');
            }
            strbuf_str(creq, hs[i].name);
            strbuf_chr(creq, ':');
            strbuf_str(names, hs[i].name);
        }
        strbuf_str(creq, hs[i].value);
    }
    if (nh > 0)
        strbuf_chr(creq, '\n');
}

int sigv4_sign(const struct sigv4_request *req, const struct sigv4_credentials *cred,
               const struct sigv4_params *params, struct sigv4_signed *out)
{
    struct sigv4_signed res = {0};
    struct hentry *hs = NULL;
    size_t nh = 0;
    struct strbuf creq = {0}, names = {0}, scope = {0}, sts = {0}, authz = {0};
    char payload_hex[CRYPTO_SHA256_HEX_LEN + 1], creq_hex[CRYPTO_SHA256_HEX_LEN + 1];
    unsigned char key[CRYPTO_SHA256_LEN], sig[CRYPTO_SHA256_LEN];
    const char *token, *payload_hash;
    unsigned have = 0, flags;
    int rc = 0;

    if (!req || !cred || !params || !out)
        return ERR_INVAL;
    token = cred->session_token;
    flags = params->flags;
    if (!is_token(req->method) || (!req->payload && req->payload_len > 0) ||
        (!req->headers && req->n_headers > 0) || !is_scope_part(cred->access_key_id) ||
        !cred->secret_access_key || !*cred->secret_access_key || !is_scope_part(params->region) ||
        !is_scope_part(params->service) || (token && !is_header_word(token)) ||
        (params->payload_hash && !is_header_word(params->payload_hash)))
        return ERR_INVAL;
    rc = format_amz_date(params->time, res.amz_date);
    if (rc)
        return rc;
    payload_hash = params->payload_hash;
    if (!payload_hash) {
        rc = crypto_sha256_hex(req->payload, req->payload_len, payload_hex);
        if (rc)
            return rc;
        payload_hash = payload_hex;
    }

    hs = calloc(req->n_headers + SIGV4_MAX_ADDED, sizeof(*hs));
    if (!hs)
        return ERR_NOMEM;
    for (size_t i = 0; i < req->n_headers; i++) {
        struct hentry *h = &hs[nh++];

        h->order = i;
        h->name = canonical_name(req->headers[i].name, &rc);
        if (!h->name)
            goto out;
        h->value = canonical_value(req->headers[i].value, &rc);
        if (!h->value)
            goto out;
        rc = check_own_header(h, &res, token, flags, payload_hash, &have);
        if (rc)
            goto out;
    }
    if (!(have & 1u)) {
        rc = ERR_INVAL;
        goto out;
    }
    if (!(have & 2u))
        rc = add_header(hs, &nh, &res, "X-Amz-Date", res.amz_date);
    if (rc == 0 && token && !(have & 4u))
        rc = add_header((flags & SIGV4_TOKEN_UNSIGNED) ? NULL : hs, &nh, &res,
                        "X-Amz-Security-Token", token);
    if (rc == 0 && (flags & SIGV4_CONTENT_SHA256) && !(have & 8u))
        rc = add_header(hs, &nh, &res, "X-Amz-Content-Sha256", payload_hash);
    if (rc)
        goto out;

    /* Method, canonical URI, canonical query, canonical headers, signed headers, payload hash. */
    strbuf_str(&creq, req->method);
    strbuf_chr(&creq, '\n');
    rc = add_canonical_path(&creq, req->path, (flags & SIGV4_NORMALIZE_PATH) != 0);
    if (rc)
        goto out;
    strbuf_chr(&creq, '\n');
    rc = add_canonical_query(&creq, req->query);
    if (rc)
        goto out;
    strbuf_chr(&creq, '\n');
    add_canonical_headers(&creq, &names, hs, nh);
    strbuf_chr(&creq, '\n');
    strbuf_add(&creq, names.p ? names.p : "", names.len);
    strbuf_chr(&creq, '\n');
    strbuf_str(&creq, payload_hash);
    if (creq.failed || names.failed) {
        rc = ERR_NOMEM;
        goto out;
    }

    /* Scope and string to sign. */
    strbuf_add(&scope, res.amz_date, 8);
    strbuf_chr(&scope, '/');
    strbuf_str(&scope, params->region);
    strbuf_chr(&scope, '/');
    strbuf_str(&scope, params->service);
    strbuf_str(&scope, "/" SIGV4_TERMINATOR);
    if (scope.failed) {
        rc = ERR_NOMEM;
        goto out;
    }
    rc = crypto_sha256_hex(creq.p, creq.len, creq_hex);
    if (rc)
        goto out;
    strbuf_str(&sts, SIGV4_ALGORITHM "\n");
    strbuf_str(&sts, res.amz_date);
    strbuf_chr(&sts, '\n');
    strbuf_str(&sts, scope.p);
    strbuf_chr(&sts, '\n');
    strbuf_str(&sts, creq_hex);
    if (sts.failed) {
        rc = ERR_NOMEM;
        goto out;
    }

    /* Signature and Authorization. */
    rc = derive_key(cred->secret_access_key, res.amz_date, params->region, params->service, key);
    if (rc)
        goto out;
    rc = crypto_hmac_sha256(key, sizeof(key), sts.p, sts.len, sig);
    if (rc)
        goto out;
    crypto_hex(sig, sizeof(sig), res.signature);
    strbuf_str(&authz, SIGV4_ALGORITHM " Credential=");
    strbuf_str(&authz, cred->access_key_id);
    strbuf_chr(&authz, '/');
    strbuf_str(&authz, scope.p);
    strbuf_str(&authz, ", SignedHeaders=");
    strbuf_str(&authz, names.p);
    strbuf_str(&authz, ", Signature=");
    strbuf_str(&authz, res.signature);

    res.canonical_request = strbuf_take(&creq);
    res.string_to_sign = strbuf_take(&sts);
    res.authorization = strbuf_take(&authz);
    if (!res.canonical_request || !res.string_to_sign || !res.authorization) {
        rc = ERR_NOMEM;
        goto out;
    }
    *out = res;
out:
    crypto_wipe(key, sizeof(key));
    for (size_t i = 0; i < nh; i++) {
        free(hs[i].name);
        free(hs[i].value);
    }
    free(hs);
    strbuf_free(&creq);
    strbuf_free(&names);
    strbuf_free(&scope);
    strbuf_free(&sts);
    strbuf_free(&authz);
    if (rc)
        sigv4_signed_free(&res);
    return rc;
}

void sigv4_signed_free(struct sigv4_signed *s)
{
    char **strings[3];

    if (!s)
        return;
    strings[0] = &s->canonical_request;
    strings[1] = &s->string_to_sign;
    strings[2] = &s->authorization;
    for (size_t i = 0; i < 3; i++) {
        if (*strings[i]) {
            crypto_wipe(*strings[i], strlen(*strings[i]));
            free(*strings[i]);
        }
    }
    for (size_t i = 0; i < s->n_added && i < SIGV4_MAX_ADDED; i++) {
        if (s->added[i].value) {
            crypto_wipe(s->added[i].value, strlen(s->added[i].value));
            free(s->added[i].value);
        }
    }
    crypto_wipe(s, sizeof(*s));
}
