/* conf.c: the YAML configuration reader: libyaml's events into a tree of located nodes, typed
 * getters with located errors. The only file that includes yaml.h. */
#include "util/conf.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/file.h"

#define CONF_MAX_DEPTH 64

/* Every allocation of a document is one chunk on its list, so conf_free frees them all at once
 * and a half-built tree needs no cleanup of its own. */
struct conf_chunk {
    struct conf_chunk *next;
    max_align_t data[];
};

struct conf_parser {
    yaml_parser_t yp;
    struct conf *doc;
    const char *data;
    size_t len;
    struct error *e;
};

/* Zeroed memory owned by doc; NULL when out of memory. */
static void *conf_alloc(struct conf *doc, size_t size)
{
    struct conf_chunk *c = calloc(1, sizeof(*c) + size);

    if (!c)
        return NULL;
    c->next = doc->mem;
    doc->mem = c;
    return c->data;
}

static char *conf_strndup(struct conf *doc, const char *s, size_t len)
{
    char *d = conf_alloc(doc, len + 1);

    if (d)
        memcpy(d, s, len);
    return d;
}

/* 1-based line and column (in characters, as libyaml counts them) of byte offset in data. */
static void conf_locate(const char *data, size_t len, size_t offset, int *line, int *column)
{
    int l = 1, c = 1;

    for (size_t i = 0; i < offset && i < len; i++) {
        unsigned char b = (unsigned char)data[i];

        if (b == '\n')
            l++, c = 1;
        else if ((b & 0xC0) != 0x80)
            c++;
    }
    *line = l;
    *column = c;
}

/* The parser's error in words, located where libyaml says. */
static int conf_yaml_error(struct conf_parser *p)
{
    const yaml_parser_t *yp = &p->yp;
    const char *name = p->doc->name;
    const char *problem = yp->problem ? yp->problem : "malformed YAML";
    int line, column;

    switch (yp->error) {
    case YAML_MEMORY_ERROR:
        return err_set(p->e, ERR_NOMEM, name, 0, 0, NULL);
    case YAML_READER_ERROR:
        conf_locate(p->data, p->len, yp->problem_offset, &line, &column);
        if (yp->problem_value >= 0)
            return err_set(p->e, ERR_PARSE, name, line, column, "invalid character: %s (#%02X)",
                           problem, (unsigned)yp->problem_value);
        return err_set(p->e, ERR_PARSE, name, line, column, "invalid character: %s", problem);
    default:
        line = (int)yp->problem_mark.line + 1;
        column = (int)yp->problem_mark.column + 1;
        if (yp->context && (yp->context_mark.line != yp->problem_mark.line ||
                            yp->context_mark.column != yp->problem_mark.column))
            return err_set(p->e, ERR_PARSE, name, line, column,
                           "YAML syntax: %s (%s at line %d, column %d)", problem, yp->context,
                           (int)yp->context_mark.line + 1, (int)yp->context_mark.column + 1);
        if (yp->context)
            return err_set(p->e, ERR_PARSE, name, line, column, "YAML syntax: %s (%s)", problem,
                           yp->context);
        return err_set(p->e, ERR_PARSE, name, line, column, "YAML syntax: %s", problem);
    }
}

/* The next event into *ev (to be deleted by the caller on success). */
static int conf_next(struct conf_parser *p, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&p->yp, ev))
        return conf_yaml_error(p);
    return 0;
}

static int conf_err_at(struct conf_parser *p, int code, const yaml_mark_t *m, const char *fmt,
                       const char *arg)
{
    return err_set(p->e, code, p->doc->name, (int)m->line + 1, (int)m->column + 1, fmt, arg);
}

static struct conf_node *conf_node_new(struct conf_parser *p, enum conf_kind kind, const char *path,
                                       const yaml_mark_t *m)
{
    struct conf_node *n = conf_alloc(p->doc, sizeof(*n));

    if (!n)
        return NULL;
    n->kind = kind;
    n->file = p->doc->name;
    n->path = path;
    n->line = (int)m->line + 1;
    n->column = (int)m->column + 1;
    return n;
}

