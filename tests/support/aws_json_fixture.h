/* aws_json_fixture.h: what the tests of the AWS JSON API clients (the Price List's, Service
 * Quotas') set up alike: the credentials in the environment with no endpoint variable left over,
 * and a client configuration pointed at a fake endpoint with the hooks' clock, sleep and log. */
#ifndef CASTOR_TESTS_AWS_JSON_FIXTURE_H
#define CASTOR_TESTS_AWS_JSON_FIXTURE_H

#include <stdlib.h>

#include "providers/aws/json_api.h"
#include "support/hooks.h"

/* The access key pair in the environment, no session token, and neither AWS_ENDPOINT_URL nor the
 * API's own endpoint variable (api_endpoint_var) set. */
static inline void aws_json_test_env(const char *akid, const char *secret,
                                     const char *api_endpoint_var)
{
    setenv("AWS_ACCESS_KEY_ID", akid, 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv(api_endpoint_var);
}

/* A configuration for endpoint with credentials (borrowed) and h's hooks; the rest defaults. */
static inline struct aws_json_config
aws_json_test_config(const char *endpoint, struct aws_credential_source *creds, struct hooks *h)
{
    return (struct aws_json_config){.endpoint = endpoint,
                                    .credentials = creds,
                                    .clock = hooks_clock,
                                    .sleep_ms = hooks_sleep,
                                    .log = hooks_log,
                                    .hook_arg = h};
}

/* As aws_json_test_config, and quick to give up: 300 ms a try, 3 tries, waits from 100 ms drawn
 * from seed 7 (the set-up of each client's fixture). */
static inline struct aws_json_config
aws_json_test_quick(const char *endpoint, struct aws_credential_source *creds, struct hooks *h)
{
    struct aws_json_config c = aws_json_test_config(endpoint, creds, h);

    c.timeout_ms = 300;
    c.max_attempts = 3;
    c.backoff_base_ms = 100;
    c.seed = 7;
    return c;
}

#endif
