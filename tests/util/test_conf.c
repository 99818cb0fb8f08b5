/* test_conf.c: the YAML configuration reader: the tree and its locations, typed getters, and
 * every error with its exact line and column (1-based, counted by hand in each comment). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/conf.h"

/* A pointer no allocation returns, to show that *out is left alone on error. */
#define UNTOUCHED ((struct conf *)(uintptr_t)0x1234)

static struct conf *parse_ok(const char *text)
{
    struct conf *c = NULL;
    struct error e;

    memset(&e, 0, sizeof(e));
    assert_int_equal(conf_parse("t.yaml", text, strlen(text), &c, &e), 0);
    assert_non_null(c);
    assert_non_null(c->root);
    return c;
}

/* Parse text that must fail; check the code, location, file name, a part of the message, and
 * that *out is untouched. */
static void expect_error(const char *text, int code, int line, int column, const char *msg)
{
    struct conf *c = UNTOUCHED;
    struct error e;

    memset(&e, 0, sizeof(e));
    assert_int_equal(conf_parse("t.yaml", text, strlen(text), &c, &e), code);
    assert_ptr_equal(c, UNTOUCHED);
    assert_int_equal(e.code, code);
    assert_string_equal(e.file, "t.yaml");
    assert_int_equal(e.line, line);
    assert_int_equal(e.column, column);
    if (!strstr(e.msg, msg))
        fail_msg("message \"%s\" lacks \"%s\"", e.msg, msg);
}

/* A getter's error: code, location and message; e.file is the document's name. */
static void expect_getter_error(int rc, const struct error *e, int code, int line, int column,
                                const char *msg)
{
    assert_int_equal(rc, code);
    assert_int_equal(e->code, code);
    assert_string_equal(e->file, "t.yaml");
    assert_int_equal(e->line, line);
    assert_int_equal(e->column, column);
    assert_string_equal(e->msg, msg);
}

/* A nested mapping: kinds, texts, paths, and where keys and values start. */
static void conf_parse__nested_mapping(void **state)
{
    struct conf *c = parse_ok("policy: pollux\n"
                              "cluster:\n"
                              "  nodes: 16\n"
                              "  gpus_per_node: \"4\"\n"
                              "out: 'a b.json'\n");
    const struct conf_node *r = c->root, *cl, *v;

    (void)state;
    assert_string_equal(c->name, "t.yaml");
    assert_int_equal(r->kind, CONF_MAPPING);
    assert_string_equal(r->path, "");
    assert_int_equal(r->n, 3);
    assert_string_equal(r->entries[0].key, "policy");
    assert_int_equal(r->entries[0].line, 1);
    assert_int_equal(r->entries[0].column, 1);
    v = r->entries[0].value;
    assert_int_equal(v->kind, CONF_SCALAR);
    assert_string_equal(v->text, "pollux");
    assert_false(v->quoted);
    /* "policy: " is 8 characters, the value starts at 9 */
    assert_int_equal(v->line, 1);
    assert_int_equal(v->column, 9);
    assert_string_equal(v->path, "policy");
    assert_string_equal(v->file, "t.yaml");

    cl = conf_find(r, "cluster");
    assert_non_null(cl);
    assert_int_equal(cl->kind, CONF_MAPPING);
    assert_string_equal(cl->path, "cluster");
    assert_int_equal(cl->n, 2);
    /* a block mapping starts at its first key: line 3, column 3 */
    assert_int_equal(cl->line, 3);
    assert_int_equal(cl->column, 3);
    assert_string_equal(cl->entries[1].key, "gpus_per_node");
    assert_int_equal(cl->entries[1].line, 4);
    assert_int_equal(cl->entries[1].column, 3);
    v = conf_find(cl, "nodes");
    assert_string_equal(v->text, "16");
    assert_string_equal(v->path, "cluster.nodes");
    assert_int_equal(v->line, 3);
    assert_int_equal(v->column, 10); /* "  nodes: " is 9 */
    v = conf_find(cl, "gpus_per_node");
    assert_string_equal(v->text, "4");
    assert_true(v->quoted);
    assert_int_equal(v->column, 18); /* "  gpus_per_node: " is 17; the quote is at 18 */
    v = conf_find(r, "out");
    assert_string_equal(v->text, "a b.json");
    assert_true(v->quoted);
    assert_null(conf_find(r, "nodes"));
    assert_null(conf_find(v, "x")); /* not a mapping */
    assert_null(conf_find(NULL, "x"));
    conf_free(c);
}

