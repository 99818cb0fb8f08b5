/* env.h: building a program's environment ("NAME=VALUE" strings) before fork and exec: from a
 * base with some variables left out, with later settings replacing earlier ones. */
#ifndef CASTOR_UTIL_ENV_H
#define CASTOR_UTIL_ENV_H

#include <stddef.h>

#include "util/error.h"

/* A growing, NULL-terminated list of owned "NAME=VALUE" strings; zero it to start. */
struct env_list {
    char **v; /* NULL until the first entry; then v[n] == NULL */
    size_t n, cap;
};

/* Set name to value (a copy), replacing an entry of that name. ERR_INVAL (a name that is empty
 * or holds '='), ERR_NOMEM; the list is unchanged on error. */
int env_list_set(struct env_list *l, const char *name, const char *value);

/* Set from "NAME=VALUE" (split at the first '='). ERR_INVAL (no '=' or an empty name),
 * ERR_NOMEM. */
int env_list_put(struct env_list *l, const char *entry);

/* Put every entry of base (NULL-terminated; may be NULL) for which skip (may be NULL) answers 0;
 * entries without '=' are passed over. ERR_NOMEM (what was put stays). */
int env_list_put_all(struct env_list *l, const char *const *base, int (*skip)(const char *entry));

/* Hand the array over: the NULL-terminated strings (never NULL: an empty list gives an array of
 * one NULL; free with env_free) or NULL when out of memory (the list is then freed). The list is
 * zeroed either way. */
char **env_list_take(struct env_list *l);

/* Wipe (they may hold secrets) and free the list's strings; the list is zeroed. */
void env_list_clear(struct env_list *l);

/* Wipe and free an array from env_list_take. NULL is ignored. */
void env_free(char **env);

/* 1 when entry is a CASTOR_ variable whose name holds TOKEN (a secret or a secret's file). */
int env_is_castor_secret(const char *entry);

#endif
