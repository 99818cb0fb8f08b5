/* test_csv.c: the strict CSV reader: good tables, located cells, and every error with its exact
 * line and column. Columns are 1-based character offsets, counted by hand in each comment. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/csv.h"

/* A pointer no allocation returns, to show that *out is left alone on error. */
#define UNTOUCHED ((struct csv_table *)(uintptr_t)0x1234)

static int parse(const char *text, struct csv_table **out, struct error *e)
{
    return csv_parse("t.csv", text, strlen(text), out, e);
}

/* Parse text that must fail; check the code, location, file name and that *out is untouched. */
static void expect_error(const char *text, int code, int line, int column)
{
    struct csv_table *t = UNTOUCHED;
    struct error e;

    memset(&e, 0, sizeof(e));
    assert_int_equal(csv_parse("t.csv", text, strlen(text), &t, &e), code);
    assert_ptr_equal(t, UNTOUCHED);
    assert_int_equal(e.code, code);
    assert_string_equal(e.file, "t.csv");
    assert_int_equal(e.line, line);
    assert_int_equal(e.column, column);
}

static void expect_cell(const struct csv_table *t, size_t row, size_t col, const char *text,
                        int line, int column)
{
    const struct csv_cell *c = csv_cell_at(t, row, col);

    assert_string_equal(c->text, text);
    assert_int_equal(c->line, line);
    assert_int_equal(c->column, column);
}

/* A plain table: header of 3, two rows; end_line is the last line read (3). */
static void csv_parse__plain_table(void **state)
{
    struct csv_table *t = NULL;
    struct error e;

    (void)state;
    assert_int_equal(parse("a,b,c\n1,2,3\n4,5,6\n", &t, &e), 0);
    assert_non_null(t);
    assert_string_equal(t->name, "t.csv");
    assert_int_equal(t->ncols, 3);
    assert_int_equal(t->nrows, 2);
    assert_string_equal(t->header[0].text, "a");
    assert_string_equal(t->header[2].text, "c");
    assert_int_equal(t->header[2].line, 1);
    assert_int_equal(t->header[2].column, 5);
    expect_cell(t, 0, 0, "1", 2, 1);
    expect_cell(t, 1, 2, "6", 3, 5);
    assert_int_equal(t->end_line, 3);
    csv_free(t);
}

/* A NULL name is reported as "<input>". */
static void csv_parse__null_name(void **state)
{
    struct csv_table *t = NULL;
    struct error e;

    (void)state;
    assert_int_equal(csv_parse(NULL, "a\n1\n", 4, &t, &e), 0);
    assert_string_equal(t->name, "<input>");
    csv_free(t);
    assert_int_equal(csv_parse(NULL, "a\n", 2, &t, &e), ERR_EMPTY);
    assert_string_equal(e.file, "<input>");
}

/* \r\n line endings: the \r is not part of the last cell, and lines count as with \n. */
static void csv_parse__crlf(void **state)
{
    struct csv_table *t = NULL;
    struct error e;

    (void)state;
    assert_int_equal(parse("a,b\r\n1,2\r\n3,4\r\n", &t, &e), 0);
    assert_int_equal(t->nrows, 2);
    assert_string_equal(t->header[1].text, "b");
    expect_cell(t, 0, 1, "2", 2, 3);
    expect_cell(t, 1, 1, "4", 3, 3);
    csv_free(t);
}

/* Without a final newline the last row is still read. */
static void csv_parse__no_trailing_newline(void **state)
{
    struct csv_table *t = NULL;
    struct error e;

    (void)state;
    assert_int_equal(parse("a,b\n1,2", &t, &e), 0);
    assert_int_equal(t->nrows, 1);
    expect_cell(t, 0, 1, "2", 2, 3);
    assert_int_equal(t->end_line, 2);
    csv_free(t);
}

/* Blank lines at the end (empty, blanks, a lone \r) are ignored; end_line still counts them:
 * lines 3 "", 4 " \r", 5 "\t" -> 5. */
