/* error.c: messages and properties of castor's error codes, and the detail record. */
#include "util/error.h"

#include <stdio.h>
#include <string.h>

struct err_entry {
    const char *name;
    int retryable;
    const char *msg;
};

static const struct err_entry err_entries[ERR_INDEX_COUNT] = {
#define ERR_X_ENTRY(name, retry, msg) [ERR_INDEX_##name] = {#name, retry, msg},
    ERR_TABLE(ERR_X_ENTRY)
#undef ERR_X_ENTRY
};

static const struct err_entry *err_lookup(int code)
{
    if (code >= 0 || code < -ERR_INDEX_COUNT)
        return NULL;
    return &err_entries[-code - 1];
}

const char *err_str(int code)
{
    const struct err_entry *e;

    if (code == 0)
        return "success";
    e = err_lookup(code);
    return e ? e->msg : "unknown error";
}

const char *err_name(int code)
{
    const struct err_entry *e;

    if (code == 0)
        return "OK";
    e = err_lookup(code);
    return e ? e->name : "UNKNOWN_CODE";
}

int err_retryable(int code)
{
    const struct err_entry *e = err_lookup(code);

    return e ? e->retryable : 0;
}

int err_set(struct error *e, int code, const char *file, int line, int column, const char *fmt, ...)
{
    va_list ap;

    if (!e)
        return code;
    e->code = code;
    snprintf(e->file, sizeof(e->file), "%s", file ? file : "");
    e->line = line;
    e->column = column;
    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
    } else {
        snprintf(e->msg, sizeof(e->msg), "%s", err_str(code));
    }
    return code;
}

const char *err_format(const struct error *e, char *buf, size_t size)
{
    int n = 0;

    if (size == 0)
        return buf;
    buf[0] = '\0';
    if (e->file[0]) {
        if (e->line > 0 && e->column > 0)
            n = snprintf(buf, size, "%s:%d:%d: ", e->file, e->line, e->column);
        else if (e->line > 0)
            n = snprintf(buf, size, "%s:%d: ", e->file, e->line);
        else
            n = snprintf(buf, size, "%s: ", e->file);
    }
    if (n < 0 || (size_t)n >= size)
        return buf;
    snprintf(buf + n, size - (size_t)n, "%s", e->msg[0] ? e->msg : err_str(e->code));
    return buf;
}
