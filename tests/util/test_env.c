/* test_env.c: environments built for programs castor starts: replacing by name, leaving secrets
 * out, refusing what is no variable, and handing the array over. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/env.h"

static void env_list_set__replaces_by_name_in_place(void **state)
{
    struct env_list l = {0};
    char **v;

    (void)state;
    assert_int_equal(env_list_set(&l, "A", "1"), 0);
    assert_int_equal(env_list_set(&l, "AB", "2"), 0);
    assert_int_equal(env_list_set(&l, "A", "3"), 0); /* not AB, though it starts alike */
    assert_int_equal(env_list_put(&l, "C=x=y"), 0);  /* split at the first '=' */
    assert_int_equal(l.n, 3);
    v = env_list_take(&l);
    assert_non_null(v);
    assert_null(l.v);
    assert_string_equal(v[0], "A=3");
    assert_string_equal(v[1], "AB=2");
    assert_string_equal(v[2], "C=x=y");
    assert_null(v[3]);
    env_free(v);
}

static void env_list_put__refuses_what_is_no_variable(void **state)
{
    struct env_list l = {0};

    (void)state;
    assert_int_equal(env_list_put(&l, "novalue"), ERR_INVAL);
    assert_int_equal(env_list_put(&l, "=x"), ERR_INVAL);
    assert_int_equal(env_list_set(&l, "A=B", "x"), ERR_INVAL);
    assert_int_equal(env_list_set(&l, "", "x"), ERR_INVAL);
    assert_int_equal(l.n, 0);
    env_list_clear(&l);
}

static void env_list_put_all__leaves_out_castor_secrets(void **state)
{
    const char *const base[] = {"PATH=/bin",
                                "CASTOR_NODE_TOKEN=s",
                                "CASTOR_USER_TOKEN_FILE=/f",
                                "CASTOR_URL=http://x",
                                "TOKEN=kept",
                                "weird",
                                NULL};
    struct env_list l = {0};
    char **v;

    (void)state;
    assert_int_equal(env_list_put_all(&l, base, env_is_castor_secret), 0);
    v = env_list_take(&l);
    assert_string_equal(v[0], "PATH=/bin");
    assert_string_equal(v[1], "CASTOR_URL=http://x");
    assert_string_equal(v[2], "TOKEN=kept");
    assert_null(v[3]);
    env_free(v);
    v = env_list_take(&l); /* an empty list: an array of one NULL */
    assert_non_null(v);
    assert_null(v[0]);
    env_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(env_list_set__replaces_by_name_in_place),
        cmocka_unit_test(env_list_put__refuses_what_is_no_variable),
        cmocka_unit_test(env_list_put_all__leaves_out_castor_secrets),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
