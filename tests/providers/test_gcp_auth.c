/* test_gcp_auth.c: service-account keys (what is refused, and how), the RS256 JWT (header,
 * claims, a signature that verifies), the token exchange against the fake token endpoint (which
 * verifies the JWT), the cache and its refresh, the metadata server, malformed answers, timeouts;
 * and no secret in any message of the run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gcp_fixture.h"
#include "providers/gcp/auth.h"
#include "util/base64.h"
#include "util/crypto.h"

struct fixture {
    struct gcp_world w;
    struct fake_gce *fake; /* w.fake */
    char *key_path;        /* w.key_path */
    char *token_uri;       /* w.token_uri */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f || gcp_world_start(&f->w) < 0)
        return -1;
    f->fake = f->w.fake;
    f->key_path = f->w.key_path;
    f->token_uri = f->w.token_uri;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    gcp_world_stop(&f->w);
    free(f);
    return 0;
}

static struct gcp_auth *auth_for(struct fixture *f, const char *key_path)
{
    struct gcp_auth_config cfg = {.key_file = key_path, .timeout_ms = 300};
    struct gcp_auth *a = NULL;
    struct error e = {0};

    assert_int_equal(gcp_auth_new(&cfg, &a, &e), 0);
    (void)f;
    return a;
}

/* A token, or the error with its message captured. */
static int token_at(struct gcp_auth *a, int64_t now, char **out)
{
    struct error e = {0};
    int rc = gcp_auth_token(a, now, out, &e);

    if (rc < 0)
        hooks_capture(e.msg);
    return rc;
}

/* The JWT: three base64url parts; the header {"alg":"RS256","typ":"JWT","kid"}; the claims iss,
 * scope, aud = token_uri, iat = now, exp = now + 3600; the signature verifies with the public
 * key over the first two parts, and fails when a claim is changed. */
static void gcp_jwt_assertion__header_claims_signature(void **state)
{
    struct fixture *f = *state;
    struct gcp_sa_key k = {0};
    struct error e = {0};
    char *jwt = NULL, *pub = NULL, *dot1, *dot2;
    unsigned char *part = NULL, *sig = NULL;
    size_t n = 0, sig_len = 0, pub_len = 0;
    struct jv *claims = NULL;
    long long v;

    assert_int_equal(gcp_sa_key_load(f->key_path, &k, &e), 0);
    assert_int_equal(gcp_jwt_assertion(&k, GCP_SCOPE_CLOUD_PLATFORM, GCP_NOW, &jwt, &e), 0);
    dot1 = strchr(jwt, '.');
    dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    assert_non_null(dot2);
    assert_null(strchr(dot2 + 1, '.'));
    assert_null(strpbrk(jwt, "+/="));
    assert_int_equal(base64_url_decode(jwt, (size_t)(dot1 - jwt), &part, &n), 0);
    assert_string_equal((char *)part,
                        "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"" GCP_KEY_ID "\"}");
    free(part);
    assert_int_equal(base64_url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &part, &n), 0);
    assert_int_equal(jv_parse((char *)part, n, &claims, NULL), 0);
    assert_string_equal(jv_string_value(jv_get(claims, "iss")), GCP_EMAIL);
    assert_string_equal(jv_string_value(jv_get(claims, "scope")), GCP_SCOPE_CLOUD_PLATFORM);
    assert_string_equal(jv_string_value(jv_get(claims, "aud")), f->token_uri);
    assert_int_equal(jv_integer_value(jv_get(claims, "iat"), &v), 0);
    assert_int_equal(v, GCP_NOW);
    assert_int_equal(jv_integer_value(jv_get(claims, "exp"), &v), 0);
    assert_int_equal(v, GCP_NOW + 3600);
    assert_int_equal(base64_url_decode(dot2 + 1, strlen(dot2 + 1), &sig, &sig_len), 0);
    assert_int_equal(file_read_all(GCP_A2_PUB, &pub, &pub_len, NULL), 0);
    assert_int_equal(crypto_rs256_verify(pub, pub_len, jwt, (size_t)(dot2 - jwt), sig, sig_len), 1);
    dot1[3] ^= 0x01; /* a claim changed */
    assert_int_equal(crypto_rs256_verify(pub, pub_len, jwt, (size_t)(dot2 - jwt), sig, sig_len), 0);
    jv_free(claims);
    free(part);
    free(sig);
    free(pub);
    crypto_free_string(jwt);
    gcp_sa_key_clear(&k);
    assert_null(k.private_key);
}