static void csv_parse__trailing_blank_lines(void **state)
{
    struct csv_table *t = NULL;
    struct error e;

    (void)state;
    assert_int_equal(parse("a,b\n1,2\n\n \r\n\t\n", &t, &e), 0);
    assert_int_equal(t->nrows, 1);
    expect_cell(t, 0, 0, "1", 2, 1);
    assert_int_equal(t->end_line, 5);
    csv_free(t);
}

/* Blanks around cells are trimmed and the column points at the first kept character:
 * line 1 " name ,\tvalue": "name" at 2, "value" at 9 (after ' ' at 1-6 ',' at 7, '\t' at 8);
 * line 2 "x , 1.5 \r": "x" at 1, "1.5" at 5; line 3 "\t\tz,2": "z" at 3, "2" at 5. */
static void csv_parse__blanks_around_cells(void **state)
{
    struct csv_table *t = NULL;
    struct error e;

    (void)state;
    assert_int_equal(parse(" name ,\tvalue\nx , 1.5 \r\n\t\tz,2\n", &t, &e), 0);
    assert_int_equal(t->ncols, 2);
    assert_int_equal(t->nrows, 2);
    assert_string_equal(t->header[0].text, "name");
    assert_int_equal(t->header[0].column, 2);
    assert_string_equal(t->header[1].text, "value");
    assert_int_equal(t->header[1].column, 9);
    expect_cell(t, 0, 0, "x", 2, 1);
    expect_cell(t, 0, 1, "1.5", 2, 5);
    expect_cell(t, 1, 0, "z", 3, 3);
    expect_cell(t, 1, 1, "2", 3, 5);
    csv_free(t);
}

/* Empty data cells are allowed (only header names must be present): "1,,3" has "" at column 3,
 * and a single-column table works. */
static void csv_parse__empty_cells_and_one_column(void **state)
{
    struct csv_table *t = NULL;
    struct error e;

    (void)state;
    assert_int_equal(parse("a,b,c\n1,,3\n", &t, &e), 0);
    expect_cell(t, 0, 1, "", 2, 3);
    csv_free(t);
    assert_int_equal(parse("only\n7\n8\n", &t, &e), 0);
    assert_int_equal(t->ncols, 1);
    assert_int_equal(t->nrows, 2);
    expect_cell(t, 1, 0, "8", 3, 1);
    csv_free(t);
}

/* 1000 rows: row i is on line i + 2 and holds i and 2i. */
static void csv_parse__many_rows(void **state)
{
    struct csv_table *t = NULL;
    struct error e;
    size_t cap = 32000, len = 0;
    char *text = malloc(cap);
    char num[32];

    (void)state;
    assert_non_null(text);
    len += (size_t)snprintf(text + len, cap - len, "i,twice\n");
    for (int i = 0; i < 1000; i++)
        len += (size_t)snprintf(text + len, cap - len, "%d,%d\n", i, 2 * i);
    assert_true(len < cap);
    assert_int_equal(csv_parse("big.csv", text, len, &t, &e), 0);
    assert_int_equal(t->nrows, 1000);
    for (size_t i = 0; i < 1000; i += 111) {
        snprintf(num, sizeof(num), "%d", 2 * (int)i);
        expect_cell(t, i, 1, num, (int)i + 2, (int)strlen(csv_cell_at(t, i, 0)->text) + 2);
    }
    csv_free(t);
    free(text);
}

/* A NUL byte anywhere is ERR_PARSE, located: in "a,b\n1,\0" the NUL is on line 2, column 3. */
static void csv_parse__nul_byte(void **state)
{
    struct csv_table *t = UNTOUCHED;
    struct error e;

    (void)state;
    assert_int_equal(csv_parse("t.csv", "a,b\n1,\0", 7, &t, &e), ERR_PARSE);
    assert_ptr_equal(t, UNTOUCHED);
    assert_int_equal(e.code, ERR_PARSE);
    assert_string_equal(e.file, "t.csv");
    assert_non_null(strstr(e.msg, "NUL"));
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 3);
    /* and on the first line: "ab\0" is line 1, column 3 */
    assert_int_equal(csv_parse("t.csv", "ab\0", 3, &t, &e), ERR_PARSE);
    assert_int_equal(e.line, 1);
    assert_int_equal(e.column, 3);
}

