/* test_credentials.c: the AWS credential chain: environment, shared file with profiles, IMDSv2
 * against a fake on loopback (token required, expiry, refresh), and no secret in any message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "providers/aws/credentials.h"
#include "support/loopback_http.h"
#include "util/timestamp.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
#define TOKEN "IQoJb3JpZ2luX2VjEXAMPLETOKEN"

/* A fake IMDS: wants a PUT for the token, then the token on every GET. */
struct fake_imds {
    int64_t expiration;    /* what it hands out */
    int generation;        /* bumped into the key id so a refresh is visible */
    int calls;             /* credential GETs answered */
    int role_status;       /* 0: 200 */
    const char *creds_doc; /* NULL: a good document */
    int down;              /* 1: answer 503 to everything */
    int hang;              /* 1: read every request and never answer */
};

static void imds_handler(void *arg, const struct lh_request *req, struct lh_reply *reply)
{
    struct fake_imds *f = arg;
    const char *tok = lh_header(req, "X-aws-ec2-metadata-token");
    char doc[1024], exp[TIMESTAMP_ISO8601_LEN + 1];

    if (f->hang) {
        reply->action = LH_HANG;
    } else if (f->down) {
        lh_reply_text(reply, 503, "text/plain", "down");
    } else if (strcmp(req->target, "/latest/api/token") == 0) {
        const char *ttl = lh_header(req, "X-aws-ec2-metadata-token-ttl-seconds");

        if (strcmp(req->method, "PUT") != 0 || !ttl || strcmp(ttl, "21600") != 0)
            lh_reply_text(reply, 400, "text/plain", "bad token request");
        else
            lh_reply_text(reply, 200, "text/plain", "imds-session-token");
    } else if (!tok || strcmp(tok, "imds-session-token") != 0) {
        lh_reply_text(reply, 401, "text/plain", "");
    } else if (strcmp(req->target, "/latest/meta-data/iam/security-credentials/") == 0) {
        if (f->role_status)
            lh_reply_text(reply, f->role_status, "text/plain", "");
        else
            lh_reply_text(reply, 200, "text/plain", "castor-node\n");
    } else if (strcmp(req->target, "/latest/meta-data/iam/security-credentials/castor-node") == 0) {
        f->calls++;
        timestamp_format_iso8601(f->expiration, exp);
        snprintf(doc, sizeof(doc),
                 "{\"Code\":\"Success\",\"LastUpdated\":\"2024-01-01T00:00:00Z\",\"Type\":"
                 "\"AWS-HMAC\",\"AccessKeyId\":\"ASIAGEN%d\",\"SecretAccessKey\":\"" SECRET
                 "\",\"Token\":\"" TOKEN "\",\"Expiration\":\"%s\"}",
                 f->generation, exp);
        lh_reply_text(reply, 200, "text/plain", f->creds_doc ? f->creds_doc : doc);
    } else {
        lh_reply_text(reply, 404, "text/plain", "");
    }
}