/* Block and flow sequences, items located and named by index. */
static void conf_parse__sequences(void **state)
{
    struct conf *c = parse_ok("hosts:\n"
                              "  - a\n"
                              "  - {name: b}\n"
                              "ports: [80, 443]\n");
    const struct conf_node *h = conf_find(c->root, "hosts"), *p = conf_find(c->root, "ports");

    (void)state;
    assert_int_equal(h->kind, CONF_SEQUENCE);
    assert_int_equal(h->n, 2);
    assert_string_equal(h->items[0]->text, "a");
    assert_string_equal(h->items[0]->path, "hosts[0]");
    assert_int_equal(h->items[0]->line, 2);
    assert_int_equal(h->items[0]->column, 5);
    assert_int_equal(h->items[1]->kind, CONF_MAPPING);
    assert_string_equal(conf_find(h->items[1], "name")->path, "hosts[1].name");
    assert_int_equal(p->kind, CONF_SEQUENCE);
    assert_int_equal(p->line, 4);
    assert_int_equal(p->column, 8); /* the '[' */
    assert_string_equal(p->items[1]->text, "443");
    assert_int_equal(p->items[1]->column, 13);
    conf_free(c);
}

/* Empty values are CONF_NULL; a quoted "null" is text. */
static void conf_parse__null_values(void **state)
{
    struct conf *c = parse_ok("a:\nb: ~\nc: null\nd: \"null\"\ne: ''\n");
    const struct conf_node *r = c->root;

    (void)state;
    assert_int_equal(conf_find(r, "a")->kind, CONF_NULL);
    assert_int_equal(conf_find(r, "b")->kind, CONF_NULL);
    assert_int_equal(conf_find(r, "c")->kind, CONF_NULL);
    assert_int_equal(conf_find(r, "d")->kind, CONF_SCALAR);
    assert_string_equal(conf_find(r, "d")->text, "null");
    assert_int_equal(conf_find(r, "e")->kind, CONF_SCALAR);
    assert_string_equal(conf_find(r, "e")->text, "");
    conf_free(c);
}

/* Nothing, comments only, a bare "---", or "~": an empty mapping at 1:1. */
static void conf_parse__empty_file(void **state)
{
    static const char *const texts[] = {"", "# nothing here\n\n  # at all\n", "---\n", "~\n",
                                        "--- # a comment\n...\n"};

    (void)state;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct conf *c = parse_ok(texts[i]);

        assert_int_equal(c->root->kind, CONF_MAPPING);
        assert_int_equal(c->root->n, 0);
        assert_int_equal(c->root->line, 1);
        assert_int_equal(c->root->column, 1);
        assert_null(conf_find(c->root, "policy"));
        conf_free(c);
    }
}

/* A NULL name is reported as "<input>"; CRLF line ends and a UTF-8 BOM are fine (the BOM skipped:
 * lines and columns as without it). */
static void conf_parse__name_crlf_bom(void **state)
{
    struct conf *c = NULL;
    struct error e;

    (void)state;
    assert_int_equal(conf_parse(NULL, "a: 1\r\nb: 2\r\n", 12, &c, &e), 0);
    assert_string_equal(c->name, "<input>");
    assert_string_equal(c->root->entries[1].value->file, "<input>");
    assert_int_equal(conf_find(c->root, "b")->line, 2);
    conf_free(c);
    c = parse_ok("\xEF\xBB\xBF"
                 "a: 1\n");
    assert_string_equal(conf_find(c->root, "a")->text, "1");
    conf_free(c);
    /* more than one line after the BOM; the keys without it, columns from what follows it */
    c = parse_ok("\xEF\xBB\xBF"
                 "cluster: c1\nworld: fake\n");
    assert_int_equal(c->root->n, 2);
    assert_string_equal(c->root->entries[0].key, "cluster");
    assert_int_equal(c->root->entries[0].column, 1);
    assert_int_equal(conf_find(c->root, "cluster")->column, 10);
    assert_string_equal(conf_find(c->root, "world")->text, "fake");
    assert_int_equal(conf_find(c->root, "world")->line, 2);
    conf_free(c);
    expect_error("\xEF\xBB\xBF"
                 "a: 1\na: 2\n",
                 ERR_PARSE, 2, 1, "duplicate key");
    expect_error("\xEF\xBB\xBF"
                 "a: [1\n",
                 ERR_PARSE, 2, 1, "");
    expect_error("\xEF\xBB\xBF"
                 "a: \"x\x01\"\n",
                 ERR_PARSE, 1, 6, "");
    assert_int_equal(conf_parse(NULL, "a: [", 4, &c, &e), ERR_PARSE);
    assert_string_equal(e.file, "<input>");
}