/* Several blank lines between rows: the error names the first of them ("a,b\n1,2\n\n\n3,4":
 * line 3). */
static void csv_parse__first_blank_line_named(void **state)
{
    (void)state;
    expect_error("a,b\n1,2\n\n\n3,4", ERR_PARSE, 3, 1);
}

/* A subnormal number is finite: "1e-310" parses (glibc flags the underflow with ERANGE). A whole
 * number beyond a long is out of range, not malformed. */
static void csv_get__underflow_and_overflow(void **state)
{
    struct csv_table *t = NULL;
    struct error e;
    double d = 0;
    long l = 0;

    (void)state;
    assert_int_equal(csv_parse("t.csv", "x,n\n1e-310,99999999999999999999\n", 32, &t, &e), 0);
    assert_int_equal(csv_get_double(t, 0, 0, &d, &e), 0);
    assert_true(d > 0 && d < 1e-300);
    assert_int_equal(csv_get_long(t, 0, 1, 0, 100, &l, &e), ERR_RANGE);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 8);
    assert_int_equal(l, 0);
    csv_free(t);
}

/* An empty text is ERR_EMPTY with no location (nothing was read). */
static void csv_parse__empty_text(void **state)
{
    (void)state;
    expect_error("", ERR_EMPTY, 0, 0);
}

/* A header and no rows is ERR_EMPTY at the last line: "a,b" and "a,b\n" end on line 1,
 * "a,b\n\n\n" (two blank lines after) on line 3. */
static void csv_parse__header_only(void **state)
{
    (void)state;
    expect_error("a,b", ERR_EMPTY, 1, 0);
    expect_error("a,b\n", ERR_EMPTY, 1, 0);
    expect_error("a,b\n\n\n", ERR_EMPTY, 3, 0);
}

/* A blank first line is a missing header: ERR_PARSE at 1:1. */
static void csv_parse__blank_header_line(void **state)
{
    (void)state;
    expect_error("\n1,2\n", ERR_PARSE, 1, 1);
    expect_error("  \r\na\n1\n", ERR_PARSE, 1, 1);
}

/* An empty header name: "a,,c" at column 3, "a,b," (trailing comma) at column 5. */
static void csv_parse__empty_header_name(void **state)
{
    (void)state;
    expect_error("a,,c\n1,2,3\n", ERR_PARSE, 1, 3);
    expect_error("a,b,\n1,2,3\n", ERR_PARSE, 1, 5);
}

/* Quotes are rejected where the quote is: "1,\"x\"" on line 2 at column 3, "1,x\"y" at column 4,
 * a quoted header name at 1:1. */
static void csv_parse__quoted_cells(void **state)
{
    (void)state;
    expect_error("a,b\n1,\"x\"\n", ERR_PARSE, 2, 3);
    expect_error("a,b\n1,x\"y\n", ERR_PARSE, 2, 4);
    expect_error("\"a\",b\n1,2\n", ERR_PARSE, 1, 1);
}

/* A short row is located just past its end: "4,5" on line 3 -> column 4; with \r\n the \r is not
 * counted ("1,2\r" -> column 4). The message says how many fields and hints at truncation. */
static void csv_parse__short_row(void **state)
{
    struct csv_table *t = UNTOUCHED;
    struct error e;

    (void)state;
    expect_error("a,b,c\n1,2,3\n4,5\n", ERR_PARSE, 3, 4);
    expect_error("a,b,c\r\n1,2\r\n", ERR_PARSE, 2, 4);
    assert_int_equal(parse("a,b,c\n1,2,3\n4,5\n", &t, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "expected 3 fields"));
    assert_non_null(strstr(e.msg, "found 2"));
    assert_non_null(strstr(e.msg, "truncated"));
}

/* A long row is located just past its end too: "1,2,3,4" (7 characters) -> column 8. */
static void csv_parse__long_row(void **state)
{
    struct csv_table *t = UNTOUCHED;
    struct error e;

    (void)state;
    expect_error("a,b,c\n1,2,3,4\n", ERR_PARSE, 2, 8);
    assert_int_equal(parse("a,b,c\n1,2,3,4\n", &t, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "found 4"));
    assert_null(strstr(e.msg, "truncated"));
}

