/* fuzz_json.c: libFuzzer target for the JSON reader (jv_parse in src/util/json.c), which every
 * request body and every Google answer goes through: a value parsed is dumped, parsed again and
 * dumped again, and the two texts must be the same; every accessor is tried on it. */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_support.h"
#include "util/json.h"

static int fz_key(void *ctx, const char *key, const struct jv *val)
{
    double d;
    long long n;
    int b;

    (void)ctx;
    (void)key;
    (void)jv_string_value(val);
    (void)jv_number_value(val, &d);
    (void)jv_integer_value(val, &n);
    (void)jv_bool_value(val, &b);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jv *v = NULL, *again = NULL;
    char *text = NULL, *text2 = NULL;
    struct error e = {0};

    if (jv_parse((const char *)data, size, &v, &e) < 0)
        return 0;
    (void)jv_each(v, fz_key, NULL);
    for (size_t i = 0; i < jv_size(v); i++)
        (void)fz_key(NULL, NULL, jv_at(v, i));
    if (jv_dump(v, &text) == 0) {
        if (jv_parse(text, strlen(text), &again, &e) < 0 || jv_dump(again, &text2) < 0 ||
            strcmp(text, text2) != 0)
            abort(); /* what castor writes it must read back as it was */
    }
    free(text);
    free(text2);
    jv_free(again);
    jv_free_wiped(v);
    return 0;
}
