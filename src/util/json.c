/* json.c: the jansson wrapper. */
#include "util/json.h"

#include <jansson.h>
#include <math.h>

#include "util/error.h"

#define JV(v) ((json_t *)(v))
#define CJV(v) ((const json_t *)(v))

struct jv *jv_object(void)
{
    return (struct jv *)json_object();
}

struct jv *jv_array(void)
{
    return (struct jv *)json_array();
}

struct jv *jv_number(double v)
{
    return (struct jv *)(isfinite(v) ? json_real(v) : json_null());
}

struct jv *jv_integer(long long v)
{
    return (struct jv *)json_integer((json_int_t)v);
}

struct jv *jv_string(const char *s)
{
    return (struct jv *)json_string(s);
}

int jv_set(struct jv *obj, const char *key, struct jv *val)
{
    if (!obj || !val) {
        json_decref(JV(val));
        return val ? ERR_INVAL : ERR_NOMEM;
    }
    if (!json_is_object(JV(obj))) {
        json_decref(JV(val));
        return ERR_INVAL;
    }
    return json_object_set_new(JV(obj), key, JV(val)) == 0 ? 0 : ERR_NOMEM;
}

int jv_push(struct jv *arr, struct jv *val)
{
    if (!arr || !val) {
        json_decref(JV(val));
        return val ? ERR_INVAL : ERR_NOMEM;
    }
    return json_array_append_new(JV(arr), JV(val)) == 0 ? 0 : ERR_NOMEM;
}

int jv_write(const struct jv *v, FILE *f)
{
    if (json_dumpf(CJV(v), f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) < 0)
        return ERR_IO;
    return fputc('\n', f) == EOF ? ERR_IO : 0;
}

int jv_write_path(const struct jv *v, const char *path)
{
    FILE *f = fopen(path, "w");
    int rc;

    if (!f)
        return ERR_IO;
    rc = jv_write(v, f);
    if (fclose(f) != 0 && rc == 0)
        rc = ERR_IO;
    return rc;
}

void jv_free(struct jv *v)
{
    json_decref(JV(v));
}
