/* test_sigv4.c: the signer against every case of the AWS SigV4 test suite (tests/data/
 * sigv4-testsuite: canonical request, string to sign, Authorization and signed request), and its
 * options, checks and secrecy. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/file.h"
#include "util/sigv4.h"

#define SUITE CASTOR_TEST_DATA "/sigv4-testsuite"
/* The suite's README: 34 case directories, the sub-cases of normalize-path and post-sts-token in.
 */
#define SUITE_CASES 34

/* The suite's fixed inputs (its README). */
#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define REGION "us-east-1"
#define SERVICE "service"
#define TIME 1440938160 /* 2015-08-30T12:36:00Z */

/* The token of post-sts-token/readme.txt. */
#define STS_TOKEN                                                                                  \
    "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSP" \
    "fIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYw"  \
    "T7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKm"  \
    "lzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="

/* Cases signed with a session token: the token and the flags (the token of
 * get-vanilla-with-session-token is the one its .creq and .sreq show). */
static const struct {
    const char *name;
    const char *token;
    unsigned flags;
} token_cases[] = {
    {"get-vanilla-with-session-token",
     "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267", 0},
    {"post-sts-header-before", STS_TOKEN, 0},                   /* the .req carries the header */
    {"post-sts-header-after", STS_TOKEN, SIGV4_TOKEN_UNSIGNED}, /* added after signing */
};

/* A defect of the suite's data: the .sreq of get-vanilla-with-session-token carries get-vanilla's
 * signature, not the one its own .authz and .sts give (botocore never reads .sreq). The expected
 * signed request of such a case is built with the signature recorded here, and the test fails if
 * the .sreq is ever corrected, so that this entry goes. */
static const struct {
    const char *name;
    const char *sreq_signature;
} sreq_defects[] = {
    {"get-vanilla-with-session-token",
     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
};

#define MAX_HEADERS 16

/* A parsed .req: request line, headers (folded lines kept, joined by '\n'), body. */
struct raw_req {
    char *method, *path, *query;
    struct sigv4_header headers[MAX_HEADERS];
    size_t n_headers;
    const char *body; /* into the text */
    size_t body_len;
    size_t head_len; /* bytes of the request line and header lines, without a final newline */
};

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);

    assert_non_null(d);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Parse text: "METHOD SP target SP version" (the target may hold a raw space: the method ends at
 * the first space, the version starts after the last), then "Name:value" lines, where a line that
 * starts with a space or tab continues the previous value, then an optional blank line and body.
 * Returns 0, or -1 on malformed text. */
static int parse_req(const char *text, struct raw_req *r)
{
    const char *eol = strchr(text, '\n'), *sp1, *sp2, *target, *q, *p;
    size_t line_len = eol ? (size_t)(eol - text) : strlen(text);

    memset(r, 0, sizeof(*r));
    sp1 = memchr(text, ' ', line_len);
    sp2 = text + line_len;
    while (sp2 > text && sp2[-1] != ' ')
        sp2--;
    sp2--;
    if (!sp1 || sp2 <= sp1)
        return -1;
    r->method = dup_n(text, (size_t)(sp1 - text));
    target = sp1 + 1;
    q = memchr(target, '?', (size_t)(sp2 - target));
    r->path = dup_n(target, (size_t)((q ? q : sp2) - target));
    r->query = q ? dup_n(q + 1, (size_t)(sp2 - q - 1)) : dup_n("", 0);
    r->head_len = line_len;
    r->body = "";
    for (p = eol ? eol + 1 : NULL; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);

        if (n == 0) { /* the blank line: the body follows */
            r->body = p + 1;
            r->body_len = strlen(p + 1);
            break;
        }
        if (*p == ' ' || *p == '\t') {
            struct sigv4_header *h = &r->headers[r->n_headers - 1];
            size_t old;
            char *v;

            if (r->n_headers == 0)
                return -1;
            old = strlen(h->value);
            v = realloc((char *)h->value, old + 1 + n + 1);
            assert_non_null(v);
            v[old] = '\n';
            memcpy(v + old + 1, p, n);
            v[old + 1 + n] = '\0';
            h->value = v;
        } else {
            const char *colon = memchr(p, ':', n);

            if (!colon || r->n_headers == MAX_HEADERS)
                return -1;
            r->headers[r->n_headers].name = dup_n(p, (size_t)(colon - p));
            r->headers[r->n_headers].value = dup_n(colon + 1, n - (size_t)(colon + 1 - p));
            r->n_headers++;
        }
        r->head_len = (size_t)(p + n - text);
        p = end ? end + 1 : NULL;
    }
    return 0;
}