/* Syntax errors carry libyaml's line and column (and its context). */
static void conf_parse__syntax_errors(void **state)
{
    (void)state;
    /* a key at the wrong indent: the ':' at 2:3 */
    expect_error("a: 1\n b: 2\n", ERR_PARSE, 2, 3,
                 "YAML syntax: mapping values are not allowed in this context");
    /* "a: b: c": the second ':' at 1:5 */
    expect_error("a: b: c\n", ERR_PARSE, 1, 5, "mapping values are not allowed");
    /* a flow sequence left open: found at the end, 2:1, opened at 1:4 */
    expect_error("a: [1, 2\n", ERR_PARSE, 2, 1,
                 "YAML syntax: did not find expected ',' or ']' (while parsing a flow sequence "
                 "at line 1, column 4)");
    /* an unterminated quote: the end of the text, 2:1; the scalar began at 1:6 */
    expect_error("key: \"open\n", ERR_PARSE, 2, 1,
                 "found unexpected end of stream (while scanning a quoted scalar at line 1, "
                 "column 6)");
    /* a tab for indentation: 3:1 */
    expect_error("a: 1\nb:\n\tc: 2\n", ERR_PARSE, 3, 1,
                 "YAML syntax: found character that cannot start any token (while scanning for "
                 "the next token)");
    /* a lone ':' */
    expect_error(": 3\n", ERR_PARSE, 1, 1, "did not find expected key");
}

/* Bytes that are not text: located by the reader's offset, in characters. */
static void conf_parse__invalid_characters(void **state)
{
    (void)state;
    /* "a: x" then 0xFF: line 2, "b: " is 3 characters, 0xFF at 4 */
    expect_error("a: x\nb: \xFF\n", ERR_PARSE, 2, 4,
                 "invalid character: invalid leading UTF-8 octet (#FF)");
    /* a NUL byte (not the end of the text: the length says more follows) */
    {
        static const char text[] = "a: 1\nb: 2\0\n";
        struct conf *c = UNTOUCHED;
        struct error e;

        assert_int_equal(conf_parse("t.yaml", text, sizeof(text) - 1, &c, &e), ERR_PARSE);
        assert_ptr_equal(c, UNTOUCHED);
        assert_int_equal(e.line, 2);
        assert_int_equal(e.column, 5);
        assert_string_equal(e.msg, "invalid character: control characters are not allowed (#00)");
    }
    /* a control character after a two-byte character: columns count characters */
    expect_error("k: \xC3\xA9\x01\n", ERR_PARSE, 1, 5, "control characters are not allowed (#01)");
    /* an escaped NUL in a double-quoted scalar: the scalar at 1:4 */
    expect_error("a: \"x\\0y\"\n", ERR_PARSE, 1, 4, "a: contains a NUL character");
}

/* A key given twice: at the second, naming the first's line; nested keys by their path. */
static void conf_parse__duplicate_key(void **state)
{
    (void)state;
    expect_error("seed: 1\npolicy: x\nseed: 2\n", ERR_PARSE, 3, 1,
                 "duplicate key \"seed\" (first on line 1)");
    expect_error("cluster:\n  nodes: 1\n  gpus: 2\n  nodes: 3\n", ERR_PARSE, 4, 3,
                 "duplicate key \"cluster.nodes\" (first on line 2)");
    /* flow style too: "{a: 1, " is 7 characters, the second 'a' at 1:8 */
    expect_error("{a: 1, a: 2}\n", ERR_PARSE, 1, 8, "duplicate key \"a\" (first on line 1)");
    /* the same key in two mappings is fine */
    conf_free(parse_ok("x: {a: 1}\ny: {a: 2}\n"));
}

/* What a configuration file does not need: complex and empty keys, aliases, tags, a second
 * document, deep nesting. */