/* An empty (or blank) line between rows, or between the header and the first row, is ERR_PARSE
 * at that line, column 1. */
static void csv_parse__empty_line_between_rows(void **state)
{
    (void)state;
    expect_error("a,b\n1,2\n\n3,4\n", ERR_PARSE, 3, 1);
    expect_error("a,b\n1,2\n \t\n3,4", ERR_PARSE, 3, 1);
    expect_error("a,b\n\n1,2\n", ERR_PARSE, 2, 1);
    expect_error("a,b\r\n1,2\r\n\r\n3,4\r\n", ERR_PARSE, 3, 1);
}

/* csv_column finds a header by exact name; a missing one is ERR_PARSE at 1:1 naming it, and the
 * index is left alone. */
static void csv_column__found_and_missing(void **state)
{
    struct csv_table *t = NULL;
    struct error e;
    size_t idx = 99;

    (void)state;
    assert_int_equal(parse("alpha,beta,gamma\n1,2,3\n", &t, &e), 0);
    assert_int_equal(csv_column(t, "beta", &idx, &e), 0);
    assert_int_equal(idx, 1);
    assert_int_equal(csv_column(t, "gamma", &idx, &e), 0);
    assert_int_equal(idx, 2);
    idx = 99;
    assert_int_equal(csv_column(t, "delta", &idx, &e), ERR_PARSE);
    assert_int_equal(idx, 99);
    assert_int_equal(e.code, ERR_PARSE);
    assert_string_equal(e.file, "t.csv");
    assert_int_equal(e.line, 1);
    assert_int_equal(e.column, 1);
    assert_non_null(strstr(e.msg, "\"delta\""));
    /* no prefix matching */
    assert_int_equal(csv_column(t, "alph", &idx, NULL), ERR_PARSE);
    csv_free(t);
}

/* A spreadsheet's export starts with a UTF-8 byte-order mark: skipped, so the first header name
 * is found by name and lines and columns count from what follows (the bad cell "x" of line 2
 * sits at column 3). */
static void csv_parse__byte_order_mark(void **state)
{
    struct csv_table *t = NULL;
    struct error e;
    size_t idx = 99;
    double v;

    (void)state;
    assert_int_equal(parse("\xEF\xBB\xBFplacement,gpus\n1,x\n", &t, &e), 0);
    assert_int_equal(t->ncols, 2);
    assert_int_equal(csv_column(t, "placement", &idx, &e), 0);
    assert_int_equal(idx, 0);
    assert_int_equal(t->header[0].column, 1);
    assert_int_equal(t->header[1].column, 11);
    assert_int_equal(csv_get_double(t, 0, 1, &v, &e), ERR_PARSE);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 3);
    csv_free(t);
    /* only the mark: an empty text */
    expect_error("\xEF\xBB\xBF", ERR_EMPTY, 0, 0);
    /* a mark anywhere else is text: part of the name */
    assert_int_equal(parse("a,\xEF\xBB\xBF"
                           "b\n1,2\n",
                           &t, &e),
                     0);
    assert_int_equal(csv_column(t, "b", &idx, NULL), ERR_PARSE);
    csv_free(t);
}

/* A header name given twice is an error at the second one (which of the two a reader would take
 * is a guess): "a,b,a" at column 5; names compare after trimming ("a,b, b": the second b at column
 * 6).
 */
static void csv_parse__repeated_header_name(void **state)
{
    struct csv_table *t = UNTOUCHED;
    struct error e;

    (void)state;
    expect_error("a,b,a\n1,2,3\n", ERR_PARSE, 1, 5);
    memset(&e, 0, sizeof(e));
    assert_int_equal(parse("x,y,x\n1,2,3\n", &t, &e), ERR_PARSE);
    assert_ptr_equal(t, UNTOUCHED);
    assert_non_null(strstr(e.msg, "\"x\""));
    expect_error("a,b, b\n1,2,3\n", ERR_PARSE, 1, 6);
    /* names that differ in case are different columns */
    t = NULL;
    assert_int_equal(parse("a,A\n1,2\n", &t, &e), 0);
    csv_free(t);
}

