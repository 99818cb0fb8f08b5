/* test_client.c: what `castor status` says of the spend limit (cli_spend_line,
 * src/cli/client_cmd.c) for fleets as GET /v1/fleet answers them: reached; reached before the
 * period ends at the rate now, and when; lasting past the period's end; a fleet that costs nothing.
 * And `castor costs` against a test server: its times reach the server as given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "util/http_server.h"
#include "util/json.h"

/* The line for a fleet of rate $/h that spent spent of limit in a period ending at until, at now;
 * the caller frees it. */
static char *line_for(double rate, double spent, double limit, double until, double now)
{
    char text[256], *out = NULL;
    size_t len = 0;
    struct jv *fleet = NULL;
    FILE *mem = open_memstream(&out, &len);

    snprintf(
        text, sizeof(text),
        "{\"cost_rate\": %g, \"spend_period\": %g, \"spend_limit\": %g, \"spend_until\": %.0f}",
        rate, spent, limit, until);
    assert_int_equal(jv_parse(text, strlen(text), &fleet, NULL), 0);
    assert_non_null(mem);
    cli_spend_line(fleet, now, mem);
    fclose(mem);
    jv_free(fleet);
    return out;
}

/* $100 of $100: reached. $40 of $100 at $10/h at 1970-01-01T00:00Z, the day ending at 86400: the
 * $60 left last 6 h, so at 06:00, before the end. At $1/h they last 60 h: past the end (midnight).
 * A fleet at $0/h never reaches it. */
static void cli_spend_line__reached_when_and_past_the_end(void **state)
{
    char *s;

    (void)state;
    s = line_for(10, 100, 100, 86400, 0);
    assert_string_equal(s, "spend limit: $100.00 of $100.00 this period: reached, nothing is "
                           "rented until the next\n");
    free(s);
    s = line_for(10, 40, 100, 86400, 0);
    assert_string_equal(s, "spend limit: $40.00 of $100.00 this period; at $10.00/h the limit "
                           "comes in 6.0 h (1970-01-01T06:00:00Z), before the period ends\n");
    free(s);
    s = line_for(1, 40, 100, 86400, 0);
    assert_string_equal(s, "spend limit: $40.00 of $100.00 this period; at $1.00/h it lasts past "
                           "the period's end (1970-01-02T00:00:00Z)\n");
    free(s);
    s = line_for(0, 40, 100, 86400, 0);
    assert_non_null(strstr(s, "lasts past the period's end"));
    free(s);
}

/* What the test server saw of the last GET /v1/costs: its query as the server decoded it. */
struct seen {
    char by[64], since[64], until[64];
    int calls;
};

static void seen_copy(char *to, const char *v)
{
    snprintf(to, 64, "%s", v ? v : "(none)");
}

static void costs_handler(void *ctx, const struct http_request *req, struct http_response *resp)
{
    static const char body[] = "{\"by\":\"day\",\"rows\":[],\"total\":{\"dollars\":0}}";
    struct seen *s = ctx;

    s->calls++;
    seen_copy(s->by, http_request_query(req, "by"));
    seen_copy(s->since, http_request_query(req, "since"));
    seen_copy(s->until, http_request_query(req, "until"));
    resp->status = 200;
    resp->content_type = "application/json";
    resp->body = strdup(body);
    resp->body_len = resp->body ? strlen(body) : 0;
}

/* `castor costs --since/--until` with times that carry a UTC offset: the server reads them as
 * given (the '+' percent-encoded, not read as a space). */
static void cli_client__costs_query_encoded(void **state)
{
    struct http_server_config hc = {0};
    struct http_server *srv = NULL;
    struct seen seen;
    char url[64], *text = NULL;
    size_t len = 0;
    FILE *out, *err = tmpfile();
    char *argv[] = {"costs",
                    "--url",
                    url,
                    "--since",
                    "2024-05-01T00:00:00+01:00",
                    "--until",
                    "2024-05-02T00:00:00.5+02:00",
                    "--json",
                    NULL};

    (void)state;
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(http_server_start(&hc, costs_handler, &seen, &srv, NULL), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", http_server_port(srv));
    setenv("CASTOR_USER_TOKEN", "test-user-token", 1);
    out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_non_null(err);
    assert_int_equal(cli_client(8, argv, out, err), 0);
    fclose(out);
    fclose(err);
    http_server_stop(srv);
    assert_int_equal(seen.calls, 1);
    assert_string_equal(seen.by, "day");
    assert_string_equal(seen.since, "2024-05-01T00:00:00+01:00");
    assert_string_equal(seen.until, "2024-05-02T00:00:00.5+02:00");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cli_spend_line__reached_when_and_past_the_end),
        cmocka_unit_test(cli_client__costs_query_encoded),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