static void conf_parse__unsupported(void **state)
{
    char deep[200];
    size_t k = 0;

    (void)state;
    /* "? [1]": the key (a sequence) starts at 1:3 */
    expect_error("? [1]\n: 2\n", ERR_PARSE, 1, 3,
                 "the document: a key must be text (not empty, a list or a mapping)");
    expect_error("a:\n  ~: 1\n", ERR_PARSE, 2, 3, "a: a key must be text");
    expect_error("\"\": 1\n", ERR_PARSE, 1, 1, "a key must be text");
    /* the alias at 2:4 (the anchor alone is accepted) */
    expect_error("a: &x 1\nb: *x\n", ERR_PARSE, 2, 4,
                 "b: aliases (*name) are not supported: write the value out");
    expect_error("a: !!str 3\n", ERR_PARSE, 1, 4, "a: tags (!name) are not supported");
    expect_error("a: 1\n---\nb: 2\n", ERR_PARSE, 2, 1,
                 "a second document: a configuration file holds one");
    /* the value of a is at depth 1, so the 65th '[' is at depth 65: column 68 ("a: " is 3) */
    k += (size_t)snprintf(deep, sizeof(deep), "a: ");
    for (int i = 0; i < 65; i++)
        deep[k++] = '[';
    deep[k] = '\0';
    expect_error(deep, ERR_PARSE, 1, 68, "nested more than 64 levels deep");
    /* 64 levels are fine: 63 '[' and the scalar inside them */
    for (int i = 0; i < 63; i++)
        deep[3 + i] = '[';
    deep[66] = '1';
    for (int i = 0; i < 63; i++)
        deep[67 + i] = ']';
    deep[130] = '\0';
    conf_free(parse_ok(deep));
}

/* Keys checked against the allowed list: a suggestion within two edits, else the list. */
static void conf_check_keys__allowed_unknown(void **state)
{
    static const char *const top[] = {"workload", "policy", "cluster", NULL};
    static const char *const cluster[] = {"nodes", "gpus_per_node", NULL};
    struct conf *c = parse_ok("workload: w.csv\npolcy: pollux\ncluster:\n  nodes: 2\n  gpu: 4\n");
    const struct conf_node *cl = conf_find(c->root, "cluster");
    struct error e;

    (void)state;
    expect_getter_error(conf_check_keys(c->root, top, &e), &e, ERR_UNKNOWN, 2, 1,
                        "unknown key \"polcy\" (did you mean \"policy\"?)");
    expect_getter_error(conf_check_keys(cl, cluster, &e), &e, ERR_UNKNOWN, 5, 3,
                        "unknown key \"cluster.gpu\" (known keys of cluster: nodes, "
                        "gpus_per_node)");
    expect_getter_error(conf_check_keys(conf_find(c->root, "workload"), top, &e), &e, ERR_PARSE, 1,
                        11, "workload: expected a mapping (key: value lines), found \"w.csv\"");
    conf_free(c);

    c = parse_ok("polic: x\nzzz: 1\n");
    expect_getter_error(conf_check_keys(c->root, top, &e), &e, ERR_UNKNOWN, 1, 1,
                        "unknown key \"polic\" (did you mean \"policy\"?)");
    assert_int_equal(conf_check_keys(c->root, (const char *const[]){"polic", NULL}, &e),
                     ERR_UNKNOWN);
    assert_string_equal(e.msg, "unknown key \"zzz\" (known keys: polic)");
    assert_int_equal(e.line, 2);
    conf_free(c);

    c = parse_ok("- a\n");
    expect_getter_error(conf_check_keys(c->root, top, &e), &e, ERR_PARSE, 1, 1,
                        "the document: expected a mapping (key: value lines), found a list");
    conf_free(c);

    c = parse_ok("policy: x\ncluster:\n");
    assert_int_equal(conf_check_keys(c->root, top, &e), 0);
    assert_int_equal(conf_check_keys(conf_find(c->root, "cluster"), cluster, NULL), 0);
    conf_free(c);
}

