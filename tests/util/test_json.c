/* test_json.c: building JSON values and writing them (indented, keys in insertion order; to a
 * file atomically, a failed write leaving the old file whole), and the ownership rules of jv_set
 * and jv_push on failure (leaks show under the ASan run). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/json.h"

/* Write v into a memory stream and return the text (the caller frees it). */
static char *write_to_string(const struct jv *v)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    assert_non_null(f);
    assert_int_equal(jv_write(v, f), 0);
    assert_int_equal(fclose(f), 0);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

/* An object with a string, a real, an integer and a nested array (of an integer, a real, a string
 * and an empty array), written with 2-space indentation, keys in the order they were set (not
 * sorted: "zeta" before "alpha"), and a final newline. Reals use up to 10 significant digits
 * (0.1 + 0.2 = 0.30000000000000004 prints as 0.3); jansson always writes a real with a point or
 * exponent (2.0, not 2). */
static void jv_write__object_in_insertion_order(void **state)
{
    struct jv *obj = jv_object(), *arr = jv_array();
    char *text;

    (void)state;
    assert_non_null(obj);
    assert_non_null(arr);
    assert_int_equal(jv_set(obj, "zeta", jv_string("cifar10")), 0);
    assert_int_equal(jv_set(obj, "alpha", jv_number(0.1 + 0.2)), 0);
    assert_int_equal(jv_set(obj, "count", jv_integer(-42)), 0);
    assert_int_equal(jv_push(arr, jv_integer(1)), 0);
    assert_int_equal(jv_push(arr, jv_number(2.0)), 0);
    assert_int_equal(jv_push(arr, jv_string("x")), 0);
    assert_int_equal(jv_push(arr, jv_array()), 0);
    assert_int_equal(jv_set(obj, "list", arr), 0);
    text = write_to_string(obj);
    assert_string_equal(text, "{\n"
                              "  \"zeta\": \"cifar10\",\n"
                              "  \"alpha\": 0.3,\n"
                              "  \"count\": -42,\n"
                              "  \"list\": [\n"
                              "    1,\n"
                              "    2.0,\n"
                              "    \"x\",\n"
                              "    []\n"
                              "  ]\n"
                              "}\n");
    free(text);
    jv_free(obj);
}

/* Non-finite numbers (NaN, +inf, -inf) become null; finite ones stay numbers (jansson writes
 * -1.5e-7 without padding the exponent). */
static void jv_number__non_finite_is_null(void **state)
{
    struct jv *arr = jv_array();
    char *text;

    (void)state;
    assert_int_equal(jv_push(arr, jv_number(NAN)), 0);
    assert_int_equal(jv_push(arr, jv_number(INFINITY)), 0);
    assert_int_equal(jv_push(arr, jv_number(-INFINITY)), 0);
    assert_int_equal(jv_push(arr, jv_number(-1.5e-7)), 0);
    text = write_to_string(arr);
    assert_string_equal(text, "[\n  null,\n  null,\n  null,\n  -1.5e-7\n]\n");
    free(text);
    jv_free(arr);
}

/* Integers are exact beyond double precision: 2^53 + 1 = 9007199254740993. */
static void jv_integer__exact(void **state)
{
    struct jv *obj = jv_object();
    char *text;

    (void)state;
    assert_int_equal(jv_set(obj, "big", jv_integer((1LL << 53) + 1)), 0);
    text = write_to_string(obj);
    assert_string_equal(text, "{\n  \"big\": 9007199254740993\n}\n");
    free(text);
    jv_free(obj);
}

/* Strings are escaped: a quote, a backslash, a newline and a tab. */
static void jv_string__escaped(void **state)
{
    struct jv *arr = jv_array();
    char *text;

    (void)state;
    assert_int_equal(jv_push(arr, jv_string("a\"b\\c\nd\te")), 0);
    text = write_to_string(arr);
    assert_string_equal(text, "[\n  \"a\\\"b\\\\c\\nd\\te\"\n]\n");
    free(text);
    jv_free(arr);
}