static void raw_req_free(struct raw_req *r)
{
    free(r->method);
    free(r->path);
    free(r->query);
    for (size_t i = 0; i < r->n_headers; i++) {
        free((char *)r->headers[i].name);
        free((char *)r->headers[i].value);
    }
}

/* The file dir/name.ext, or NULL when it cannot be read. The caller frees it. */
static char *read_case_file(const char *dir, const char *name, const char *ext)
{
    char path[1024];
    char *data = NULL;
    size_t len;

    snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext);
    if (file_read_all(path, &data, &len, NULL) != 0)
        return NULL;
    return data;
}

/* Compare one output with the expected file; print both on a difference. Returns 1 on a match. */
static int same(const char *name, const char *what, const char *expected, const char *got)
{
    if (expected && got && strcmp(expected, got) == 0)
        return 1;
    print_error("%s: %s differs\n--- expected\n%s\n--- got\n%s\n---\n", name, what,
                expected ? expected : "(unreadable)", got ? got : "(none)");
    return 0;
}

/* The signed request as the suite writes it: the request line and header lines as they were, the
 * added headers as "Name:value", "Authorization: <value>", and the body after a blank line when
 * there is one. signature, if not NULL, replaces the one in the Authorization value. */
static char *signed_request(const char *text, const struct raw_req *r, const struct sigv4_signed *s,
                            const char *signature)
{
    char *out = NULL, *authz = strdup(s->authorization), *sig;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    assert_non_null(f);
    assert_non_null(authz);
    sig = strstr(authz, "Signature=");
    if (signature && sig && strlen(sig + 10) == strlen(signature))
        memcpy(sig + 10, signature, strlen(signature));
    fwrite(text, 1, r->head_len, f);
    for (size_t i = 0; i < s->n_added; i++)
        fprintf(f, "\n%s:%s", s->added[i].name, s->added[i].value);
    fprintf(f, "\nAuthorization: %s", authz);
    if (r->body_len > 0)
        fprintf(f, "\n\n%s", r->body);
    assert_int_equal(fclose(f), 0);
    free(authz);
    return out;
}