/* Whole numbers: sign, range (ERR_RANGE), and what is not one (ERR_PARSE). */
static void conf_as_long__ok_and_failing(void **state)
{
    struct conf *c = parse_ok("a: 42\nb: -7\nc: +3\nd: 99999999999999999999\ne: 2.5\nf: \"8\"\n"
                              "g:\nh: [1]\ni: 0x10\nj: 1e3\nk: 5\n");
    const struct conf_node *r = c->root;
    long v = -1;
    struct error e;

    (void)state;
    assert_int_equal(conf_as_long(conf_find(r, "a"), 0, 100, &v, &e), 0);
    assert_int_equal(v, 42);
    assert_int_equal(conf_as_long(conf_find(r, "b"), -10, 10, &v, &e), 0);
    assert_int_equal(v, -7);
    assert_int_equal(conf_as_long(conf_find(r, "c"), 0, 10, &v, NULL), 0);
    assert_int_equal(v, 3);
    v = -1;
    expect_getter_error(conf_as_long(conf_find(r, "a"), 0, 41, &v, &e), &e, ERR_RANGE, 1, 4,
                        "a: 42 is outside [0, 41]");
    expect_getter_error(conf_as_long(conf_find(r, "d"), 0, 10, &v, &e), &e, ERR_RANGE, 4, 4,
                        "d: 99999999999999999999 is outside [0, 10]");
    expect_getter_error(conf_as_long(conf_find(r, "e"), 0, 10, &v, &e), &e, ERR_PARSE, 5, 4,
                        "e: expected a whole number, found \"2.5\"");
    expect_getter_error(conf_as_long(conf_find(r, "f"), 0, 10, &v, &e), &e, ERR_PARSE, 6, 4,
                        "f: expected a whole number, found the quoted text \"8\"");
    /* an empty value is located just after its ':' */
    expect_getter_error(conf_as_long(conf_find(r, "g"), 0, 10, &v, &e), &e, ERR_PARSE, 7, 3,
                        "g: expected a whole number, found no value");
    expect_getter_error(conf_as_long(conf_find(r, "h"), 0, 10, &v, &e), &e, ERR_PARSE, 8, 4,
                        "h: expected a whole number, found a list");
    expect_getter_error(conf_as_long(conf_find(r, "i"), 0, 99, &v, &e), &e, ERR_PARSE, 9, 4,
                        "i: expected a whole number, found \"0x10\"");
    expect_getter_error(conf_as_long(conf_find(r, "j"), 0, 9999, &v, &e), &e, ERR_PARSE, 10, 4,
                        "j: expected a whole number, found \"1e3\"");
    expect_getter_error(conf_as_long(r, 0, 9, &v, &e), &e, ERR_PARSE, 1, 1,
                        "the document: expected a whole number, found a mapping");
    assert_int_equal(v, -1);
    conf_free(c);
}

/* Numbers: decimals and exponents; no inf, nan, hex or quoted text; range inclusive. */
static void conf_as_double__ok_and_failing(void **state)
{
    struct conf *c = parse_ok("a: 0.25\nb: -1e-3\nc: 1e999\nd: .inf\ne: nan\nf: 0x1p3\n"
                              "g: '0.5'\nh: 0.99\ni: 7\nj: 1.\n");
    const struct conf_node *r = c->root;
    double v = -1;
    struct error e;

    (void)state;
    assert_int_equal(conf_as_double(conf_find(r, "a"), 0, 0.99, &v, &e), 0);
    assert_true(v == 0.25);
    assert_int_equal(conf_as_double(conf_find(r, "b"), -1, 1, &v, &e), 0);
    assert_true(v == -1e-3);
    assert_int_equal(conf_as_double(conf_find(r, "h"), 0, 0.99, &v, &e), 0);
    assert_true(v == 0.99);
    assert_int_equal(conf_as_double(conf_find(r, "i"), 0, 10, &v, &e), 0);
    assert_true(v == 7);
    assert_int_equal(conf_as_double(conf_find(r, "j"), 0, 10, &v, &e), 0);
    assert_true(v == 1);
    v = -1;
    expect_getter_error(conf_as_double(conf_find(r, "a"), 0.5, 1, &v, &e), &e, ERR_RANGE, 1, 4,
                        "a: 0.25 is outside [0.5, 1]");
    expect_getter_error(conf_as_double(conf_find(r, "c"), 0, 1, &v, &e), &e, ERR_RANGE, 3, 4,
                        "c: 1e999 is outside [0, 1]");
    expect_getter_error(conf_as_double(conf_find(r, "d"), 0, 1, &v, &e), &e, ERR_PARSE, 4, 4,
                        "d: expected a number, found \".inf\"");
    expect_getter_error(conf_as_double(conf_find(r, "e"), 0, 1, &v, &e), &e, ERR_PARSE, 5, 4,
                        "e: expected a number, found \"nan\"");
    expect_getter_error(conf_as_double(conf_find(r, "f"), 0, 99, &v, &e), &e, ERR_PARSE, 6, 4,
                        "f: expected a number, found \"0x1p3\"");
    expect_getter_error(conf_as_double(conf_find(r, "g"), 0, 1, &v, &e), &e, ERR_PARSE, 7, 4,
                        "g: expected a number, found the quoted text \"0.5\"");
    assert_true(v == -1);
    conf_free(c);
}