/* Key files castor refuses, each with a clear error that never quotes the key. */
static void gcp_sa_key_load__refusals(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *type, *key, *uri;
        int err;
        const char *says;
    } cases[] = {
        {"authorized_user", GCP_A2_KEY, "https://oauth2.googleapis.com/token", ERR_INVAL,
         "not a service-account key (type \"authorized_user\""},
        {NULL, GCP_A2_KEY, "https://oauth2.googleapis.com/token", ERR_INVAL, "(none)"},
        {"service_account", NULL, "https://oauth2.googleapis.com/token", ERR_PARSE,
         "private_key is missing"},
        {"service_account", GCP_A2_KEY, NULL, ERR_PARSE, "token_uri is missing"},
        {"service_account", GCP_A2_KEY, "http://oauth2.googleapis.com/token", ERR_INVAL,
         "token_uri must be https"},
        {"service_account", CASTOR_TEST_DATA "/keys/rsa-1024.pem",
         "https://oauth2.googleapis.com/token", ERR_INVAL, "shorter than 2048 bits"},
        {"service_account", CASTOR_TEST_DATA "/keys/ec-p256.pem",
         "https://oauth2.googleapis.com/token", ERR_INVAL, "not an unencrypted RSA private key"},
        {"service_account", CASTOR_TEST_DATA "/keys/rsa-2048-encrypted.pem",
         "https://oauth2.googleapis.com/token", ERR_INVAL, "not an unencrypted RSA private key"},
    };
    struct gcp_sa_key k = {.client_email = NULL};
    char path[256];

    (void)f;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct error e = {0};

        gcp_temp_path(path, sizeof(path), "bad");
        assert_int_equal(gcp_write_key(path, cases[i].type, cases[i].key, cases[i].uri), 0);
        assert_int_equal(gcp_sa_key_load(path, &k, &e), cases[i].err);
        if (!strstr(e.msg, cases[i].says))
            fail_msg("case %zu: '%s' does not say '%s'", i, e.msg, cases[i].says);
        assert_string_equal(e.file, path);
        assert_null(k.private_key);
        hooks_capture(e.msg);
        unlink(path);
    }
}

/* Text that is not a key: malformed JSON (with its line and column), not an object, a field of
 * the wrong type; and a missing file. */
static void gcp_sa_key_parse__malformed(void **state)
{
    static const char *const texts[] = {
        "{\"type\": \"service_account\",",
        "[1, 2]",
        "",
        "{\"type\":\"service_account\",\"client_email\":7,\"private_key\":\"x\",\"token_uri\":"
        "\"y\"}",
    };
    struct gcp_sa_key k = {0};
    struct error e = {0};

    (void)state;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        memset(&e, 0, sizeof(e));
        assert_int_equal(gcp_sa_key_parse(texts[i], strlen(texts[i]), &k, &e), ERR_PARSE);
        assert_true(e.msg[0] != '\0');
        hooks_capture(e.msg);
    }
    assert_non_null(strstr(e.msg, "client_email is not a string"));
    assert_int_equal(gcp_sa_key_load("/nonexistent/key.json", &k, &e), ERR_NOENT);
    assert_null(k.client_email);
}

/* The JWT is exchanged for a token (the fake verified its signature and claims); the token is
 * cached until 5 minutes before it expires, then a new one is fetched. */
static void gcp_auth_token__exchange_cache_refresh(void **state)
{
    struct fixture *f = *state;
    struct gcp_auth *a = auth_for(f, f->key_path);
    char *t1 = NULL, *t2 = NULL, *t3 = NULL;

    assert_string_equal(gcp_auth_source(a), "service-account");
    assert_string_equal(gcp_auth_project(a), GCP_PROJECT);
    assert_int_equal(token_at(a, GCP_NOW, &t1), 0);
    assert_int_equal(fake_gce_tokens_issued(f->fake), 1);
    assert_int_equal(fake_gce_auth_failures(f->fake), 0);
    assert_non_null(strstr(fake_gce_last_claims(f->fake), GCP_EMAIL));
    assert_non_null(strstr(fake_gce_last_body(f->fake, FAKE_GCE_TOKEN),
                           "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"));
    assert_int_equal(token_at(a, GCP_NOW + 3000, &t2), 0);
    assert_string_equal(t1, t2);
    assert_int_equal(fake_gce_tokens_issued(f->fake), 1);
    fake_gce_set_now(f->fake, GCP_NOW + 3301);
    assert_int_equal(token_at(a, GCP_NOW + 3301, &t3), 0);
    assert_int_equal(fake_gce_tokens_issued(f->fake), 2);
    assert_string_not_equal(t1, t3);
    crypto_free_string(t1);
    crypto_free_string(t2);
    crypto_free_string(t3);
    gcp_auth_free(a);
}

