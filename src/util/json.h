/* json.h: castor's JSON values (wraps jansson; jansson.h stays in json.c). References follow
 * jansson's vocabulary: a function that "steals" takes over the caller's reference. */
#ifndef CASTOR_UTIL_JSON_H
#define CASTOR_UTIL_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "util/error.h"

struct jv; /* a JSON value; opaque */

/* New values, owned by the caller (free with jv_free, or hand over to jv_set/jv_push).
 * NULL on allocation failure; jv_set and jv_push accept NULL values and then fail. */
struct jv *jv_object(void);
struct jv *jv_array(void);
struct jv *jv_number(double v); /* non-finite values become null */
struct jv *jv_integer(long long v);
struct jv *jv_string(const char *s);

/* Set obj[key] = val, stealing val (freed on failure too). ERR_NOMEM or ERR_INVAL on failure. */
int jv_set(struct jv *obj, const char *key, struct jv *val);

/* Append val to arr, stealing val. ERR_NOMEM or ERR_INVAL on failure. */
int jv_push(struct jv *arr, struct jv *val);

/* Write v to f, indented, keys in insertion order, with a final newline. ERR_IO on failure. */
int jv_write(const struct jv *v, FILE *f);

/* Write v to the file at path (created or replaced). ERR_IO on failure. */
int jv_write_path(const struct jv *v, const char *path);

void jv_free(struct jv *v);

/* Reading. */

/* Parse len bytes at buf as one JSON value into *out (owned by the caller: jv_free or
 * jv_free_wiped). ERR_INVAL (NULL arguments), ERR_PARSE (malformed: e->msg and e->line say where
 * and why, never quoting the text), ERR_NOMEM; *out is then unchanged. */
int jv_parse(const char *buf, size_t len, struct jv **out, struct error *e);

/* obj[key], borrowed from obj; NULL when obj is not an object or has no such key. */
const struct jv *jv_get(const struct jv *obj, const char *key);

/* The string a value holds, borrowed from it; NULL when v is not a string. */
const char *jv_str(const struct jv *v);

/* Overwrite every string in v (keys excepted) with zeros, then release v: for values that carry
 * secrets. v may be NULL. */
void jv_free_wiped(struct jv *v);

#endif
