/* test_log.c: JSON lines: their fields, the time format, levels below the minimum, text that is
 * not UTF-8, and lines from several threads, or several processes on one file, that never
 * interleave. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/json.h"
#include "util/log.h"

/* A log over a memory stream; text holds what was written after log_stream_text. */
struct log_stream {
    char *text;
    size_t len;
    FILE *f;
    struct log *log;
};

static void log_stream_open(struct log_stream *s, enum log_level min)
{
    memset(s, 0, sizeof(*s));
    s->f = open_memstream(&s->text, &s->len);
    assert_non_null(s->f);
    assert_int_equal(log_new(s->f, min, &s->log), 0);
}

static void log_stream_close(struct log_stream *s)
{
    log_free(s->log);
    assert_int_equal(fclose(s->f), 0);
}

/* Line i (0-based) of text parsed as JSON; the caller frees it. */
static struct jv *line_at(const char *text, int i)
{
    const char *p = text, *end;
    struct jv *v = NULL;

    for (; i > 0; i--) {
        p = strchr(p, '\n');
        assert_non_null(p);
        p++;
    }
    end = strchr(p, '\n');
    assert_non_null(end);
    assert_int_equal(jv_parse(p, (size_t)(end - p), &v, NULL), 0);
    return v;
}

/* A line carries the time in UTC with milliseconds, the level, the formatted message and the job
 * and node; without them the keys are absent; a time that is not finite is null. */
static void log_msg__fields(void **state)
{
    struct log_stream s;
    struct jv *v;

    (void)state;
    log_stream_open(&s, LOG_DEBUG);
    assert_int_equal(log_msg(s.log, 1714564800.25, LOG_INFO, "job-a", "i-1", "%d \"q\"", 7), 0);
    assert_int_equal(log_msg(s.log, NAN, LOG_ERROR, NULL, NULL, "x"), 0);
    log_stream_close(&s);
    v = line_at(s.text, 0);
    assert_int_equal(jv_size(v), 5);
    assert_string_equal(jv_string_value(jv_get(v, "time")), "2024-05-01T12:00:00.250Z");
    assert_string_equal(jv_string_value(jv_get(v, "level")), "info");
    assert_string_equal(jv_string_value(jv_get(v, "msg")), "7 \"q\"");
    assert_string_equal(jv_string_value(jv_get(v, "job")), "job-a");
    assert_string_equal(jv_string_value(jv_get(v, "node")), "i-1");
    jv_free(v);
    v = line_at(s.text, 1);
    assert_int_equal(jv_size(v), 3);
    assert_int_equal(jv_type_of(jv_get(v, "time")), JV_NULL);
    assert_string_equal(jv_string_value(jv_get(v, "level")), "error");
    assert_null(jv_get(v, "job"));
    jv_free(v);
    free(s.text);
}

/* Lines below the minimum level are not written; a NULL log writes nothing; bad levels are
 * refused. */
static void log_msg__levels(void **state)
{
    struct log_stream s;

    (void)state;
    log_stream_open(&s, LOG_WARN);
    assert_int_equal(log_msg(s.log, 0, LOG_INFO, NULL, NULL, "quiet"), 0);
    assert_int_equal(log_msg(s.log, 0, LOG_WARN, NULL, NULL, "loud"), 0);
    assert_int_equal(log_msg(s.log, 0, (enum log_level)9, NULL, NULL, "bad"), ERR_INVAL);
    assert_int_equal(log_msg(NULL, 0, LOG_ERROR, NULL, NULL, "nowhere"), 0);
    log_stream_close(&s);
    assert_null(strstr(s.text, "quiet"));
    assert_non_null(strstr(s.text, "\"msg\":\"loud\""));
    assert_null(strchr(strchr(s.text, '\n') + 1, '\n'));
    free(s.text);
    assert_int_equal(log_new(NULL, LOG_INFO, &s.log), ERR_INVAL);
    assert_null(log_level_name((enum log_level) - 1));
}

/* A message or a job name that is not UTF-8 (a message cut inside a character) still gives a
 * line that parses, with a note in its place; a long message is cut at LOG_MSG_MAX. */