/* Booleans: true/false in three spellings; not yes/no, not quoted. */
static void conf_as_bool__ok_and_failing(void **state)
{
    struct conf *c = parse_ok("a: true\nb: False\nc: TRUE\nd: yes\ne: \"true\"\nf: 1\n");
    const struct conf_node *r = c->root;
    int v = -1;
    struct error e;

    (void)state;
    assert_int_equal(conf_as_bool(conf_find(r, "a"), &v, &e), 0);
    assert_int_equal(v, 1);
    assert_int_equal(conf_as_bool(conf_find(r, "b"), &v, &e), 0);
    assert_int_equal(v, 0);
    assert_int_equal(conf_as_bool(conf_find(r, "c"), &v, &e), 0);
    assert_int_equal(v, 1);
    v = -1;
    expect_getter_error(conf_as_bool(conf_find(r, "d"), &v, &e), &e, ERR_PARSE, 4, 4,
                        "d: expected true or false, found \"yes\"");
    expect_getter_error(conf_as_bool(conf_find(r, "e"), &v, &e), &e, ERR_PARSE, 5, 4,
                        "e: expected true or false, found the quoted text \"true\"");
    expect_getter_error(conf_as_bool(conf_find(r, "f"), &v, &e), &e, ERR_PARSE, 6, 4,
                        "f: expected true or false, found \"1\"");
    assert_int_equal(v, -1);
    conf_free(c);
}

/* Text: plain or quoted, numbers as written; not empty, not a list; long text cut in errors. */
static void conf_as_string__ok_and_failing(void **state)
{
    struct conf *c = parse_ok("a: runs/one.csv\nb: \"with: colon\"\nc: 12\nd: ''\ne: [x]\nf:\n"
                              "g: {k: v}\n");
    const struct conf_node *r = c->root;
    const char *v = NULL;
    struct error e;

    (void)state;
    assert_int_equal(conf_as_string(conf_find(r, "a"), &v, &e), 0);
    assert_string_equal(v, "runs/one.csv");
    assert_int_equal(conf_as_string(conf_find(r, "b"), &v, &e), 0);
    assert_string_equal(v, "with: colon");
    assert_int_equal(conf_as_string(conf_find(r, "c"), &v, &e), 0);
    assert_string_equal(v, "12");
    v = NULL;
    expect_getter_error(conf_as_string(conf_find(r, "d"), &v, &e), &e, ERR_PARSE, 4, 4,
                        "d: expected text, found the quoted text \"\"");
    expect_getter_error(conf_as_string(conf_find(r, "e"), &v, &e), &e, ERR_PARSE, 5, 4,
                        "e: expected text, found a list");
    expect_getter_error(conf_as_string(conf_find(r, "f"), &v, &e), &e, ERR_PARSE, 6, 3,
                        "f: expected text, found no value");
    expect_getter_error(conf_as_string(conf_find(r, "g"), &v, &e), &e, ERR_PARSE, 7, 4,
                        "g: expected text, found a mapping");
    assert_null(v);
    conf_free(c);

    c = parse_ok("n: 123456789012345678901234567890123456789012345\n");
    assert_int_equal(conf_as_long(conf_find(c->root, "n"), 0, 1, &(long){0}, &e), ERR_RANGE);
    assert_string_equal(e.msg, "n: 1234567890123456789012345678901234567890 is outside [0, 1]");
    assert_int_equal(conf_as_bool(conf_find(c->root, "n"), &(int){0}, &e), ERR_PARSE);
    assert_string_equal(e.msg, "n: expected true or false, found "
                               "\"1234567890123456789012345678901234567890...\"");
    conf_free(c);
}

/* One of a list of names: the index, ERR_UNKNOWN naming the choices, ERR_PARSE for a non-scalar. */
static void conf_as_choice__ok_and_failing(void **state)
{
    static const char *const names[] = {"pollux", "optimus", "tiresias", NULL};
    struct conf *c = parse_ok("a: tiresias\nb: 'optimus'\nc: fifo\nd: [pollux]\n");
    const struct conf_node *r = c->root;
    int v = -1;
    struct error e;

    (void)state;
    assert_int_equal(conf_as_choice(conf_find(r, "a"), names, &v, &e), 0);
    assert_int_equal(v, 2);
    assert_int_equal(conf_as_choice(conf_find(r, "b"), names, &v, &e), 0);
    assert_int_equal(v, 1);
    v = -1;
    expect_getter_error(conf_as_choice(conf_find(r, "c"), names, &v, &e), &e, ERR_UNKNOWN, 3, 4,
                        "c: unknown value \"fifo\" (one of pollux, optimus, tiresias)");
    expect_getter_error(conf_as_choice(conf_find(r, "d"), names, &v, &e), &e, ERR_PARSE, 4, 4,
                        "d: expected one of pollux, optimus, tiresias, found a list");
    assert_int_equal(v, -1);
    conf_free(c);
}