/* "parent.key", or "key" at the top; "parent[i]" when key is NULL. */
static char *conf_join(struct conf *doc, const char *parent, const char *key, size_t index)
{
    size_t size = strlen(parent) + (key ? strlen(key) : 24) + 2;
    char *s = conf_alloc(doc, size);

    if (!s)
        return NULL;
    if (!key)
        snprintf(s, size, "%s[%zu]", parent, index);
    else if (parent[0])
        snprintf(s, size, "%s.%s", parent, key);
    else
        snprintf(s, size, "%s", key);
    return s;
}

/* Grow a node's entries or items array (both arrays of pointers or structs) to hold one more. */
static void *conf_grow(struct conf *doc, void *v, size_t n, size_t *cap, size_t elem)
{
    void *g;

    if (n < *cap)
        return v;
    *cap = *cap ? 2 * *cap : 8;
    g = conf_alloc(doc, *cap * elem);
    if (g && n)
        memcpy(g, v, n * elem);
    return g;
}

static int conf_is_null_text(const char *s)
{
    return !strcmp(s, "") || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
           !strcmp(s, "NULL");
}

static int conf_build(struct conf_parser *p, yaml_event_t *ev, const char *path, int depth,
                      struct conf_node **out);

static int conf_build_scalar(struct conf_parser *p, yaml_event_t *ev, const char *path,
                             struct conf_node **out)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    struct conf_node *n;

    if (memchr(v, '\0', len))
        return conf_err_at(p, ERR_PARSE, &ev->start_mark, "%s: contains a NUL character",
                           path[0] ? path : "the document");
    n = conf_node_new(p, CONF_SCALAR, path, &ev->start_mark);
    if (!n || !(n->text = conf_strndup(p->doc, v, len)))
        return err_set(p->e, ERR_NOMEM, p->doc->name, 0, 0, NULL);
    n->quoted = !plain;
    if (plain && conf_is_null_text(n->text))
        n->kind = CONF_NULL;
    *out = n;
    return 0;
}

static int conf_build_sequence(struct conf_parser *p, yaml_event_t *ev, const char *path, int depth,
                               struct conf_node **out)
{
    struct conf_node *n = conf_node_new(p, CONF_SEQUENCE, path, &ev->start_mark);
    size_t cap = 0;
    int rc;

    if (!n)
        return err_set(p->e, ERR_NOMEM, p->doc->name, 0, 0, NULL);
    for (;;) {
        yaml_event_t item;
        struct conf_node *child;
        const char *cpath;

        if ((rc = conf_next(p, &item)) < 0)
            return rc;
        if (item.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&item);
            break;
        }
        n->items = conf_grow(p->doc, n->items, n->n, &cap, sizeof(*n->items));
        cpath = conf_join(p->doc, path, NULL, n->n);
        if (!n->items || !cpath)
            rc = err_set(p->e, ERR_NOMEM, p->doc->name, 0, 0, NULL);
        else
            rc = conf_build(p, &item, cpath, depth + 1, &child);
        yaml_event_delete(&item);
        if (rc < 0)
            return rc;
        n->items[n->n++] = child;
    }
    *out = n;
    return 0;
}

static int conf_build_mapping(struct conf_parser *p, yaml_event_t *ev, const char *path, int depth,
                              struct conf_node **out)
{
    struct conf_node *n = conf_node_new(p, CONF_MAPPING, path, &ev->start_mark);
    size_t cap = 0;
    int rc = 0;

