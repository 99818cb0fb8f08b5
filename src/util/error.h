/* error.h: castor's one table of error codes, their messages, and the detail record for people. */
#ifndef CASTOR_UTIL_ERROR_H
#define CASTOR_UTIL_ERROR_H

#include <stdarg.h>
#include <stddef.h>

/*
 * Every castor function that can fail returns int: 0 on success or one of these negative codes.
 * X(NAME, retryable, message). Native errors (errno, CURLcode, NLopt, SQLite, CUDA) are translated
 * into this table at the wrapper that calls them; nothing above a wrapper sees a native code.
 */
#define ERR_TABLE(X)                                                           \
    X(NOMEM, 1, "out of memory")                                               \
    X(INVAL, 0, "invalid argument")                                            \
    X(IO, 1, "input/output error")                                             \
    X(NOENT, 0, "no such file or directory")                                   \
    X(PARSE, 0, "malformed input")                                             \
    X(EMPTY, 0, "no data")                                                     \
    X(RANGE, 0, "value out of range")                                          \
    X(UNKNOWN, 0, "unknown name")                                              \
    X(NOCONV, 0, "numerical method did not converge")                          \
    X(AGAIN, 1, "temporarily unavailable, try again")                          \
    X(INTERNAL, 0, "internal error")                                           \
    X(CAPACITY, 1, "insufficient capacity")                                    \
    X(CONFLICT, 0, "conflicts with existing data")                             \
    X(CORRUPT, 0, "stored data is corrupt")                                    \
    X(NODEV, 0, "no GPU device (none present, or built without CUDA or NCCL)") \
    X(QUOTA, 0, "quota exceeded")                                              \
    X(PERM, 0, "permission denied")

enum err_index {
#define ERR_X_INDEX(name, retry, msg) ERR_INDEX_##name,
    ERR_TABLE(ERR_X_INDEX)
#undef ERR_X_INDEX
        ERR_INDEX_COUNT
};

/* The codes: ERR_NOMEM == -1, ERR_INVAL == -2, ... in table order. */
enum err_code {
    ERR_OK = 0,
#define ERR_X_CODE(name, retry, msg) ERR_##name = -(ERR_INDEX_##name + 1),
    ERR_TABLE(ERR_X_CODE)
#undef ERR_X_CODE
};

/* The message for a code; never NULL (an unknown code gets "unknown error"). Static storage. */
const char *err_str(int code);

/* The code's name without prefix ("PARSE"); never NULL. Static storage. */
const char *err_name(int code);

/* 1 when the operation that returned code may succeed if tried again unchanged, else 0. */
int err_retryable(int code);

/*
 * Detail for a person: where (file, line, column; 0 when not known) and what, in words.
 * Owned by the caller, usually on the stack; functions that take a `struct error *` accept NULL.
 */
struct error {
    int code;
    char file[256];
    int line;
    int column;
    char msg[384];
};

/* Fill e (if not NULL) with code, location and a printf-style message; returns code, so that
 * `return err_set(e, ERR_PARSE, path, 3, 7, "...")` reads naturally. */
int err_set(struct error *e, int code, const char *file, int line, int column, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Format e as "file:line:column: message" (the parts that are known) into buf; returns buf. */
const char *err_format(const struct error *e, char *buf, size_t size);

#endif
