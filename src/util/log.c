/* log.c: JSON lines through the JSON wrapper, one mutex per log so that lines never interleave,
 * and each line written whole at once so that those of other processes on the same file do not
 * either. */
#include "util/log.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/timestamp.h"

struct log {
    FILE *f;
    enum log_level min;
    pthread_mutex_t mu;
};

static const char *const log_levels[] = {
    [LOG_DEBUG] = "debug",
    [LOG_INFO] = "info",
    [LOG_WARN] = "warn",
    [LOG_ERROR] = "error",
};

const char *log_level_name(enum log_level level)
{
    return (int)level >= LOG_DEBUG && level <= LOG_ERROR ? log_levels[level] : NULL;
}

int log_new(FILE *f, enum log_level min, struct log **out)
{
    struct log *l;

    if (!f || !log_level_name(min) || !out)
        return ERR_INVAL;
    l = calloc(1, sizeof(*l));
    if (!l)
        return ERR_NOMEM;
    if (pthread_mutex_init(&l->mu, NULL) != 0) {
        free(l);
        return ERR_NOMEM;
    }
    l->f = f;
    l->min = min;
    *out = l;
    return 0;
}

void log_free(struct log *l)
{
    if (!l)
        return;
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* now as an ISO 8601 UTC time with milliseconds, or JSON null when it is not a usable time. */
static struct jv *log_time(double now)
{
    char buf[TIMESTAMP_ISO8601_LEN + 5]; /* the seconds' 'Z' becomes ".mmmZ" */
    unsigned ms;

    if (!isfinite(now) || now < 0 || now > 253402300799.0) /* up to the end of the year 9999 */
        return jv_null();
    ms = (unsigned)floor((now - floor(now)) * 1000.0) % 1000u; /* 0 .. 999 */
    if (timestamp_format_iso8601((int64_t)floor(now), buf) < 0)
        return jv_null();
    snprintf(buf + TIMESTAMP_ISO8601_LEN - 1, sizeof(buf) - (TIMESTAMP_ISO8601_LEN - 1), ".%03uZ",
             ms);
    return jv_string(buf);
}

/* s as a JSON string; text that is not valid UTF-8 (such as a message cut inside a character)
 * is replaced by a note that says so. */
static struct jv *log_text(const char *s)
{
    struct jv *v = jv_string(s);

    return v ? v : jv_string("(not valid UTF-8)");
}

int log_msg(struct log *l, double now, enum log_level level, const char *job, const char *node,
            const char *fmt, ...)
{
    char msg[LOG_MSG_MAX + 1];
    struct jv *line = NULL;
    char *text = NULL;
    va_list ap;
    int rc;

    if (!log_level_name(level) || !fmt)
        return ERR_INVAL;
    if (!l || level < l->min)
        return 0;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    line = jv_object();
    rc = jv_set(line, "time", log_time(now));
    if (rc == 0)
        rc = jv_set(line, "level", jv_string(log_levels[level]));
    if (rc == 0)
        rc = jv_set(line, "msg", log_text(msg));
    if (rc == 0 && job)
        rc = jv_set(line, "job", log_text(job));
    if (rc == 0 && node)
        rc = jv_set(line, "node", log_text(node));
    if (rc == 0)
        rc = jv_dump(line, &text);
    if (rc < 0)
        goto out;
    {
        /* the line and its newline in one write: on an unbuffered stream (stderr) shared with
         * other processes (the replicas of a node writing to its log), two writes let another
         * process's line in between */
        size_t n = strlen(text);
        char *whole = realloc(text, n + 2);

        if (!whole) {
            rc = ERR_NOMEM;
            goto out;
        }
        text = whole;
        text[n] = '\n';
        text[n + 1] = '\0';
        pthread_mutex_lock(&l->mu);
        if (fwrite(text, 1, n + 1, l->f) != n + 1 || fflush(l->f) == EOF)
            rc = ERR_IO;
        pthread_mutex_unlock(&l->mu);
    }
out:
    free(text);
    jv_free(line);
    return rc;
}
