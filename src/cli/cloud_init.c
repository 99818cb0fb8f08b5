/* cloud_init.c: `castor validate --cloud-init FILE`: a worker's cloud-init user-data checked for
 * what castor-node needs (its environment, its unit started at boot), so that a template rendered
 * by terraform/ can be checked without booting an instance. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/conf.h"
#include "util/file.h"

#define CI_MAX_FILES 64
#define CI_MAX_VARS 128

/* One entry of write_files. */
struct ci_file {
    const char *path;
    const char *content;
    const struct conf_node *node; /* the content (for locations) */
};

/* One NAME=value seen in the unit, an environment file or the start script. */
struct ci_var {
    char name[64];
    char value[512];
    int line, column;
};

struct ci {
    const char *path;
    const char *text; /* the whole file, for columns */
    struct ci_file files[CI_MAX_FILES];
    size_t nfiles;
    struct ci_var vars[CI_MAX_VARS];
    size_t nvars;
    struct error *e;
};

/* The raw line number (1-based) of line k (0-based) of a file's content, and its column of
 * needle: block scalars (`|`, `>`) start on the line after their indicator; other scalars are
 * reported at their start. */
static void ci_locate(const struct ci *c, const struct ci_file *f, size_t k, const char *needle,
                      int *line, int *column)
{
    const char *p = c->text, *hit;
    int want = f->node->line + 1 + (int)k, at = 1;
    const char *q;
    size_t len;

    *line = f->node->line;
    *column = f->node->column;
    for (q = p; *q && at < f->node->line; q++)
        if (*q == '\n')
            at++;
    q += f->node->column - 1;
    if (*q != '|' && *q != '>')
        return;
    for (p = c->text, at = 1; *p && at < want; p++)
        if (*p == '\n')
            at++;
    if (!*p)
        return;
    len = strcspn(p, "\n");
    *line = want;
    if (needle && (hit = strstr(p, needle)) && (size_t)(hit - p) < len)
        *column = (int)(hit - p) + 1;
    else
        *column = (int)strspn(p, " ") + 1;
}

static const struct ci_file *ci_file_at(const struct ci *c, const char *path)
{
    for (size_t i = 0; i < c->nfiles; i++)
        if (strcmp(c->files[i].path, path) == 0)
            return &c->files[i];
    return NULL;
}

static int ci_ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);

    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* Strip one pair of matching quotes. */
static void ci_unquote(char *v)
{
    size_t n = strlen(v);

    if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
        memmove(v, v + 1, n - 2);
        v[n - 2] = '\0';
    }
}

/* Record NAME=value from one line of f (after `Environment=`, `export ` or nothing). */
static void ci_var_from(struct ci *c, const struct ci_file *f, size_t k, const char *s, size_t len)
{
    struct ci_var *v;
    size_t n = 0;

    while (n < len &&
           (s[n] == '_' || (s[n] >= 'A' && s[n] <= 'Z') || (n && s[n] >= '0' && s[n] <= '9')))
        n++;
    if (n == 0 || n >= sizeof(v->name) || n >= len || s[n] != '=' || c->nvars >= CI_MAX_VARS)
        return;
    v = &c->vars[c->nvars++];
    memcpy(v->name, s, n);
    v->name[n] = '\0';
    snprintf(v->value, sizeof(v->value), "%.*s", (int)(len - n - 1), s + n + 1);
    while (v->value[0] && strchr(" \t;", v->value[strlen(v->value) - 1]))
        v->value[strlen(v->value) - 1] = '\0';
    ci_unquote(v->value);
    ci_locate(c, f, k, v->name, &v->line, &v->column);
}

/* Walk f's lines; fn gets each line (leading blanks skipped) with its index. */
static void ci_lines(struct ci *c, const struct ci_file *f,
                     void (*fn)(struct ci *, const struct ci_file *, size_t, const char *, size_t))
{
    const char *p = f->content;
    size_t k = 0;

    while (*p) {
        size_t len = strcspn(p, "\n"), skip = strspn(p, " \t");

        if (skip > len)
            skip = len;
        fn(c, f, k++, p + skip, len - skip);
        p += len;
        if (*p == '\n')
            p++;
    }
}

static void ci_env_line(struct ci *c, const struct ci_file *f, size_t k, const char *s, size_t len)
{
    if (len > 7 && strncmp(s, "export ", 7) == 0) {
        s += 7;
        len -= 7;
    }
    if (len && s[0] != '#')
        ci_var_from(c, f, k, s, len);
}

