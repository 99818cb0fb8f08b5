/* test_run_as.c: who a node's replicas run as: the range of uids for a uid per job, refused
 * unless it is one (with its reason), within bounds and held by no account; and which of its uids
 * the machine's processes run as. */
#define _DEFAULT_SOURCE /* setgroups */
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/run_as.h"
#include "util/error.h"

/* Ranges refused, each with its code and words of its reason, u untouched; one taken. */
static void node_run_as_uids__ranges(void **state)
{
    static const struct {
        const char *text;
        int code;
        const char *why;
    } bad[] = {
        {"61000", ERR_PARSE, "not a range"},
        {"61000-", ERR_PARSE, "not a range"},
        {"a-b", ERR_PARSE, "not a range"},
        {"61000-61009x", ERR_PARSE, "not a range"},
        {" 61000-61009", ERR_PARSE, "not a range"},
        {"-1-5", ERR_PARSE, "not a range"},
        {"61009-61000", ERR_RANGE, "the first not above the last"},
        {"0-5", ERR_RANGE, "uids from 1"},
        {"100000-165536", ERR_RANGE, "at most 65536"},
        {"2147483600-2147483647", ERR_RANGE, "2147483646"},
        {"99999999999-99999999999", ERR_PARSE, "not a range"},
    };
    struct node_run_as u = {.uid = 65534, .gid = 65534};
    char why[256];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        if (node_run_as_uids(bad[i].text, &u, why, sizeof(why)) != bad[i].code ||
            !strstr(why, bad[i].why))
            fail_msg("case %zu (%s): \"%s\"", i, bad[i].text, why);
        assert_true(u.uid_first == 0 && u.uid_last == 0);
    }
    /* one with an account's uid (1: daemon on Debian) */
    if (getpwuid(1)) {
        assert_int_equal(node_run_as_uids("1-3", &u, why, sizeof(why)), ERR_CONFLICT);
        assert_non_null(strstr(why, getpwuid(1)->pw_name));
        assert_true(u.uid_first == 0 && u.uid_last == 0);
    }
    for (uid_t id = 61000; id <= 61009; id++)
        if (getpwuid(id))
            skip();
    assert_int_equal(node_run_as_uids("61000-61009", &u, NULL, 0), 0);
    assert_true(u.uid_first == 61000 && u.uid_last == 61009);
    assert_true(u.uid == 65534 && u.gid == 65534); /* the rest untouched */
}

/* A process run as 61003 makes it busy; gone, it is free. Skipped where the tests do not run as
 * root, or where something else runs as it. */
static void node_run_as_busy__the_uids_processes_run_as(void **state)
{
    struct node_run_as u = {.uid_first = 61000, .uid_last = 61009};
    unsigned char busy[10];
    pid_t parent = getpid(), pid;
    int tries = 0;

    (void)state;
    if (geteuid() != 0)
        skip();
    assert_int_equal(node_run_as_busy(&u, busy), 0);
    if (busy[3])
        skip(); /* something else runs as it */
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60);
        if (setgroups(0, NULL) == 0 && setgid(65534) == 0 && setuid(61003) == 0 &&
            prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() == parent)
            pause();
        _exit(1);
    }
    do {
        usleep(10000);
        assert_int_equal(node_run_as_busy(&u, busy), 0);
    } while (!busy[3] && ++tries < 500);
    assert_true(busy[3]);
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    assert_int_equal(node_run_as_busy(&u, busy), 0);
    assert_false(busy[3]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(node_run_as_uids__ranges),
        cmocka_unit_test(node_run_as_busy__the_uids_processes_run_as),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