    if (!n)
        return err_set(p->e, ERR_NOMEM, p->doc->name, 0, 0, NULL);
    for (;;) {
        yaml_event_t key, value;
        struct conf_entry *ent;
        const char *k, *cpath;

        if ((rc = conf_next(p, &key)) < 0)
            return rc;
        if (key.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&key);
            break;
        }
        if (key.type != YAML_SCALAR_EVENT || key.data.scalar.tag ||
            (key.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
             conf_is_null_text((const char *)key.data.scalar.value)) ||
            key.data.scalar.length == 0 ||
            memchr(key.data.scalar.value, '\0', key.data.scalar.length)) {
            rc = conf_err_at(p, ERR_PARSE, &key.start_mark,
                             "%s: a key must be text (not empty, a list or a mapping)",
                             path[0] ? path : "the document");
            yaml_event_delete(&key);
            return rc;
        }
        k = (const char *)key.data.scalar.value;
        for (size_t i = 0; i < n->n; i++) {
            if (strcmp(n->entries[i].key, k) == 0) {
                char msg[160];

                snprintf(msg, sizeof(msg), "duplicate key \"%.100s\" (first on line %d)",
                         n->entries[i].value->path, n->entries[i].line);
                rc = conf_err_at(p, ERR_PARSE, &key.start_mark, "%s", msg);
                yaml_event_delete(&key);
                return rc;
            }
        }
        n->entries = conf_grow(p->doc, n->entries, n->n, &cap, sizeof(*n->entries));
        ent = n->entries ? &n->entries[n->n] : NULL;
        cpath = conf_join(p->doc, path, k, 0);
        if (ent) {
            ent->key = conf_strndup(p->doc, k, key.data.scalar.length);
            ent->line = (int)key.start_mark.line + 1;
            ent->column = (int)key.start_mark.column + 1;
        }
        yaml_event_delete(&key);
        if (!ent || !ent->key || !cpath)
            return err_set(p->e, ERR_NOMEM, p->doc->name, 0, 0, NULL);
        if ((rc = conf_next(p, &value)) < 0)
            return rc;
        rc = conf_build(p, &value, cpath, depth + 1, &ent->value);
        yaml_event_delete(&value);
        if (rc < 0)
            return rc;
        n->n++;
    }
    *out = n;
    return 0;
}

/* Build the node that starts with event ev (not deleted here) at path; *out on success. */
static int conf_build(struct conf_parser *p, yaml_event_t *ev, const char *path, int depth,
                      struct conf_node **out)
{
    const yaml_char_t *tag = NULL;
    const char *what = path[0] ? path : "the document";

    if (depth > CONF_MAX_DEPTH)
        return conf_err_at(p, ERR_PARSE, &ev->start_mark, "%s: nested more than 64 levels deep",
                           what);
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        tag = ev->data.scalar.tag;
        break;
    case YAML_SEQUENCE_START_EVENT:
        tag = ev->data.sequence_start.tag;
        break;
    case YAML_MAPPING_START_EVENT:
        tag = ev->data.mapping_start.tag;
        break;
    case YAML_ALIAS_EVENT:
        return conf_err_at(p, ERR_PARSE, &ev->start_mark,
                           "%s: aliases (*name) are not supported: write the value out", what);
    default:
        return conf_err_at(p, ERR_INTERNAL, &ev->start_mark, "%s: unexpected YAML event", what);
    }
    if (tag)
        return conf_err_at(p, ERR_PARSE, &ev->start_mark, "%s: tags (!name) are not supported",
                           what);
    if (ev->type == YAML_SCALAR_EVENT)
        return conf_build_scalar(p, ev, path, out);
    if (ev->type == YAML_SEQUENCE_START_EVENT)
        return conf_build_sequence(p, ev, path, depth, out);
    return conf_build_mapping(p, ev, path, depth, out);
}

/* The stream: nothing, or one document; an empty document becomes an empty mapping. */
static int conf_build_stream(struct conf_parser *p)
{
    static const yaml_mark_t start = {0, 0, 0};
    yaml_event_t ev;
    struct conf_node *root = NULL;
    int rc;

    if ((rc = conf_next(p, &ev)) < 0) /* STREAM-START */
        return rc;
    yaml_event_delete(&ev);
    if ((rc = conf_next(p, &ev)) < 0)
        return rc;
    if (ev.type == YAML_STREAM_END_EVENT) {
        yaml_event_delete(&ev);
        root = conf_node_new(p, CONF_MAPPING, "", &start);
        if (!root)
            return err_set(p->e, ERR_NOMEM, p->doc->name, 0, 0, NULL);
        p->doc->root = root;
        return 0;
    }
    yaml_event_delete(&ev); /* DOCUMENT-START */
    if ((rc = conf_next(p, &ev)) < 0)
        return rc;
    rc = conf_build(p, &ev, "", 0, &root);
    yaml_event_delete(&ev);
    if (rc < 0)
        return rc;
    if (root->kind == CONF_NULL) {
        root->kind = CONF_MAPPING;
        root->text = NULL;
        root->line = root->column = 1;
    }
    if ((rc = conf_next(p, &ev)) < 0) /* DOCUMENT-END */
        return rc;
    yaml_event_delete(&ev);
    if ((rc = conf_next(p, &ev)) < 0)
        return rc;
    if (ev.type != YAML_STREAM_END_EVENT)
        rc = conf_err_at(p, ERR_PARSE, &ev.start_mark, "%s",
                         "a second document: a configuration file holds one");
    yaml_event_delete(&ev);
    if (rc < 0)
        return rc;
    p->doc->root = root;
    return 0;
}