/* Sign one case directory; returns the number of mismatches (0 when the case passes). */
static int run_case(const char *dir, const char *name, int *token_used, int *defect_used)
{
    char *text = read_case_file(dir, name, "req");
    char *creq = read_case_file(dir, name, "creq"), *sts = read_case_file(dir, name, "sts");
    char *authz = read_case_file(dir, name, "authz"), *sreq = read_case_file(dir, name, "sreq");
    struct sigv4_credentials cred = {AKID, SECRET, NULL};
    struct sigv4_params params = {REGION, SERVICE, TIME, SIGV4_NORMALIZE_PATH, NULL};
    struct sigv4_signed s = {0};
    struct sigv4_request req;
    struct raw_req r;
    const char *bad_signature = NULL;
    char *built = NULL;
    int fails = 0, rc;

    if (!text || parse_req(text, &r) != 0) {
        print_error("%s: no readable .req\n", name);
        fails = 1;
        goto out;
    }
    for (size_t i = 0; i < sizeof(token_cases) / sizeof(token_cases[0]); i++) {
        if (strcmp(token_cases[i].name, name) == 0) {
            cred.session_token = token_cases[i].token;
            params.flags |= token_cases[i].flags;
            token_used[i] = 1;
        }
    }
    for (size_t i = 0; i < sizeof(sreq_defects) / sizeof(sreq_defects[0]); i++) {
        if (strcmp(sreq_defects[i].name, name) == 0) {
            bad_signature = sreq_defects[i].sreq_signature;
            defect_used[i] = 1;
        }
    }
    req.method = r.method;
    req.path = r.path;
    req.query = r.query;
    req.headers = r.headers;
    req.n_headers = r.n_headers;
    req.payload = r.body;
    req.payload_len = r.body_len;
    rc = sigv4_sign(&req, &cred, &params, &s);
    if (rc != 0) {
        print_error("%s: sigv4_sign returned %s\n", name, err_name(rc));
        fails = 1;
    } else {
        fails += !same(name, ".creq", creq, s.canonical_request);
        fails += !same(name, ".sts", sts, s.string_to_sign);
        fails += !same(name, ".authz", authz, s.authorization);
        built = signed_request(text, &r, &s, bad_signature);
        fails += !same(name, ".sreq", sreq, built);
        /* a recorded defect must still be one: .sreq disagrees with .authz */
        if (bad_signature && authz && strstr(authz, bad_signature)) {
            print_error("%s: the .sreq defect is gone; drop it from sreq_defects\n", name);
            fails++;
        }
    }
    raw_req_free(&r);
out:
    sigv4_signed_free(&s);
    free(built);
    free(text);
    free(creq);
    free(sts);
    free(authz);
    free(sreq);
    return fails;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Walk dir: a directory without subdirectories is a case (named like its folder); others are
 * walked in name order. Counts the leaf directories in *dirs, the cases signed in *cases. */
static void walk(const char *dir, int *dirs, int *cases, int *fails, int *token_used,
                 int *defect_used)
{
    DIR *d = opendir(dir);
    char *subs[64];
    size_t nsub = 0;
    struct dirent *de;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        char path[1024];
        struct stat st;

        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        assert_int_equal(stat(path, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            assert_true(nsub < sizeof(subs) / sizeof(subs[0]));
            subs[nsub] = strdup(path);
            assert_non_null(subs[nsub]);
            nsub++;
        }
    }
    closedir(d);
    qsort(subs, nsub, sizeof(subs[0]), name_cmp);
    if (nsub == 0) {
        const char *name = strrchr(dir, '/') + 1;
        int f = run_case(dir, name, token_used, defect_used);

        ++*dirs;
        *fails += f;
        *cases += f == 0;
    }
    for (size_t i = 0; i < nsub; i++) {
        walk(subs[i], dirs, cases, fails, token_used, defect_used);
        free(subs[i]);
    }
}

/* Every case of the suite passes: canonical request, string to sign, Authorization and signed
 * request equal the files byte for byte; the number of cases that passed is the number of case
 * directories found, which is the suite's 34; every token and defect entry was used. */
static void sigv4_sign__aws_test_suite(void **state)
{
    int token_used[sizeof(token_cases) / sizeof(token_cases[0])] = {0};
    int defect_used[sizeof(sreq_defects) / sizeof(sreq_defects[0])] = {0};
    int dirs = 0, cases = 0, fails = 0;

    (void)state;
    walk(SUITE, &dirs, &cases, &fails, token_used, defect_used);
    assert_int_equal(fails, 0);
    assert_int_equal(cases, dirs);
    assert_int_equal(dirs, SUITE_CASES);
    for (size_t i = 0; i < sizeof(token_used) / sizeof(token_used[0]); i++)
        assert_true(token_used[i]);
    for (size_t i = 0; i < sizeof(defect_used) / sizeof(defect_used[0]); i++)
        assert_true(defect_used[i]);
}

/* --- options, checks and secrecy, on requests built here --- */

static const struct sigv4_header host_only[] = {{"Host", "example.amazonaws.com"}};

static struct sigv4_request vanilla(void)
{
    struct sigv4_request req = {"GET", "/", NULL, host_only, 1, NULL, 0};

    return req;
}

static struct sigv4_credentials creds(void)
{
    struct sigv4_credentials c = {AKID, SECRET, NULL};

    return c;
}

static struct sigv4_params params_for(unsigned flags)
{
    struct sigv4_params p = {REGION, SERVICE, TIME, flags, NULL};

    return p;
}

/* Without X-Amz-Date in the request the signer formats the time, adds the header and signs it:
 * the result is the suite's get-vanilla. */
static void sigv4_sign__adds_amz_date_from_unix_time(void **state)
{
    struct sigv4_request req = vanilla();
    struct sigv4_credentials c = creds();
    struct sigv4_params p = params_for(SIGV4_NORMALIZE_PATH);
    struct sigv4_signed s;

    (void)state;
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), 0);
    assert_string_equal(s.amz_date, "20150830T123600Z");
    assert_int_equal(s.n_added, 1);
    assert_string_equal(s.added[0].name, "X-Amz-Date");
    assert_string_equal(s.added[0].value, "20150830T123600Z");
    assert_string_equal(s.signature,
                        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
    assert_non_null(strstr(s.authorization, "SignedHeaders=host;x-amz-date,"));
    sigv4_signed_free(&s);
    assert_null(s.authorization);

    /* a leap day at midnight */
    p.time = 951782400; /* 2000-02-29T00:00:00Z */
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), 0);
    assert_string_equal(s.amz_date, "20000229T000000Z");
    assert_non_null(strstr(s.authorization, "Credential=" AKID "/20000229/" REGION "/"));
    sigv4_signed_free(&s);
}

