/* test_client.c: what `castor status` says of the spend limit (cli_spend_line,
 * src/cli/client_cmd.c) for fleets as GET /v1/fleet answers them: reached; reached before the
 * period ends at the rate now, and when; lasting past the period's end; a fleet that costs nothing.
 * And `castor costs` against a test server: its times reach the server as given. And the client
 * against a server that refuses (401, 502: the reason said, exit 1) or that answers 200 with what
 * is not castor's answer (a proxy's page, {}): a failure that says so, never success or a crash.
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

/* A test server's one answer to every request. */
struct canned {
    int status;
    const char *content_type;
    const char *body;
};

static void canned_handler(void *ctx, const struct http_request *req, struct http_response *resp)
{
    const struct canned *a = ctx;

    (void)req;
    resp->status = a->status;
    resp->content_type = a->content_type;
    resp->body = strdup(a->body);
    resp->body_len = resp->body ? strlen(a->body) : 0;
}

/* What one client command said against a server answering as a does: its exit status, and its
 * standard output and error in *out and *err (the caller frees them). args: the command's words,
 * NULL-terminated; --url is added. */
static int client_against(const struct canned *a, const char *const *args, char **out, char **err)
{
    struct http_server_config hc = {0};
    struct http_server *srv = NULL;
    char url[64], *argv[16];
    size_t olen = 0, elen = 0;
    FILE *fo, *fe;
    int argc = 0, rc;

    assert_int_equal(http_server_start(&hc, canned_handler, (void *)a, &srv, NULL), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", http_server_port(srv));
    for (; args[argc]; argc++)
        argv[argc] = (char *)args[argc];
    argv[argc++] = "--url";
    argv[argc++] = url;
    argv[argc] = NULL;
    setenv("CASTOR_USER_TOKEN", "test-user-token", 1);
    fo = open_memstream(out, &olen);
    fe = open_memstream(err, &elen);
    assert_non_null(fo);
    assert_non_null(fe);
    rc = cli_client(argc, argv, fo, fe);
    fclose(fo);
    fclose(fe);
    http_server_stop(srv);
    return rc;
}

/* `castor status` refused by the controller (a wrong token: 401 with its reason; a proxy's 502
 * page): the answer and its reason on standard error, exit status 1. */
static void cli_client__status_refused_says_why(void **state)
{
    static const struct canned unauthorized = {401, "application/json",
                                               "{\"error\": \"the token is not valid\"}"};
    static const struct canned bad_gateway = {502, "text/html", "<html>Bad gateway</html>"};
    static const char *const status[] = {"status", NULL}, *const status_json[] = {"status",
                                                                                  "--json", NULL};
    char *out = NULL, *err = NULL;

    (void)state;
    assert_int_equal(client_against(&unauthorized, status, &out, &err), 1);
    assert_string_equal(out, "");
    assert_string_equal(err,
                        "castor status: the controller answered 401: the token is not valid\n");
    free(out);
    free(err);
    assert_int_equal(client_against(&bad_gateway, status_json, &out, &err), 1);
    assert_string_equal(out, "");
    assert_string_equal(err, "castor status: the controller answered 502: (no reason given)\n");
    free(out);
    free(err);
}

/* Each command, answered 200 with a proxy's HTML page, with {} or with JSON of another shape:
 * nothing on standard output, exit status 1, and standard error says the answer is not castor's
 * (not "cancelled", not a table of NaNs, not a crash). */
static void cli_client__answer_not_castors(void **state)
{
    static const struct canned answers[] = {
        {200, "text/html", "<html>ok</html>"},
        {200, "application/json", "{}"},
        {200, "application/json", "[1, 2]"},
        {200, "application/json",
         "{\"by\": 7, \"rows\": {}, \"nodes\": 1, \"jobs\": \"x\", \"events\": null, "
         "\"name\": 1, \"instance_id\": []}"},
    };
    static const char *const cmds[][4] = {
        {"costs", NULL},        {"costs", "--by", "offer", NULL}, {"costs", "--json", NULL},
        {"status", NULL},       {"status", "--json", NULL},       {"jobs", NULL},
        {"events", "j1", NULL}, {"cancel", "j1", NULL},           {"cancel", "j1", "--json", NULL},
        {"down", "i-1", NULL},  {"down", "i-1", "--json", NULL},
    };

    (void)state;
    for (size_t a = 0; a < sizeof(answers) / sizeof(answers[0]); a++) {
        for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
            char *out = NULL, *err = NULL, want[64];

            snprintf(want, sizeof(want), "castor %s: the answer is not castor's: ", cmds[k][0]);
            assert_int_equal(client_against(&answers[a], cmds[k], &out, &err), 1);
            assert_string_equal(out, "");
            assert_non_null(strstr(err, want));
            free(out);
            free(err);
        }
    }
}

/* castor's own answers of each shape still read as before: the cost table, a cancelled job, a
 * node taken down. */
static void cli_client__castors_answers_still_read(void **state)
{
    static const struct canned costs = {
        200, "application/json",
        "{\"by\": \"offer\", \"rows\": [{\"offer\": \"p4d\", \"on_demand\": 1, \"spot\": 2, "
        "\"static\": 0, \"dollars\": 3}], \"total\": {\"on_demand\": 1, \"spot\": 2, "
        "\"static\": 0, \"dollars\": 3}}"};
    static const struct canned cancelled = {200, "application/json",
                                            "{\"name\": \"j1\", \"state\": \"cancelled\"}"};
    static const char *const by_offer[] = {"costs", "--by", "offer", NULL}, *const cancel[] = {
                                                                                "cancel", "j1",
                                                                                NULL};
    char *out = NULL, *err = NULL;

    (void)state;
    assert_int_equal(client_against(&costs, by_offer, &out, &err), 0);
    assert_non_null(strstr(out, "OFFER"));
    assert_non_null(strstr(out, "p4d"));
    assert_string_equal(err, "");
    free(out);
    free(err);
    assert_int_equal(client_against(&cancelled, cancel, &out, &err), 0);
    assert_string_equal(out, "cancelled j1\n");
    free(out);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cli_spend_line__reached_when_and_past_the_end),
        cmocka_unit_test(cli_client__costs_query_encoded),
        cmocka_unit_test(cli_client__status_refused_says_why),
        cmocka_unit_test(cli_client__answer_not_castors),
        cmocka_unit_test(cli_client__castors_answers_still_read),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
