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

/* Write v as jv_write does to the file at path, created or replaced atomically (file_write_atomic:
 * a crash or a full disk leaves the old file whole, or none); an existing file keeps its mode, and
 * a link its place (the file it names is replaced). A path that is not a regular file (a device,
 * a pipe, /dev/stdout) is written as a stream. ERR_IO (cannot write; the old file stays),
 * ERR_NOMEM, ERR_INVAL (NULL v or path). */
int jv_write_path(const struct jv *v, const char *path);

void jv_free(struct jv *v);

/* ---- parsing and reading ---- */

/* A new boolean value, or JSON null (owned by the caller); NULL on allocation failure. */
struct jv *jv_bool(int b);
struct jv *jv_null(void);

/* Take one more reference to v and return it (v may be NULL): for putting a value that is
 * borrowed into a new container with jv_set or jv_push. */
struct jv *jv_ref(const struct jv *v);

/*
 * Parse len bytes of text as exactly one JSON value of any kind (trailing non-space is an error;
 * a key given twice, a \u0000 in a string, NaN, Infinity and numbers out of range of a double are
 * refused). On success *out owns the value (jv_free, or jv_free_wiped when it carries a secret).
 * On error returns ERR_PARSE (ERR_NOMEM; ERR_INVAL for no out or NULL text with len > 0), leaves
 * *out untouched, and fills e (may be NULL) with the line, column and a reason that never quotes
 * the text (which may hold a secret).
 */
int jv_parse(const char *text, size_t len, struct jv **out, struct error *e);

/* The value as compact JSON text (no spaces, keys in insertion order, reals with up to 17
 * significant digits so that they read back the same). *out owns a new NUL-terminated string
 * (free). ERR_NOMEM (or ERR_INVAL for NULL v); *out untouched on error. */
int jv_dump(const struct jv *v, char **out);

enum jv_type { JV_NULL, JV_BOOL, JV_INTEGER, JV_REAL, JV_STRING, JV_ARRAY, JV_OBJECT };

/* The value's type (JV_NULL for a NULL pointer). */
enum jv_type jv_type_of(const struct jv *v);

/* obj[key], borrowed (valid while obj holds it; jv_ref to keep it), or NULL when obj is not an
 * object (NULL included) or has no such key. */
const struct jv *jv_get(const struct jv *obj, const char *key);

/* The string's bytes (borrowed, NUL-terminated) or NULL when v is not a string (NULL included). */
const char *jv_string_value(const struct jv *v);

/* A number (an integer or a real) as a double into *out: 0, or ERR_INVAL (out untouched) when v
 * is not a number. */
int jv_number_value(const struct jv *v, double *out);

/* An integer into *out: 0, or ERR_INVAL (out untouched) when v is not an integer (a real, even
 * 2.0, is not). */
int jv_integer_value(const struct jv *v, long long *out);

/* 1 or 0 for true or false into *out; ERR_INVAL when v is not a boolean. */
int jv_bool_value(const struct jv *v, int *out);

/* The number of items of an array or of keys of an object; 0 for any other value. */
size_t jv_size(const struct jv *v);

/* Item i of an array, borrowed; NULL when v is not an array or i is out of range. */
const struct jv *jv_at(const struct jv *v, size_t i);

/* Call fn for each key of obj in insertion order with the key and its value (both borrowed),
 * stopping at the first non-zero return, which is returned; 0 when all returned 0, ERR_INVAL when
 * obj is not an object. */
int jv_each(const struct jv *obj, int (*fn)(void *ctx, const char *key, const struct jv *val),
            void *ctx);

/* Overwrite every string in v (keys excepted) with zeros, then release v as jv_free does: for
 * values that carry secrets. v may be NULL. */
void jv_free_wiped(struct jv *v);

#endif