/* Times whose year has not four digits are ERR_RANGE. */
static void sigv4_sign__time_out_of_range(void **state)
{
    struct sigv4_request req = vanilla();
    struct sigv4_credentials c = creds();
    struct sigv4_params p = params_for(0);
    struct sigv4_signed s;

    (void)state;
    p.time = 253402300800; /* 10000-01-01 */
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), ERR_RANGE);
    p.time = 253402300799; /* 9999-12-31T23:59:59Z */
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), 0);
    assert_string_equal(s.amz_date, "99991231T235959Z");
    sigv4_signed_free(&s);
    p.time = -30610224001; /* 999-12-31T23:59:59Z */
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), ERR_RANGE);
}

/* The canonical URI line (the second line) of the canonical request for path and flags. */
static char *canonical_uri(const char *path, const char *query, unsigned flags, int *rc)
{
    struct sigv4_request req = vanilla();
    struct sigv4_credentials c = creds();
    struct sigv4_params p = params_for(flags);
    struct sigv4_signed s;
    char *line = NULL;

    req.path = path;
    req.query = query;
    *rc = sigv4_sign(&req, &c, &p, &s);
    if (*rc == 0) {
        const char *a = strchr(s.canonical_request, '\n') + 1;
        const char *b = strchr(a, '\n');

        if (query) { /* the query line instead */
            a = b + 1;
            b = strchr(a, '\n');
        }
        line = dup_n(a, (size_t)(b - a));
        sigv4_signed_free(&s);
    }
    return line;
}

static void expect_line(const char *path, const char *query, unsigned flags, const char *want)
{
    int rc;
    char *got = canonical_uri(path, query, flags, &rc);

    assert_int_equal(rc, 0);
    assert_string_equal(got, want);
    free(got);
}

/* With SIGV4_NORMALIZE_PATH: dot segments and empty segments go (a final "/.." keeps its slash, as
 * RFC 3986 says), '..' above the root stays at the root, and a '%' is encoded again. */
static void sigv4_sign__normalized_path(void **state)
{
    (void)state;
    expect_line("/a/b/../c/./d", NULL, SIGV4_NORMALIZE_PATH, "/a/c/d");
    expect_line("/a/b/..", NULL, SIGV4_NORMALIZE_PATH, "/a/");
    expect_line("/../../a", NULL, SIGV4_NORMALIZE_PATH, "/a");
    expect_line("", NULL, SIGV4_NORMALIZE_PATH, "/");
    expect_line("/a%20b/c d", NULL, SIGV4_NORMALIZE_PATH, "/a%2520b/c%20d");
    expect_line("/a+b=c", NULL, SIGV4_NORMALIZE_PATH, "/a%2Bb%3Dc");
}

/* Without it (S3): slashes and dot segments stay; escapes are decoded and encoded once, so a raw
 * and an encoded space sign alike and lower-case hex becomes upper case; a bad escape is
 * ERR_INVAL. */
static void sigv4_sign__s3_path_kept(void **state)
{
    int rc;

    (void)state;
    expect_line("/my-object//example//photo.user", NULL, 0, "/my-object//example//photo.user");
    expect_line("/a/./b/../c", NULL, 0, "/a/./b/../c");
    expect_line("/a b", NULL, 0, "/a%20b");
    expect_line("/a%20b", NULL, 0, "/a%20b");
    expect_line("/%e1%88%b4", NULL, 0, "/%E1%88%B4");
    assert_null(canonical_uri("/a%2", NULL, 0, &rc));
    assert_int_equal(rc, ERR_INVAL);
    assert_null(canonical_uri("/a%zz", NULL, 0, &rc));
    assert_int_equal(rc, ERR_INVAL);
    assert_null(canonical_uri("a/b", NULL, 0, &rc));
    assert_int_equal(rc, ERR_INVAL);
}

/* Query pairs: a key without '=' gets an empty value, empty pairs go, '+' is a plus, values are
 * re-encoded (an '=' inside a value too), sorted by key then value in byte order; a bad escape is
 * ERR_INVAL. */