/* Setting a key again replaces its value where the key already stands. */
static void jv_set__same_key_replaces(void **state)
{
    struct jv *obj = jv_object();
    char *text;

    (void)state;
    assert_int_equal(jv_set(obj, "a", jv_integer(1)), 0);
    assert_int_equal(jv_set(obj, "b", jv_integer(2)), 0);
    assert_int_equal(jv_set(obj, "a", jv_integer(3)), 0);
    text = write_to_string(obj);
    assert_string_equal(text, "{\n  \"a\": 3,\n  \"b\": 2\n}\n");
    free(text);
    jv_free(obj);
}

/* A NULL value (what a failed constructor returns) fails with ERR_NOMEM and leaves the container
 * as it was. */
static void jv_set__null_value_is_nomem(void **state)
{
    struct jv *obj = jv_object(), *arr = jv_array();
    char *text;

    (void)state;
    assert_int_equal(jv_set(obj, "k", NULL), ERR_NOMEM);
    assert_int_equal(jv_push(arr, NULL), ERR_NOMEM);
    assert_int_equal(jv_set(NULL, "k", NULL), ERR_NOMEM);
    assert_int_equal(jv_push(NULL, NULL), ERR_NOMEM);
    text = write_to_string(obj);
    assert_string_equal(text, "{}\n");
    free(text);
    text = write_to_string(arr);
    assert_string_equal(text, "[]\n");
    free(text);
    jv_free(obj);
    jv_free(arr);
}

/* A NULL container fails (ERR_INVAL) and the stolen value is freed: values of every kind, nested
 * ones included, would show as leaks under ASan if they were not. */
static void jv_set__null_container_frees_value(void **state)
{
    struct jv *nested = jv_object();

    (void)state;
    assert_int_equal(jv_set(nested, "s", jv_string("a string that is not small")), 0);
    assert_int_equal(jv_set(NULL, "k", nested), ERR_INVAL);
    assert_int_equal(jv_set(NULL, "k", jv_string("leak?")), ERR_INVAL);
    assert_int_equal(jv_set(NULL, "k", jv_number(1.5)), ERR_INVAL);
    assert_int_equal(jv_push(NULL, jv_integer(7)), ERR_INVAL);
    assert_int_equal(jv_push(NULL, jv_array()), ERR_INVAL);
}

/* jv_set on an array and jv_push on an object fail, and the value is still freed (ASan). */
static void jv_set__wrong_container_kind_fails_and_frees(void **state)
{
    struct jv *obj = jv_object(), *arr = jv_array();

    (void)state;
    assert_int_equal(jv_set(arr, "k", jv_string("v")), ERR_INVAL);
    assert_true(jv_push(obj, jv_string("v")) < 0);
    jv_free(obj);
    jv_free(arr);
}

