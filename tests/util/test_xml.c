/* test_xml.c: the libxml2 wrapper: lookups by local name, lists, text, and refusals of malformed,
 * truncated and DOCTYPE-carrying documents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/xml.h"

static const char ec2_reply[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">\n"
    "  <requestId>8f7724cf-496f-496e-8fe3-example</requestId>\n"
    "  <reservationSet><item><instancesSet>\n"
    "    <item><instanceId>i-1</instanceId><instanceState><code>16</code>"
    "<name>running</name></instanceState></item>\n"
    "    <item><instanceId>i-2</instanceId><instanceState><name>pending</name></instanceState>"
    "</item>\n"
    "    <item><instanceId> i-3 </instanceId></item>\n"
    "  </instancesSet></item></reservationSet>\n"
    "  <nextToken>tok&amp;en</nextToken>\n"
    "</DescribeInstancesResponse>\n";

static struct xml_doc *parse_ok(const char *text)
{
    struct xml_doc *doc = NULL;
    struct error e = {0};

    assert_int_equal(xml_parse(text, strlen(text), &doc, &e), 0);
    assert_non_null(doc);
    return doc;
}

/* Elements are found by local name in the EC2 namespace; items are walked in order; text is
 * trimmed by xml_copy and predefined entities are decoded. */
static void xml_find__walks_an_ec2_reply(void **state)
{
    struct xml_doc *doc = parse_ok(ec2_reply);
    struct xml_node *root = xml_root(doc), *item;
    const char *want[] = {"i-1", "i-2", "i-3"};
    char buf[32];
    size_t n = 0;

    (void)state;
    assert_string_equal(xml_name(root), "DescribeInstancesResponse");
    assert_int_equal(xml_copy(root, "requestId", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "8f7724cf-496f-496e-8fe3-example");
    for (item = xml_find(root, "reservationSet/item/instancesSet/item"); item;
         item = xml_next(item)) {
        assert_true(n < 3);
        assert_int_equal(xml_copy(item, "instanceId", buf, sizeof(buf)), 0);
        assert_string_equal(buf, want[n]);
        n++;
    }
    assert_int_equal(n, 3);
    item = xml_find(root, "reservationSet/item/instancesSet/item");
    assert_int_equal(xml_copy(item, "instanceState/name", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "running");
    assert_int_equal(xml_copy(root, "nextToken", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "tok&en");
    xml_free(doc);
}

/* Missing paths give NULL or ERR_EMPTY; a text too long for the buffer is ERR_RANGE and leaves
 * the buffer as it was. */
static void xml_copy__missing_and_too_long(void **state)
{
    struct xml_doc *doc = parse_ok(ec2_reply);
    struct xml_node *root = xml_root(doc);
    char buf[8] = "keep";
    char *text = NULL;

    (void)state;
    assert_null(xml_find(root, "reservationSet/item/nothing"));
    assert_null(xml_find(root, "reservationSet//item"));
    assert_int_equal(xml_copy(root, "nothing", buf, sizeof(buf)), ERR_EMPTY);
    assert_int_equal(xml_copy(root, "requestId", buf, sizeof(buf)), ERR_RANGE);
    assert_string_equal(buf, "keep");
    assert_int_equal(xml_copy(root, "requestId", buf, 0), ERR_INVAL);
    assert_int_equal(xml_text(xml_find(root, "nextToken"), &text), 0);
    assert_string_equal(text, "tok&en");
    free(text);
    assert_null(xml_child(NULL, "x"));
    assert_null(xml_next(NULL));
    xml_free(doc);
}

/* xml_child with NULL takes any element, skipping text and comments. */
static void xml_child__any_element(void **state)
{
    struct xml_doc *doc = parse_ok("<a> text <!-- c --> <b/><c/></a>");
    struct xml_node *first;

    (void)state;
    first = xml_child(xml_root(doc), NULL);
    assert_non_null(first);
    assert_string_equal(xml_name(first), "b");
    /* xml_next keeps to the same name: no <b> after the first */
    assert_null(xml_next(first));
    xml_free(doc);
}

/* Every prefix of a good document is refused with ERR_PARSE and a reason; nothing is returned. */
static void xml_parse__truncated_is_parse_error(void **state)
{
    size_t len = strlen(ec2_reply);

    (void)state;
    for (size_t cut = 1; cut < len - 1; cut += 7) {
        struct xml_doc *doc = (struct xml_doc *)0x1;
        struct error e = {0};

        assert_int_equal(xml_parse(ec2_reply, cut, &doc, &e), ERR_PARSE);
        assert_ptr_equal(doc, (struct xml_doc *)0x1);
        assert_int_equal(e.code, ERR_PARSE);
        assert_true(strlen(e.msg) > 0);
    }
}

/* Malformed documents: mismatched tags, two roots, an undeclared entity, garbage, an empty
 * buffer; each with a message. */
static void xml_parse__malformed(void **state)
{
    const char *bad[] = {"<a><b></a></b>", "<a/><b/>",           "<a>&secret;</a>",
                         "not xml at all", "<a attr=unquoted/>", "<Response><Errors>"};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct xml_doc *doc = NULL;
        struct error e = {0};

        assert_int_equal(xml_parse(bad[i], strlen(bad[i]), &doc, &e), ERR_PARSE);
        assert_null(doc);
        assert_true(strstr(e.msg, "malformed") != NULL);
    }
    {
        struct xml_doc *doc = NULL;
        struct error e = {0};

        assert_int_equal(xml_parse("", 0, &doc, &e), ERR_EMPTY);
        assert_int_equal(xml_parse(NULL, 3, &doc, &e), ERR_INVAL);
        assert_int_equal(xml_parse("<a/>", 4, NULL, &e), ERR_INVAL);
        assert_null(doc);
    }
}

/* A DOCTYPE is refused, whether it declares entities (billion laughs, an external file) or not,
 * so no entity is ever expanded and no file is read. */
static void xml_parse__doctype_refused(void **state)
{
    const char *bad[] = {
        "<?xml version=\"1.0\"?><!DOCTYPE a [<!ENTITY x \"xx\"><!ENTITY y \"&x;&x;&x;&x;\">]>"
        "<a>&y;</a>",
        "<?xml version=\"1.0\"?><!DOCTYPE a [<!ENTITY f SYSTEM \"file:///etc/passwd\">]><a>&f;</a>",
        "<!DOCTYPE a SYSTEM \"http://127.0.0.1:1/x.dtd\"><a/>",
        "<!DOCTYPE a><a/>",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct xml_doc *doc = NULL;
        struct error e = {0};

        assert_int_equal(xml_parse(bad[i], strlen(bad[i]), &doc, &e), ERR_PARSE);
        assert_null(doc);
        assert_non_null(strstr(e.msg, "DOCTYPE"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(xml_find__walks_an_ec2_reply),
        cmocka_unit_test(xml_copy__missing_and_too_long),
        cmocka_unit_test(xml_child__any_element),
        cmocka_unit_test(xml_parse__truncated_is_parse_error),
        cmocka_unit_test(xml_parse__malformed),
        cmocka_unit_test(xml_parse__doctype_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