size_t conf_bom_len(const char *data, size_t len)
{
    return len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

int conf_parse(const char *name, const char *data, size_t len, struct conf **out, struct error *e)
{
    struct conf_parser p = {.e = e};
    size_t bom;
    int rc, parser_ready = 0;

    /* a UTF-8 byte-order mark (editors on Windows write one) is no text: libyaml, told the
     * encoding, would read it as content; skipped, lines and columns count from what follows */
    bom = conf_bom_len(data, len);
    data += bom;
    len -= bom;
    p.data = data;
    p.len = len;
    if (!name)
        name = "<input>";
    p.doc = calloc(1, sizeof(*p.doc));
    if (!p.doc || !(p.doc->name = strdup(name))) {
        rc = err_set(e, ERR_NOMEM, name, 0, 0, NULL);
        goto out;
    }
    if (!yaml_parser_initialize(&p.yp)) {
        rc = err_set(e, ERR_NOMEM, name, 0, 0, NULL);
        goto out;
    }
    parser_ready = 1;
    yaml_parser_set_input_string(&p.yp, (const unsigned char *)data, len);
    yaml_parser_set_encoding(&p.yp, YAML_UTF8_ENCODING);
    if ((rc = conf_build_stream(&p)) < 0)
        goto out;
    *out = p.doc;
    p.doc = NULL;
out:
    if (parser_ready)
        yaml_parser_delete(&p.yp);
    conf_free(p.doc);
    return rc;
}

int conf_load(const char *path, struct conf **out, struct error *e)
{
    char *data = NULL;
    size_t len = 0;
    int rc;

    if ((rc = file_read_all(path, &data, &len, e)) < 0)
        return rc;
    rc = conf_parse(path, data, len, out, e);
    free(data);
    return rc;
}

void conf_free(struct conf *c)
{
    struct conf_chunk *k, *next;

    if (!c)
        return;
    for (k = c->mem; k; k = next) {
        next = k->next;
        free(k);
    }
    free(c->name);
    free(c);
}

/* Edit distance of a and b when both are short, else INT_MAX: for "did you mean". */
static int conf_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int row[65];

    if (la > 64 || lb > 64)
        return INT_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];

        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);

            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

/* A node as a person would name what was found: a mapping, a list, no value, "text". */
static const char *conf_describe(const struct conf_node *n, char *buf, size_t size)
{
    switch (n->kind) {
    case CONF_MAPPING:
        return "a mapping";
    case CONF_SEQUENCE:
        return "a list";
    case CONF_NULL:
        return "no value";
    case CONF_SCALAR:
        break;
    }
    snprintf(buf, size, "%s\"%.40s%s\"", n->quoted ? "the quoted text " : "", n->text,
             strlen(n->text) > 40 ? "..." : "");
    return buf;
}

static const char *conf_what(const struct conf_node *n)
{
    return n->path[0] ? n->path : "the document";
}

static int conf_type_error(const struct conf_node *n, const char *expected, struct error *e)
{
    char buf[80];

    return err_set(e, ERR_PARSE, n->file, n->line, n->column, "%s: expected %s, found %s",
                   conf_what(n), expected, conf_describe(n, buf, sizeof(buf)));
}

/* "a, b, c" from a NULL-terminated list, cut to fit. */
static void conf_list(const char *const *names, char *buf, size_t size)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; names[i] && used < size; i++) {
        int k = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", names[i]);

        if (k < 0)
            break;
        used += (size_t)k;
    }
}

