/* env.c: environments for programs castor starts (castor-node's replicas, the local cloud's
 * nodes). */
#include "util/env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/crypto.h"

static void env_wipe_free(char *s)
{
    if (s) {
        crypto_wipe(s, strlen(s));
        free(s);
    }
}

int env_list_set(struct env_list *l, const char *name, const char *value)
{
    size_t nlen = strlen(name), len;
    char *s;

    if (nlen == 0 || strchr(name, '='))
        return ERR_INVAL;
    len = nlen + strlen(value) + 2;
    if (!(s = malloc(len)))
        return ERR_NOMEM;
    snprintf(s, len, "%s=%s", name, value);
    for (size_t i = 0; i < l->n; i++) {
        if (strncmp(l->v[i], name, nlen) == 0 && l->v[i][nlen] == '=') {
            env_wipe_free(l->v[i]);
            l->v[i] = s;
            return 0;
        }
    }
    if (l->n + 2 > l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, cap * sizeof(char *));

        if (!v) {
            env_wipe_free(s);
            return ERR_NOMEM;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    l->v[l->n] = NULL;
    return 0;
}

int env_list_put(struct env_list *l, const char *entry)
{
    const char *eq = strchr(entry, '=');
    size_t n = eq ? (size_t)(eq - entry) : 0;
    char *name;
    int rc;

    if (n == 0)
        return ERR_INVAL;
    if (!(name = malloc(n + 1)))
        return ERR_NOMEM;
    memcpy(name, entry, n);
    name[n] = '\0';
    rc = env_list_set(l, name, eq + 1);
    free(name);
    return rc;
}

int env_list_put_all(struct env_list *l, const char *const *base, int (*skip)(const char *entry))
{
    for (size_t i = 0; base && base[i]; i++) {
        int rc;

        if (skip && skip(base[i]))
            continue;
        rc = env_list_put(l, base[i]);
        if (rc == ERR_NOMEM)
            return rc;
    }
    return 0;
}

char **env_list_take(struct env_list *l)
{
    char **v = l->v;

    if (!v && !(v = calloc(1, sizeof(char *)))) {
        env_list_clear(l);
        return NULL;
    }
    memset(l, 0, sizeof(*l));
    return v;
}

void env_list_clear(struct env_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        env_wipe_free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

void env_free(char **env)
{
    if (!env)
        return;
    for (size_t i = 0; env[i]; i++)
        env_wipe_free(env[i]);
    free(env);
}

int env_is_castor_secret(const char *entry)
{
    const char *eq = strchr(entry, '=');
    size_t n = eq ? (size_t)(eq - entry) : strlen(entry);

    if (strncmp(entry, "CASTOR_", 7) != 0)
        return 0;
    for (size_t i = 7; i + 5 <= n; i++)
        if (memcmp(entry + i, "TOKEN", 5) == 0)
            return 1;
    return 0;
}