/* The table for the number tests; columns counted by hand:
 * line 2 "1.5,":            "1.5" at 1, "" at 5
 * line 3 "abc,1e400":       "abc" at 1, "1e400" at 5
 * line 4 "nan,inf":         "nan" at 1, "inf" at 5
 * line 5 "1.5x, -2.5e-3 ":  "1.5x" at 1, "-2.5e-3" at 7 */
static const char numbers_csv[] = "x,y\n1.5,\nabc,1e400\nnan,inf\n1.5x, -2.5e-3 \n";

static void expect_double_error(const struct csv_table *t, size_t row, size_t col, int line,
                                int column, const char *words)
{
    struct error e;
    double v = 99.0;

    assert_int_equal(csv_get_double(t, row, col, &v, &e), ERR_PARSE);
    assert_float_equal(v, 99.0, 0.0);
    assert_int_equal(e.line, line);
    assert_int_equal(e.column, column);
    assert_string_equal(e.file, "t.csv");
    assert_non_null(strstr(e.msg, words));
    assert_memory_equal(e.msg, col ? "y:" : "x:", 2); /* names the column */
}

/* Good numbers parse (trimmed "-2.5e-3" is -0.0025). */
static void csv_get_double__ok(void **state)
{
    struct csv_table *t = NULL;
    struct error e;
    double v = 0.0;

    (void)state;
    assert_int_equal(parse(numbers_csv, &t, &e), 0);
    assert_int_equal(csv_get_double(t, 0, 0, &v, &e), 0);
    assert_float_equal(v, 1.5, 0.0);
    assert_int_equal(csv_get_double(t, 3, 1, &v, &e), 0);
    assert_float_equal(v, -2.5e-3, 0.0);
    csv_free(t);
}

/* Empty, non-numeric, overflowing, NaN, infinite and trailing-garbage cells are ERR_PARSE at the
 * cell, and the output is untouched. */
static void csv_get_double__bad_cells(void **state)
{
    struct csv_table *t = NULL;
    struct error e;

    (void)state;
    assert_int_equal(parse(numbers_csv, &t, &e), 0);
    expect_double_error(t, 0, 1, 2, 5, "empty cell");
    expect_double_error(t, 1, 0, 3, 1, "expected a number");
    expect_double_error(t, 1, 1, 3, 5, "not a finite number"); /* 1e400 overflows */
    expect_double_error(t, 2, 0, 4, 1, "not a finite number"); /* nan */
    expect_double_error(t, 2, 1, 4, 5, "not a finite number"); /* inf */
    expect_double_error(t, 3, 0, 5, 1, "expected a number");   /* 1.5x */
    csv_free(t);
}

/* The table for the whole-number tests:
 * line 2 "42,2.5":  "42" ok, "2.5" not whole (at 4)
 * line 3 "-7,":     -7 outside [0, 100] (at 1), "" not a number (at 4)
 * line 4 "100,101": 100 is the upper bound (ok), 101 outside (at 5) */
static void csv_get_long__ok_parse_and_range(void **state)
{
    struct csv_table *t = NULL;
    struct error e;
    long v = 0;

    (void)state;
    assert_int_equal(parse("n,m\n42,2.5\n-7,\n100,101\n", &t, &e), 0);
    assert_int_equal(csv_get_long(t, 0, 0, 0, 100, &v, &e), 0);
    assert_int_equal(v, 42);
    assert_int_equal(csv_get_long(t, 2, 0, 0, 100, &v, &e), 0);
    assert_int_equal(v, 100);
    assert_int_equal(csv_get_long(t, 1, 0, -10, 0, &v, &e), 0);
    assert_int_equal(v, -7);

    v = 5;
    assert_int_equal(csv_get_long(t, 0, 1, 0, 100, &v, &e), ERR_PARSE);
    assert_int_equal(v, 5);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 4);
    assert_non_null(strstr(e.msg, "whole number"));

    assert_int_equal(csv_get_long(t, 1, 1, 0, 100, &v, &e), ERR_PARSE);
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 4);

    assert_int_equal(csv_get_long(t, 1, 0, 0, 100, &v, &e), ERR_RANGE);
    assert_int_equal(v, 5);
    assert_int_equal(e.code, ERR_RANGE);
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 1);
    assert_non_null(strstr(e.msg, "-7 is outside [0, 100]"));

    assert_int_equal(csv_get_long(t, 2, 1, 0, 100, &v, &e), ERR_RANGE);
    assert_int_equal(e.line, 4);
    assert_int_equal(e.column, 5);
    csv_free(t);
}

