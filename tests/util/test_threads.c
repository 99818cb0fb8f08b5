/* test_threads.c: this process's thread count, one more while a thread of the test is alive, and
 * /proc/<pid>/stat lines read from the last ')' (command names with spaces and parentheses),
 * refusing what is no count. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/threads.h"

/* Fields 3 (state) to 19 (nice) of a real line, then num_threads = n, then the rest. */
#define BEFORE "R 31781 31781 31084 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 "
#define AFTER " 0 2008349 3133440 356 18446744073709551615 0\n"
#define LINE(comm, n) "31783 (" comm ") " BEFORE n AFTER

/* Held by the test's thread until the test has counted it. */
struct holder {
    pthread_barrier_t started, counted;
};

static void *hold(void *arg)
{
    struct holder *h = arg;

    pthread_barrier_wait(&h->started);
    pthread_barrier_wait(&h->counted);
    return NULL;
}

/* The count once it is want, polling up to 2 s: pthread_join returns when the thread has cleared
 * its id, a moment before the kernel takes it off the count. */
static int count_settled(int want)
{
    struct timespec ms = {0, 1000000};
    int n = threads_count();

    for (int i = 0; i < 2000 && n != want; i++) {
        nanosleep(&ms, NULL);
        n = threads_count();
    }
    return n;
}

/* 1 in this process (cmocka starts no thread), 2 while a thread is blocked on a barrier, 1 after
 * it is joined. */
static void threads_count__follows_a_thread(void **state)
{
    struct holder h;
    pthread_t t;

    (void)state;
    assert_int_equal(threads_count(), 1);
    assert_int_equal(pthread_barrier_init(&h.started, NULL, 2), 0);
    assert_int_equal(pthread_barrier_init(&h.counted, NULL, 2), 0);
    assert_int_equal(pthread_create(&t, NULL, hold, &h), 0);
    pthread_barrier_wait(&h.started);
    assert_int_equal(threads_count(), 2); /* it cannot end before the second barrier */
    pthread_barrier_wait(&h.counted);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(count_settled(1), 1);
    pthread_barrier_destroy(&h.started);
    pthread_barrier_destroy(&h.counted);
}

/* Field 20, counted from the last ')': names with spaces, with ") (", with what looks like the
 * fields that follow, a line cut after the count. */
static void threads_parse_stat__counts_from_the_last_parenthesis(void **state)
{
    (void)state;
    assert_int_equal(threads_parse_stat(LINE("cat", "1")), 1);
    assert_int_equal(threads_parse_stat(LINE("castor-node", "12")), 12);
    assert_int_equal(threads_parse_stat(LINE("my prog", "3")), 3);
    assert_int_equal(threads_parse_stat(LINE("a) (b", "7")), 7);
    assert_int_equal(threads_parse_stat(LINE(")", "4")), 4);
    assert_int_equal(threads_parse_stat(LINE("(", "5")), 5);
    assert_int_equal(threads_parse_stat(LINE("x) " BEFORE "9", "2")), 2);
    assert_int_equal(threads_parse_stat("1 (cat) " BEFORE "6\n"), 6);
    assert_int_equal(threads_parse_stat("1 (cat) " BEFORE "6"), 6);
    assert_int_equal(threads_parse_stat("1 (cat) " BEFORE "2147483647"), 2147483647);
}

/* No ')', too few fields, an empty field, a count that is 0, negative, not a number or too
 * large: ERR_PARSE; NULL: ERR_INVAL. */
static void threads_parse_stat__refusals(void **state)
{
    const char *bad[] = {"",
                         "31783 cat R 1",
                         "31783 (cat",
                         "31783 (cat) R 31781 31781 31084 0 -1 4194304 101 0 0 0 0 0 0 0 20 0",
                         "31783 (cat) R 31781 31781 31084 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 ",
                         "31783 (cat) R 31781  31781 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 1 0",
                         "31783 (cat)R 31781 31781 31084 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 1",
                         LINE("cat", "0"),
                         LINE("cat", "-1"),
                         LINE("cat", "+1"),
                         LINE("cat", "x"),
                         LINE("cat", "1x"),
                         LINE("cat", "2147483648"),
                         LINE("cat", "99999999999999999999999"),
                         "31783 (cat) R 31781 31781 31084 0 -1 4194304 101 0 0 0 0 0 0 0 20 0\n1"};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(threads_parse_stat(bad[i]), ERR_PARSE);
    assert_int_equal(threads_parse_stat(NULL), ERR_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threads_count__follows_a_thread),
        cmocka_unit_test(threads_parse_stat__counts_from_the_last_parenthesis),
        cmocka_unit_test(threads_parse_stat__refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
