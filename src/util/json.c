/* json.c: the jansson wrapper. */
#include "util/json.h"

#include <jansson.h>
#include <math.h>

#include "util/crypto.h"
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

int jv_parse(const char *buf, size_t len, struct jv **out, struct error *e)
{
    json_error_t je;
    json_t *v;

    if (!buf || !out)
        return err_set(e, ERR_INVAL, "json", 0, 0, "no buffer or no place for the value");
    v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        if (json_error_code(&je) == json_error_out_of_memory)
            return err_set(e, ERR_NOMEM, "json", 0, 0, "out of memory");
        /* je.text may quote the text near the error, which may be a secret: not used */
        return err_set(e, ERR_PARSE, "json", je.line, je.column, "%s",
                       json_error_code(&je) == json_error_premature_end_of_input
                           ? "truncated JSON"
                           : "malformed JSON");
    }
    *out = (struct jv *)v;
    return 0;
}

const struct jv *jv_get(const struct jv *obj, const char *key)
{
    if (!obj || !key || !json_is_object(CJV(obj)))
        return NULL;
    return (const struct jv *)json_object_get(CJV(obj), key);
}

const char *jv_str(const struct jv *v)
{
    return v && json_is_string(CJV(v)) ? json_string_value(CJV(v)) : NULL;
}

/* Zero the strings below v; the memory is jansson's, reached through the wrapper only. */
static void wipe_strings(json_t *v)
{
    const char *key;
    json_t *item;
    size_t i;

    if (json_is_string(v)) {
        crypto_wipe((char *)json_string_value(v), json_string_length(v));
    } else if (json_is_object(v)) {
        json_object_foreach(v, key, item) wipe_strings(item);
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, item) wipe_strings(item);
    }
}

void jv_free_wiped(struct jv *v)
{
    if (!v)
        return;
    wipe_strings(JV(v));
    json_decref(JV(v));
}