/* A missing file is ERR_NOENT naming the path; *out is untouched. */
static void csv_load__missing_file(void **state)
{
    struct csv_table *t = UNTOUCHED;
    struct error e;
    const char *path = CASTOR_TEST_DATA "/no/such/file.csv";

    (void)state;
    assert_int_equal(csv_load(path, &t, &e), ERR_NOENT);
    assert_ptr_equal(t, UNTOUCHED);
    assert_int_equal(e.code, ERR_NOENT);
    assert_string_equal(e.file, path);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* A real file in a fresh temporary folder: loaded, named by its path, cells located; an empty
 * file is ERR_EMPTY; the folder itself cannot be read as a file (ERR_IO). All removed after. */
static void csv_load__real_file(void **state)
{
    char dir[] = "/tmp/castor-test-csv-XXXXXX";
    char path[sizeof(dir) + 16], empty[sizeof(dir) + 16];
    struct csv_table *t = NULL;
    struct error e;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/t.csv", dir);
    snprintf(empty, sizeof(empty), "%s/e.csv", dir);
    write_file(path, "a,b\r\n1, 2\r\n3,4\r\n");
    write_file(empty, "");

    assert_int_equal(csv_load(path, &t, &e), 0);
    assert_string_equal(t->name, path);
    assert_int_equal(t->nrows, 2);
    expect_cell(t, 0, 1, "2", 2, 4);
    expect_cell(t, 1, 0, "3", 3, 1);
    csv_free(t);

    t = UNTOUCHED;
    assert_int_equal(csv_load(empty, &t, &e), ERR_EMPTY);
    assert_ptr_equal(t, UNTOUCHED);
    assert_string_equal(e.file, empty);

    assert_int_equal(csv_load(dir, &t, &e), ERR_IO);
    assert_ptr_equal(t, UNTOUCHED);

    assert_int_equal(unlink(path), 0);
    assert_int_equal(unlink(empty), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* csv_free accepts NULL. */
static void csv_free__null(void **state)
{
    (void)state;
    csv_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(csv_parse__plain_table),
        cmocka_unit_test(csv_parse__null_name),
        cmocka_unit_test(csv_parse__crlf),
        cmocka_unit_test(csv_parse__no_trailing_newline),
        cmocka_unit_test(csv_parse__trailing_blank_lines),
        cmocka_unit_test(csv_parse__blanks_around_cells),
        cmocka_unit_test(csv_parse__empty_cells_and_one_column),
        cmocka_unit_test(csv_parse__many_rows),
        cmocka_unit_test(csv_parse__nul_byte),
        cmocka_unit_test(csv_parse__first_blank_line_named),
        cmocka_unit_test(csv_get__underflow_and_overflow),
        cmocka_unit_test(csv_parse__empty_text),
        cmocka_unit_test(csv_parse__header_only),
        cmocka_unit_test(csv_parse__blank_header_line),
        cmocka_unit_test(csv_parse__empty_header_name),
        cmocka_unit_test(csv_parse__quoted_cells),
        cmocka_unit_test(csv_parse__short_row),
        cmocka_unit_test(csv_parse__long_row),
        cmocka_unit_test(csv_parse__empty_line_between_rows),
        cmocka_unit_test(csv_column__found_and_missing),
        cmocka_unit_test(csv_parse__byte_order_mark),
        cmocka_unit_test(csv_parse__repeated_header_name),
        cmocka_unit_test(csv_get_double__ok),
        cmocka_unit_test(csv_get_double__bad_cells),
        cmocka_unit_test(csv_get_long__ok_parse_and_range),
        cmocka_unit_test(csv_load__missing_file),
        cmocka_unit_test(csv_load__real_file),
        cmocka_unit_test(csv_free__null),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
