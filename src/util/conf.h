/* conf.h: a strict, typed reader for castor's YAML configuration files (wraps libyaml; yaml.h
 * stays in conf.c): a tree of located nodes, lookups by key, and getters that name file, line,
 * column and key when a value is missing its mark. */
#ifndef CASTOR_UTIL_CONF_H
#define CASTOR_UTIL_CONF_H

#include <stddef.h>

#include "util/error.h"

enum conf_kind {
    CONF_NULL,     /* no value: `key:` with nothing after it, `~` or `null` (unquoted) */
    CONF_SCALAR,   /* text: plain or quoted */
    CONF_MAPPING,  /* key: value entries, keys unique */
    CONF_SEQUENCE, /* - items */
};

struct conf_node;

struct conf_entry {
    const char *key;         /* the key's text, NUL-terminated */
    int line, column;        /* where the key starts, 1-based */
    struct conf_node *value; /* never NULL */
};

/* A node of the document; read-only for callers, owned by the document. */
struct conf_node {
    enum conf_kind kind;
    const char *file; /* the document's name, for errors */
    const char *path; /* the keys leading here, dot-separated ("cluster.nodes"; "" at the top,
                         "hosts[2]" for a sequence item) */
    int line, column; /* where the value starts, 1-based */
    const char *text; /* CONF_SCALAR and CONF_NULL: the text as written (quotes removed) */
    int quoted;       /* CONF_SCALAR: written in quotes (so never a number or a boolean) */
    size_t n;         /* CONF_MAPPING: entries; CONF_SEQUENCE: items; else 0 */
    struct conf_entry *entries; /* CONF_MAPPING: n entries in file order */
    struct conf_node **items;   /* CONF_SEQUENCE: n items in file order */
};

/* A parsed document. */
struct conf {
    char *name;             /* the name used in errors (owned) */
    struct conf_node *root; /* never NULL: an empty document is an empty mapping at 1:1 */
    void *mem;              /* private: every allocation of the tree, freed together */
};

/*
 * Parse len bytes of YAML text (one document of block or flow mappings, sequences and scalars);
 * name is used in errors only. A syntax error is ERR_PARSE at libyaml's line and column (a byte
 * that is not valid UTF-8, or a control character such as NUL, at its own line and column); so
 * are a duplicate key (at the second one, naming the first's line), a key that is not text (empty,
 * null, a list or a mapping), an alias, a tag, a NUL escaped in a quoted scalar, a second document
 * and a node more than 64 levels below the top. An empty document (nothing, comments only, a bare
 * `---` or `~`) is an empty mapping at 1:1. On success *out owns a new document (free with
 * conf_free); on error it is untouched.
 */
int conf_parse(const char *name, const char *data, size_t len, struct conf **out, struct error *e);

/* Read and parse the file at path (ERR_NOENT / ERR_IO if it cannot be read); as conf_parse. */
int conf_load(const char *path, struct conf **out, struct error *e);

void conf_free(struct conf *c);

/*
 * Check that m is a mapping whose keys are all in allowed (NULL-terminated): ERR_PARSE at m if it
 * is not a mapping, ERR_UNKNOWN at the first other key, naming it with its path and the nearest
 * allowed key ("did you mean") or the allowed ones. A CONF_NULL m passes (an empty section).
 */
int conf_check_keys(const struct conf_node *m, const char *const *allowed, struct error *e);

/* The value under key in mapping m; NULL when m is not a mapping or has no such key. Borrowed. */
const struct conf_node *conf_find(const struct conf_node *m, const char *key);

/*
 * Typed values of one node. Each returns 0 and writes *out, or fails with *out untouched:
 * ERR_PARSE at the node, naming its path, for the wrong kind (a quoted scalar is never a number
 * or a boolean; CONF_NULL is never anything), ERR_RANGE for a value outside [lo, hi], ERR_UNKNOWN
 * for a name not in the list.
 */
/* A whole number in [lo, hi], decimal with an optional sign. */
int conf_as_long(const struct conf_node *n, long lo, long hi, long *out, struct error *e);
/* A finite decimal number in [lo, hi] (digits, sign, point, exponent; no inf, nan or hex). */
int conf_as_double(const struct conf_node *n, double lo, double hi, double *out, struct error *e);
/* true or false (also True, TRUE, False, FALSE). */
int conf_as_bool(const struct conf_node *n, int *out, struct error *e);
/* Any scalar, plain or quoted, not empty; *out is borrowed from the document. */
int conf_as_string(const struct conf_node *n, const char **out, struct error *e);
/* A scalar equal to one of names (NULL-terminated); *out is its index. */
int conf_as_choice(const struct conf_node *n, const char *const *names, int *out, struct error *e);

/*
 * The same, by key in mapping m: 1 when the key is there and its value was written to *out, 0
 * when the key is absent (*out untouched, so a default set beforehand stays), or an error as
 * above. m must be a mapping or CONF_NULL (an empty section); check its keys first.
 */
int conf_get_long(const struct conf_node *m, const char *key, long lo, long hi, long *out,
                  struct error *e);
int conf_get_double(const struct conf_node *m, const char *key, double lo, double hi, double *out,
                    struct error *e);
int conf_get_bool(const struct conf_node *m, const char *key, int *out, struct error *e);
int conf_get_string(const struct conf_node *m, const char *key, const char **out, struct error *e);
int conf_get_choice(const struct conf_node *m, const char *key, const char *const *names, int *out,
                    struct error *e);

/* key's string as a path into buf (size bytes): as written when absolute or base_dir is NULL or
 * "", else base_dir/path. 1, 0 when absent (buf untouched), or an error as conf_get_string's, or
 * ERR_RANGE (at the value) when it does not fit. */
int conf_get_path(const struct conf_node *m, const char *key, const char *base_dir, char *buf,
                  size_t size, struct error *e);

/* A nested section of m: *out is the mapping under key, its keys checked against allowed as by
 * conf_check_keys, or the CONF_NULL node of an empty section (`cluster:` alone; the getters above
 * find no keys in it). 1, 0 when absent, or an error. */
int conf_get_section(const struct conf_node *m, const char *key, const char *const *allowed,
                     const struct conf_node **out, struct error *e);

/*
 * Bounds of one range in mapping m, read by conf_get_double: low (key lo_key) must be below high
 * (hi_key), each the default given when its key is absent (0 read: not given). ERR_RANGE at the
 * key given (lo_key when both are), naming the other bound; 0 when they hold or neither is given.
 */
int conf_check_below(const struct conf_node *m, const char *lo_key, double low, double low_default,
                     const char *hi_key, double high, double high_default, struct error *e);

/* The bytes a UTF-8 byte-order mark takes at the start of data (len bytes): 3, or 0 when there
 * is none. conf_parse skips it, and lines and columns count from what follows. */
size_t conf_bom_len(const char *data, size_t len);

#endif
