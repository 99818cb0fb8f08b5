/* local_conf.c: the local cloud made from the daemon's configuration (world `local`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/cloud.h"
#include "providers/local.h"
#include "util/conf.h"
#include "util/env.h"

#define LOCAL_CONF_MAX_OFFERS 64
#define LOCAL_CONF_MAX_ENV 64
#define LOCAL_CONF_PATH_MAX 4096

/* A path from the configuration: absolute as written, else under base_dir. */
static void lc_path(char *buf, const char *base_dir, const char *path)
{
    if (path[0] == '/' || !base_dir || !base_dir[0])
        snprintf(buf, LOCAL_CONF_PATH_MAX, "%s", path);
    else
        snprintf(buf, LOCAL_CONF_PATH_MAX, "%s/%s", base_dir, path);
}

/* 1 for a name of 1 to CLOUD_NAME_MAX - 1 of letters, digits and "._-/:". */
static int lc_offer_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n >= CLOUD_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || strchr("._-/:", s[i])))
            return 0;
    return 1;
}

/* The offers list into o (n written): defaults for an absent list. */
static int lc_offers(const struct conf_node *section, struct local_offer *o, size_t *n,
                     struct error *e)
{
    static const char *const keys[] = {"name",  "gpus",     "gpu_gib", "spot",
                                       "price", "capacity", NULL};
    const struct conf_node *list = section ? conf_find(section, "offers") : NULL;
    int rc;

    if (!list) {
        o[0] = (struct local_offer){.name = "local.4gpu", .gpus = 4, .capacity = 4};
        *n = 1;
        return 0;
    }
    if (list->kind != CONF_SEQUENCE)
        return err_set(e, ERR_PARSE, list->file, list->line, list->column,
                       "%s: expected a list of offers", list->path);
    if (list->n == 0 || list->n > LOCAL_CONF_MAX_OFFERS)
        return err_set(e, ERR_RANGE, list->file, list->line, list->column,
                       "%s: from 1 to %d offers", list->path, LOCAL_CONF_MAX_OFFERS);
    for (size_t i = 0; i < list->n; i++) {
        const struct conf_node *m = list->items[i];
        const char *name = NULL;
        long gpus = 1, gib = 0, cap = 4;
        int spot = 0;

        o[i] = (struct local_offer){0};
        if ((rc = conf_check_keys(m, keys, e)) < 0)
            return rc;
        if (m->kind != CONF_MAPPING || (rc = conf_get_string(m, "name", &name, e)) == 0)
            return err_set(e, ERR_PARSE, m->file, m->line, m->column, "%s.name: required", m->path);
        if (rc < 0)
            return rc;
        if (!lc_offer_name_ok(name)) {
            const struct conf_node *nn = conf_find(m, "name");

            return err_set(e, ERR_PARSE, nn->file, nn->line, nn->column,
                           "%s: 1 to %d of letters, digits and \"._-/:\"", nn->path,
                           CLOUD_NAME_MAX - 1);
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(o[k].name, name) == 0) {
                const struct conf_node *nn = conf_find(m, "name");

                return err_set(e, ERR_PARSE, nn->file, nn->line, nn->column,
                               "%s: the offer %s is listed twice", nn->path, name);
            }
        if ((rc = conf_get_long(m, "gpus", 1, 64, &gpus, e)) < 0 ||
            (rc = conf_get_long(m, "gpu_gib", 0, 4096, &gib, e)) < 0 ||
            (rc = conf_get_bool(m, "spot", &spot, e)) < 0 ||
            (rc = conf_get_double(m, "price", 0, 1e6, &o[i].price, e)) < 0 ||
            (rc = conf_get_long(m, "capacity", -1, 100000, &cap, e)) < 0)
            return rc;
        memcpy(o[i].name, name, strlen(name) + 1);
        o[i].gpus = (int)gpus;
        o[i].gpu_gib = (int)gib;
        o[i].spot = spot;
        o[i].capacity = (int)cap;
    }
    *n = list->n;
    return 0;
}

/* 1 for an environment variable's name: [A-Za-z_][A-Za-z0-9_]*. */
static int lc_env_name_ok(const char *s)
{
    if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return 0;
    return 1;
}