struct fixture {
    struct fake_imds imds;
    struct lh_server *server;
    char url[64];
    char dir[64];
    char file[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f)
        return -1;
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    unsetenv("AWS_EC2_METADATA_DISABLED");
    snprintf(f->dir, sizeof(f->dir), "/tmp/castor-cred-XXXXXX");
    if (!mkdtemp(f->dir) || lh_start(imds_handler, &f->imds, &f->server) < 0)
        return -1;
    setenv("HOME", f->dir, 1);
    snprintf(f->file, sizeof(f->file), "%s/.aws", f->dir);
    if (mkdir(f->file, 0700) < 0)
        return -1;
    snprintf(f->file, sizeof(f->file), "%s/.aws/credentials", f->dir);
    lh_url(f->server, f->url, sizeof(f->url));
    f->imds.expiration = 1700000000 + 3600;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    lh_stop(f->server);
    unlink(f->file);
    f->file[strlen(f->file) - strlen("/credentials")] = '\0';
    rmdir(f->file);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

/* Neither secret nor token appears in a message. */
static void assert_no_secret(const struct error *e)
{
    assert_null(strstr(e->msg, SECRET));
    assert_null(strstr(e->msg, "wJalr"));
    assert_null(strstr(e->msg, TOKEN));
    assert_null(strstr(e->file, SECRET));
}

/* The environment: both keys and a token; one key alone is refused; none is ERR_NOENT. */
static void from_env__keys_and_token(void **state)
{
    struct aws_credentials c = {0};
    struct error e = {0};

    (void)state;
    assert_int_equal(aws_credentials_from_env(&c, &e), ERR_NOENT);
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    assert_int_equal(aws_credentials_from_env(&c, &e), ERR_INVAL);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    assert_int_equal(aws_credentials_from_env(&c, &e), 0);
    assert_string_equal(c.access_key_id, "AKIDENV");
    assert_string_equal(c.secret_access_key, SECRET);
    assert_null(c.session_token);
    assert_int_equal(c.expiration, 0);
    assert_string_equal(c.source, "environment");
    aws_credentials_clear(&c);
    assert_null(c.secret_access_key);
    setenv("AWS_SESSION_TOKEN", TOKEN, 1);
    assert_int_equal(aws_credentials_from_env(&c, &e), 0);
    assert_string_equal(c.session_token, TOKEN);
    aws_credentials_clear(&c);
    setenv("AWS_SECRET_ACCESS_KEY", "", 1);
    assert_int_equal(aws_credentials_from_env(&c, &e), ERR_INVAL);
    assert_no_secret(&e);
}

/* The shared file: the named profile's keys (comments, spaces, other profiles around it), a
 * missing profile, a missing key, a malformed line (its number given, its text not quoted). */
static void from_file__profiles(void **state)
{
    struct fixture *f = *state;
    struct aws_credentials c = {0};
    struct error e = {0};

    write_file(f->file, "# comment\n[default]\naws_access_key_id = AKIDDEF\n"
                        "aws_secret_access_key=defsecret\n\n; other\n[castor]\n"
                        "  aws_access_key_id =  AKIDCASTOR  \naws_secret_access_key = " SECRET "\n"
                        "aws_session_token = " TOKEN "\nregion = us-west-2\n[broken]\n"
                        "aws_access_key_id = AKIDB\n");
    assert_int_equal(aws_credentials_from_file(f->file, "castor", &c, &e), 0);
    assert_string_equal(c.access_key_id, "AKIDCASTOR");
    assert_string_equal(c.secret_access_key, SECRET);
    assert_string_equal(c.session_token, TOKEN);
    assert_string_equal(c.source, "file");
    aws_credentials_clear(&c);
    assert_int_equal(aws_credentials_from_file(f->file, "default", &c, &e), 0);
    assert_string_equal(c.access_key_id, "AKIDDEF");
    assert_null(c.session_token);
    aws_credentials_clear(&c);
    assert_int_equal(aws_credentials_from_file(f->file, "nobody", &c, &e), ERR_UNKNOWN);
    assert_non_null(strstr(e.msg, "[nobody]"));
    assert_int_equal(aws_credentials_from_file(f->file, "broken", &c, &e), ERR_UNKNOWN);
    assert_non_null(strstr(e.msg, "aws_secret_access_key"));
    write_file(f->file, "[default]\naws_access_key_id = AKID\n" SECRET "\n");
    assert_int_equal(aws_credentials_from_file(f->file, "default", &c, &e), ERR_PARSE);
    assert_int_equal(e.line, 3);
    assert_no_secret(&e);
    assert_null(c.access_key_id);
    unlink(f->file);
    assert_int_equal(aws_credentials_from_file(f->file, "default", &c, &e), ERR_NOENT);
}

/* IMDSv2: token first, then the role and its credentials with their expiry. */
static void from_imds__token_role_and_expiry(void **state)
{
    struct fixture *f = *state;
    struct aws_imds imds = {f->url, 2000};
    struct aws_credentials c = {0};
    struct error e = {0};

    assert_int_equal(aws_credentials_from_imds(&imds, &c, &e), 0);
    assert_string_equal(c.access_key_id, "ASIAGEN0");
    assert_string_equal(c.secret_access_key, SECRET);
    assert_string_equal(c.session_token, TOKEN);
    assert_int_equal(c.expiration, f->imds.expiration);
    assert_string_equal(c.source, "imds");
    aws_credentials_clear(&c);
}

/* IMDS failures: no role (404) is ERR_NOENT, a bad document or a failed Code is ERR_PARSE, a
 * service that answers 503 is ERR_IO, one that never answers ERR_AGAIN after the timeout; none
 * leaks the secret it may have carried. */
static void from_imds__failures(void **state)
{
    struct fixture *f = *state;
    struct aws_imds imds = {f->url, 2000};
    struct aws_credentials c = {0};
    struct error e = {0};

    f->imds.role_status = 404;
    assert_int_equal(aws_credentials_from_imds(&imds, &c, &e), ERR_NOENT);
    f->imds.role_status = 0;
    f->imds.creds_doc = "{\"Code\":\"Success\",\"SecretAccessKey\":\"" SECRET "\"";
    assert_int_equal(aws_credentials_from_imds(&imds, &c, &e), ERR_PARSE);
    assert_no_secret(&e);
    f->imds.creds_doc = "{\"Code\":\"Failure\",\"SecretAccessKey\":\"" SECRET "\"}";
    assert_int_equal(aws_credentials_from_imds(&imds, &c, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "Failure"));
    assert_no_secret(&e);
    f->imds.creds_doc = "{\"Code\":\"Success\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"" SECRET
                        "\",\"Token\":\"" TOKEN "\",\"Expiration\":\"tomorrow\"}";
    assert_int_equal(aws_credentials_from_imds(&imds, &c, &e), ERR_PARSE);
    assert_no_secret(&e);
    f->imds.creds_doc = NULL;
    f->imds.down = 1;
    assert_int_equal(aws_credentials_from_imds(&imds, &c, &e), ERR_IO);
    assert_null(c.access_key_id);
    f->imds.down = 0;
    f->imds.hang = 1;
    imds.timeout_ms = 200;
    assert_int_equal(aws_credentials_from_imds(&imds, &c, &e), ERR_AGAIN);
    assert_non_null(strstr(e.msg, "timed out"));
    assert_null(c.access_key_id);
}

/* The chain: environment first, then the file, then IMDS. */
static void source_get__chain_order(void **state)
{
    struct fixture *f = *state;
    struct aws_credential_config cfg = {.imds_endpoint = f->url};
    struct aws_credential_source *s = NULL;
    struct aws_credentials c = {0};
    struct error e = {0};

    /* IMDS only */
    assert_int_equal(aws_credential_source_new(&cfg, &s), 0);
    assert_int_equal(aws_credential_source_get(s, 1700000000, &c, &e), 0);
    assert_string_equal(c.source, "imds");
    aws_credentials_clear(&c);
    aws_credential_source_free(s);
    /* the file (at ~/.aws/credentials, HOME being the test's folder) before IMDS */
    write_file(f->file, "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = x\n");
    assert_int_equal(aws_credential_source_new(&cfg, &s), 0);
    assert_int_equal(aws_credential_source_get(s, 1700000000, &c, &e), 0);
    assert_string_equal(c.access_key_id, "AKIDFILE");
    aws_credentials_clear(&c);
    aws_credential_source_free(s);
    /* the environment before both */
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    assert_int_equal(aws_credential_source_new(&cfg, &s), 0);
    assert_int_equal(aws_credential_source_get(s, 1700000000, &c, &e), 0);
    assert_string_equal(c.access_key_id, "AKIDENV");
    aws_credentials_clear(&c);
    aws_credential_source_free(s);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    /* a profile named but missing is an error, not a fall-through to IMDS */
    setenv("AWS_PROFILE", "nobody", 1);
    assert_int_equal(aws_credential_source_new(&cfg, &s), 0);
    assert_int_equal(aws_credential_source_get(s, 1700000000, &c, &e), ERR_UNKNOWN);
    aws_credential_source_free(s);
    unsetenv("AWS_PROFILE");
    /* nothing anywhere: ERR_NOENT saying what was tried */
    unlink(f->file);
    f->imds.role_status = 404;
    assert_int_equal(aws_credential_source_new(&cfg, &s), 0);
    assert_int_equal(aws_credential_source_get(s, 1700000000, &c, &e), ERR_NOENT);
    assert_non_null(strstr(e.msg, "IMDS"));
    aws_credential_source_free(s);
    /* off EC2 the metadata address does not answer: a timeout, and still ERR_NOENT */
    f->imds.hang = 1;
    cfg.imds_timeout_ms = 200;
    assert_int_equal(aws_credential_source_new(&cfg, &s), 0);
    assert_int_equal(aws_credential_source_get(s, 1700000000, &c, &e), ERR_NOENT);
    assert_non_null(strstr(e.msg, "timed out"));
    aws_credential_source_free(s);
    f->imds.hang = 0;
    cfg.imds_timeout_ms = 0;
    /* IMDS disabled by the SDKs' variable */
    f->imds.role_status = 0;
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    assert_int_equal(aws_credential_source_new(&cfg, &s), 0);
    assert_int_equal(aws_credential_source_get(s, 1700000000, &c, &e), ERR_NOENT);
    assert_non_null(strstr(e.msg, "disabled"));
    aws_credential_source_free(s);
}

/* IMDS credentials are cached until 5 minutes before expiry, then refreshed; a failed refresh
 * keeps the old ones while they are valid, and fails after they expire. */
static void source_get__refresh_before_expiry(void **state)
{
    struct fixture *f = *state;
    struct aws_credential_config cfg = {.imds_endpoint = f->url};
    struct aws_credential_source *s = NULL;
    struct aws_credentials c = {0};
    struct error e = {0};
    int64_t t0 = 1700000000, exp0 = f->imds.expiration;

    assert_int_equal(aws_credential_source_new(&cfg, &s), 0);
    assert_int_equal(aws_credential_source_get(s, t0, &c, &e), 0);
    assert_string_equal(c.access_key_id, "ASIAGEN0");
    aws_credentials_clear(&c);
    assert_int_equal(f->imds.calls, 1);
    /* still 301 s from expiry: cached */
    assert_int_equal(aws_credential_source_get(s, exp0 - 301, &c, &e), 0);
    assert_int_equal(f->imds.calls, 1);
    aws_credentials_clear(&c);
    /* 300 s from expiry: refreshed */
    f->imds.generation = 1;
    f->imds.expiration = exp0 + 3600;
    assert_int_equal(aws_credential_source_get(s, exp0 - 300, &c, &e), 0);
    assert_int_equal(f->imds.calls, 2);
    assert_string_equal(c.access_key_id, "ASIAGEN1");
    assert_int_equal(c.expiration, exp0 + 3600);
    aws_credentials_clear(&c);
    /* IMDS goes down: within the refresh window the old ones still serve... */
    f->imds.down = 1;
    assert_int_equal(aws_credential_source_get(s, exp0 + 3600 - 10, &c, &e), 0);
    assert_string_equal(c.access_key_id, "ASIAGEN1");
    aws_credentials_clear(&c);
    /* ...and after expiry it is an error */
    assert_int_equal(aws_credential_source_get(s, exp0 + 3600, &c, &e), ERR_NOENT);
    assert_null(c.access_key_id);
    assert_no_secret(&e);
    aws_credential_source_free(s);
}

/* Credentials of the shared file (no expiry said) are cached while the file is unchanged, and
 * read again when a helper rewrites it (session credentials replaced as they expire) or, the
 * file looking the same, at least every 300 s. */
static void source_get__file_read_again_when_rewritten(void **state)
{
    struct fixture *f = *state;
    struct aws_credential_config cfg = {.imds_disabled = 1};
    struct aws_credential_source *s = NULL;
    struct aws_credentials c = {0};
    struct error e = {0};
    struct stat sb;
    struct timespec times[2];
    int64_t t0 = 1700000000;

    write_file(f->file, "[default]\naws_access_key_id = ASIAOLD0\naws_secret_access_key = x\n"
                        "aws_session_token = tok-old\n");
    assert_int_equal(aws_credential_source_new(&cfg, &s), 0);
    assert_int_equal(aws_credential_source_get(s, t0, &c, &e), 0);
    assert_string_equal(c.access_key_id, "ASIAOLD0");
    assert_string_equal(c.session_token, "tok-old");
    aws_credentials_clear(&c);
    /* a helper writes new session credentials: read at the next get */
    write_file(f->file, "[default]\naws_access_key_id = ASIANEW1\naws_secret_access_key = x\n"
                        "aws_session_token = tok-new-1\n");
    assert_int_equal(aws_credential_source_get(s, t0 + 1, &c, &e), 0);
    assert_string_equal(c.access_key_id, "ASIANEW1");
    assert_string_equal(c.session_token, "tok-new-1");
    aws_credentials_clear(&c);
    /* rewritten with the same size and its time put back: cached for 300 s, then read again */
    assert_int_equal(stat(f->file, &sb), 0);
    write_file(f->file, "[default]\naws_access_key_id = ASIANEW2\naws_secret_access_key = x\n"
                        "aws_session_token = tok-new-2\n");
    times[0] = sb.st_atim;
    times[1] = sb.st_mtim;
    assert_int_equal(utimensat(AT_FDCWD, f->file, times, 0), 0);
    assert_int_equal(aws_credential_source_get(s, t0 + 300, &c, &e), 0);
    assert_string_equal(c.access_key_id, "ASIANEW1");
    aws_credentials_clear(&c);
    assert_int_equal(aws_credential_source_get(s, t0 + 301, &c, &e), 0);
    assert_string_equal(c.access_key_id, "ASIANEW2");
    aws_credentials_clear(&c);
    /* a file that cannot be read now: the ones read last still serve */
    unlink(f->file);
    assert_int_equal(aws_credential_source_get(s, t0 + 302, &c, &e), 0);
    assert_string_equal(c.access_key_id, "ASIANEW2");
    aws_credentials_clear(&c);
    aws_credential_source_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(from_env__keys_and_token, setup, teardown),
        cmocka_unit_test_setup_teardown(from_file__profiles, setup, teardown),
        cmocka_unit_test_setup_teardown(from_imds__token_role_and_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(from_imds__failures, setup, teardown),
        cmocka_unit_test_setup_teardown(source_get__chain_order, setup, teardown),
        cmocka_unit_test_setup_teardown(source_get__refresh_before_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(source_get__file_read_again_when_rewritten, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
