/* test_agent.c: what the worker-side programs share: numbers from the environment, and the
 * address of this machine's route to the controller. */
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/agent.h"
#include "util/error.h"

static void agent_env_double__default_range_and_garbage(void **state)
{
    struct error e = {0};
    double v = -1;

    (void)state;
    unsetenv("CASTOR_TEST_NUM");
    assert_int_equal(agent_env_double("CASTOR_TEST_NUM", 5, 0, 10, &v, &e), 0);
    assert_true(v == 5);
    setenv("CASTOR_TEST_NUM", "2.5", 1);
    assert_int_equal(agent_env_double("CASTOR_TEST_NUM", 5, 0, 10, &v, &e), 0);
    assert_true(v == 2.5);
    setenv("CASTOR_TEST_NUM", "11", 1);
    assert_int_equal(agent_env_double("CASTOR_TEST_NUM", 5, 0, 10, &v, &e), ERR_RANGE);
    setenv("CASTOR_TEST_NUM", "2.5x", 1);
    assert_int_equal(agent_env_double("CASTOR_TEST_NUM", 5, 0, 10, &v, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "CASTOR_TEST_NUM"));
    assert_true(v == 2.5); /* untouched on error */
    unsetenv("CASTOR_TEST_NUM");
}

/* The route to a loopback controller leaves from loopback, by name or number, v4 or v6; a URL
 * that is not one, a host that does not resolve and a buffer too small are refused without a
 * write. */
static void agent_route_address__the_local_end_of_the_route(void **state)
{
    char buf[64] = "untouched", small[4] = "xyz";

    (void)state;
    assert_int_equal(agent_route_address("http://127.0.0.1:8470", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "127.0.0.1");
    assert_int_equal(agent_route_address("https://127.0.0.2/", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "127.0.0.1");
    if (agent_route_address("http://[::1]:8470", buf, sizeof(buf)) == 0) /* where IPv6 exists */
        assert_string_equal(buf, "::1");
    strcpy(buf, "untouched");
    assert_int_equal(agent_route_address("ftp://127.0.0.1/", buf, sizeof(buf)), ERR_INVAL);
    assert_int_equal(agent_route_address("http://no-such-host.invalid:1", buf, sizeof(buf)),
                     ERR_NOENT);
    assert_string_equal(buf, "untouched");
    assert_int_equal(agent_route_address("http://127.0.0.1:1", small, sizeof(small)), ERR_RANGE);
    assert_string_equal(small, "xyz");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(agent_env_double__default_range_and_garbage),
        cmocka_unit_test(agent_route_address__the_local_end_of_the_route),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