/* The env mapping into l (NAME=VALUE entries): names checked, no tokens (they go in files). */
static int lc_env(const struct conf_node *section, struct env_list *l, struct error *e)
{
    const struct conf_node *m = section ? conf_find(section, "env") : NULL;
    int rc;

    if (!m || m->kind == CONF_NULL)
        return 0;
    if (m->kind != CONF_MAPPING)
        return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                       "%s: expected a mapping of NAME: value", m->path);
    if (m->n > LOCAL_CONF_MAX_ENV)
        return err_set(e, ERR_RANGE, m->file, m->line, m->column, "%s: at most %d variables",
                       m->path, LOCAL_CONF_MAX_ENV);
    for (size_t i = 0; i < m->n; i++) {
        const struct conf_entry *en = &m->entries[i];
        const struct conf_node *v = en->value;

        if (!lc_env_name_ok(en->key))
            return err_set(e, ERR_PARSE, v->file, en->line, en->column,
                           "%s: not a variable name (letters, digits, '_')", v->path);
        if (strstr(en->key, "TOKEN"))
            return err_set(e, ERR_PARSE, v->file, en->line, en->column,
                           "%s: tokens are secrets: name their files (node_token_file, "
                           "job_token_file), never their values",
                           v->path);
        if (v->kind != CONF_SCALAR)
            return err_set(e, ERR_PARSE, v->file, v->line, v->column, "%s: expected a value",
                           v->path);
        if ((rc = env_list_set(l, en->key, v->text)) < 0)
            return err_set(e, rc, v->file, v->line, v->column, "%s: %s", v->path, err_str(rc));
    }
    return 0;
}

int cloud_local_from_conf(const struct conf_node *section, const char *base_dir,
                          const struct cloud_host *host, struct cloud *out, struct error *e)
{
    static const char *const keys[] = {
        "run_dir", "node_bin", "url", "node_token_file", "job_token_file", "offers",
        "grace",   "env",      NULL};
    struct local_offer offers[LOCAL_CONF_MAX_OFFERS];
    char run_dir[LOCAL_CONF_PATH_MAX], node_bin[LOCAL_CONF_PATH_MAX];
    char node_tok[LOCAL_CONF_PATH_MAX], job_tok[LOCAL_CONF_PATH_MAX];
    struct local_config cfg = {0};
    struct env_list env = {0};
    const char *url = host ? host->api_url : NULL;
    const char *where = section && section->file ? section->file : "";
    int line = section ? section->line : 0, column = section ? section->column : 0;
    char **envv = NULL;
    int rc;

    if (section && section->kind == CONF_NULL)
        section = NULL;
    if (section && (rc = conf_check_keys(section, keys, e)) < 0)
        return rc;
    lc_path(run_dir, base_dir, "castor-local");
    node_bin[0] = node_tok[0] = job_tok[0] = '\0';
    if (host && host->bin_dir)
        snprintf(node_bin, sizeof(node_bin), "%s/castor-node", host->bin_dir);
    if (host && host->node_token_file)
        snprintf(node_tok, sizeof(node_tok), "%s", host->node_token_file);
    if (host && host->job_token_file)
        snprintf(job_tok, sizeof(job_tok), "%s", host->job_token_file);
    cfg.grace_s = 30;
    if (section && ((rc = conf_get_path(section, "run_dir", base_dir, run_dir,
                                        LOCAL_CONF_PATH_MAX - 256, e)) < 0 ||
                    (rc = conf_get_path(section, "node_bin", base_dir, node_bin,
                                        LOCAL_CONF_PATH_MAX - 256, e)) < 0 ||
                    (rc = conf_get_path(section, "node_token_file", base_dir, node_tok,
                                        LOCAL_CONF_PATH_MAX - 256, e)) < 0 ||
                    (rc = conf_get_path(section, "job_token_file", base_dir, job_tok,
                                        LOCAL_CONF_PATH_MAX - 256, e)) < 0 ||
                    (rc = conf_get_string(section, "url", &url, e)) < 0 ||
                    (rc = conf_get_double(section, "grace", 0, 3600, &cfg.grace_s, e)) < 0))
        return rc;
    if (!node_bin[0])
        return err_set(e, ERR_PARSE, where, line, column,
                       "cloud.node_bin: required (the castor-node program's path)");
    if (!url || !url[0])
        return err_set(e, ERR_PARSE, where, line, column,
                       "cloud.url: required (the controller's URL, as the nodes reach it)");
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        const struct conf_node *n = section ? conf_find(section, "url") : NULL;

        return err_set(e, ERR_PARSE, n ? n->file : where, n ? n->line : line,
                       n ? n->column : column, "cloud.url: must start with http:// or https://");
    }
    if ((rc = lc_offers(section, offers, &cfg.noffers, e)) < 0)
        return rc;
    if ((rc = lc_env(section, &env, e)) < 0)
        goto out;
    envv = env_list_take(&env);
    if (!envv) {
        rc = err_set(e, ERR_NOMEM, where, line, column, "out of memory");
        goto out;
    }
    cfg.run_dir = run_dir;
    cfg.node_bin = node_bin;
    cfg.url = url;
    cfg.node_token_file = node_tok[0] ? node_tok : NULL;
    cfg.job_token_file = job_tok[0] ? job_tok : NULL;
    cfg.offers = offers;
    cfg.env = (const char *const *)envv;
    rc = cloud_local_new(&cfg, out);
    if (rc == ERR_IO)
        rc = err_set(e, rc, run_dir, 0, 0, "the local cloud's run folder cannot be made");
    else if (rc < 0)
        rc = err_set(e, rc, where, line, column, "the local cloud: %s", err_str(rc));
out:
    env_free(envv);
    env_list_clear(&env);
    return rc;
}