static void sigv4_sign__canonical_query(void **state)
{
    int rc;

    (void)state;
    expect_line("/", "b=2&&a&c=x+y", 0, "a=&b=2&c=x%2By");
    expect_line("/", "k=v=w&K=1&k=V", 0, "K=1&k=V&k=v%3Dw");
    expect_line("/", "Action=DescribeInstances&Version=2016-11-15", 0,
                "Action=DescribeInstances&Version=2016-11-15");
    expect_line("/", "a=%7e%2F", 0, "a=~%2F");
    assert_null(canonical_uri("/", "a=%G0", 0, &rc));
    assert_int_equal(rc, ERR_INVAL);
}

/* SIGV4_CONTENT_SHA256 adds x-amz-content-sha256 with the payload's hash and signs it; a given
 * payload hash ("UNSIGNED-PAYLOAD") replaces the computed one in both places. */
static void sigv4_sign__content_sha256(void **state)
{
    struct sigv4_request req = vanilla();
    struct sigv4_credentials c = creds();
    struct sigv4_params p = params_for(SIGV4_CONTENT_SHA256);
    struct sigv4_signed s;
    const char *body = "Param1=value1";
    const char *hash = "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e";
    char want[512];

    (void)state;
    req.method = "PUT";
    req.payload = body;
    req.payload_len = strlen(body);
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), 0);
    assert_int_equal(s.n_added, 2);
    assert_string_equal(s.added[1].name, "X-Amz-Content-Sha256");
    assert_string_equal(s.added[1].value, hash);
    snprintf(want, sizeof(want),
             "PUT\n/\n\nhost:example.amazonaws.com\nx-amz-content-sha256:%s\n"
             "x-amz-date:20150830T123600Z\n\nhost;x-amz-content-sha256;x-amz-date\n%s",
             hash, hash);
    assert_string_equal(s.canonical_request, want);
    sigv4_signed_free(&s);

    p.payload_hash = "UNSIGNED-PAYLOAD";
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), 0);
    assert_string_equal(s.added[1].value, "UNSIGNED-PAYLOAD");
    assert_non_null(strstr(s.canonical_request, "x-amz-content-sha256:UNSIGNED-PAYLOAD\n"));
    assert_string_equal(strrchr(s.canonical_request, '\n'), "\nUNSIGNED-PAYLOAD");
    sigv4_signed_free(&s);
}

/* A token is added after X-Amz-Date; signed by default, unsigned with SIGV4_TOKEN_UNSIGNED (and
 * then the signature is the one without a token). */
static void sigv4_sign__session_token(void **state)
{
    struct sigv4_request req = vanilla();
    struct sigv4_credentials c = creds();
    struct sigv4_params p = params_for(0);
    struct sigv4_signed plain, s;

    (void)state;
    assert_int_equal(sigv4_sign(&req, &c, &p, &plain), 0);
    c.session_token = "TOKEN/with+base64==";
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), 0);
    assert_int_equal(s.n_added, 2);
    assert_string_equal(s.added[1].name, "X-Amz-Security-Token");
    assert_string_equal(s.added[1].value, "TOKEN/with+base64==");
    assert_non_null(strstr(s.canonical_request, "\nx-amz-security-token:TOKEN/with+base64==\n"));
    assert_string_not_equal(s.signature, plain.signature);
    sigv4_signed_free(&s);

    p.flags = SIGV4_TOKEN_UNSIGNED;
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), 0);
    assert_int_equal(s.n_added, 2);
    assert_string_equal(s.added[1].value, "TOKEN/with+base64==");
    assert_null(strstr(s.canonical_request, "security-token"));
    assert_string_equal(s.signature, plain.signature);
    sigv4_signed_free(&s);
    sigv4_signed_free(&plain);
}

/* Bad input is ERR_INVAL and leaves *out alone: no Host, an Authorization header, a header name
 * that is no token, a control character in a value, an X-Amz-Date that is not the time, a token
 * header that differs from the token or comes with SIGV4_TOKEN_UNSIGNED, a scope part with '/',
 * an empty secret, a token with a space. */
