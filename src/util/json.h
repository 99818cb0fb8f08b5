/* json.h: castor's JSON values (wraps jansson; jansson.h stays in json.c). References follow
 * jansson's vocabulary: a function that "steals" takes over the caller's reference. */
#ifndef CASTOR_UTIL_JSON_H
#define CASTOR_UTIL_JSON_H

#include <stdio.h>

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

#endif
