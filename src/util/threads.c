/* threads.c: this process's thread count from /proc/self/stat (Linux only). */
#include "util/threads.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

/* Fields 3 (state) to 19 (nice) stand between the command name and num_threads. */
#define THREADS_FIELDS_BEFORE 17

int threads_parse_stat(const char *stat)
{
    const char *p;
    char *end;
    long long v;

    if (!stat)
        return ERR_INVAL;
    if (!(p = strrchr(stat, ')')))
        return ERR_PARSE;
    p++;
    for (int i = 0; i < THREADS_FIELDS_BEFORE; i++) {
        if (*p != ' ' || p[1] == ' ' || p[1] == '\0' || p[1] == '\n')
            return ERR_PARSE;
        p += strcspn(p + 1, " \n") + 1;
    }
    if (*p != ' ' || p[1] < '0' || p[1] > '9')
        return ERR_PARSE;
    v = strtoll(p + 1, &end, 10);
    if ((*end != ' ' && *end != '\n' && *end != '\0') || v < 1 || v > INT_MAX)
        return ERR_PARSE;
    return (int)v;
}

int threads_count(void)
{
#ifdef __linux__
    char *text = NULL;
    size_t len;
    int rc = file_read_all("/proc/self/stat", &text, &len, NULL);

    if (rc < 0)
        return rc;
    rc = len == strlen(text) ? threads_parse_stat(text) : ERR_PARSE; /* no NUL inside */
    free(text);
    return rc;
#else
    return ERR_NOENT; /* no /proc/self/stat to read: the caller cannot know */
#endif
}
