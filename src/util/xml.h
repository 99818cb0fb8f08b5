/* xml.h: read-only XML documents parsed from memory (wraps libxml2; its headers stay in xml.c):
 * no network, no DTD, no entity expansion; elements found by local name, namespaces ignored. */
#ifndef CASTOR_UTIL_XML_H
#define CASTOR_UTIL_XML_H

#include <stddef.h>

#include "util/error.h"

struct xml_doc;  /* a parsed document; opaque, owned by the caller of xml_parse */
struct xml_node; /* an element inside a document; borrowed, valid until the document is freed */

/*
 * Parse len bytes at buf as one XML document into *out (free it with xml_free). Nothing is
 * fetched (no network, no external entity) and entities are never expanded; a document with a
 * DOCTYPE is refused, so that no entity can be declared at all. ERR_INVAL (buf NULL with len > 0,
 * out NULL), ERR_EMPTY (no bytes), ERR_PARSE (malformed or truncated: e->msg says why and e->line
 * where), ERR_NOMEM; *out is then unchanged.
 */
int xml_parse(const char *buf, size_t len, struct xml_doc **out, struct error *e);

/* Release a document and every node in it; doc may be NULL. */
void xml_free(struct xml_doc *doc);

/* The root element; never NULL for a parsed document. */
struct xml_node *xml_root(const struct xml_doc *doc);

/* The local name of an element (without namespace prefix). Borrowed. */
const char *xml_name(const struct xml_node *node);

/* The first child element of node whose local name is name (any element when name is NULL), or
 * NULL. */
struct xml_node *xml_child(const struct xml_node *node, const char *name);

/* The next sibling element after node with the same local name, or NULL: with xml_child, walks a
 * list such as <instancesSet><item/><item/></instancesSet>. */
struct xml_node *xml_next(const struct xml_node *node);

/* Follow a path of local names separated by '/' ("instanceState/name") down from node, taking
 * the first matching child at each step; NULL when a step is missing. */
struct xml_node *xml_find(const struct xml_node *node, const char *path);

/* The text of node (all its text content, concatenated) as a new string the caller frees with
 * free(). ERR_INVAL (node or out NULL), ERR_NOMEM; *out is then unchanged. */
int xml_text(const struct xml_node *node, char **out);

/*
 * Copy the text at path below node (as xml_find) into buf of size bytes, with leading and trailing
 * white space removed. ERR_EMPTY (no such element), ERR_RANGE (the text does not fit), ERR_INVAL
 * (NULL arguments or size 0), ERR_NOMEM; buf is then unchanged.
 */
int xml_copy(const struct xml_node *node, const char *path, char *buf, size_t size);

#endif