static void log_msg__not_utf8_and_long(void **state)
{
    char big[3 * LOG_MSG_MAX];
    struct log_stream s;
    struct jv *v;

    (void)state;
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_stream_open(&s, LOG_DEBUG);
    assert_int_equal(log_msg(s.log, 1, LOG_INFO, "\xff", NULL, "bad \xc3"), 0);
    assert_int_equal(log_msg(s.log, 1, LOG_INFO, NULL, NULL, "%s", big), 0);
    log_stream_close(&s);
    v = line_at(s.text, 0);
    assert_string_equal(jv_string_value(jv_get(v, "msg")), "(not valid UTF-8)");
    assert_string_equal(jv_string_value(jv_get(v, "job")), "(not valid UTF-8)");
    jv_free(v);
    v = line_at(s.text, 1);
    assert_int_equal(strlen(jv_string_value(jv_get(v, "msg"))), LOG_MSG_MAX);
    jv_free(v);
    free(s.text);
}

#define LOG_THREADS 4
#define LOG_LINES 200

static void *log_writer(void *arg)
{
    struct log *l = arg;

    for (int i = 0; i < LOG_LINES; i++)
        if (log_msg(l, 1, LOG_INFO, "j", NULL, "line %d with some text to make it longer", i) < 0)
            return arg;
    return NULL;
}

/* Lines written by several threads at once each parse whole: none is cut into another. */
static void log_msg__threads_never_interleave(void **state)
{
    pthread_t t[LOG_THREADS];
    struct log_stream s;
    void *res;

    (void)state;
    log_stream_open(&s, LOG_DEBUG);
    for (int i = 0; i < LOG_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, log_writer, s.log), 0);
    for (int i = 0; i < LOG_THREADS; i++) {
        assert_int_equal(pthread_join(t[i], &res), 0);
        assert_null(res);
    }
    log_stream_close(&s);
    for (int i = 0; i < LOG_THREADS * LOG_LINES; i++)
        jv_free(line_at(s.text, i));
    free(s.text);
}

/* Lines written by two processes at once through one unbuffered stream on one file (as a node's
 * replicas write to its log through their inherited stderr) each parse whole: with the line and
 * its newline written apart, another process's line came in between ("}{"). */
static void log_msg__processes_never_interleave(void **state)
{
    char path[] = "/tmp/castor-test-log-XXXXXX", *text = NULL;
    int fd = mkstemp(path), status = 0, lines = 0;
    pid_t pid[2];
    FILE *f;
    size_t cap = 0;
    ssize_t len;

    (void)state;
    assert_true(fd >= 0);
    for (int k = 0; k < 2; k++) {
        pid[k] = fork();
        assert_true(pid[k] >= 0);
        if (pid[k] == 0) {
            FILE *w = fdopen(fd, "a");
            struct log *l = NULL;

            if (!w || setvbuf(w, NULL, _IONBF, 0) != 0 || log_new(w, LOG_DEBUG, &l) < 0)
                _exit(2);
            for (int i = 0; i < 2000; i++)
                if (log_msg(l, 1, LOG_INFO, k ? "b" : "a", NULL, "line %d", i) < 0)
                    _exit(3);
            _exit(0);
        }
    }
    for (int k = 0; k < 2; k++) {
        assert_int_equal(waitpid(pid[k], &status, 0), pid[k]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    close(fd);
    f = fopen(path, "r");
    assert_non_null(f);
    while ((len = getline(&text, &cap, f)) > 0) {
        struct jv *v = NULL;

        if (jv_parse(text, (size_t)len - 1, &v, NULL) < 0)
            fail_msg("line %d does not parse: %s", lines + 1, text);
        jv_free(v);
        lines++;
    }
    free(text);
    fclose(f);
    unlink(path);
    assert_int_equal(lines, 4000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(log_msg__fields),
        cmocka_unit_test(log_msg__levels),
        cmocka_unit_test(log_msg__not_utf8_and_long),
        cmocka_unit_test(log_msg__threads_never_interleave),
        cmocka_unit_test(log_msg__processes_never_interleave),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
