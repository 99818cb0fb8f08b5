/* test_teardown.c: `castor teardown` (src/cli/teardown_cmd.c) with a state file that does not
 * exist (a mistyped `state:`, or a state lost with its disk): a warning says so, the instances
 * with the cluster's tag are still torn down (status 0; none here), dry run or --yes, and nothing
 * is made (no state, no lock); with the state there, the dry run reads it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "control/state.h"
#include "support/cli_capture.h"

#define CONFIG                                                       \
    "cluster: td\nworld: fake\nstate: state.db\ncloud:\n  offers:\n" \
    "    - {name: g4/on-demand, gpus: 4, market: on-demand, price: 3.912}\n"

/* cli_teardown on the configuration at config, with --yes when apply; its status, and what it
 * wrote to err into errs (size bytes). */
static int run_teardown(const char *config, int apply, char *errs, size_t size)
{
    char *argv[] = {"teardown", "-c", (char *)config, apply ? "--yes" : NULL, NULL};

    return cli_capture(cli_teardown, apply ? 4 : 3, argv, NULL, errs, size);
}

static void cli_teardown__a_missing_state_is_not_made(void **state)
{
    char dir[] = "/tmp/castor-test-teardown-XXXXXX";
    char config[64], db[64], lock[80], errs[1024];
    struct state *st = NULL;
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(config, sizeof(config), "%s/castor.yaml", dir);
    snprintf(db, sizeof(db), "%s/state.db", dir);
    snprintf(lock, sizeof(lock), "%s.lock", db);
    f = fopen(config, "w");
    assert_non_null(f);
    fputs(CONFIG, f);
    assert_int_equal(fclose(f), 0);
    for (int apply = 0; apply <= 1; apply++) {
        assert_int_equal(run_teardown(config, apply, errs, sizeof(errs)), 0);
        if (!strstr(errs, "state.db: no state there (has the controller run? is the path "
                          "right?): the instances with the cluster's tag only"))
            fail_msg("said: %s", errs);
        assert_int_equal(access(db, F_OK), -1);
        assert_int_equal(access(lock, F_OK), -1);
    }
    /* the state there (as the controller leaves it): the dry run reads it */
    assert_int_equal(state_open(db, &st, NULL), 0);
    state_close(st);
    if (run_teardown(config, 0, errs, sizeof(errs)) != 0)
        fail_msg("said: %s", errs);
    unlink(lock);
    unlink(db);
    unlink(config);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cli_teardown__a_missing_state_is_not_made),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