/* When the refresh fails, the token that has not expired yet still serves; once it has expired
 * the failure is the answer (ERR_AGAIN for a 503). invalidate forces a new fetch. */
static void gcp_auth_token__refresh_failure(void **state)
{
    struct fixture *f = *state;
    struct gcp_auth *a = auth_for(f, f->key_path);
    char *t1 = NULL, *t2 = NULL, *t3 = NULL;

    assert_int_equal(token_at(a, GCP_NOW, &t1), 0);
    fake_gce_push(f->fake, FAKE_GCE_TOKEN, 503, "{\"error\":\"backend\"}");
    assert_int_equal(token_at(a, GCP_NOW + 3400, &t2), 0);
    assert_string_equal(t1, t2);
    fake_gce_push(f->fake, FAKE_GCE_TOKEN, 503, "{\"error\":\"backend\"}");
    assert_int_equal(token_at(a, GCP_NOW + 3600, &t3), ERR_AGAIN);
    assert_null(t3);
    gcp_auth_invalidate(a);
    assert_int_equal(token_at(a, GCP_NOW, &t3), 0);
    assert_string_not_equal(t1, t3);
    crypto_free_string(t1);
    crypto_free_string(t2);
    crypto_free_string(t3);
    gcp_auth_free(a);
}

/* A key the endpoint does not know: its JWT signature fails, the endpoint says invalid_grant,
 * and castor says so (ERR_INVAL) with Google's words. A JWT signed at a time the endpoint
 * thinks is far off is refused the same way. */
static void gcp_auth_token__refused_key(void **state)
{
    struct fixture *f = *state;
    struct gcp_auth *a;
    struct error e = {0};
    char path[256], *t = NULL;

    gcp_temp_path(path, sizeof(path), "other");
    assert_int_equal(gcp_write_key(path, "service_account",
                                   CASTOR_TEST_DATA "/keys/rsa-2048-other.pem", f->token_uri),
                     0);
    a = auth_for(f, path);
    assert_int_equal(gcp_auth_token(a, GCP_NOW, &t, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "invalid_grant: Invalid JWT Signature."));
    assert_int_equal(fake_gce_auth_failures(f->fake), 1);
    hooks_capture(e.msg);
    gcp_auth_free(a);
    unlink(path);
    a = auth_for(f, f->key_path);
    assert_int_equal(gcp_auth_token(a, GCP_NOW + 7200, &t, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "short-lived"));
    assert_null(t);
    hooks_capture(e.msg);
    gcp_auth_free(a);
}

/* Answers that are not a token: ERR_PARSE, never a crash; a timeout is ERR_AGAIN; a 404 from
 * the token endpoint is ERR_IO. */
static void gcp_auth_token__bad_answers(void **state)
{
    struct fixture *f = *state;
    static const char *const bodies[] = {
        "not json",
        "{}",
        "{\"access_token\":\"ya29.x\",\"expires_in\":0}",
        "{\"access_token\":\"ya29.x\",\"expires_in\":\"3600\"}",
        "{\"access_token\":\"ya29.two words\",\"expires_in\":3600}",
        "{\"access_token\":\"ya29.x\",\"expires_in\":3600,\"token_type\":\"MAC\"}",
    };
    struct gcp_auth *a = auth_for(f, f->key_path);
    char *t = NULL;

    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        fake_gce_push(f->fake, FAKE_GCE_TOKEN, 200, bodies[i]);
        if (token_at(a, GCP_NOW, &t) != ERR_PARSE)
            fail_msg("body %zu was taken", i);
    }
    fake_gce_push_hang(f->fake, FAKE_GCE_TOKEN);
    assert_int_equal(token_at(a, GCP_NOW, &t), ERR_AGAIN);
    fake_gce_push(f->fake, FAKE_GCE_TOKEN, 404, "<html>no</html>");
    assert_int_equal(token_at(a, GCP_NOW, &t), ERR_IO);
    assert_null(t);
    gcp_auth_free(a);
}

