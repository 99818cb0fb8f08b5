/* json.c: the jansson wrapper. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "util/json.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/crypto.h"
#include "util/error.h"
#include "util/file.h"

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

/* jv_write's format: indented, keys in insertion order, reals with 10 significant digits */
#define JV_WRITE_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10))

int jv_write(const struct jv *v, FILE *f)
{
    if (json_dumpf(CJV(v), f, JV_WRITE_FLAGS) < 0)
        return ERR_IO;
    return fputc('\n', f) == EOF ? ERR_IO : 0;
}

int jv_write_path(const struct jv *v, const char *path)
{
    struct stat sb;
    char *text = NULL, *grown, *real = NULL;
    unsigned mode = 0666; /* as fopen makes a file: less the umask */
    size_t len;
    int rc, exists;

    if (!v || !path)
        return ERR_INVAL;
    exists = stat(path, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) {
        /* a device, a pipe or a terminal (/dev/stdout) cannot be replaced: written as a stream */
        FILE *f = fopen(path, "w");

        if (!f)
            return ERR_IO;
        rc = jv_write(v, f);
        if (fclose(f) != 0 && rc == 0)
            rc = ERR_IO;
        return rc;
    }
    if (!(text = json_dumps(CJV(v), JV_WRITE_FLAGS)))
        return ERR_NOMEM;
    len = strlen(text);
    if (!(grown = realloc(text, len + 2))) {
        rc = ERR_NOMEM;
        goto out;
    }
    text = grown;
    text[len++] = '\n';
    text[len] = '\0';
    /* an existing file keeps its permissions, and a link its place: the file it names is replaced
     */
    if (exists) {
        mode = (unsigned)(sb.st_mode & 07777);
        if (!(real = realpath(path, NULL))) {
            rc = errno == ENOMEM ? ERR_NOMEM : ERR_IO;
            goto out;
        }
    }
    rc = file_write_atomic(real ? real : path, text, len, mode, NULL) < 0 ? ERR_IO : 0;
out:
    free(real);
    free(text);
    return rc;
}

void jv_free(struct jv *v)
{
    json_decref(JV(v));
}

/* ---- parsing and reading ---- */

struct jv *jv_bool(int b)
{
    return (struct jv *)json_boolean(b);
}

struct jv *jv_null(void)
{
    return (struct jv *)json_null();
}

struct jv *jv_ref(const struct jv *v)
{
    return (struct jv *)json_incref(JV(v));
}

/* A reason for a parse error in words of castor's own: jansson's text may quote the input. */
static const char *parse_reason(const json_error_t *je)
{
    switch (json_error_code(je)) {
    case json_error_premature_end_of_input:
        return "truncated JSON";
    case json_error_end_of_input_expected:
        return "text after the JSON value";
    case json_error_duplicate_key:
        return "a key given twice in a JSON object";
    case json_error_null_character:
        return "a \\u0000 in a JSON string";
    case json_error_numeric_overflow:
        return "a JSON number out of range";
    case json_error_invalid_utf8:
        return "invalid UTF-8 in JSON";
    case json_error_stack_overflow:
        return "JSON nested too deep";
    default:
        return "malformed JSON";
    }
}

int jv_parse(const char *text, size_t len, struct jv **out, struct error *e)
{
    json_error_t je;
    json_t *v;

    if ((!text && len > 0) || !out)
        return err_set(e, ERR_INVAL, "json", 0, 0, "no text to parse or no place for the value");
    /* one value of any kind; a key given twice is refused rather than silently kept once */
    v = json_loadb(text ? text : "", len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        if (json_error_code(&je) == json_error_out_of_memory)
            return err_set(e, ERR_NOMEM, "json", 0, 0, "out of memory parsing JSON");
        /* je.text may quote the text near the error, which may be a secret: not used */
        return err_set(e, ERR_PARSE, "json", je.line, je.column, "%s", parse_reason(&je));
    }
    *out = (struct jv *)v;
    return 0;
}

int jv_dump(const struct jv *v, char **out)
{
    char *s;

    if (!v || !out)
        return ERR_INVAL;
    s = json_dumps(CJV(v),
                   JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    if (!s)
        return ERR_NOMEM;
    *out = s;
    return 0;
}

enum jv_type jv_type_of(const struct jv *v)
{
    switch (v ? json_typeof(CJV(v)) : JSON_NULL) {
    case JSON_OBJECT:
        return JV_OBJECT;
    case JSON_ARRAY:
        return JV_ARRAY;
    case JSON_STRING:
        return JV_STRING;
    case JSON_INTEGER:
        return JV_INTEGER;
    case JSON_REAL:
        return JV_REAL;
    case JSON_TRUE:
    case JSON_FALSE:
        return JV_BOOL;
    default:
        return JV_NULL;
    }
}

const struct jv *jv_get(const struct jv *obj, const char *key)
{
    if (!obj || !key || !json_is_object(CJV(obj)))
        return NULL;
    return (const struct jv *)json_object_get(CJV(obj), key);
}

const char *jv_string_value(const struct jv *v)
{
    return v && json_is_string(CJV(v)) ? json_string_value(CJV(v)) : NULL;
}

int jv_number_value(const struct jv *v, double *out)
{
    if (!json_is_number(CJV(v)))
        return ERR_INVAL;
    *out = json_number_value(CJV(v));
    return 0;
}

int jv_integer_value(const struct jv *v, long long *out)
{
    if (!json_is_integer(CJV(v)))
        return ERR_INVAL;
    *out = (long long)json_integer_value(CJV(v));
    return 0;
}

int jv_bool_value(const struct jv *v, int *out)
{
    if (!json_is_boolean(CJV(v)))
        return ERR_INVAL;
    *out = json_is_true(CJV(v));
    return 0;
}

size_t jv_size(const struct jv *v)
{
    if (json_is_array(CJV(v)))
        return json_array_size(CJV(v));
    if (json_is_object(CJV(v)))
        return json_object_size(CJV(v));
    return 0;
}

const struct jv *jv_at(const struct jv *v, size_t i)
{
    return (const struct jv *)json_array_get(CJV(v), i);
}

int jv_each(const struct jv *obj, int (*fn)(void *ctx, const char *key, const struct jv *val),
            void *ctx)
{
    const char *key;
    json_t *val;
    int rc;

    if (!json_is_object(CJV(obj)))
        return ERR_INVAL;
    json_object_foreach(JV(obj), key, val)
    {
        rc = fn(ctx, key, (const struct jv *)val);
        if (rc != 0)
            return rc;
    }
    return 0;
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
