/* test_vec.c: vec_grow: room for the next item, doubling, and failures that leave the array. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "util/vec.h"

/* From nothing: 16 items; room left: the same array; full: twice the capacity, the items kept. */
static void vec_grow__doubles_when_full_and_keeps_items(void **state)
{
    int *v = NULL, *w;
    size_t cap = 0, n = 0;

    (void)state;
    for (int i = 0; i < 40; i++) {
        size_t before = cap;

        w = vec_grow(v, &cap, n, sizeof(*v));
        assert_non_null(w);
        if (n < before) {
            assert_ptr_equal(w, v);
            assert_int_equal(cap, before);
        } else {
            assert_int_equal(cap, before ? 2 * before : 16);
        }
        v = w;
        v[n++] = i;
    }
    assert_int_equal(cap, 64); /* 16, 32, 64 */
    for (int i = 0; i < 40; i++)
        assert_int_equal(v[i], i);
    free(v);
}

/* A size that cannot be had: NULL, the array and its capacity unchanged. */
static void vec_grow__refuses_what_cannot_be_had(void **state)
{
    size_t cap = 16;
    char *v = malloc(16), *w;

    (void)state;
    assert_non_null(v);
    v[0] = 'x';
    assert_null(vec_grow(v, &cap, 16, SIZE_MAX / 8));
    assert_int_equal(cap, 16);
    assert_null(vec_grow(v, &cap, SIZE_MAX / 2 + 1, 1));
    assert_int_equal(cap, 16);
    assert_null(vec_grow(v, &cap, 0, 0));
    assert_null(vec_grow(v, NULL, 0, 1));
    assert_int_equal(v[0], 'x'); /* still the caller's */
    w = vec_grow(v, &cap, 3, 1); /* room */
    assert_ptr_equal(w, v);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vec_grow__doubles_when_full_and_keeps_items),
        cmocka_unit_test(vec_grow__refuses_what_cannot_be_had),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
