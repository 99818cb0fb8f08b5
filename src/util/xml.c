/* xml.c: the libxml2 wrapper; the one file that includes libxml2 headers. */
#include "util/xml.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#define NODE(n) ((xmlNode *)(n))
#define CNODE(n) ((const xmlNode *)(n))

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init(void)
{
    xmlInitParser();
}

/* A DOCTYPE was met: note it and stop, so that no entity can be declared, let alone expanded. */
static void refuse_dtd(void *ctx, const xmlChar *name, const xmlChar *external_id,
                       const xmlChar *system_id)
{
    xmlParserCtxt *ctxt = ctx;

    (void)name;
    (void)external_id;
    (void)system_id;
    ctxt->_private = (void *)refuse_dtd;
    xmlStopParser(ctxt);
}

/* Fill e from libxml2's last error on ctxt ("what" when it has none). */
static int parse_error(xmlParserCtxt *ctxt, const char *what, struct error *e)
{
    const xmlError *x = xmlCtxtGetLastError(ctxt);
    char msg[256];
    size_t n;

    if (!x || !x->message)
        return err_set(e, ERR_PARSE, "xml", 0, 0, "%s", what);
    snprintf(msg, sizeof(msg), "%s", x->message);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    return err_set(e, ERR_PARSE, "xml", x->line, x->int2, "%s: %s", what, msg);
}

int xml_parse(const char *buf, size_t len, struct xml_doc **out, struct error *e)
{
    xmlParserCtxt *ctxt = NULL;
    int rc = 0;

    if ((!buf && len > 0) || !out)
        return err_set(e, ERR_INVAL, "xml", 0, 0, "no buffer or no place for the document");
    if (len == 0)
        return err_set(e, ERR_EMPTY, "xml", 0, 0, "empty document");
    if (len > INT_MAX)
        return err_set(e, ERR_RANGE, "xml", 0, 0, "document of %zu bytes is too large", len);
    pthread_once(&xml_once, xml_init);
    ctxt = xmlCreateMemoryParserCtxt(buf, (int)len);
    if (!ctxt)
        return err_set(e, ERR_NOMEM, "xml", 0, 0, "cannot create a parser");
    /* No network, no error printing; entities are left unexpanded (no XML_PARSE_NOENT) and a
     * DOCTYPE stops the parse. */
    xmlCtxtUseOptions(ctxt, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    ctxt->sax->internalSubset = refuse_dtd;
    ctxt->_private = NULL;
    xmlParseDocument(ctxt);
    if (ctxt->_private == (void *)refuse_dtd) {
        rc = err_set(e, ERR_PARSE, "xml", ctxt->input ? ctxt->input->line : 0, 0,
                     "a DOCTYPE is not accepted");
        goto out;
    }
    if (!ctxt->wellFormed || !ctxt->myDoc) {
        rc = parse_error(ctxt, "malformed or truncated XML", e);
        goto out;
    }
    if (!xmlDocGetRootElement(ctxt->myDoc)) {
        rc = err_set(e, ERR_PARSE, "xml", 0, 0, "no root element");
        goto out;
    }
    *out = (struct xml_doc *)ctxt->myDoc;
    ctxt->myDoc = NULL;
out:
    if (ctxt->myDoc)
        xmlFreeDoc(ctxt->myDoc);
    ctxt->myDoc = NULL;
    xmlFreeParserCtxt(ctxt);
    return rc;
}

void xml_free(struct xml_doc *doc)
{
    if (doc)
        xmlFreeDoc((xmlDoc *)doc);
}

struct xml_node *xml_root(const struct xml_doc *doc)
{
    return doc ? (struct xml_node *)xmlDocGetRootElement((const xmlDoc *)doc) : NULL;
}

const char *xml_name(const struct xml_node *node)
{
    return node ? (const char *)CNODE(node)->name : NULL;
}

/* The first element at or after n (siblings) whose local name is name (any when NULL). */
static xmlNode *element_from(xmlNode *n, const char *name)
{
    for (; n; n = n->next)
        if (n->type == XML_ELEMENT_NODE && (!name || strcmp((const char *)n->name, name) == 0))
            return n;
    return NULL;
}

struct xml_node *xml_child(const struct xml_node *node, const char *name)
{
    return node ? (struct xml_node *)element_from(CNODE(node)->children, name) : NULL;
}

struct xml_node *xml_next(const struct xml_node *node)
{
    return node ? (struct xml_node *)element_from(CNODE(node)->next, xml_name(node)) : NULL;
}

struct xml_node *xml_find(const struct xml_node *node, const char *path)
{
    char step[128];

    while (node && path && *path) {
        const char *slash = strchr(path, '/');
        size_t n = slash ? (size_t)(slash - path) : strlen(path);

        if (n == 0 || n >= sizeof(step))
            return NULL;
        memcpy(step, path, n);
        step[n] = '\0';
        node = xml_child(node, step);
        path = slash ? slash + 1 : path + n;
    }
    return (struct xml_node *)node;
}

int xml_text(const struct xml_node *node, char **out)
{
    xmlChar *content;
    char *copy;

    if (!node || !out)
        return ERR_INVAL;
    content = xmlNodeGetContent(CNODE(node));
    copy = strdup(content ? (const char *)content : "");
    xmlFree(content);
    if (!copy)
        return ERR_NOMEM;
    *out = copy;
    return 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int xml_copy(const struct xml_node *node, const char *path, char *buf, size_t size)
{
    const struct xml_node *at;
    char *text = NULL;
    size_t start = 0, end;
    int rc;

    if (!node || !path || !buf || size == 0)
        return ERR_INVAL;
    at = xml_find(node, path);
    if (!at)
        return ERR_EMPTY;
    rc = xml_text(at, &text);
    if (rc < 0)
        return rc;
    end = strlen(text);
    while (start < end && is_space(text[start]))
        start++;
    while (end > start && is_space(text[end - 1]))
        end--;
    if (end - start >= size) {
        rc = ERR_RANGE;
        goto out;
    }
    memcpy(buf, text + start, end - start);
    buf[end - start] = '\0';
out:
    free(text);
    return rc;
}