/* By key: 1 when found, 0 when absent (the default stays), errors as the node getters. */
static void conf_get__by_key(void **state)
{
    static const char *const names[] = {"x", "y", NULL};
    struct conf *c = parse_ok("n: 5\nf: 0.5\nb: true\ns: text\nk: y\nbad: 1000\n");
    const struct conf_node *r = c->root;
    long n = -1;
    double f = -1;
    int b = -1, k = -1;
    const char *s = "default";
    struct error e;

    (void)state;
    assert_int_equal(conf_get_long(r, "n", 0, 10, &n, &e), 1);
    assert_int_equal(n, 5);
    assert_int_equal(conf_get_double(r, "f", 0, 1, &f, &e), 1);
    assert_true(f == 0.5);
    assert_int_equal(conf_get_bool(r, "b", &b, &e), 1);
    assert_int_equal(b, 1);
    assert_int_equal(conf_get_string(r, "s", &s, &e), 1);
    assert_string_equal(s, "text");
    assert_int_equal(conf_get_choice(r, "k", names, &k, &e), 1);
    assert_int_equal(k, 1);

    n = -1, f = -1, b = -1, k = -1, s = "default";
    assert_int_equal(conf_get_long(r, "absent", 0, 10, &n, &e), 0);
    assert_int_equal(conf_get_double(r, "absent", 0, 1, &f, &e), 0);
    assert_int_equal(conf_get_bool(r, "absent", &b, &e), 0);
    assert_int_equal(conf_get_string(r, "absent", &s, &e), 0);
    assert_int_equal(conf_get_choice(r, "absent", names, &k, &e), 0);
    assert_int_equal(n, -1);
    assert_true(f == -1);
    assert_int_equal(b, -1);
    assert_string_equal(s, "default");
    assert_int_equal(k, -1);

    expect_getter_error(conf_get_long(r, "bad", 0, 10, &n, &e), &e, ERR_RANGE, 6, 6,
                        "bad: 1000 is outside [0, 10]");
    expect_getter_error(conf_get_double(r, "bad", 0, 10, &f, &e), &e, ERR_RANGE, 6, 6,
                        "bad: 1000 is outside [0, 10]");
    expect_getter_error(conf_get_bool(r, "bad", &b, &e), &e, ERR_PARSE, 6, 6,
                        "bad: expected true or false, found \"1000\"");
    expect_getter_error(conf_get_choice(r, "bad", names, &k, &e), &e, ERR_UNKNOWN, 6, 6,
                        "bad: unknown value \"1000\" (one of x, y)");
    assert_int_equal(conf_get_string(r, "bad", &s, &e), 1); /* numbers are text too */
    assert_string_equal(s, "1000");
    conf_free(c);
}

/* Sections: absent, empty (CONF_NULL, where every key is absent), checked, not a mapping. */
/* A path key: relative under the folder, absolute as written, absent untouched, too long for
 * the buffer refused at the value, a list refused. */
static void conf_get_path__relative_absolute_long(void **state)
{
    struct conf *c = parse_ok("a: k.json\nb: /etc/k\nc: [x]\nd: abcdefghij\n");
    struct error e = {0};
    char buf[16] = "kept";

    (void)state;
    assert_int_equal(conf_get_path(c->root, "z", "/base", buf, sizeof(buf), &e), 0);
    assert_string_equal(buf, "kept");
    assert_int_equal(conf_get_path(c->root, "a", "/base", buf, sizeof(buf), &e), 1);
    assert_string_equal(buf, "/base/k.json");
    assert_int_equal(conf_get_path(c->root, "b", "/base", buf, sizeof(buf), &e), 1);
    assert_string_equal(buf, "/etc/k");
    assert_int_equal(conf_get_path(c->root, "a", NULL, buf, sizeof(buf), &e), 1);
    assert_string_equal(buf, "k.json");
    assert_int_equal(conf_get_path(c->root, "c", "/base", buf, sizeof(buf), &e), ERR_PARSE);
    assert_int_equal(conf_get_path(c->root, "d", "/base", buf, sizeof(buf), &e), ERR_RANGE);
    assert_int_equal(e.line, 4);
    assert_int_equal(e.column, 4);
    assert_string_equal(buf, "k.json");
    conf_free(c);
}