/* The unit's Environment= and EnvironmentFile= lines. */
static void ci_unit_line(struct ci *c, const struct ci_file *f, size_t k, const char *s, size_t len)
{
    if (len > 12 && strncmp(s, "Environment=", 12) == 0) {
        char buf[600];

        snprintf(buf, sizeof(buf), "%.*s", (int)(len - 12), s + 12);
        ci_unquote(buf);
        ci_var_from(c, f, k, buf, strlen(buf));
    } else if (len > 16 && strncmp(s, "EnvironmentFile=", 16) == 0) {
        char path[512];
        const struct ci_file *env;

        snprintf(path, sizeof(path), "%.*s", (int)(len - 16), s + 16);
        if ((env = ci_file_at(c, path[0] == '-' ? path + 1 : path)))
            ci_lines(c, env, ci_env_line);
    }
}

/* The program of the unit's ExecStart= (systemd's prefixes dropped), into prog. */
static int ci_exec_start(const struct ci_file *unit, char *prog, size_t size)
{
    const char *p = strstr(unit->content, "ExecStart=");

    while (p && p != unit->content && p[-1] != '\n')
        p = strstr(p + 1, "ExecStart=");
    if (!p)
        return -1;
    p += 10;
    p += strspn(p, "-@+!:");
    snprintf(prog, size, "%.*s", (int)strcspn(p, " \t\n"), p);
    return prog[0] ? 0 : -1;
}

/* Whether a line of the script is `exec PATH/castor-node ...`. */
static int ci_execs_node(const char *script)
{
    for (const char *p = script; *p;) {
        size_t len = strcspn(p, "\n"), skip = strspn(p, " \t"), w;

        if (skip < len && strncmp(p + skip, "exec ", 5) == 0) {
            const char *prog = p + skip + 5, *base = prog;

            prog += strspn(prog, " ");
            w = strcspn(prog, " \t\n");
            for (size_t i = 0; i < w; i++)
                if (prog[i] == '/')
                    base = prog + i + 1;
            if (base < prog)
                base = prog;
            if ((size_t)(prog + w - base) == 11 && strncmp(base, "castor-node", 11) == 0)
                return 1;
        }
        p += len;
        if (*p == '\n')
            p++;
    }
    return 0;
}

static const struct ci_var *ci_var(const struct ci *c, const char *name)
{
    const struct ci_var *found = NULL;

    for (size_t i = 0; i < c->nvars; i++)
        if (strcmp(c->vars[i].name, name) == 0)
            found = &c->vars[i]; /* the last assignment wins */
    return found;
}

/* Whether needle occurs in the text of any file, or any runcmd/bootcmd item, other than at the
 * assignment line of skip. */
static int ci_mentions(const struct ci *c, const struct conf_node *root, const char *needle,
                       const char *skip_line_prefix)
{
    static const char *const cmds[] = {"runcmd", "bootcmd", NULL};

    for (size_t i = 0; i < c->nfiles; i++) {
        const char *p = c->files[i].content;

        while ((p = strstr(p, needle))) {
            const char *bol = p;

            while (bol > c->files[i].content && bol[-1] != '\n')
                bol--;
            bol += strspn(bol, " \t");
            if (strncmp(bol, "export ", 7) == 0)
                bol += 7;
            if (!skip_line_prefix || strncmp(bol, skip_line_prefix, strlen(skip_line_prefix)) != 0)
                return 1;
            p++;
        }
    }
    for (size_t j = 0; cmds[j]; j++) {
        const struct conf_node *s = conf_find(root, cmds[j]);

        for (size_t i = 0; s && s->kind == CONF_SEQUENCE && i < s->n; i++) {
            const struct conf_node *it = s->items[i];

            if (it->kind == CONF_SCALAR && strstr(it->text, needle))
                return 1;
            for (size_t k = 0; it->kind == CONF_SEQUENCE && k < it->n; k++)
                if (it->items[k]->kind == CONF_SCALAR && strstr(it->items[k]->text, needle))
                    return 1;
        }
    }
    return 0;
}