/* On Compute Engine: the metadata server's token (the fake insists on Metadata-Flavor:
 * Google), cached like the other; a 404 says there is no service account. */
static void gcp_auth_token__metadata_server(void **state)
{
    struct fixture *f = *state;
    struct gcp_auth_config cfg = {.timeout_ms = 300};
    struct gcp_auth *a = NULL;
    struct error e = {0};
    char url[256], *t1 = NULL, *t2 = NULL;

    snprintf(url, sizeof(url), "%s%s", fake_gce_url(f->fake), GCP_METADATA_TOKEN_PATH);
    cfg.metadata_url = url;
    assert_int_equal(gcp_auth_new(&cfg, &a, &e), 0);
    assert_string_equal(gcp_auth_source(a), "metadata");
    assert_null(gcp_auth_project(a));
    assert_int_equal(token_at(a, GCP_NOW, &t1), 0);
    assert_int_equal(token_at(a, GCP_NOW + 60, &t2), 0);
    assert_string_equal(t1, t2);
    assert_int_equal(fake_gce_requests(f->fake, GCP_METADATA_TOKEN_PATH), 1);
    gcp_auth_invalidate(a);
    fake_gce_push(f->fake, GCP_METADATA_TOKEN_PATH, 404, "Not Found");
    crypto_free_string(t2);
    t2 = NULL;
    assert_int_equal(gcp_auth_token(a, GCP_NOW, &t2, &e), ERR_NOENT);
    assert_non_null(strstr(e.msg, "no service account"));
    crypto_free_string(t1);
    gcp_auth_free(a);
    /* GCE_METADATA_HOST names the server as Google's libraries read it */
    setenv("GCE_METADATA_HOST", fake_gce_url(f->fake) + strlen("http://"), 1);
    cfg.metadata_url = NULL;
    assert_int_equal(gcp_auth_new(&cfg, &a, &e), 0);
    assert_int_equal(token_at(a, GCP_NOW, &t1), 0);
    assert_int_equal(fake_gce_requests(f->fake, GCP_METADATA_TOKEN_PATH), 3);
    unsetenv("GCE_METADATA_HOST");
    crypto_free_string(t1);
    gcp_auth_free(a);
}

/* GOOGLE_APPLICATION_CREDENTIALS names the key file when the config does not; TLS checks may be
 * turned off only for a loopback token endpoint. */
static void gcp_auth_new__environment_and_tls(void **state)
{
    struct fixture *f = *state;
    struct gcp_auth_config cfg = {.tls_insecure = 1};
    struct gcp_auth *a = NULL;
    struct error e = {0};
    char path[256];

    setenv("GOOGLE_APPLICATION_CREDENTIALS", f->key_path, 1);
    assert_int_equal(gcp_auth_new(&cfg, &a, &e), 0);
    assert_string_equal(gcp_auth_source(a), "service-account");
    gcp_auth_free(a);
    a = NULL;
    gcp_temp_path(path, sizeof(path), "remote");
    assert_int_equal(
        gcp_write_key(path, "service_account", GCP_A2_KEY, "https://oauth2.googleapis.com/token"),
        0);
    setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
    assert_int_equal(gcp_auth_new(&cfg, &a, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "loopback"));
    assert_null(a);
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    unlink(path);
}

/* Run last: nothing any test made the module say holds a secret. */
static void gcp_auth__no_secret_in_any_message(void **state)
{
    (void)state;
    assert_true(hooks_captured_len() > 0);
    assert_true(gcp_clean(hooks_captured()));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(gcp_jwt_assertion__header_claims_signature, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(gcp_sa_key_load__refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(gcp_sa_key_parse__malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(gcp_auth_token__exchange_cache_refresh, setup, teardown),
        cmocka_unit_test_setup_teardown(gcp_auth_token__refresh_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(gcp_auth_token__refused_key, setup, teardown),
        cmocka_unit_test_setup_teardown(gcp_auth_token__bad_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(gcp_auth_token__metadata_server, setup, teardown),
        cmocka_unit_test_setup_teardown(gcp_auth_new__environment_and_tls, setup, teardown),
        cmocka_unit_test(gcp_auth__no_secret_in_any_message),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