static void conf_get_section__nested(void **state)
{
    static const char *const keys[] = {"nodes", "gpus_per_node", NULL};
    struct conf *c = parse_ok("cluster:\n  nodes: 3\npollux:\nother: 5\nbad:\n  nodes: 1\n"
                              "  node: 2\n");
    const struct conf_node *r = c->root, *s = NULL;
    long n = -1;
    struct error e;

    (void)state;
    assert_int_equal(conf_get_section(r, "cluster", keys, &s, &e), 1);
    assert_int_equal(conf_get_long(s, "nodes", 1, 8, &n, &e), 1);
    assert_int_equal(n, 3);
    assert_int_equal(conf_get_long(s, "gpus_per_node", 1, 8, &n, &e), 0);
    assert_int_equal(conf_get_section(r, "pollux", keys, &s, &e), 1);
    assert_int_equal(s->kind, CONF_NULL);
    assert_int_equal(conf_get_long(s, "nodes", 1, 8, &n, &e), 0);
    s = NULL;
    assert_int_equal(conf_get_section(r, "absent", keys, &s, &e), 0);
    assert_null(s);
    expect_getter_error(conf_get_section(r, "other", keys, &s, &e), &e, ERR_PARSE, 4, 8,
                        "other: expected a mapping (key: value lines), found \"5\"");
    expect_getter_error(conf_get_section(r, "bad", keys, &s, &e), &e, ERR_UNKNOWN, 7, 3,
                        "unknown key \"bad.node\" (did you mean \"bad.nodes\"?)");
    assert_null(s);
    conf_free(c);
}

/* conf_load: a missing file, and a real one (the good fixture of the command-line tests). */
static void conf_load__files(void **state)
{
    struct conf *c = UNTOUCHED;
    const struct conf_node *cl = NULL;
    struct error e;
    long n = 0;

    (void)state;
    assert_int_equal(conf_load(CASTOR_TEST_DATA "/config/no_such.yaml", &c, &e), ERR_NOENT);
    assert_ptr_equal(c, UNTOUCHED);
    assert_string_equal(e.file, CASTOR_TEST_DATA "/config/no_such.yaml");
    assert_int_equal(conf_load(CASTOR_TEST_DATA "/config/good.yaml", &c, &e), 0);
    assert_string_equal(c->name, CASTOR_TEST_DATA "/config/good.yaml");
    assert_int_equal(conf_get_section(c->root, "cluster",
                                      (const char *const[]){"nodes", "gpus_per_node", NULL}, &cl,
                                      &e),
                     1);
    assert_int_equal(conf_get_long(cl, "gpus_per_node", 1, 64, &n, &e), 1);
    assert_int_equal(n, 4);
    conf_free(c);
    c = UNTOUCHED;
    assert_int_equal(conf_load(CASTOR_TEST_DATA "/config/syntax.yaml", &c, &e), ERR_PARSE);
    assert_ptr_equal(c, UNTOUCHED);
    assert_int_equal(e.line, 4);
    assert_int_equal(e.column, 9);
}

static void conf_free__null(void **state)
{
    (void)state;
    conf_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conf_parse__nested_mapping),
        cmocka_unit_test(conf_parse__sequences),
        cmocka_unit_test(conf_parse__null_values),
        cmocka_unit_test(conf_parse__empty_file),
        cmocka_unit_test(conf_parse__name_crlf_bom),
        cmocka_unit_test(conf_parse__syntax_errors),
        cmocka_unit_test(conf_parse__invalid_characters),
        cmocka_unit_test(conf_parse__duplicate_key),
        cmocka_unit_test(conf_parse__unsupported),
        cmocka_unit_test(conf_check_keys__allowed_unknown),
        cmocka_unit_test(conf_as_long__ok_and_failing),
        cmocka_unit_test(conf_as_double__ok_and_failing),
        cmocka_unit_test(conf_as_bool__ok_and_failing),
        cmocka_unit_test(conf_as_string__ok_and_failing),
        cmocka_unit_test(conf_as_choice__ok_and_failing),
        cmocka_unit_test(conf_get__by_key),
        cmocka_unit_test(conf_get_section__nested),
        cmocka_unit_test(conf_get_path__relative_absolute_long),
        cmocka_unit_test(conf_load__files),
        cmocka_unit_test(conf_free__null),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