/* Whether runcmd starts the castor-node unit. */
static int ci_starts_unit(const struct conf_node *runcmd)
{
    for (size_t i = 0; runcmd && runcmd->kind == CONF_SEQUENCE && i < runcmd->n; i++) {
        const struct conf_node *it = runcmd->items[i];
        char line[1024] = "";
        size_t len = 0;

        if (it->kind == CONF_SCALAR)
            snprintf(line, sizeof(line), "%s", it->text);
        for (size_t k = 0; it->kind == CONF_SEQUENCE && k < it->n && len < sizeof(line); k++)
            if (it->items[k]->kind == CONF_SCALAR)
                len += (size_t)snprintf(line + len, sizeof(line) - len, "%s ", it->items[k]->text);
        if (strstr(line, "systemctl") && strstr(line, "castor-node") &&
            (strstr(line, " start") || strstr(line, "--now") || strstr(line, " restart")))
            return 1;
    }
    return 0;
}

static int ci_write_files(struct ci *c, const struct conf_node *root)
{
    const struct conf_node *wf = conf_find(root, "write_files");

    if (!wf)
        return err_set(c->e, ERR_PARSE, c->path, root->line, root->column,
                       "no write_files: the castor-node unit is not installed");
    if (wf->kind != CONF_SEQUENCE)
        return err_set(c->e, ERR_PARSE, c->path, wf->line, wf->column,
                       "write_files: expected a list of files");
    for (size_t i = 0; i < wf->n; i++) {
        const struct conf_node *it = wf->items[i], *p, *ct, *enc;

        if (it->kind != CONF_MAPPING)
            return err_set(c->e, ERR_PARSE, c->path, it->line, it->column,
                           "%s: expected a mapping with path and content", it->path);
        p = conf_find(it, "path");
        ct = conf_find(it, "content");
        enc = conf_find(it, "encoding");
        if (!p || p->kind != CONF_SCALAR || p->text[0] != '/')
            return err_set(c->e, ERR_PARSE, c->path, it->line, it->column,
                           "%s.path: an absolute path is required", it->path);
        if (enc && enc->kind == CONF_SCALAR && strcmp(enc->text, "text/plain") != 0)
            return err_set(c->e, ERR_PARSE, c->path, enc->line, enc->column,
                           "%s: encoding %s cannot be checked (write the content as text)",
                           enc->path, enc->text);
        if (c->nfiles >= CI_MAX_FILES)
            return err_set(c->e, ERR_RANGE, c->path, it->line, it->column,
                           "more than %d write_files", CI_MAX_FILES);
        c->files[c->nfiles++] =
            (struct ci_file){p->text, ct && ct->kind == CONF_SCALAR ? ct->text : "", ct ? ct : p};
    }
    return 0;
}

/* What castor-node reads (src/agent/node_main.c), as the user-data sets it. */
static int ci_check_env(struct ci *c, const struct conf_node *root, const struct ci_file *unit)
{
    static const char *const secret[] = {"CASTOR_NODE_TOKEN", "CASTOR_JOB_TOKEN", NULL};
    static const char *const metadata[] = {"169.254.169.254", "metadata.google.internal",
                                           "fd00:ec2::254", NULL};
    const struct ci_var *url = ci_var(c, "CASTOR_URL"), *id = ci_var(c, "CASTOR_INSTANCE_ID");
    const struct ci_var *tok = ci_var(c, "CASTOR_NODE_TOKEN_FILE");
    int md = 0;

    for (size_t i = 0; secret[i]; i++) {
        const struct ci_var *v = ci_var(c, secret[i]);

        if (v)
            return err_set(c->e, ERR_INVAL, c->path, v->line, v->column,
                           "%s: a token in the user-data is readable by whoever can describe "
                           "the instance; set %s_FILE to a file written at boot",
                           secret[i], secret[i]);
    }
    if (!url)
        return err_set(c->e, ERR_PARSE, c->path, unit->node->line, unit->node->column,
                       "CASTOR_URL is not set for castor-node (the controller's API URL)");
    if ((strncmp(url->value, "http://", 7) != 0 && strncmp(url->value, "https://", 8) != 0) ||
        strchr(url->value, '$') || strlen(url->value) <= 8 ||
        url->value[strcspn(url->value, ":") + 3] == '/')
        return err_set(c->e, ERR_PARSE, c->path, url->line, url->column,
                       "CASTOR_URL: expected an http:// or https:// URL with a host, found \"%s\"",
                       url->value);
    if (!tok)
        return err_set(c->e, ERR_PARSE, c->path, unit->node->line, unit->node->column,
                       "CASTOR_NODE_TOKEN_FILE is not set for castor-node (the node token's file)");
    if (tok->value[0] != '/')
        return err_set(c->e, ERR_PARSE, c->path, tok->line, tok->column,
                       "CASTOR_NODE_TOKEN_FILE: expected an absolute path, found \"%s\"",
                       tok->value);
    if (ci_file_at(c, tok->value))
        return err_set(c->e, ERR_INVAL, c->path, tok->line, tok->column,
                       "CASTOR_NODE_TOKEN_FILE: %s is in write_files: the token would be in the "
                       "user-data; fetch it at boot",
                       tok->value);
    if (!ci_mentions(c, root, tok->value, "CASTOR_NODE_TOKEN_FILE=") &&
        !ci_mentions(c, root, "$CASTOR_NODE_TOKEN_FILE", NULL) &&
        !ci_mentions(c, root, "${CASTOR_NODE_TOKEN_FILE}", NULL))
        return err_set(c->e, ERR_PARSE, c->path, tok->line, tok->column,
                       "CASTOR_NODE_TOKEN_FILE: nothing writes %s at boot", tok->value);
    if (!id)
        return err_set(c->e, ERR_PARSE, c->path, unit->node->line, unit->node->column,
                       "CASTOR_INSTANCE_ID is not set for castor-node (the instance's id)");
    for (size_t i = 0; metadata[i]; i++)
        md |= ci_mentions(c, root, metadata[i], NULL);
    if (!strchr(id->value, '$') || !md)
        return err_set(c->e, ERR_INVAL, c->path, id->line, id->column,
                       "CASTOR_INSTANCE_ID: every worker boots from this user-data; read the id "
                       "at boot from the instance metadata (169.254.169.254 or "
                       "metadata.google.internal)");
    return 0;
}

