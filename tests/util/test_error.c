/* test_error.c: the error table (messages, names, retryability) and the detail record. */
#include <string.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/error.h"

/* Every code in the table, in table order, for the checks that walk all of them. */
static const int all_codes[] = {ERR_NOMEM,    ERR_INVAL,    ERR_IO,       ERR_NOENT,   ERR_PARSE,
                                ERR_EMPTY,    ERR_RANGE,    ERR_UNKNOWN,  ERR_NOCONV,  ERR_AGAIN,
                                ERR_INTERNAL, ERR_CAPACITY, ERR_CONFLICT, ERR_CORRUPT, ERR_NODEV,
                                ERR_QUOTA,    ERR_PERM};
#define NCODES (sizeof(all_codes) / sizeof(all_codes[0]))

/* Known codes map to the message and name written in ERR_TABLE (copied here by hand). */
static void err_str__known_codes(void **state)
{
    (void)state;
    assert_string_equal(err_str(ERR_NOMEM), "out of memory");
    assert_string_equal(err_str(ERR_INVAL), "invalid argument");
    assert_string_equal(err_str(ERR_NOENT), "no such file or directory");
    assert_string_equal(err_str(ERR_PARSE), "malformed input");
    assert_string_equal(err_str(ERR_EMPTY), "no data");
    assert_string_equal(err_str(ERR_RANGE), "value out of range");
    assert_string_equal(err_str(ERR_NOCONV), "numerical method did not converge");
    assert_string_equal(err_str(ERR_INTERNAL), "internal error");
    assert_string_equal(err_str(ERR_CONFLICT), "conflicts with existing data");
    assert_string_equal(err_str(ERR_CORRUPT), "stored data is corrupt");
    assert_string_equal(err_str(ERR_NODEV),
                        "no GPU device (none present, or built without CUDA or NCCL)");
    assert_string_equal(err_name(ERR_NOMEM), "NOMEM");
    assert_string_equal(err_name(ERR_PARSE), "PARSE");
    assert_string_equal(err_name(ERR_UNKNOWN), "UNKNOWN");
    assert_string_equal(err_name(ERR_INTERNAL), "INTERNAL");
    assert_string_equal(err_name(ERR_CONFLICT), "CONFLICT");
    assert_string_equal(err_name(ERR_NODEV), "NODEV");
    assert_string_equal(err_str(ERR_QUOTA), "quota exceeded");
    assert_string_equal(err_name(ERR_QUOTA), "QUOTA");
    assert_string_equal(err_str(ERR_PERM), "permission denied");
}

/* Zero is success: its own message and name, and never retryable. */
static void err_str__zero_is_success(void **state)
{
    (void)state;
    assert_int_equal(ERR_OK, 0);
    assert_string_equal(err_str(0), "success");
    assert_string_equal(err_name(0), "OK");
    assert_int_equal(err_retryable(0), 0);
}

/* Codes outside the table (one past the last, positive, far negative) get the fallback strings
 * and are not retryable; the table has 17 entries, so -18 is the first unknown negative code. */
static void err_str__unknown_codes(void **state)
{
    const int unknown[] = {-18, -1000, 1, 42, INT_MIN};

    (void)state;
    assert_int_equal(ERR_INDEX_COUNT, 17);
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        assert_string_equal(err_str(unknown[i]), "unknown error");
        assert_string_equal(err_name(unknown[i]), "UNKNOWN_CODE");
        assert_int_equal(err_retryable(unknown[i]), 0);
    }
}

/* Retryable per the table: NOMEM, IO and AGAIN are; INVAL, PARSE, NOENT, NOCONV, INTERNAL,
 * CONFLICT, CORRUPT, NODEV and QUOTA are not. */
static void err_retryable__follows_table(void **state)
{
    (void)state;
    assert_int_equal(err_retryable(ERR_NOMEM), 1);
    assert_int_equal(err_retryable(ERR_IO), 1);
    assert_int_equal(err_retryable(ERR_AGAIN), 1);
    assert_int_equal(err_retryable(ERR_CAPACITY), 1);
    assert_int_equal(err_retryable(ERR_INVAL), 0);
    assert_int_equal(err_retryable(ERR_PARSE), 0);
    assert_int_equal(err_retryable(ERR_NOENT), 0);
    assert_int_equal(err_retryable(ERR_NOCONV), 0);
    assert_int_equal(err_retryable(ERR_INTERNAL), 0);
    assert_int_equal(err_retryable(ERR_CONFLICT), 0);
    assert_int_equal(err_retryable(ERR_CORRUPT), 0);
    assert_int_equal(err_retryable(ERR_NODEV), 0);
    assert_int_equal(err_retryable(ERR_QUOTA), 0);
}

/* Codes are negative, pairwise distinct, numbered -1, -2, ... in table order, and each has a
 * name and message other than the fallbacks. */
static void err_codes__negative_and_distinct(void **state)
{
    (void)state;
    assert_int_equal(NCODES, ERR_INDEX_COUNT);
    for (size_t i = 0; i < NCODES; i++) {
        assert_true(all_codes[i] < 0);
        assert_int_equal(all_codes[i], -(int)i - 1);
        assert_string_not_equal(err_str(all_codes[i]), "unknown error");
        assert_string_not_equal(err_name(all_codes[i]), "UNKNOWN_CODE");
        for (size_t j = 0; j < i; j++) {
            assert_int_not_equal(all_codes[i], all_codes[j]);
            assert_string_not_equal(err_name(all_codes[i]), err_name(all_codes[j]));
        }
    }
}

