/* vec.c: room for one more item in a caller's growing array. */
#include "util/vec.h"

#include <stdint.h>
#include <stdlib.h>

#define VEC_FIRST 16

void *vec_grow(void *items, size_t *cap, size_t n, size_t size)
{
    size_t want;
    void *v;

    if (!cap || size == 0)
        return NULL;
    if (n < *cap)
        return items;
    want = *cap ? *cap : VEC_FIRST / 2;
    do {
        if (want > SIZE_MAX / 2)
            return NULL;
        want *= 2;
    } while (want <= n);
    if (want > SIZE_MAX / size || !(v = realloc(items, want * size)))
        return NULL;
    *cap = want;
    return v;
}