static int ci_check(struct ci *c, const struct conf_node *root)
{
    const struct ci_file *unit = NULL, *script;
    const struct conf_node *runcmd = conf_find(root, "runcmd");
    char prog[512];
    const char *base;
    int rc;

    if ((rc = ci_write_files(c, root)) < 0)
        return rc;
    for (size_t i = 0; i < c->nfiles && !unit; i++)
        if (ci_ends_with(c->files[i].path, "/castor-node.service"))
            unit = &c->files[i];
    if (!unit)
        return err_set(c->e, ERR_PARSE, c->path, root->line, root->column,
                       "no castor-node.service among write_files");
    if (ci_exec_start(unit, prog, sizeof(prog)) < 0)
        return err_set(c->e, ERR_PARSE, c->path, unit->node->line, unit->node->column,
                       "%s: no ExecStart=", unit->path);
    ci_lines(c, unit, ci_unit_line);
    base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
    if (strcmp(base, "castor-node") != 0) {
        if (!(script = ci_file_at(c, prog)))
            return err_set(c->e, ERR_PARSE, c->path, unit->node->line, unit->node->column,
                           "%s: ExecStart= runs %s, which is neither castor-node nor a file "
                           "of write_files",
                           unit->path, prog);
        if (!ci_execs_node(script->content))
            return err_set(c->e, ERR_PARSE, c->path, script->node->line, script->node->column,
                           "%s: the unit's start script does not exec castor-node", prog);
        ci_lines(c, script, ci_env_line);
    }
    if ((rc = ci_check_env(c, root, unit)) < 0)
        return rc;
    if (!ci_starts_unit(runcmd))
        return err_set(c->e, ERR_PARSE, c->path, runcmd ? runcmd->line : root->line,
                       runcmd ? runcmd->column : root->column,
                       "runcmd does not start castor-node (systemctl enable --now castor-node)");
    return 0;
}

int cli_cloud_init_check(const char *path, struct error *e)
{
    struct ci c = {.path = path, .e = e};
    struct conf *doc = NULL;
    char *text = NULL;
    size_t len = 0, first;
    int rc;

    if ((rc = file_read_all(path, &text, &len, e)) < 0)
        return rc;
    first = strcspn(text, "\n");
    while (first > 0 && (text[first - 1] == ' ' || text[first - 1] == '\r'))
        first--;
    if (first != 13 || strncmp(text, "#cloud-config", 13) != 0) {
        rc = err_set(e, ERR_PARSE, path, 1, 1,
                     "the first line must be #cloud-config (cloud-init ignores it otherwise)");
        goto cleanup;
    }
    if ((rc = conf_parse(path, text, len, &doc, e)) < 0)
        goto cleanup;
    if (doc->root->kind != CONF_MAPPING) {
        rc = err_set(e, ERR_PARSE, path, doc->root->line, doc->root->column,
                     "expected a mapping of cloud-init modules");
        goto cleanup;
    }
    c.text = text;
    rc = ci_check(&c, doc->root);
cleanup:
    conf_free(doc);
    free(text);
    return rc;
}