/* err_set with a NULL record only returns the code. */
static void err_set__null_record_returns_code(void **state)
{
    (void)state;
    assert_int_equal(err_set(NULL, ERR_PARSE, "f.csv", 3, 7, "bad %d", 1), ERR_PARSE);
    assert_int_equal(err_set(NULL, ERR_NOMEM, NULL, 0, 0, NULL), ERR_NOMEM);
}

/* err_set fills every field; the message is printf-formatted ("x=" then 42 -> "x=42"). */
static void err_set__fills_record(void **state)
{
    struct error e;

    (void)state;
    memset(&e, 0x55, sizeof(e));
    assert_int_equal(err_set(&e, ERR_RANGE, "data.csv", 3, 7, "x=%d", 42), ERR_RANGE);
    assert_int_equal(e.code, ERR_RANGE);
    assert_string_equal(e.file, "data.csv");
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 7);
    assert_string_equal(e.msg, "x=42");
}

/* A NULL file becomes "", a NULL format takes the code's message. */
static void err_set__null_file_and_format(void **state)
{
    struct error e;

    (void)state;
    memset(&e, 0x55, sizeof(e));
    assert_int_equal(err_set(&e, ERR_EMPTY, NULL, 0, 0, NULL), ERR_EMPTY);
    assert_string_equal(e.file, "");
    assert_string_equal(e.msg, "no data");
}

/* A file name and message longer than their fields are cut to fit (255 and 383 characters). */
static void err_set__long_strings_are_cut(void **state)
{
    struct error e;
    char longname[600];

    (void)state;
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    err_set(&e, ERR_IO, longname, 1, 1, "%s", longname);
    assert_int_equal(strlen(e.file), sizeof(e.file) - 1);
    assert_int_equal(strlen(e.msg), sizeof(e.msg) - 1);
}

/* err_format shows what is known: "file:line:column: msg", "file:line: msg", "file: msg", and
 * just "msg" without a file (line and column are then not shown either). */
static void err_format__parts_that_are_known(void **state)
{
    struct error e;
    char buf[128];

    (void)state;
    err_set(&e, ERR_PARSE, "a.csv", 3, 7, "bad cell");
    assert_string_equal(err_format(&e, buf, sizeof(buf)), "a.csv:3:7: bad cell");
    err_set(&e, ERR_PARSE, "a.csv", 3, 0, "bad row");
    assert_string_equal(err_format(&e, buf, sizeof(buf)), "a.csv:3: bad row");
    err_set(&e, ERR_NOENT, "a.csv", 0, 0, "cannot open");
    assert_string_equal(err_format(&e, buf, sizeof(buf)), "a.csv: cannot open");
    /* a column without a line is not shown */
    err_set(&e, ERR_NOENT, "a.csv", 0, 4, "cannot open");
    assert_string_equal(err_format(&e, buf, sizeof(buf)), "a.csv: cannot open");
    err_set(&e, ERR_INVAL, NULL, 5, 6, "no file");
    assert_string_equal(err_format(&e, buf, sizeof(buf)), "no file");
    assert_ptr_equal(err_format(&e, buf, sizeof(buf)), buf);
}

/* An empty message falls back to the code's message. */
static void err_format__empty_message_uses_table(void **state)
{
    struct error e;
    char buf[128];

    (void)state;
    err_set(&e, ERR_NOCONV, "fit", 0, 0, "%s", "");
    assert_string_equal(err_format(&e, buf, sizeof(buf)), "fit: numerical method did not converge");
}

/* Truncation: the text is cut to size - 1 characters and NUL-terminated, and nothing past size
 * is written (the bytes after it keep their sentinel). "a.csv:3:7: bad cell" is 19 characters. */
static void err_format__truncates_safely(void **state)
{
    struct error e;
    char buf[32];
    const size_t sizes[] = {1, 4, 8, 11, 12, 19, 20};

    (void)state;
    err_set(&e, ERR_PARSE, "a.csv", 3, 7, "bad cell");
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t size = sizes[i];

        memset(buf, '#', sizeof(buf));
        err_format(&e, buf, size);
        assert_int_equal(strlen(buf), size - 1);
        assert_memory_equal(buf, "a.csv:3:7: bad cell", size - 1);
        for (size_t k = size; k < sizeof(buf); k++)
            assert_int_equal(buf[k], '#');
    }
    /* size 0 writes nothing at all */
    memset(buf, '#', sizeof(buf));
    assert_ptr_equal(err_format(&e, buf, 0), buf);
    assert_int_equal(buf[0], '#');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(err_str__known_codes),
        cmocka_unit_test(err_str__zero_is_success),
        cmocka_unit_test(err_str__unknown_codes),
        cmocka_unit_test(err_retryable__follows_table),
        cmocka_unit_test(err_codes__negative_and_distinct),
        cmocka_unit_test(err_set__null_record_returns_code),
        cmocka_unit_test(err_set__fills_record),
        cmocka_unit_test(err_set__null_file_and_format),
        cmocka_unit_test(err_set__long_strings_are_cut),
        cmocka_unit_test(err_format__parts_that_are_known),
        cmocka_unit_test(err_format__empty_message_uses_table),
        cmocka_unit_test(err_format__truncates_safely),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
