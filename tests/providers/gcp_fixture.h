/* gcp_fixture.h: what the GCP tests share: the fake Google Cloud with the RFC 7515 A.2 key as
 * the service account's key, key files written for it, a token source, the recording hooks, and
 * the search of a run's messages for secrets. */
#ifndef CASTOR_TESTS_GCP_FIXTURE_H
#define CASTOR_TESTS_GCP_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "providers/fake_gce.h"
#include "providers/gcp/auth.h"
#include "providers/gcp/rest.h"
#include "support/hooks.h"
#include "util/file.h"
#include "util/json.h"

#define GCP_EMAIL "castor@castor-test.iam.gserviceaccount.com"
#define GCP_PROJECT "castor-test"
#define GCP_KEY_ID "0123456789abcdef"
#define GCP_NOW 1700000000
#define GCP_A2_KEY CASTOR_TEST_DATA "/rfc7515-a2/key.pem"
#define GCP_A2_PUB CASTOR_TEST_DATA "/rfc7515-a2/pub.pem"

/* Write a key file at path: type (NULL: none), the PEM of key_pem (NULL: none), token_uri (NULL:
 * none); 0 or -1. */
static inline int gcp_write_key(const char *path, const char *type, const char *key_pem,
                                const char *token_uri)
{
    struct jv *v = jv_object();
    char *pem = NULL;
    size_t len = 0;
    int rc = 0;

    if (type)
        rc |= jv_set(v, "type", jv_string(type));
    rc |= jv_set(v, "project_id", jv_string(GCP_PROJECT));
    rc |= jv_set(v, "private_key_id", jv_string(GCP_KEY_ID));
    if (key_pem) {
        rc |= file_read_all(key_pem, &pem, &len, NULL);
        rc |= jv_set(v, "private_key", jv_string(pem ? pem : ""));
    }
    rc |= jv_set(v, "client_email", jv_string(GCP_EMAIL));
    if (token_uri)
        rc |= jv_set(v, "token_uri", jv_string(token_uri));
    rc |= jv_write_path(v, path);
    jv_free(v);
    free(pem);
    return rc ? -1 : 0;
}

/* A fresh file name under the system's temporary folder into buf. */
static inline void gcp_temp_path(char *buf, size_t size, const char *what)
{
    static int counter;

    snprintf(buf, size, "/tmp/castor-gcp-%ld-%d-%s.json", (long)getpid(), counter++, what);
}

/* 1 when text holds none of the secrets of a run: a token the fake issued, any part of the
 * private key, a signed JWT (base64url of '{"'). */
static inline int gcp_clean(const char *text)
{
    static const char *const secrets[] = {"ya29.fake", "PRIVATE KEY", "MIIEv",
                                          "O+pWJ1O0BkTGoVEn2bKVRUCg", "eyJ"};

    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        if (strstr(text, secrets[i])) {
            fprintf(stderr, "secret %s found in: %.300s\n", secrets[i], strstr(text, secrets[i]));
            return 0;
        }
    return 1;
}

/* The fake, a key file for it, and a token source that uses it. */
struct gcp_world {
    struct fake_gce *fake;
    char key_path[256];
    char token_uri[160], compute[160], billing[160]; /* the fake's endpoints */
    struct gcp_auth *auth;
    struct hooks h; /* the clock starts at GCP_NOW */
};

/* Start w (zeroed by the caller); 0 or -1. */
static inline int gcp_world_start(struct gcp_world *w)
{
    struct gcp_auth_config acfg = {.timeout_ms = 300};

    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    unsetenv("GCE_METADATA_HOST");
    w->fake = fake_gce_start(GCP_PROJECT, GCP_EMAIL, GCP_A2_PUB);
    if (!w->fake)
        return -1;
    fake_gce_set_now(w->fake, GCP_NOW);
    w->h.now = GCP_NOW;
    snprintf(w->token_uri, sizeof(w->token_uri), "%s%s", fake_gce_url(w->fake), FAKE_GCE_TOKEN);
    snprintf(w->compute, sizeof(w->compute), "%s%s", fake_gce_url(w->fake), FAKE_GCE_COMPUTE);
    snprintf(w->billing, sizeof(w->billing), "%s%s", fake_gce_url(w->fake), FAKE_GCE_BILLING);
    gcp_temp_path(w->key_path, sizeof(w->key_path), "key");
    if (gcp_write_key(w->key_path, "service_account", GCP_A2_KEY, w->token_uri) < 0)
        return -1;
    acfg.key_file = w->key_path;
    return gcp_auth_new(&acfg, &w->auth, NULL) < 0 ? -1 : 0;
}

static inline void gcp_world_stop(struct gcp_world *w)
{
    gcp_auth_free(w->auth);
    fake_gce_stop(w->fake);
    unlink(w->key_path);
}

/* How the clients under test call the fake at endpoint: 300 ms a try, attempts tries, backoff
 * from 100 ms to 1 s, w's hooks. */
static inline struct gcp_rest_config gcp_world_rest(struct gcp_world *w, const char *endpoint,
                                                    int attempts)
{
    struct gcp_rest_config r = {
        .endpoint = endpoint,
        .timeout_ms = 300,
        .max_attempts = attempts,
        .backoff_base_ms = 100,
        .backoff_cap_ms = 1000,
        .seed = 7,
        .auth = w->auth,
        .clock = hooks_clock,
        .sleep_ms = hooks_sleep,
        .log = hooks_log,
        .hook_arg = &w->h,
    };

    return r;
}

#endif
