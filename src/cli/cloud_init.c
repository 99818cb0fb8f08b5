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

/* One file the user-data writes: an entry of write_files, or a here-document of a startup
 * script. */
struct ci_file {
    const char *path;
    const char *content;
    int line, column; /* where it is reported */
    int first;        /* the line of the text where the content's first line is; 0: not known */
};

/* One NAME=value seen in the unit, an environment file or the start script. */
struct ci_var {
    char name[64];
    char value[512];
    int line, column;
};

struct ci {
    const char *path;
    const char *text;   /* the whole file, for columns */
    const char *script; /* a startup script: its own text (it starts the unit); else NULL */
    const struct conf_node *root; /* cloud-config: the document; else NULL */
    struct ci_file files[CI_MAX_FILES];
    char *owned[CI_MAX_FILES]; /* here-documents' contents */
    size_t nfiles;
    struct ci_var vars[CI_MAX_VARS];
    size_t nvars;
    struct error *e;
};

/* The line and column of line k (0-based) of a file's content, at needle when it is there. */
static void ci_locate(const struct ci *c, const struct ci_file *f, size_t k, const char *needle,
                      int *line, int *column)
{
    const char *p, *hit;
    int want = f->first + (int)k, at = 1;
    size_t len;

    *line = f->line;
    *column = f->column;
    if (!f->first)
        return;
    for (p = c->text; *p && at < want; p++)
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

/* Whether needle occurs in text other than on a line that starts (after blanks and `export `)
 * with skip (NULL: none). */
static int ci_in_text(const char *text, const char *needle, const char *skip)
{
    const char *p = text;

    while ((p = strstr(p, needle))) {
        const char *bol = p;

        while (bol > text && bol[-1] != '\n')
            bol--;
        bol += strspn(bol, " \t");
        if (strncmp(bol, "export ", 7) == 0)
            bol += 7;
        if (!skip || strncmp(bol, skip, strlen(skip)) != 0)
            return 1;
        p++;
    }
    return 0;
}

/* Whether needle occurs in any file, in the startup script, or in a runcmd/bootcmd item, other
 * than on an assignment line starting with skip. */
static int ci_mentions(const struct ci *c, const char *needle, const char *skip)
{
    static const char *const cmds[] = {"runcmd", "bootcmd", NULL};

    for (size_t i = 0; i < c->nfiles; i++)
        if (ci_in_text(c->files[i].content, needle, skip))
            return 1;
    if (c->script && ci_in_text(c->script, needle, skip))
        return 1;
    for (size_t j = 0; c->root && cmds[j]; j++) {
        const struct conf_node *s = conf_find(c->root, cmds[j]);

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

/* Whether line (len bytes) starts the castor-node unit. */
static int ci_starts_line(const char *line, size_t len)
{
    char buf[1024];

    snprintf(buf, sizeof(buf), "%.*s", (int)len, line);
    return strstr(buf, "systemctl") && strstr(buf, "castor-node") &&
           (strstr(buf, " start") || strstr(buf, "--now") || strstr(buf, " restart"));
}

/* Whether runcmd, or the startup script, starts the castor-node unit. */
static int ci_starts_unit(const struct ci *c, const struct conf_node *runcmd)
{
    for (const char *p = c->script; p && *p;) {
        size_t len = strcspn(p, "\n");

        if (ci_starts_line(p, len))
            return 1;
        p += len;
        if (*p == '\n')
            p++;
    }
    for (size_t i = 0; runcmd && runcmd->kind == CONF_SEQUENCE && i < runcmd->n; i++) {
        const struct conf_node *it = runcmd->items[i];
        char line[1024] = "";
        size_t len = 0;

        if (it->kind == CONF_SCALAR)
            len = (size_t)snprintf(line, sizeof(line), "%s", it->text);
        for (size_t k = 0; it->kind == CONF_SEQUENCE && k < it->n && len < sizeof(line); k++)
            if (it->items[k]->kind == CONF_SCALAR)
                len += (size_t)snprintf(line + len, sizeof(line) - len, "%s ", it->items[k]->text);
        if (ci_starts_line(line, strlen(line)))
            return 1;
    }
    return 0;
}

/* Whether the scalar node is a block scalar (`|` or `>`), whose content starts on the next line. */
static int ci_is_block(const struct ci *c, const struct conf_node *n)
{
    const char *q = c->text;

    for (int at = 1; *q && at < n->line; q++)
        if (*q == '\n')
            at++;
    if ((size_t)(n->column - 1) > strcspn(q, "\n"))
        return 0;
    q += n->column - 1;
    return *q == '|' || *q == '>';
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
        const struct conf_node *it = wf->items[i], *p, *ct, *enc, *at;

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
        at = ct ? ct : p;
        c->files[c->nfiles++] =
            (struct ci_file){p->text, ct && ct->kind == CONF_SCALAR ? ct->text : "", at->line,
                             at->column, ct && ci_is_block(c, ct) ? ct->line + 1 : 0};
    }
    return 0;
}

/* Keep one here-document: path and content in one allocation owned by c. */
static int ci_keep(struct ci *c, const char *path, const char *body, size_t n, int line)
{
    size_t plen = strlen(path);
    char *both;

    if (c->nfiles >= CI_MAX_FILES)
        return err_set(c->e, ERR_RANGE, c->path, line, 1, "more than %d files", CI_MAX_FILES);
    if (!(both = malloc(plen + n + 2)))
        return err_set(c->e, ERR_NOMEM, c->path, line, 1, "out of memory");
    memcpy(both, path, plen + 1);
    memcpy(both + plen + 1, body, n);
    both[plen + 1 + n] = '\0';
    c->owned[c->nfiles] = both;
    c->files[c->nfiles++] = (struct ci_file){both, both + plen + 1, line, 1, line + 1};
    return 0;
}

/* The here-documents of a startup script that write a file, `cat >PATH <<'END'` (or <<END,
 * <<"END", <<-END), up to a line that is END. */
static int ci_heredocs(struct ci *c)
{
    const char *p = c->script;
    int line = 1, rc;

    while (*p) {
        size_t len = strcspn(p, "\n");
        const char *here = strstr(p, "<<"), *gt = memchr(p, '>', len);

        if (here && here < p + len && gt && gt < here) {
            const char *q = here + 2, *body, *end;
            char path[512], delim[64];
            int start = line;

            q += strspn(q, "-'\" ");
            snprintf(delim, sizeof(delim), "%.*s", (int)strcspn(q, "'\" \n"), q);
            q = gt + 1 + strspn(gt + 1, " ");
            snprintf(path, sizeof(path), "%.*s", (int)strcspn(q, " <\n"), q);
            body = p + len + (p[len] == '\n');
            line++;
            for (end = body; *end; line++) {
                size_t l = strcspn(end, "\n");

                if (l == strlen(delim) && strncmp(end, delim, l) == 0)
                    break;
                end += l + (end[l] == '\n');
            }
            if (!*end)
                return err_set(c->e, ERR_PARSE, c->path, start, 1,
                               "the here-document for %s has no end line %s", path, delim);
            if ((rc = ci_keep(c, path, body, (size_t)(end - body), start)) < 0)
                return rc;
            p = end;
            len = strcspn(p, "\n");
        }
        p += len;
        if (*p == '\n')
            p++;
        line++;
    }
    return 0;
}

/* What castor-node reads (src/agent/node_main.c), as the user-data sets it. */
static int ci_check_env(struct ci *c, const struct ci_file *unit)
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
        return err_set(c->e, ERR_PARSE, c->path, unit->line, unit->column,
                       "CASTOR_URL is not set for castor-node (the controller's API URL)");
    if ((strncmp(url->value, "http://", 7) != 0 && strncmp(url->value, "https://", 8) != 0) ||
        strchr(url->value, '$') || strlen(url->value) <= 8 ||
        url->value[strcspn(url->value, ":") + 3] == '/')
        return err_set(c->e, ERR_PARSE, c->path, url->line, url->column,
                       "CASTOR_URL: expected an http:// or https:// URL with a host, found \"%s\"",
                       url->value);
    if (!tok)
        return err_set(c->e, ERR_PARSE, c->path, unit->line, unit->column,
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
    if (!ci_mentions(c, tok->value, "CASTOR_NODE_TOKEN_FILE=") &&
        !ci_mentions(c, "$CASTOR_NODE_TOKEN_FILE", NULL) &&
        !ci_mentions(c, "${CASTOR_NODE_TOKEN_FILE}", NULL))
        return err_set(c->e, ERR_PARSE, c->path, tok->line, tok->column,
                       "CASTOR_NODE_TOKEN_FILE: nothing writes %s at boot", tok->value);
    if (!id)
        return err_set(c->e, ERR_PARSE, c->path, unit->line, unit->column,
                       "CASTOR_INSTANCE_ID is not set for castor-node (the instance's id)");
    for (size_t i = 0; metadata[i]; i++)
        md |= ci_mentions(c, metadata[i], NULL);
    if (!strchr(id->value, '$') || !md)
        return err_set(c->e, ERR_INVAL, c->path, id->line, id->column,
                       "CASTOR_INSTANCE_ID: every worker boots from this user-data; read the id "
                       "at boot from the instance metadata (169.254.169.254 or "
                       "metadata.google.internal)");
    return 0;
}

/* The checks common to both forms, once c->files are known. */
static int ci_check(struct ci *c, int line, int column)
{
    const struct ci_file *unit = NULL, *script;
    const struct conf_node *runcmd = c->root ? conf_find(c->root, "runcmd") : NULL;
    char prog[512];
    const char *base;
    int rc;

    for (size_t i = 0; i < c->nfiles && !unit; i++)
        if (ci_ends_with(c->files[i].path, "/castor-node.service"))
            unit = &c->files[i];
    if (!unit)
        return err_set(c->e, ERR_PARSE, c->path, line, column,
                       "no castor-node.service among the files it writes");
    if (ci_exec_start(unit, prog, sizeof(prog)) < 0)
        return err_set(c->e, ERR_PARSE, c->path, unit->line, unit->column,
                       "%s: no ExecStart=", unit->path);
    ci_lines(c, unit, ci_unit_line);
    base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
    if (strcmp(base, "castor-node") != 0) {
        if (!(script = ci_file_at(c, prog)))
            return err_set(c->e, ERR_PARSE, c->path, unit->line, unit->column,
                           "%s: ExecStart= runs %s, which is neither castor-node nor a file "
                           "it writes",
                           unit->path, prog);
        if (!ci_execs_node(script->content))
            return err_set(c->e, ERR_PARSE, c->path, script->line, script->column,
                           "%s: the unit's start script does not exec castor-node", prog);
        ci_lines(c, script, ci_env_line);
    }
    if ((rc = ci_check_env(c, unit)) < 0)
        return rc;
    if (!ci_starts_unit(c, runcmd))
        return err_set(c->e, ERR_PARSE, c->path, runcmd ? runcmd->line : line,
                       runcmd ? runcmd->column : column,
                       "%s does not start castor-node (systemctl enable --now castor-node)",
                       c->script ? "the script" : "runcmd");
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
    c.text = text;
    first = strcspn(text, "\n");
    while (first > 0 && (text[first - 1] == ' ' || text[first - 1] == '\r'))
        first--;
    if (strncmp(text, "#!", 2) == 0) {
        /* a startup script (Compute Engine's startup-script): the files are its here-documents */
        c.script = text;
        if ((rc = ci_heredocs(&c)) == 0)
            rc = ci_check(&c, 1, 1);
        goto cleanup;
    }
    if (first != 13 || strncmp(text, "#cloud-config", 13) != 0) {
        rc = err_set(e, ERR_PARSE, path, 1, 1,
                     "the first line must be #cloud-config (cloud-init ignores it otherwise), or "
                     "#! for a startup script");
        goto cleanup;
    }
    if ((rc = conf_parse(path, text, len, &doc, e)) < 0)
        goto cleanup;
    if (doc->root->kind != CONF_MAPPING) {
        rc = err_set(e, ERR_PARSE, path, doc->root->line, doc->root->column,
                     "expected a mapping of cloud-init modules");
        goto cleanup;
    }
    c.root = doc->root;
    if ((rc = ci_write_files(&c, doc->root)) == 0)
        rc = ci_check(&c, doc->root->line, doc->root->column);
cleanup:
    for (size_t i = 0; i < c.nfiles; i++)
        free(c.owned[i]);
    conf_free(doc);
    free(text);
    return rc;
}