/* jv_write_path creates the file with the same text as jv_write; an unwritable path is ERR_IO. */
static void jv_write_path__file_and_error(void **state)
{
    char dir[] = "/tmp/castor-test-json-XXXXXX";
    char path[sizeof(dir) + 16], bad[sizeof(dir) + 32], text[64];
    struct jv *obj = jv_object();
    FILE *f;
    size_t n;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/out.json", dir);
    snprintf(bad, sizeof(bad), "%s/missing/out.json", dir);
    assert_int_equal(jv_set(obj, "n", jv_integer(5)), 0);
    assert_int_equal(jv_write_path(obj, path), 0);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_string_equal(text, "{\n  \"n\": 5\n}\n");
    assert_int_equal(jv_write_path(obj, bad), ERR_IO);
    jv_free(obj);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* A device that is always full: not a regular file, so written as a stream (not replaced), and the
 * write fails when the stream is flushed and closed. */
static void jv_write_path__full_device(void **state)
{
    struct jv *obj = jv_object();
    struct stat sb;

    (void)state;
    if (access("/dev/full", W_OK) != 0) {
        jv_free(obj);
        skip();
    }
    assert_int_equal(jv_set(obj, "n", jv_integer(5)), 0);
    assert_int_equal(jv_write_path(obj, "/dev/full"), ERR_IO);
    assert_int_equal(stat("/dev/full", &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
    jv_free(obj);
}

/* The text of the file at path (the caller frees it). */
static char *read_text(const char *path)
{
    char *text = calloc(1, 8192);
    FILE *f = fopen(path, "r");
    size_t n;

    assert_non_null(text);
    assert_non_null(f);
    n = fread(text, 1, 8191, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* The entries of folder dir, . and .. included. */
static int entries(const char *dir)
{
    char cmd[128];
    int n = 0;
    FILE *p;

    snprintf(cmd, sizeof(cmd), "ls -a %s | wc -l", dir);
    p = popen(cmd, "r");
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* A write that fails part-way (here the file size limit, as a full disk would) leaves the file
 * that was there whole, and no temporary file beside it; a good write replaces it keeping its
 * mode, and through a link replaces the file linked to, the link kept. */
static void jv_write_path__failure_keeps_the_old_file(void **state)
{
    char dir[] = "/tmp/castor-test-json-XXXXXX";
    char path[sizeof(dir) + 16], link_path[sizeof(dir) + 16], *text;
    struct jv *small = jv_object(), *big = jv_array();
    struct rlimit old, lim;
    struct stat sb;
    void (*prev)(int);
    int rc;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/out.json", dir);
    snprintf(link_path, sizeof(link_path), "%s/link.json", dir);
    assert_int_equal(jv_set(small, "n", jv_integer(5)), 0);
    for (int i = 0; i < 500; i++)
        assert_int_equal(jv_push(big, jv_integer(i)), 0);
    assert_int_equal(jv_write_path(small, path), 0);
    assert_int_equal(chmod(path, 0640), 0);
    /* files may grow to 1 KiB: the big array (some 4 KiB) cannot be written */
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 1024;
    prev = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    rc = jv_write_path(big, path);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    assert_int_equal(rc, ERR_IO);
    text = read_text(path);
    assert_string_equal(text, "{\n  \"n\": 5\n}\n");
    free(text);
    assert_int_equal(entries(dir), 3); /* ., .. and out.json */
    /* now it fits: replaced, its mode kept; through a link, the link stays one */
    assert_int_equal(jv_write_path(big, path), 0);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);
    assert_true(sb.st_size > 1024);
    assert_int_equal(symlink("out.json", link_path), 0);
    assert_int_equal(jv_write_path(small, link_path), 0);
    assert_int_equal(lstat(link_path, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    text = read_text(path);
    assert_string_equal(text, "{\n  \"n\": 5\n}\n");
    free(text);
    jv_free(small);
    jv_free(big);
    assert_int_equal(unlink(link_path), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* jv_free accepts NULL. */
static void jv_free__null(void **state)
{
    (void)state;
    jv_free(NULL);
}

/* Parsing an object reads back every kind of value through the getters; numbers as integers and
 * reals keep their kind, and the getters refuse the wrong kind without touching the output. */
static void jv_parse__object_and_getters(void **state)
{
    const char text[] = "{\"s\":\"h\\u00e9\",\"i\":-42,\"r\":2.5,\"t\":true,\"n\":null,"
                        "\"a\":[1,\"x\"],\"o\":{}}";
    struct jv *v = NULL;
    long long i = 7;
    double d = 0;
    int b = -1;

    (void)state;
    assert_int_equal(jv_parse(text, strlen(text), &v, NULL), 0);
    assert_int_equal(jv_type_of(v), JV_OBJECT);
    assert_int_equal(jv_size(v), 7);
    assert_string_equal(jv_string_value(jv_get(v, "s")), "h\xc3\xa9");
    assert_int_equal(jv_integer_value(jv_get(v, "i"), &i), 0);
    assert_int_equal(i, -42);
    assert_int_equal(jv_integer_value(jv_get(v, "r"), &i), ERR_INVAL);
    assert_int_equal(i, -42);
    assert_int_equal(jv_number_value(jv_get(v, "r"), &d), 0);
    assert_true(d == 2.5);
    assert_int_equal(jv_number_value(jv_get(v, "i"), &d), 0);
    assert_true(d == -42.0);
    assert_int_equal(jv_number_value(jv_get(v, "s"), &d), ERR_INVAL);
    assert_int_equal(jv_bool_value(jv_get(v, "t"), &b), 0);
    assert_int_equal(b, 1);
    assert_int_equal(jv_type_of(jv_get(v, "n")), JV_NULL);
    assert_int_equal(jv_type_of(jv_get(v, "a")), JV_ARRAY);
    assert_int_equal(jv_size(jv_get(v, "a")), 2);
    assert_string_equal(jv_string_value(jv_at(jv_get(v, "a"), 1)), "x");
    assert_null(jv_at(jv_get(v, "a"), 2));
    assert_null(jv_get(v, "missing"));
    assert_null(jv_get(jv_get(v, "a"), "s"));
    assert_int_equal(jv_type_of(jv_get(v, "o")), JV_OBJECT);
    jv_free(v);
}

/* Malformed text is ERR_PARSE with the place and reason; so are trailing garbage, a key given
 * twice, a number too large for a double and the bare words NaN and Infinity. */
static void jv_parse__malformed(void **state)
{
    static const char *const bad[] = {
        "{\"a\":1,}", "{\"a\":1} x", "{\"a\":1,\"a\":2}", "[1e999]", "[NaN]", "[Infinity]", "",
    };
    struct jv *v = NULL;
    struct error e = {0};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&e, 0, sizeof(e));
        assert_int_equal(jv_parse(bad[i], strlen(bad[i]), &v, &e), ERR_PARSE);
        assert_null(v);
        assert_int_equal(e.code, ERR_PARSE);
        assert_true(e.msg[0] != '\0');
    }
    assert_int_equal(jv_parse("{\n \"a\": tru }", 13, &v, &e), ERR_PARSE);
    assert_int_equal(e.line, 2);
    assert_null(v);
}

/* A string holding \u0000 is refused (a C string would end there and hide the rest). */
static void jv_parse__nul_in_string_refused(void **state)
{
    const char text[] = "\"ab\\u0000c\"";
    struct jv *v = NULL;

    (void)state;
    assert_int_equal(jv_parse(text, strlen(text), &v, NULL), ERR_PARSE);
    assert_null(v);
    assert_int_equal(jv_parse("\"abc\"", 5, &v, NULL), 0);
    assert_string_equal(jv_string_value(v), "abc");
    jv_free(v);
}

/* jv_dump writes compact JSON in insertion order that parses back to the same values, reals
 * exactly; jv_each walks the keys in order and stops at a non-zero return. */
static int collect_keys(void *ctx, const char *key, const struct jv *val)
{
    char *keys = ctx;

    (void)val;
    strcat(keys, key);
    return strcmp(key, "stop") == 0 ? 5 : 0;
}

static void jv_dump__round_trip_and_each(void **state)
{
    struct jv *obj = jv_object(), *back = NULL;
    char *text = NULL, keys[32] = "";
    double d = 0;

    (void)state;
    assert_int_equal(jv_set(obj, "z", jv_number(0.1 + 0.2)), 0);
    assert_int_equal(jv_set(obj, "a", jv_bool(0)), 0);
    assert_int_equal(jv_set(obj, "stop", jv_string("q\"")), 0);
    assert_int_equal(jv_set(obj, "after", jv_ref(jv_get(obj, "a"))), 0);
    assert_int_equal(jv_dump(obj, &text), 0);
    assert_string_equal(text, "{\"z\":0.30000000000000004,\"a\":false,\"stop\":\"q\\\"\","
                              "\"after\":false}");
    assert_int_equal(jv_parse(text, strlen(text), &back, NULL), 0);
    assert_int_equal(jv_number_value(jv_get(back, "z"), &d), 0);
    assert_true(d == 0.1 + 0.2);
    assert_int_equal(jv_each(back, collect_keys, keys), 5);
    assert_string_equal(keys, "zastop");
    assert_int_equal(jv_each(jv_get(back, "z"), collect_keys, keys), ERR_INVAL);
    free(text);
    jv_free(back);
    jv_free(obj);
}

/* Malformed and truncated texts are ERR_PARSE with a position and a message that never quotes
 * the text (which may hold a secret); duplicate keys are refused. */
static void jv_parse__malformed_never_quotes(void **state)
{
    const char *bad[] = {"{\"SecretAccessKey\": wJalrXUtnFEMI}", "{\"SecretAccessKey\":\"wJalr",
                         "{\"a\":1,\"a\":2}", ""};
    struct error e;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct jv *v = NULL;

        memset(&e, 0, sizeof(e));
        assert_int_equal(jv_parse(bad[i], strlen(bad[i]), &v, &e), ERR_PARSE);
        assert_null(v);
        assert_non_null(strstr(e.msg, "JSON"));
        assert_null(strstr(e.msg, "wJalr"));
        assert_null(strstr(e.msg, "Secret"));
    }
    assert_string_equal(e.msg, "truncated JSON");
    assert_int_equal(jv_parse(NULL, 0, NULL, &e), ERR_INVAL);
}

/* Members of nested objects read through jv_get on a borrowed value; jv_get on a string, on NULL
 * or with no key is NULL. jv_free_wiped zeroes every string before it lets go: a second reference
 * taken before sees the zeros. */
static void jv_free_wiped__zeroes_strings(void **state)
{
    const char *text = "{\"Code\":\"Success\",\"Inner\":{\"K\":\"secret\"},\"L\":[\"s2\"]}";
    struct jv *v = NULL, *keep;
    const char *inner;

    (void)state;
    assert_int_equal(jv_parse(text, strlen(text), &v, NULL), 0);
    assert_string_equal(jv_string_value(jv_get(jv_get(v, "Inner"), "K")), "secret");
    assert_null(jv_get(jv_get(v, "Code"), "K"));
    assert_null(jv_get(NULL, "Code"));
    assert_null(jv_get(v, NULL));
    assert_null(jv_string_value(NULL));
    keep = jv_ref(v);
    jv_free_wiped(v);
    inner = jv_string_value(jv_get(jv_get(keep, "Inner"), "K"));
    assert_non_null(inner);
    assert_memory_equal(inner, "\0\0\0\0\0\0", 6);
    assert_int_equal(jv_string_value(jv_get(keep, "Code"))[0], '\0');
    assert_int_equal(jv_string_value(jv_at(jv_get(keep, "L"), 0))[0], '\0');
    jv_free(keep);
    jv_free_wiped(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jv_write__object_in_insertion_order),
        cmocka_unit_test(jv_number__non_finite_is_null),
        cmocka_unit_test(jv_integer__exact),
        cmocka_unit_test(jv_string__escaped),
        cmocka_unit_test(jv_set__same_key_replaces),
        cmocka_unit_test(jv_set__null_value_is_nomem),
        cmocka_unit_test(jv_set__null_container_frees_value),
        cmocka_unit_test(jv_set__wrong_container_kind_fails_and_frees),
        cmocka_unit_test(jv_write_path__file_and_error),
        cmocka_unit_test(jv_write_path__full_device),
        cmocka_unit_test(jv_write_path__failure_keeps_the_old_file),
        cmocka_unit_test(jv_free__null),
        cmocka_unit_test(jv_parse__object_and_getters),
        cmocka_unit_test(jv_parse__malformed),
        cmocka_unit_test(jv_parse__malformed_never_quotes),
        cmocka_unit_test(jv_parse__nul_in_string_refused),
        cmocka_unit_test(jv_dump__round_trip_and_each),
        cmocka_unit_test(jv_free_wiped__zeroes_strings),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