static void sigv4_sign__bad_input(void **state)
{
    const struct sigv4_header no_host[] = {{"X-Amz-Date", "20150830T123600Z"}};
    const struct sigv4_header authz[] = {{"Host", "h"}, {"Authorization", "x"}};
    const struct sigv4_header bad_name[] = {{"Host", "h"}, {"My Header", "x"}};
    const struct sigv4_header bad_value[] = {{"Host", "h"}, {"X-A", "a\001b"}};
    const struct sigv4_header empty_host[] = {{"Host", " "}};
    const struct sigv4_header other_date[] = {{"Host", "h"}, {"X-Amz-Date", "20150830T123601Z"}};
    const struct sigv4_header token_hdr[] = {{"Host", "h"}, {"X-Amz-Security-Token", "t1"}};
    const struct {
        const struct sigv4_header *h;
        size_t n;
        const char *token;
        unsigned flags;
    } bad[] = {
        {no_host, 1, NULL, 0},    {authz, 2, NULL, 0},
        {bad_name, 2, NULL, 0},   {bad_value, 2, NULL, 0},
        {empty_host, 1, NULL, 0}, {other_date, 2, NULL, 0},
        {token_hdr, 2, "t2", 0},  {token_hdr, 2, "t1", SIGV4_TOKEN_UNSIGNED},
        {host_only, 1, "a b", 0},
    };
    struct sigv4_request req = vanilla();
    struct sigv4_credentials c = creds();
    struct sigv4_params p = params_for(0);
    struct sigv4_signed s, untouched;

    (void)state;
    memset(&s, 0x5a, sizeof(s));
    memcpy(&untouched, &s, sizeof(s));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        req.headers = bad[i].h;
        req.n_headers = bad[i].n;
        c.session_token = bad[i].token;
        p.flags = bad[i].flags;
        assert_int_equal(sigv4_sign(&req, &c, &p, &s), ERR_INVAL);
        assert_memory_equal(&s, &untouched, sizeof(s));
    }
    req = vanilla();
    c = creds();
    p = params_for(0);
    /* the same token in the header is accepted and not added twice */
    req.headers = token_hdr;
    req.n_headers = 2;
    c.session_token = "t1";
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), 0);
    assert_int_equal(s.n_added, 1);
    sigv4_signed_free(&s);
    req = vanilla();
    c = creds();
    p.region = "us/east";
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), ERR_INVAL);
    p = params_for(0);
    c.secret_access_key = "";
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), ERR_INVAL);
    c = creds();
    req.method = "GE T";
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), ERR_INVAL);
    assert_int_equal(sigv4_sign(NULL, &c, &p, &s), ERR_INVAL);
}

/* The secret, or any 8 consecutive characters of it, appears in no output of the signer, for a
 * request with a token, a body, a query and the content hash header; nor does "AWS4" + secret. */
static void sigv4_sign__secret_never_in_output(void **state)
{
    static const char secret[] = "SeCrEt/KeY+0123456789abcdefGHIJKLMnopqrs";
    const struct sigv4_header headers[] = {{"Host", "ec2.amazonaws.com"},
                                           {"Content-Type", "application/x-www-form-urlencoded"}};
    const char *body = "Action=DescribeInstances&Version=2016-11-15";
    struct sigv4_request req = {"POST", "/", "a=b", headers, 2, body, strlen(body)};
    struct sigv4_credentials c = {AKID, secret, "TOKEN"};
    struct sigv4_params p = params_for(SIGV4_NORMALIZE_PATH | SIGV4_CONTENT_SHA256);
    struct sigv4_signed s;
    const char *outputs[8];
    size_t n = 0;

    (void)state;
    assert_int_equal(sigv4_sign(&req, &c, &p, &s), 0);
    outputs[n++] = s.canonical_request;
    outputs[n++] = s.string_to_sign;
    outputs[n++] = s.authorization;
    outputs[n++] = s.signature;
    outputs[n++] = s.amz_date;
    for (size_t i = 0; i < s.n_added; i++)
        outputs[n++] = s.added[i].value;
    assert_int_equal(n, 8);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k + 8 <= strlen(secret); k++) {
            char piece[9];

            memcpy(piece, secret + k, 8);
            piece[8] = '\0';
            assert_null(strstr(outputs[i], piece));
        }
    }
    sigv4_signed_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sigv4_sign__aws_test_suite),
        cmocka_unit_test(sigv4_sign__adds_amz_date_from_unix_time),
        cmocka_unit_test(sigv4_sign__time_out_of_range),
        cmocka_unit_test(sigv4_sign__normalized_path),
        cmocka_unit_test(sigv4_sign__s3_path_kept),
        cmocka_unit_test(sigv4_sign__canonical_query),
        cmocka_unit_test(sigv4_sign__content_sha256),
        cmocka_unit_test(sigv4_sign__session_token),
        cmocka_unit_test(sigv4_sign__bad_input),
        cmocka_unit_test(sigv4_sign__secret_never_in_output),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