int conf_check_keys(const struct conf_node *m, const char *const *allowed, struct error *e)
{
    if (m->kind == CONF_NULL)
        return 0;
    if (m->kind != CONF_MAPPING)
        return conf_type_error(m, "a mapping (key: value lines)", e);
    for (size_t i = 0; i < m->n; i++) {
        const struct conf_entry *ent = &m->entries[i];
        const char *near = NULL;
        int best = 3; /* suggest only keys at most 2 edits away */
        char list[256];
        size_t k;

        for (k = 0; allowed[k]; k++) {
            int d;

            if (strcmp(allowed[k], ent->key) == 0)
                break;
            d = conf_distance(allowed[k], ent->key);
            if (d < best && (size_t)d < strlen(ent->key))
                best = d, near = allowed[k];
        }
        if (allowed[k])
            continue;
        if (near)
            return err_set(e, ERR_UNKNOWN, m->file, ent->line, ent->column,
                           "unknown key \"%.100s\" (did you mean \"%s%s%.60s\"?)", ent->value->path,
                           m->path, m->path[0] ? "." : "", near);
        conf_list(allowed, list, sizeof(list));
        return err_set(e, ERR_UNKNOWN, m->file, ent->line, ent->column,
                       "unknown key \"%.100s\" (known keys%s%s: %s)", ent->value->path,
                       m->path[0] ? " of " : "", m->path, list);
    }
    return 0;
}

const struct conf_node *conf_find(const struct conf_node *m, const char *key)
{
    if (!m || m->kind != CONF_MAPPING)
        return NULL;
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->entries[i].key, key) == 0)
            return m->entries[i].value;
    return NULL;
}

/* Plain text made only of the characters in set, with at least one digit. */
static int conf_plain_number(const struct conf_node *n, const char *set)
{
    const char *s = n->text;

    if (n->kind != CONF_SCALAR || n->quoted || s[strspn(s, set)] != '\0')
        return 0;
    return strpbrk(s, "0123456789") != NULL;
}

int conf_as_long(const struct conf_node *n, long lo, long hi, long *out, struct error *e)
{
    char *end;
    long v;

    if (!conf_plain_number(n, "+-0123456789"))
        return conf_type_error(n, "a whole number", e);
    errno = 0;
    v = strtol(n->text, &end, 10);
    if (*end != '\0')
        return conf_type_error(n, "a whole number", e);
    if (errno == ERANGE || v < lo || v > hi)
        return err_set(e, ERR_RANGE, n->file, n->line, n->column, "%s: %.40s is outside [%ld, %ld]",
                       conf_what(n), n->text, lo, hi);
    *out = v;
    return 0;
}

int conf_as_double(const struct conf_node *n, double lo, double hi, double *out, struct error *e)
{
    char *end;
    double v;

    if (!conf_plain_number(n, "+-.eE0123456789"))
        return conf_type_error(n, "a number", e);
    v = strtod(n->text, &end);
    if (*end != '\0')
        return conf_type_error(n, "a number", e);
    if (!isfinite(v) || !(v >= lo && v <= hi))
        return err_set(e, ERR_RANGE, n->file, n->line, n->column, "%s: %.40s is outside [%g, %g]",
                       conf_what(n), n->text, lo, hi);
    *out = v;
    return 0;
}

int conf_as_bool(const struct conf_node *n, int *out, struct error *e)
{
    static const char *const yes[] = {"true", "True", "TRUE"}, *const no[] = {"false", "False",
                                                                              "FALSE"};

    if (n->kind == CONF_SCALAR && !n->quoted) {
        for (int i = 0; i < 3; i++) {
            if (strcmp(n->text, yes[i]) == 0 || strcmp(n->text, no[i]) == 0) {
                *out = strcmp(n->text, yes[i]) == 0;
                return 0;
            }
        }
    }
    return conf_type_error(n, "true or false", e);
}

int conf_as_string(const struct conf_node *n, const char **out, struct error *e)
{
    if (n->kind != CONF_SCALAR || n->text[0] == '\0')
        return conf_type_error(n, "text", e);
    *out = n->text;
    return 0;
}

int conf_as_choice(const struct conf_node *n, const char *const *names, int *out, struct error *e)
{
    char list[256];

    conf_list(names, list, sizeof(list));
    if (n->kind != CONF_SCALAR) {
        char expected[272];

        snprintf(expected, sizeof(expected), "one of %s", list);
        return conf_type_error(n, expected, e);
    }
    for (int i = 0; names[i]; i++) {
        if (strcmp(n->text, names[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    return err_set(e, ERR_UNKNOWN, n->file, n->line, n->column,
                   "%s: unknown value \"%.40s\" (one of %s)", conf_what(n), n->text, list);
}

int conf_get_long(const struct conf_node *m, const char *key, long lo, long hi, long *out,
                  struct error *e)
{
    const struct conf_node *n = conf_find(m, key);
    int rc;

    if (!n)
        return 0;
    return (rc = conf_as_long(n, lo, hi, out, e)) < 0 ? rc : 1;
}

int conf_get_double(const struct conf_node *m, const char *key, double lo, double hi, double *out,
                    struct error *e)
{
    const struct conf_node *n = conf_find(m, key);
    int rc;

    if (!n)
        return 0;
    return (rc = conf_as_double(n, lo, hi, out, e)) < 0 ? rc : 1;
}

int conf_get_bool(const struct conf_node *m, const char *key, int *out, struct error *e)
{
    const struct conf_node *n = conf_find(m, key);
    int rc;

    if (!n)
        return 0;
    return (rc = conf_as_bool(n, out, e)) < 0 ? rc : 1;
}

int conf_get_string(const struct conf_node *m, const char *key, const char **out, struct error *e)
{
    const struct conf_node *n = conf_find(m, key);
    int rc;

    if (!n)
        return 0;
    return (rc = conf_as_string(n, out, e)) < 0 ? rc : 1;
}

int conf_get_path(const struct conf_node *m, const char *key, const char *base_dir, char *buf,
                  size_t size, struct error *e)
{
    const struct conf_node *n = conf_find(m, key);
    const char *s = NULL;
    size_t base = base_dir ? strlen(base_dir) : 0;
    int rc;

    if (!n)
        return 0;
    if ((rc = conf_as_string(n, &s, e)) < 0)
        return rc;
    if (s[0] == '/' || base == 0)
        base = 0;
    if (strlen(s) + base + 2 > size)
        return err_set(e, ERR_RANGE, n->file, n->line, n->column,
                       "%s: a path too long (at most %zu bytes with its folder)", n->path,
                       size - 1);
    if (base == 0)
        snprintf(buf, size, "%s", s);
    else
        snprintf(buf, size, "%s/%s", base_dir, s);
    return 1;
}

int conf_get_choice(const struct conf_node *m, const char *key, const char *const *names, int *out,
                    struct error *e)
{
    const struct conf_node *n = conf_find(m, key);
    int rc;

    if (!n)
        return 0;
    return (rc = conf_as_choice(n, names, out, e)) < 0 ? rc : 1;
}

int conf_get_section(const struct conf_node *m, const char *key, const char *const *allowed,
                     const struct conf_node **out, struct error *e)
{
    const struct conf_node *n = conf_find(m, key);
    int rc;

    if (!n)
        return 0;
    if ((rc = conf_check_keys(n, allowed, e)) < 0)
        return rc;
    *out = n;
    return 1;
}

int conf_check_below(const struct conf_node *m, const char *lo_key, double low, double low_default,
                     const char *hi_key, double high, double high_default, struct error *e)
{
    const struct conf_node *at = m ? conf_find(m, low > 0 ? lo_key : hi_key) : NULL;
    double h = high > 0 ? high : high_default, l = low > 0 ? low : low_default;

    if (!at || l < h)
        return 0;
    if (low > 0)
        return err_set(e, ERR_RANGE, at->file, at->line, at->column,
                       "%s: %g must be below %s (%.3g%s)", at->path, l, hi_key, h,
                       high > 0 ? "" : ", the default");
    return err_set(e, ERR_RANGE, at->file, at->line, at->column,
                   "%s: %g must be above %s (%.3g, the default)", at->path, h, lo_key, l);
}
